"""Fitting a placement into the devices' memory: a window of consecutive nodes moved off the device that overflows.

A placement that puts more bytes on a device than the device holds cannot load there, and the cost model prices it
``inf``. The guard then threw the whole split away for one device. On a small-memory accelerator (a GPU holding
256 MiB, a BERT-base of 436 MB) that device is the slow one alone, 1.8x the best split (issue 22's
``small_memory`` rows). :func:`fit_memory` keeps the split and moves what it must.

* **What moves.** Of the nodes the placement puts on the overflowing device ``d`` that device ``e`` can run, a window
  of consecutive ones in topological order (graph arrays are in topological order) goes to ``e``. A path between
  two of those nodes through the device's other nodes stays inside the window, so moving it cuts the device's part
  in at most three pieces, in order: few new submodels, where moving the nodes that free most bytes per ms one by
  one would scatter them. The result is legalised as any proposal is.
* **Which window.** For every other device ``e``, windows are cut at ``cuts`` equal shares of the bytes those nodes
  hold, every pair of cuts priced by the simulator in one batch (``feasible_ms``: ``inf`` where a device still
  overflows); then a finer grid, ``cuts`` shares between the neighbouring cuts of each end of the best coarse
  window. The ``legalised`` cheapest that fit are legalised with the submodel bound, and the fastest legal one
  that fits is kept. If no window fits, the one that leaves the least overflow is taken and the next round moves
  more. There are at most ``rounds`` rounds (legalising can move nodes back).
* **Cost.** Numpy only: 16-47 ms on BERT-base and ViT-B/16 (two devices, 12 cuts), 1.7 s on a 20,002-node chain,
  measured beside two trainings (a local search prices thousands of placements). It runs only for a placement that
  overflows.
* **When it does nothing.** Where no device reports a finite memory (CPU-only machines, most platforms), or the
  placement already fits, the placement comes back as it was, untouched. Where no window fits within the rounds it
  also comes back as it was, and the guard falls back to one device, as before.
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from ov_autoplace.costmodel.anchors import AnchorFixer
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS, Pin, legalize

logger = logging.getLogger(__name__)

CUTS = 12
LEGALISED = 3
ROUNDS = 3


def _size(num_bytes: float) -> str:
    return f"{num_bytes / (1 << 20):.0f} MiB" if num_bytes >= 1 << 20 else f"{num_bytes / 1024:.1f} KiB"


def carried_bytes(graph: GraphArrays, active: np.ndarray, node_bytes: np.ndarray) -> np.ndarray:
    """Bytes per node that move with it: its own, plus what the inactive nodes feeding it hold (a Constant, a
    weight's Convert), split evenly among their consumers and passed along chains of inactive nodes.

    Cost models put a weight's bytes on its consumers (the profiler, the simulated platforms) or on the Constant
    itself; either way a window's share of the bytes is what leaves the device with it (the legalizer places
    Constants with their consumers).
    """
    carried = np.asarray(node_bytes, dtype=np.float64).copy()
    src, dst = np.asarray(graph.edge_src), np.asarray(graph.edge_dst)
    feeding = ~active[src]
    order = np.argsort(src[feeding], kind="stable")  # producers before consumers: the graph is topological
    src, dst = src[feeding][order], dst[feeding][order]
    starts = np.searchsorted(src, np.unique(src))
    for begin, end in zip(starts, [*starts[1:], src.size]):
        node = src[begin]
        if carried[node]:
            carried[dst[begin:end]] += carried[node] / (end - begin)
            carried[node] = 0.0
    return carried


def _overflow(resident: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Bytes above capacity, summed over devices: [P] for resident [P, D]."""
    return np.maximum(resident - caps[None, :], 0.0).sum(axis=1)


class WindowMoves:
    """Windows of ``row``'s nodes on ``source`` that ``target`` can run (``movable[:, target]``), in topological order.

    A window is a pair of positions (start < end) in that order; its bytes are ``weights``' cumulative share.
    """

    def __init__(self, row: np.ndarray, movable: np.ndarray, weights: np.ndarray, source: int, target: int):
        self.row, self.target = row, target
        self.nodes = np.flatnonzero((row == source) & movable[:, target])
        self.cumulative = np.concatenate([[0.0], np.cumsum(weights[self.nodes])])

    def cuts(self, lo: int, hi: int, count: int) -> np.ndarray:
        """Positions in [lo, hi] at ``count`` equal shares of the bytes between them (both ends included)."""
        shares = np.linspace(self.cumulative[lo], self.cumulative[hi], count + 1)
        found = np.searchsorted(self.cumulative, shares)
        return np.unique(np.clip(np.concatenate([[lo], found, [hi]]), lo, hi))

    def pairs(self, starts: np.ndarray, ends: np.ndarray) -> list[tuple[int, int]]:
        return [(int(a), int(b)) for a in starts for b in ends if a < b]

    def placement(self, window: tuple[int, int]) -> np.ndarray:
        moved = self.row.copy()
        moved[self.nodes[window[0]:window[1]]] = self.target
        return moved


def window_moves(row: np.ndarray, movable: np.ndarray, weights: np.ndarray, source: int, target: int,
                 cuts: int) -> list[np.ndarray]:
    """Placements [N] that move one window of ``row``'s movable nodes on ``source`` to ``target``: the nodes cut
    at ``cuts`` equal shares of their ``weights``, every pair of cuts."""
    windows = WindowMoves(row, movable, weights, source, target)
    if windows.nodes.size == 0:
        return []
    grid = windows.cuts(0, windows.nodes.size, cuts)
    return [windows.placement(w) for w in windows.pairs(grid, grid)]


def _best_windows(simulator: Simulator, anchors: AnchorFixer, caps: np.ndarray, row: np.ndarray,
                  movable: np.ndarray, weights: np.ndarray, source: int,
                  cuts: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidate placements [P, N] and their ``feasible_ms`` [P]: for every other device, a coarse grid of windows
    (``cuts`` shares), then a fine one around the coarse window the simulator prices best (``cuts`` shares
    between each of its ends' neighbouring cuts) - 2 x ``cuts`` squared windows rather than ``cuts`` to the fourth.
    Each candidate's anchors (Constants, Parameters, Results) are placed as the legalizer places them.
    """
    rows, ms = [], []
    for target in range(len(caps)):
        if target == source:
            continue
        windows = WindowMoves(row, movable, weights, source, target)
        if windows.nodes.size == 0:
            continue
        grid = windows.cuts(0, windows.nodes.size, cuts)
        coarse = windows.pairs(grid, grid)
        batch = anchors(np.stack([windows.placement(w) for w in coarse])).astype(row.dtype)
        priced = np.asarray(simulator.feasible_ms(batch), dtype=np.float64)
        overflow = _overflow(simulator.resident_bytes(batch), caps)
        a, b = coarse[int(np.lexsort((priced, overflow))[0])]  # fits first (overflow 0), then fastest
        i, j = int(np.searchsorted(grid, a)), int(np.searchsorted(grid, b))
        fine = windows.pairs(windows.cuts(int(grid[max(i - 1, 0)]), int(grid[min(i + 1, grid.size - 1)]), cuts),
                             windows.cuts(int(grid[max(j - 1, 0)]), int(grid[min(j + 1, grid.size - 1)]), cuts))
        fine_batch = anchors(np.stack([windows.placement(w) for w in fine])).astype(row.dtype)
        rows += [batch, fine_batch]
        ms += [priced, np.asarray(simulator.feasible_ms(fine_batch), dtype=np.float64)]
    if not rows:
        return np.zeros((0, row.size), row.dtype), np.zeros(0)
    return np.concatenate(rows), np.concatenate(ms)


def fit_memory(placement: Placement, graph: GraphArrays, cost: CostModel, support: np.ndarray, *,
               pins: Sequence[Pin] = (), max_submodels: int | None = DEFAULT_MAX_SUBMODELS, cuts: int = CUTS,
               legalised: int = LEGALISED, rounds: int = ROUNDS) -> Placement:
    """``placement``, or a legal placement that moves windows of it so every device's resident bytes fit.

    ``placement`` is legal on ``cost.devices``; the result is legalised with ``pins`` and ``max_submodels``.
    See the module doc.
    """
    caps = np.asarray(cost.device_memory_bytes, dtype=np.float64)
    if not np.isfinite(caps).any():
        return placement
    devices = tuple(cost.devices)
    simulator = Simulator(cost, graph)
    row = placement.device_indices(graph.names, devices).astype(np.int16)  # small ints: the batches are windows x nodes
    start = simulator.resident_bytes(row[None])[0]
    if not (start > caps).any():
        return placement
    movable = np.asarray(support, dtype=bool) & simulator.active[:, None]
    weights = carried_bytes(graph, simulator.active, np.asarray(cost.node_memory_bytes))
    anchors = AnchorFixer(graph, len(devices), support)
    best: tuple[float, Placement] | None = None
    for _ in range(rounds):
        resident = simulator.resident_bytes(row[None])[0]
        source = int(np.argmax(resident - caps))  # the device furthest over its capacity
        batch, ms = _best_windows(simulator, anchors, caps, row, movable, weights, source, cuts)
        if not batch.size:
            break
        for k in np.argsort(ms, kind="stable")[:legalised]:
            if not np.isfinite(ms[k]):
                break
            legal = legalize(graph, batch[k], devices, support, pins=pins, max_submodels=max_submodels,
                             strategy=f"{placement.strategy}+memory_fit")
            legal_ms = float(simulator.feasible_ms(legal.device_indices(graph.names, devices)))
            if np.isfinite(legal_ms) and (best is None or legal_ms < best[0]):
                best = (legal_ms, legal)
        if best is not None:
            break
        # no window fits: keep the one leaving the least overflow, legalised, and move more in the next round
        least = int(np.argmin(_overflow(simulator.resident_bytes(batch), caps)))
        row = legalize(graph, batch[least], devices, support, pins=pins, max_submodels=max_submodels,
                       strategy=placement.strategy).device_indices(graph.names, devices).astype(np.int16)
    over = ", ".join(f"{devices[d]} {_size(start[d])} of {_size(caps[d])}"
                     for d in np.flatnonzero(start > caps))
    if best is None:
        logger.info("memory fit: %s's placement overflows (%s) and no window of it fits", placement.strategy, over)
        placement.notes.append(f"memory fit: overflows ({over}); no window of it fits within {rounds} rounds")
        return placement
    fitted_ms, fitted = best
    moved = int((fitted.device_indices(graph.names, devices) != placement.device_indices(graph.names, devices))[
        simulator.active].sum())
    fitted.notes = [*placement.notes, f"memory fit: {placement.strategy}'s placement overflowed ({over}); moved "
                    f"{moved} nodes in windows to fit, predicted {fitted_ms:.2f} ms ({cost.label})"]
    logger.info("memory fit: %s", fitted.notes[-1])
    return fitted


__all__ = ["carried_bytes", "fit_memory", "window_moves"]
