"""The submodel bound is never below what the devices' op support forces (``legalize.effective_max_submodels``):
the legalizer, the local search and the MILP all enforce ``max(max_submodels, forced)``."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.search.local_search import LocalSearchRefiner
from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.placement.legalizer import constant_subgraph_mask, effective_max_submodels, legalize
from ov_autoplace.placement.submodels import submodel_partition

DEVICES = ("NPU", "CPU")


def _alternating(blocks: int = 4) -> ov.Model:
    """x -> relu0 -> exp0 -> relu1 -> exp1 -> ... -> relu<blocks>: the NPU (first device) will lack Exp."""
    x = ops.parameter([1, 64], np.float32, name="x")
    h = x
    for k in range(blocks):
        h = ops.relu(h)
        h.set_friendly_name(f"relu{k}")
        h = ops.exp(h)
        h.set_friendly_name(f"exp{k}")
    h = ops.relu(h)
    h.set_friendly_name(f"relu{blocks}")
    return ov.Model([h], [x], "alternating")


def _case(blocks: int = 4):
    graph = extract_graph(_alternating(blocks))
    support = np.ones((graph.num_nodes, 2), bool)
    exp = np.array([t == "Exp" for t in graph.op_types])
    support[exp, 0] = False  # the NPU cannot run Exp: HETERO auto puts each on the CPU
    return graph, support, exp


def _devices_of(placement, graph) -> np.ndarray:
    return np.array([DEVICES.index(placement.assignment[n]) for n in graph.names])


def _cost(graph, exp) -> CostModel:
    """Relu 10x faster on the NPU, Exp only on the CPU, cheap links and submodels: the forced split is optimal."""
    n = graph.num_nodes
    compute = np.asarray(graph.role) == NodeRole.COMPUTE
    ms = np.zeros((n, 2))
    ms[compute] = [0.1, 1.0]
    ms[exp] = [np.inf, 0.2]
    return CostModel(devices=DEVICES, node_names=tuple(graph.names), compute_ms=ms, unfused_ms=ms.copy(),
                     fused_into=np.full(n, -1, np.int64), link_latency_ms=np.array([[0.0, 0.01], [0.01, 0.0]]),
                     link_ms_per_byte=np.zeros((2, 2)), submodel_overhead_ms=np.array([0.01, 0.01]),
                     node_memory_bytes=np.zeros(n, np.int64), device_memory_bytes=np.full(2, np.inf),
                     simulated=True, source="test: NPU lacks Exp")


def test_the_bound_is_raised_to_the_support_forced_submodels():
    graph, support, _ = _case(4)
    assert effective_max_submodels(graph, support, 2) == (
        9, "the devices' op support forces 9 submodels; bound raised from 2 to 9")  # 5 Relu + 4 Exp islands
    assert effective_max_submodels(graph, support, 9) == (9, None)
    assert effective_max_submodels(graph, support, 12) == (12, None)
    assert effective_max_submodels(graph, support, None) == (None, None)
    assert effective_max_submodels(graph, np.ones_like(support), 2) == (2, None)  # nothing forced: one submodel
    with pytest.raises(Exception, match="max_submodels must be >= 1"):
        effective_max_submodels(graph, support, 0)


def test_legalize_keeps_supported_ops_on_the_first_device_under_a_smaller_bound():
    graph, support, exp = _case(4)
    placement = legalize(graph, np.zeros(graph.num_nodes, np.int64), DEVICES, support, max_submodels=2)
    device = _devices_of(placement, graph)
    compute = np.asarray(graph.role) == NodeRole.COMPUTE
    assert (device[compute & ~exp] == 0).all() and (device[exp] == 1).all()  # what HETERO auto does
    assert placement.num_submodels == 9
    assert "the devices' op support forces 9 submodels; bound raised from 2 to 9" in placement.notes
    # a proposal with more islands than the support forces is still merged, down to the raised bound
    rng = np.random.default_rng(0)
    for _ in range(5):
        proposal = rng.integers(0, 2, graph.num_nodes)
        merged = legalize(graph, proposal, DEVICES, support, max_submodels=2)
        assert merged.num_submodels <= 9
        active = compute & ~constant_subgraph_mask(graph)
        assert submodel_partition(graph, _devices_of(merged, graph), active).num_submodels == merged.num_submodels
    # no note when the bound is not raised
    plain = legalize(graph, np.zeros(graph.num_nodes, np.int64), DEVICES, support, max_submodels=9)
    assert not any("forces" in note for note in plain.notes)


def test_the_local_search_scores_against_the_raised_bound():
    graph, support, exp = _case(4)
    cost = _cost(graph, exp)
    refiner = LocalSearchRefiner(cost, graph, support, max_submodels=2)
    assert refiner.bound == 9
    result = refiner.refine(np.ones(graph.num_nodes, np.int64))  # start: everything on the CPU
    device = _devices_of(legalize(graph, result.proposal, DEVICES, support, max_submodels=2), graph)
    compute = np.asarray(graph.role) == NodeRole.COMPUTE
    assert (device[compute & ~exp] == 0).all()  # every Relu back on the NPU, 9 submodels
    assert result.final_ms < 0.5 * result.start_ms


def test_the_milp_bound_is_raised_too():
    pytest.importorskip("scipy")
    from ov_autoplace_lab.optimum.milp import milp_placement

    graph, support, exp = _case(4)
    result = milp_placement(_cost(graph, exp), graph, max_submodels=2, support=support, time_limit=20)
    compute = np.asarray(graph.role) == NodeRole.COMPUTE
    assert (result.placement[compute & ~exp] == 0).all() and result.num_submodels == 9
    assert any("bound raised from 2 to 9" in note for note in result.notes)
