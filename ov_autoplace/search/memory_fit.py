"""Fitting a placement into the devices' memory: a window of consecutive nodes moved off a device that overflows.

How and why, in full: docs/architecture.md, "Module notes", ov_autoplace/search/memory_fit.py.
"""

from __future__ import annotations

import hashlib
import weakref
from typing import Sequence

import numpy as np

from ov_autoplace.costmodel.anchors import AnchorFixer
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS, Pin, legalize
from ov_autoplace.placement.stateful import split_variables, state_groups

#: 16 byte shares and 6 windows legalised: at 12 and 3 the legalizer's merges left small_memory BERT-base 6.8 %
#: slower for 4 of 11 policies (1.003x at 16 and 6); 2.4 s instead of 1.3 s on the 20,002-node chain.
CUTS, LEGALISED, ROUNDS = 16, 6, 3
#: Pipeline cuts tried on a stateful graph (a decoder is a chain of layers, each with its state: a split that
#: HETERO keeps per variable is a prefix on one device and the rest on the other).
PIPELINE_CUTS = 256


def carried_bytes(graph: GraphArrays, active: np.ndarray, node_bytes: np.ndarray) -> np.ndarray:
    """Bytes that move with each node: its own plus those of the inactive nodes feeding it (a Constant, a weight's
    Convert), split evenly among their consumers - whether a cost model puts a weight on the Constant or on them."""
    carried = np.asarray(node_bytes, dtype=np.float64).copy()
    src, dst = np.asarray(graph.edge_src), np.asarray(graph.edge_dst)
    feeding = ~active[src]
    order = np.argsort(src[feeding], kind="stable")  # producers first: the graph is in topological order
    src, dst = src[feeding][order], dst[feeding][order]
    starts = np.searchsorted(src, np.unique(src))
    for begin, end in zip(starts, [*starts[1:], src.size]):
        if carried[src[begin]]:
            carried[dst[begin:end]] += carried[src[begin]] / (end - begin)
            carried[src[begin]] = 0.0
    return carried


def byte_cuts(cumulative: np.ndarray, lo: int, hi: int, count: int) -> np.ndarray:
    """Positions in [lo, hi] at ``count`` equal shares of the ``cumulative`` bytes between them, ends included."""
    found = np.searchsorted(cumulative, np.linspace(cumulative[lo], cumulative[hi], count + 1))
    return np.unique(np.clip(np.concatenate([[lo], found, [hi]]), lo, hi))


def window_moves(row: np.ndarray, nodes: np.ndarray, target: int, starts, ends) -> tuple[np.ndarray, list]:
    """``row`` with ``nodes[a:b]`` on ``target`` [P, N], for every start a < end b, and the (a, b) pairs."""
    pairs = [(int(a), int(b)) for a in starts for b in ends if a < b]
    out = np.repeat(row[None], len(pairs), axis=0)
    for k, (a, b) in enumerate(pairs):
        out[k, nodes[a:b]] = target
    return out, pairs


class StateMover:
    """``mover(batch)``: placements [P, N] with each state variable's group on the device of its lead (in place;
    the identity for a graph without variables, whose ``groups`` are empty). The lead is the group's last active
    member that feeds another node (the KV ``Concat``, where the layer meets its state), not the beam reorder an
    export may place at the start of the topological order, nor the Assign that sits at its end."""

    def __init__(self, graph: GraphArrays, active: np.ndarray):
        self.groups = []
        for group in state_groups(graph):
            members = group.members[active[group.members]]
            if members.size:
                feeding = [m for m in members.tolist() if graph.successors(m).size]
                self.groups.append((max(feeding) if feeding else int(members.max()), group.members))

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        for lead, members in self.groups:
            batch[:, members] = batch[:, [lead]]
        return batch


def _priced(simulator, batch, caps):
    """Simulated ms [P] of placements [P, N], memory aside, and the bytes beyond the devices' capacities [P]."""
    over = np.maximum(simulator.resident_bytes(batch) - caps[None, :], 0.0).sum(axis=1)
    return np.asarray(simulator(batch), dtype=np.float64), over


def _candidates(simulator, anchors, caps, row, movable, weights, source, cuts, together):
    """Placements [P, N] moving a window off ``source`` to each other device, their simulated ms memory aside [P] and
    overflow in bytes [P] (``feasible_ms`` is the ms where the overflow is 0)."""
    rows, ms, overs = [], [], []
    for target in range(len(caps)):
        nodes = np.flatnonzero((row == source) & movable[:, target])
        if target == source or not nodes.size:
            continue
        cumulative = np.concatenate([[0.0], np.cumsum(weights[nodes])])
        grid = byte_cuts(cumulative, 0, nodes.size, cuts)
        starts = ends = grid
        for fine in (False, True):  # the coarse grid, then a fine one around both ends of its best window
            batch, pairs = window_moves(row, nodes, target, starts, ends)
            batch = anchors(together(batch)).astype(row.dtype)
            priced, over = _priced(simulator, batch, caps)
            rows.append(batch)
            ms.append(priced)
            overs.append(over)
            if fine:
                break
            best = pairs[int(np.lexsort((np.where(over == 0, priced, np.inf), over))[0])]
            near = [np.searchsorted(grid, end) for end in best]
            starts, ends = (byte_cuts(cumulative, int(grid[max(i - 1, 0)]), int(grid[min(i + 1, grid.size - 1)]),
                                      cuts) for i in near)
        if together.groups:  # a stateful graph: every pipeline cut too (a prefix or a suffix moved), at most 2 x 256
            cut = np.unique(np.linspace(0, nodes.size, min(nodes.size, PIPELINE_CUTS) + 1).astype(np.int64))
            for starts, ends in (([0], cut), (cut, [nodes.size])):
                batch = anchors(together(window_moves(row, nodes, target, starts, ends)[0])).astype(row.dtype)
                priced, over = _priced(simulator, batch, caps)
                rows.append(batch)
                ms.append(priced)
                overs.append(over)
    if not rows:
        return np.zeros((0, row.size), row.dtype), np.zeros(0), np.zeros(0)
    return np.concatenate(rows), np.concatenate(ms), np.concatenate(overs)


_SPLITS: "weakref.WeakKeyDictionary[GraphArrays, dict]" = weakref.WeakKeyDictionary()


def fit_memory(placement: Placement, graph: GraphArrays, cost: CostModel, support: np.ndarray, *,
               pins: Sequence[Pin] = (), max_submodels: int | None = DEFAULT_MAX_SUBMODELS, cuts: int = CUTS,
               legalised: int = LEGALISED, rounds: int = ROUNDS) -> Placement:
    """``placement`` (legal on ``cost.devices``), or a legal placement with windows of it moved so every device's
    resident bytes fit, legalised with ``pins`` and ``max_submodels``. If no window fits, the next of ``rounds``
    rounds moves more from the one that frees bytes at the least time added per byte."""
    caps = np.asarray(cost.device_memory_bytes, dtype=np.float64)
    if not np.isfinite(caps).any():
        return placement
    devices, simulator = tuple(cost.devices), Simulator(cost, graph)
    row = original = placement.device_indices(graph.names, devices).astype(np.int16)  # batches: windows x nodes
    start = simulator.resident_bytes(row[None])[0]
    if not (start > caps).any():
        return placement
    movable = np.asarray(support, dtype=bool) & simulator.active[:, None]
    weights = carried_bytes(graph, simulator.active, np.asarray(cost.node_memory_bytes))
    anchors = AnchorFixer(graph, len(devices), support)
    together = StateMover(graph, simulator.active)

    def legal(proposal, strategy):
        return legalize(graph, proposal, devices, support, pins=pins, max_submodels=max_submodels, strategy=strategy)

    split = _SPLITS.setdefault(graph, {})  # kept with the graph: windows snap to the same rows, fit after fit

    def splits(row) -> bool:  # the legalizer would put ``row`` on one device (stateful rule 2)
        if not graph.variables:
            return False
        key = hashlib.blake2b(row.astype(np.int16).tobytes(), digest_size=16).digest()
        if key not in split:
            split[key] = bool(split_variables(graph, row.astype(np.int64), simulator.active))
        return split[key]

    best = None
    for _ in range(rounds):
        excess = simulator.resident_bytes(row[None])[0] - caps
        source = int(np.argmax(excess))  # the furthest over its capacity
        batch, nominal, over = _candidates(simulator, anchors, caps, row, movable, weights, source, cuts, together)
        if not batch.size:
            break
        ms = np.where(over == 0, nominal, np.inf)  # feasible_ms
        tried = 0
        for k in np.argsort(ms, kind="stable"):
            if not np.isfinite(ms[k]) or tried >= legalised:
                break
            if splits(batch[k]):
                continue  # not a fit
            tried += 1
            fitted = legal(batch[k], f"{placement.strategy}+memory_fit")
            fitted_ms = float(simulator.feasible_ms(fitted.device_indices(graph.names, devices)))
            if np.isfinite(fitted_ms) and (best is None or fitted_ms < best[0]):
                best = (fitted_ms, fitted)
        if best is not None:
            break
        # none fits: go on from the window freeing bytes at the least time added per byte that the legalizer keeps split
        freed = np.maximum(excess, 0).sum() - over
        added = nominal - float(simulator(row[None])[0])
        for k in np.argsort(np.where(freed > 0, added / np.maximum(freed, 1), np.inf), kind="stable"):
            if not splits(batch[k]):
                break
        row = legal(batch[k], placement.strategy).device_indices(graph.names, devices).astype(np.int16)
    over = ", ".join(f"{devices[d]} {start[d]:.3g} B of {caps[d]:.3g} B" for d in np.flatnonzero(start > caps))
    if best is None:
        placement.notes.append(f"memory fit: overflows ({over}); no window of it fits within {rounds} rounds")
        return placement
    fitted_ms, fitted = best
    moved = int((fitted.device_indices(graph.names, devices) != original)[simulator.active].sum())
    fitted.notes = [*placement.notes, f"memory fit: {placement.strategy}'s placement overflowed ({over}); moved "
                    f"{moved} nodes in windows to fit, predicted {fitted_ms:.2f} ms ({cost.label})"]
    return fitted


def legal_pricer(cost: CostModel, graph: GraphArrays, support: np.ndarray):
    """``legalize(price=)`` on ``cost``: proposals [P, N] -> ms [P], inf where memory overflows; ``fitted=True``:
    the fastest overflowing row (were memory no limit) is replaced in ``rows`` by its memory fit and priced so,
    legalised with the ``pins`` and ``max_submodels`` the legalizer hands it (its own)."""
    built, devices = [], tuple(cost.devices)  # built at the first merge: most merge nothing

    def price(rows, *, fitted: bool = False, pins: Sequence[Pin] = (),
              max_submodels: int | None = DEFAULT_MAX_SUBMODELS):
        if not built:
            built.extend((AnchorFixer(graph, len(devices), support), Simulator(cost, graph)))
        fixed = built[0](rows)
        ms = np.atleast_1d(built[1].feasible_ms(fixed))
        nominal = np.where(np.isfinite(ms), np.inf, np.atleast_1d(built[1](fixed))) if fitted else ms[:0]
        if np.isfinite(nominal).any():
            k = int(np.argmin(nominal))
            legal = legalize(graph, rows[k], devices, support, pins=pins, max_submodels=max_submodels, strategy="merge")
            row = fit_memory(legal, graph, cost, support, pins=pins, max_submodels=max_submodels)
            rows[k] = row.device_indices(graph.names, devices)
            ms[k] = built[1].feasible_ms(rows[k])
        return ms

    return price


def legalize_on_cost(graph: GraphArrays, proposal: np.ndarray, devices: Sequence[str], support: np.ndarray, *,
                     cost: CostModel | None, strategy: str, pins: Sequence[Pin] = (),
                     max_submodels: int | None = DEFAULT_MAX_SUBMODELS, price=None) -> Placement:
    """``legalize()`` with the pins and the bound, the bound's merges priced on ``cost`` (None: unpriced).

    The first stage of ``decision.placement_pipeline``, and the only legalization a proposal on a cost model gets:
    the policy's decoding ranks its candidates' legal forms with it, so what it ranks is what the pipeline
    returns. ``price``: a :func:`legal_pricer` on ``cost`` to reuse across many proposals (it builds lazily).
    """
    if cost is not None and price is None:
        price = legal_pricer(cost, graph, support)
    return legalize(graph, proposal, tuple(devices), support, pins=pins, max_submodels=max_submodels,
                    strategy=strategy, price=price)


__all__ = ["StateMover", "byte_cuts", "carried_bytes", "fit_memory", "legal_pricer", "legalize_on_cost",
           "window_moves"]
