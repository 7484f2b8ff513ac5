"""The one path a proposal takes to a placement: legalize -> guard -> legality check.

How and why, in full: docs/architecture.md, "Module notes", ov_autoplace/decision/placement_pipeline.py.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.devices.memory_caps import format_bytes
from ov_autoplace.errors import MemoryCapError
from ov_autoplace.search.list_scheduling import heft_placement
from ov_autoplace.search.local_search import LocalSearchRefiner, RefineResult
from ov_autoplace.search.memory_fit import fit_memory, legalize_on_cost
from ov_autoplace.costmodel.prior_costs import predicted_single_ms
from ov_autoplace.decision.prediction_guard import guard_placement
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.placement.legality_check import ensure_legal
from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS, legalize
from ov_autoplace.placement.pins import Pin


class InsideMargin(Exception):
    """The legal placement is not predicted faster than the best single device by the margin asked for."""

    def __init__(self, predicted_ms: float):
        super().__init__(f"legalized split predicted {predicted_ms:.3f} ms, inside the margin")
        self.predicted_ms = predicted_ms


def placement_pipeline(graph: GraphArrays, proposal: np.ndarray, devices: Sequence[str], support: np.ndarray, *,
                       strategy: str, cost: CostModel | None = None, pins: Sequence[Pin] = (),
                       max_submodels: int | None = DEFAULT_MAX_SUBMODELS, guard: bool = True,
                       min_gain: float | None = None, annotate: Callable[[Placement], None] | None = None,
                       check: str | None = None, enforce_memory: bool = False) -> Placement:
    """``proposal`` (device index per node) made legal, guarded and checked (the module doc, stages 1-5).

    ``cost``: the CostModel the proposal was made on (None: nothing prices the merges or guards the result).
    ``annotate``: called on the legal placement before the guard (a budgeted search notes its measurements).
    """
    devices = tuple(devices)
    placement = legalize_on_cost(graph, proposal, devices, support, cost=cost, strategy=strategy, pins=pins,
                                 max_submodels=max_submodels)
    if annotate:
        annotate(placement)
    if cost is not None and not pins:  # pinned placements are the user's call, not the margin's or the guard's
        if min_gain is not None:
            legal_ms = CostTerms(cost, graph, support).latency_ms(placement.device_indices(graph.names, devices))
            if not legal_ms < min(predicted_single_ms(cost).values()) * (1.0 - min_gain):
                raise InsideMargin(legal_ms)
        if guard:
            placement = guard_placement(placement, graph, cost, support, max_submodels=max_submodels)
    if enforce_memory:
        placement = within_memory(placement, graph, cost, support, pins=pins, max_submodels=max_submodels)
    if check is not None:
        placement = ensure_legal(placement, graph, devices, support, pins=pins, max_submodels=max_submodels,
                                 source=check)
    return placement


def refined_fit(placement: Placement, graph: GraphArrays, cost: CostModel, support: np.ndarray, *,
                pins: Sequence[Pin], max_submodels: int | None) -> Placement:
    """``placement`` (a split within the caps) or the local search's from it where predicted faster (the memory path's
    last stage; why: docs/llm.md, "Memory")."""
    simulator, devices = Simulator(cost, graph), tuple(cost.devices)
    row = placement.device_indices(graph.names, devices)
    if np.unique(row[simulator.active]).size < 2:
        return placement
    refined = LocalSearchRefiner(cost, graph, support, pins=pins, max_submodels=max_submodels).refine(row)
    better = legalize(graph, refined.proposal, devices, support, pins=pins, max_submodels=max_submodels,
                      strategy=placement.strategy)
    if not pins:
        better = guard_placement(better, graph, cost, support, max_submodels=max_submodels)
    fast = better.device_indices(graph.names, devices)
    if not (simulator.memory_ok(fast) and simulator.feasible_ms(fast) < simulator.feasible_ms(row)):
        return placement
    better.notes = [*placement.notes, *better.notes, refined.note(cost.label)]
    return better


def fit_to_caps(graph: GraphArrays, proposal: np.ndarray, devices: Sequence[str], support: np.ndarray, *,
                cost: CostModel, strategy: str, pins: Sequence[Pin] = (), max_submodels: int | None,
                refine: RefineResult | None = None, annotate: Callable[[Placement], None] | None = None) -> Placement:
    """The fastest memory path (legalize, guard, fit, :func:`refined_fit`) from ``proposal``, from
    HEFT's and, where the search that made it priced no fit, its input (docs/llm.md, "Memory")."""
    found, error = [], None
    for start in [proposal, heft_placement(CostTerms(cost, graph, support))] + (
            [refine.given] if refine is not None and refine.stopped == "overflow" else []):
        try:
            placement = refined_fit(placement_pipeline(
                graph, start, devices, support, strategy=strategy, cost=cost, pins=pins, max_submodels=max_submodels,
                annotate=start is proposal and annotate, enforce_memory=True), graph, cost, support, pins=pins,
                max_submodels=max_submodels)
        except MemoryCapError as exc:
            error = error or exc
            continue
        found.append((Simulator(cost, graph).feasible_ms(placement.device_indices(graph.names, devices)), len(found),
                      placement))
    if not found:
        raise error
    return min(found)[2]


def within_memory(placement: Placement, graph: GraphArrays, cost: CostModel, support: np.ndarray, *,
                  pins: Sequence[Pin] = (), max_submodels: int | None = DEFAULT_MAX_SUBMODELS) -> Placement:
    """``placement`` if every device's resident bytes fit ``cost.device_memory_bytes``, else its memory fit; raises
    MemoryCapError when the fit overflows too (stage 4)."""
    simulator = Simulator(cost, graph)
    row = placement.device_indices(graph.names, cost.devices)
    if simulator.memory_ok(row):
        return placement
    fitted = fit_memory(placement, graph, cost, support, pins=pins, max_submodels=max_submodels)
    row = fitted.device_indices(graph.names, cost.devices)
    if simulator.memory_ok(row):
        return fitted
    resident, caps = simulator.resident_bytes(row[None])[0], np.asarray(cost.device_memory_bytes, np.float64)
    over = "; ".join(f"{d} holds {format_bytes(r)} of {format_bytes(c)}" for d, r, c in zip(cost.devices, resident, caps)
                     if r > c)
    raise MemoryCapError(
        f"no split of this model that HETERO can run fits the memory caps: the closest found ({fitted.strategy}, "
        f"{fitted.counts_per_device()}) still overflows ({over})"
        + ("; the pins hold nodes on the device that overflows: unpin some of them" if pins else "")
        + "; raise the caps, allow more submodels (max_submodels), or add a device")


__all__ = ["InsideMargin", "fit_to_caps", "placement_pipeline", "refined_fit", "within_memory"]
