"""The vectorised simulator: a hand-computed latency, agreement with a plain-Python
re-implementation of CostModel's execution model and with ``legalize``, memory checks."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.sim_costs import post_op_fusion
from ov_autoplace.costmodel.simulator import Simulator, memory_ok
from ov_autoplace.costmodel.anchors import AnchorFixer
from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.placement.legalizer import constant_subgraph_mask, legalize
from ov_autoplace.placement.submodels import count_islands
from ov_autoplace.model.prepare import prepare_model
from tests.costmodel.test_anchors import _legalized  # the reference the anchor fixer is checked against
from tests import synthetic_graphs as sg


def _tiny_model() -> ov.Model:
    """x -> A=MatMul(x, W) -> B=Relu(A) -> C=Multiply(B, c) -> E=Add(C, A) -> Result: A feeds B and E."""
    x = ops.parameter([1, 4], np.float32, name="x")
    a = ops.matmul(x, ops.constant(np.eye(4, dtype=np.float32)), False, False)
    a.set_friendly_name("A")
    b = ops.relu(a)
    b.set_friendly_name("B")
    c = ops.multiply(b, ops.constant(np.float32(2.0)))
    c.set_friendly_name("C")
    e = ops.add(c, a)
    e.set_friendly_name("E")
    return ov.Model([e], [x], "tiny")


def _cost(graph, compute, unfused, fused_into, *, capacity=(np.inf, np.inf), memory=None) -> CostModel:
    n = graph.num_nodes
    return CostModel(
        devices=("D0", "D1"), node_names=graph.names, compute_ms=compute, unfused_ms=unfused, fused_into=fused_into,
        link_latency_ms=np.array([[0.0, 0.5], [0.7, 0.0]]), link_ms_per_byte=np.array([[0.0, 1e-3], [2e-3, 0.0]]),
        submodel_overhead_ms=np.array([0.1, 0.2]),
        node_memory_bytes=np.zeros(n, np.int64) if memory is None else memory,
        device_memory_bytes=np.array(capacity, np.float64), simulated=True, source="hand-made")


def _random_cost(graph, num_devices, rng, *, fusion=True) -> CostModel:
    n = graph.num_nodes
    compute = rng.uniform(0.1, 1.0, (n, num_devices))
    link = rng.uniform(0.1, 1.0, (num_devices, num_devices))
    np.fill_diagonal(link, 0.0)
    per_byte = rng.uniform(1e-6, 1e-5, (num_devices, num_devices))
    np.fill_diagonal(per_byte, 0.0)
    return CostModel(
        devices=tuple(f"D{d}" for d in range(num_devices)), node_names=graph.names, compute_ms=compute,
        unfused_ms=compute + rng.uniform(0.1, 1.0, (n, num_devices)),
        fused_into=post_op_fusion(graph) if fusion else np.full(n, -1, np.int64),
        link_latency_ms=link, link_ms_per_byte=per_byte, submodel_overhead_ms=rng.uniform(0.1, 1.0, num_devices),
        node_memory_bytes=rng.integers(0, 1000, n), device_memory_bytes=np.full(num_devices, np.inf),
        simulated=True, source="random")


def _reference_latency(cost: CostModel, graph, device: np.ndarray) -> float:
    """CostModel's execution model written out node by node and edge by edge."""
    role, op_src, op_dst = graph.role, graph.edge_src.tolist(), graph.edge_dst.tolist()
    follower = constant_subgraph_mask(graph)
    loses_fusion = set()
    for i, j in enumerate(cost.fused_into.tolist()):
        if j >= 0 and role[i] == NodeRole.COMPUTE and device[i] != device[j]:
            loses_fusion |= {i, j}
    total = 0.0
    for i in range(graph.num_nodes):
        if role[i] == NodeRole.COMPUTE:
            table = cost.unfused_ms if i in loses_fusion else cost.compute_ms
            total += table[i, device[i]]
    sent = set()
    for e, (s, t) in enumerate(zip(op_src, op_dst)):
        if follower[s] or role[t] == NodeRole.RESULT or device[s] == device[t]:
            continue
        key = (s, int(graph.edge_src_port[e]), int(device[t]))
        if key not in sent:
            sent.add(key)
            total += cost.transfer_ms(max(int(graph.edge_bytes[e]), 0), int(device[s]), int(device[t]))
    active = (role == NodeRole.COMPUTE) & ~follower
    for d in range(len(cost.devices)):
        # islands of device d = islands of the placement restricted to d's active nodes
        total += cost.submodel_overhead_ms[d] * count_islands(graph, device, active & (device == d))
    return total


def test_hand_computed_latency():
    graph = extract_graph(prepare_model(_tiny_model()))
    idx = {name: graph.names.index(name) for name in "ABCE"}
    n = graph.num_nodes
    compute, unfused = np.zeros((n, 2)), np.zeros((n, 2))
    for k, name in enumerate("ABCE"):
        compute[idx[name]] = [1.0 + k, 10.0 + k]
        unfused[idx[name]] = [100.0 + k, 1000.0 + k]
    fused_into = np.full(n, -1, np.int64)
    fused_into[idx["B"]] = idx["A"]
    cost = _cost(graph, compute, unfused, fused_into)
    proposal = np.ones(n, np.int64)
    proposal[idx["A"]] = 0
    placement = legalize(graph, proposal, ("D0", "D1"), np.ones((n, 2), bool))
    device = np.array([cost.devices.index(placement.assignment[name]) for name in graph.names])
    # A on D0 and B on D1: the fused pair is cut, both run unfused; C and E run as profiled on D1.
    compute_ms = unfused[idx["A"], 0] + unfused[idx["B"], 1] + compute[idx["C"], 1] + compute[idx["E"], 1]
    # A's output (1x4 f32 = 16 bytes) goes to D1 once although B and E both read it there.
    transfer_ms = 0.5 + 16 * 1e-3
    overhead_ms = 0.1 + 0.2  # {A} on D0, {B, C, E} on D1
    sim = Simulator(cost, graph)
    assert sim(device) == pytest.approx(compute_ms + transfer_ms + overhead_ms)
    assert Simulator(cost, graph)(device) == pytest.approx(compute_ms + transfer_ms + overhead_ms)
    parts = sim.breakdown(device)
    assert (parts.cut_edges, parts.transfer_bytes, parts.num_submodels) == (1, 16, 2)
    assert parts.compute_ms == pytest.approx(compute_ms) and parts.overhead_ms == pytest.approx(overhead_ms)
    assert parts.submodels_per_device == {"D0": 1, "D1": 1}
    assert "simulated (hand-made)" in parts.summary()
    # All on D1: fused costs, no transfer, one submodel.
    together = AnchorFixer(graph, 2)(np.ones(n, np.int64))
    assert sim(together) == pytest.approx(sum(compute[idx[k], 1] for k in "ABCE") + 0.2)


@pytest.mark.parametrize("name", sorted(sg.PLACEMENT_GRAPHS))
@pytest.mark.parametrize("num_devices", [2, 3])
def test_batch_matches_reference_and_loop(name, num_devices):
    graph = extract_graph(prepare_model(sg.PLACEMENT_GRAPHS[name]()))
    rng = np.random.default_rng(7)
    cost = _random_cost(graph, num_devices, rng)
    assert (cost.fused_into >= 0).any()  # the fusion rule must be exercised
    # mix fragmented and nearly single-device placements
    bias = rng.dirichlet(np.full(num_devices, 0.3), size=40)
    proposals = np.array([rng.choice(num_devices, graph.num_nodes, p=b) for b in bias])
    placements = AnchorFixer(graph, num_devices)(proposals)
    sim = Simulator(cost, graph)
    batch = sim(placements)
    assert batch.shape == (40,)
    np.testing.assert_allclose(batch, [sim(p) for p in placements], rtol=1e-12)
    np.testing.assert_allclose(batch, [_reference_latency(cost, graph, p) for p in placements], rtol=1e-9)


@pytest.mark.parametrize("name", sorted(sg.PLACEMENT_GRAPHS))
def test_submodels_agree_with_legalize(name):
    graph = extract_graph(prepare_model(sg.PLACEMENT_GRAPHS[name]()))
    rng = np.random.default_rng(3)
    sim = Simulator(_random_cost(graph, 3, rng), graph)
    placements = AnchorFixer(graph, 3)(rng.integers(0, 3, (60, graph.num_nodes)))
    counts = sim.num_submodels(placements)
    assert counts.tolist() == [count_islands(graph, p, sim.active) for p in placements]
    assert sim.num_submodels(AnchorFixer(graph, 3)(np.zeros(graph.num_nodes, np.int64))) == 1


def test_memory_ok():
    graph = extract_graph(prepare_model(_tiny_model()))
    n, idx = graph.num_nodes, {name: graph.names.index(name) for name in "ABCE"}
    memory = np.zeros(n, np.int64)
    memory[idx["A"]] = 64  # the 4x4 f32 weight read by A
    placement = AnchorFixer(graph, 2)(np.where(np.arange(n) == idx["A"], 0, 1))
    resident_d0 = 64 + 16  # A's weight + the largest activation on D0 (x and A: 16 bytes each)
    zeros = np.zeros((n, 2))
    fits = _cost(graph, zeros, zeros, np.full(n, -1), capacity=(resident_d0, 16), memory=memory)
    tight = _cost(graph, zeros, zeros, np.full(n, -1), capacity=(resident_d0 - 1, 16), memory=memory)
    assert memory_ok(fits, graph, placement) is True
    assert memory_ok(tight, graph, placement) is False
    both = np.stack([placement, AnchorFixer(graph, 2)(np.ones(n, np.int64))])
    assert Simulator(tight, graph).memory_ok(both).tolist() == [False, False]  # D1 alone needs 64 + 16 > 16
    assert Simulator(fits, graph).resident_bytes(both).tolist() == [[80.0, 16.0], [0.0, 80.0]]
    # feasible_ms: the latency where the placement fits, inf where it does not; a float for one placement
    sim = Simulator(fits, graph)
    assert sim.feasible_ms(placement) == sim(placement) and isinstance(sim.feasible_ms(placement), float)
    assert sim.feasible_ms(both).tolist() == [sim(placement), np.inf]  # `both[1]`: D1 holds 80 bytes > 16
    assert Simulator(tight, graph).feasible_ms(placement) == np.inf


def test_rejects_bad_input():
    graph = extract_graph(prepare_model(_tiny_model()))
    sim = Simulator(_random_cost(graph, 2, np.random.default_rng(0)), graph)
    with pytest.raises(PlacementError, match="shape"):
        sim(np.zeros(graph.num_nodes + 1, np.int64))
    with pytest.raises(PlacementError, match="expected 0..1"):
        sim(np.full(graph.num_nodes, 2))
    other = extract_graph(prepare_model(sg.residual()))
    with pytest.raises(ValueError, match="prepared model"):
        Simulator(_random_cost(other, 2, np.random.default_rng(0)), graph)


@pytest.mark.slow
@pytest.mark.zoo
def test_zoo_agrees_with_legalize(zoo_model):
    _, model = zoo_model
    graph = extract_graph(prepare_model(model))
    rng = np.random.default_rng(5)
    proposals = rng.integers(0, 2, (8, graph.num_nodes))
    fixed = AnchorFixer(graph, 2)(proposals)
    sim = Simulator(_random_cost(graph, 2, rng), graph)
    counts = sim.num_submodels(fixed)
    for proposal, row, count in zip(proposals, fixed, counts):
        np.testing.assert_array_equal(row, _legalized(graph, proposal, 2, np.ones((graph.num_nodes, 2), bool)))
        assert count == count_islands(graph, row, sim.active)
    np.testing.assert_allclose(sim(fixed[:3]), [_reference_latency(sim.cost, graph, p) for p in fixed[:3]], rtol=1e-9)


def test_latency_and_submodels_match_the_separate_calls():
    graph = extract_graph(prepare_model(sg.attention_like()))
    cost = _random_cost(graph, 3, np.random.default_rng(7))
    placements = AnchorFixer(graph, 3)(np.random.default_rng(8).integers(0, 3, (16, graph.num_nodes)))
    simulator = Simulator(cost, graph)
    latency, submodels = simulator.latency_and_submodels(placements)
    np.testing.assert_allclose(latency, simulator(placements))
    assert np.array_equal(submodels, simulator.num_submodels(placements))
