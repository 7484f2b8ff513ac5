"""How many submodels HETERO really compiles, next to the two counts this package has (tests and benchmarks).

HETERO's count is read from a real compile: PERF_COUNT names each runtime node
"subgraph<K>: <name>".
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import openvino as ov

import ov_autoplace as oa
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.placement.legalizer import constant_subgraph_mask, query_support
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.placement.submodels import count_islands, submodel_partition
from ov_autoplace.devices.testbed import Testbed
from ov_autoplace.devices.timing import random_inputs
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.legalizer import legalize


def hetero_subgraphs(core: ov.Core, prepared: ov.Model, placement: oa.Placement) -> int:
    """The subgraphs HETERO compiled for ``placement`` (one inference with PERF_COUNT)."""
    compiled = oa.compile_placement(prepared, placement, {"PERF_COUNT": True}, core=core)
    request = compiled.create_infer_request()
    request.infer(random_inputs(compiled))
    return len({p.node_name.partition(": ")[0] for p in request.profiling_info if ": " in p.node_name})


def compare_counts(testbed: Testbed, model: ov.Model,
                   proposals: Callable[[GraphArrays], Sequence[np.ndarray]]) -> list[tuple[int, int, int]]:
    """(islands, ``submodel_partition``'s count, HETERO's) for each proposal (device index per node of the
    prepared model's graph), legalized without a submodel bound."""
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    devices = list(testbed.devices)
    support = query_support(testbed.core, prepared, graph, devices)
    compute = graph.role == NodeRole.COMPUTE
    active = compute & ~(constant_subgraph_mask(graph) & compute)
    rows = []
    for proposal in proposals(graph):
        placement = legalize(graph, proposal, devices, support, strategy="compare")
        device = np.array([devices.index(placement.assignment[n]) for n in graph.names])
        rows.append((count_islands(graph, device, active), submodel_partition(graph, device, active).num_submodels,
                     hetero_subgraphs(testbed.core, prepared, placement)))
    return rows
