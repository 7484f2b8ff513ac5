"""Carry a placement found on a static clone over to the dynamic model it came from.

How, and what the compile checks after: docs/architecture.md, "Module notes", ov_autoplace/placement/dynamic_model.py.
"""

from __future__ import annotations

import logging
from collections import Counter

import numpy as np
import openvino as ov

from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.placement.legalizer import legalize, query_support
from ov_autoplace.placement.assignment import Placement, fill_by_neighbours

logger = logging.getLogger("ov_autoplace")


def transfer_placement(placement: Placement, dynamic_prepared: ov.Model, core: ov.Core, *,
                       max_submodels: int | None = None) -> Placement:
    """``placement`` (made on the static clone) as a legal placement of ``dynamic_prepared``'s nodes."""
    graph = extract_graph(dynamic_prepared)
    devices = list(placement.devices)  # a node only the dynamic model has goes with its consumers, else producers
    proposal = fill_by_neighbours(np.array([devices.index(placement.assignment[name]) if name in placement.assignment
                                            else -1 for name in graph.names], dtype=np.int64), graph)
    unknown = sum(1 for name in graph.names if name not in placement.assignment)
    support = query_support(core, dynamic_prepared, graph, placement.devices)
    # Submodel bound: never force more merging than the static placement had (it was legal there).
    bound = None if max_submodels is None else max(max_submodels, placement.num_submodels)
    dynamic = legalize(graph, proposal, placement.devices, support, max_submodels=bound, strategy=placement.strategy)
    dynamic.notes = list(placement.notes) + [f"carried over to the dynamic model ({unknown} shape-computation "
                                             "node(s) placed with their consumers)"] + dynamic.notes
    dynamic.measured_latency_ms = placement.measured_latency_ms
    dynamic.reference_latency_ms = dict(placement.reference_latency_ms)
    _warn_dynamic_unsupported(graph, proposal, support, placement.devices, dynamic)
    return dynamic


def _warn_dynamic_unsupported(graph, proposal, support, devices, dynamic: Placement) -> None:
    """Say which device could not take which nodes once shapes are dynamic, and where they went instead."""
    compute = graph.role == NodeRole.COMPUTE
    for d, device in enumerate(devices):
        refused = np.flatnonzero(compute & (proposal == d) & ~support[:, d])
        if refused.size:
            examples = ", ".join(f"{graph.names[i]!r} ({graph.op_types[i]})" for i in refused[:3])
            went = Counter(dynamic.assignment[graph.names[i]] for i in refused)
            logger.warning("dynamic shapes: %s cannot run %d node(s) with dynamic shapes (query_model leaves them "
                           "out), e.g. %s; they run on %s instead", device, refused.size, examples, dict(went))


__all__ = ["transfer_placement"]
