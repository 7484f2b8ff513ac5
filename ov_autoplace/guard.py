"""The guard: a placement is never predicted slower than the best single device.

A learned or heuristic placement can lose to simply running everything on
the fastest device (cross-device copies and submodel switches cost time).
When the strategy used a CostModel, the guard prices the legal placement and
every single-device placement under it (``CostTerms.latency_ms``, numpy only)
and keeps the fastest, with a note saying what happened. With measured costs
a single-device prediction is that device's measured end-to-end latency, so
the guard compares against measurements of this model on these devices.
"""

from __future__ import annotations

import logging

import numpy as np

from .costmodel.cost_model import CostModel
from .costmodel.cost_terms import CostTerms
from .graph import GraphArrays
from .legalize import legalize
from .placement import Placement

logger = logging.getLogger(__name__)


def guard_placement(placement: Placement, graph: GraphArrays, cost: CostModel, support: np.ndarray) -> Placement:
    """``placement``, or the single-device placement the cost model predicts to be faster."""
    terms = CostTerms(cost, graph, support)
    index = {d: k for k, d in enumerate(cost.devices)}
    placed = np.array([index[placement.assignment[n]] for n in graph.names], dtype=np.int64)
    predicted = terms.latency_ms(placed)
    singles = {}
    for d, device in enumerate(cost.devices):
        if support[terms.compute, d].all():
            singles[device] = terms.latency_ms(np.full(graph.num_nodes, d, dtype=np.int64))
    best_device = min(singles, key=singles.get) if singles else None
    if best_device is None or predicted <= singles[best_device]:
        placement.notes.append(f"predicted {predicted:.2f} ms ({cost.label}); best single device "
                               + (f"{best_device} {singles[best_device]:.2f} ms" if best_device else "none"))
        return placement
    logger.info("guard: %s's placement is predicted %.2f ms, slower than %s alone (%.2f ms); using %s only",
                placement.strategy, predicted, best_device, singles[best_device], best_device)
    single = legalize(graph, np.full(graph.num_nodes, index[best_device], dtype=np.int64), cost.devices, support,
                      strategy=f"{placement.strategy}+guard")
    single.notes.append(f"guard: {placement.strategy} predicted {predicted:.2f} ms > {best_device} alone "
                        f"{singles[best_device]:.2f} ms ({cost.label}); placed everything on {best_device}")
    return single


__all__ = ["guard_placement"]
