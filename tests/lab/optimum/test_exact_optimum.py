"""Exact optima (min cut, MILP) against brute-force enumeration on small random graphs.

The brute force here is an independent, loop-by-loop reading of the
CostModel docstring (anchors placed by the real ``legalize()``); it is also
checked against the batched simulator and against ``CostTerms``, so the three
implementations of the execution model agree before the optima are judged.
"""

from __future__ import annotations

import itertools
from collections import deque

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace_lab.optimum.milp import milp_placement
from ov_autoplace_lab.optimum.exact_optimum import min_cut_placement
from ov_autoplace_lab.optimum.strategy import OptimumStrategy
from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import GraphArrays, NodeRole, extract_graph
from ov_autoplace.graph.components import component_roots
from ov_autoplace.placement.legalizer import constant_subgraph_mask, legalize
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.placement.submodels import count_islands

REL = 1e-6
SHAPE = [2, 4]


# ----------------------------------------------------------------- graphs and costs
def random_dag(seed: int, num_ops: int) -> ov.Model:
    """A random DAG of elementwise ops over [2, 4] tensors, with a Split (two outputs, one of them read
    twice by one consumer), Constants with weights, and a Convert of an f16 Constant (a constant-subgraph
    compute node, kept because the model is not prepared)."""
    rng = np.random.default_rng(seed)
    params = [ops.parameter(SHAPE, np.float32, name=f"in{k}") for k in range(2)]
    outs = [p.output(0) for p in params]
    follower = ops.convert(ops.constant(rng.standard_normal(SHAPE).astype(np.float16)), np.float32)
    outs.append(ops.multiply(outs[0], follower).output(0))

    def pick():
        return outs[int(rng.integers(max(0, len(outs) - 4), len(outs)))]

    made = 0
    while made < num_ops:
        kind = rng.choice(["relu", "add", "mul", "split"], p=[0.3, 0.35, 0.2, 0.15])
        if kind == "relu":
            outs.append(ops.relu(pick()).output(0))
        elif kind == "add":
            outs.append(ops.add(pick(), pick()).output(0))
        elif kind == "mul":
            weight = follower if rng.random() < 0.4 else ops.constant(rng.standard_normal(SHAPE).astype(np.float32))
            outs.append(ops.multiply(pick(), weight).output(0))
        else:
            halves = ops.split(pick(), ops.constant(np.int64(0)), 2)
            outs.append(ops.concat([halves.output(1), halves.output(0)], 0).output(0))
            doubled = ops.add(halves.output(0), halves.output(0))  # [1, 4]: two ports read one output
            outs.append(ops.add(doubled, pick()).output(0))  # broadcast back to [2, 4]
            made += 3
        made += 1
    results = [ops.result(o) for o in outs if not o.get_target_inputs()]
    return ov.Model(results, params, f"random_dag_{seed}")


def random_cost(graph: GraphArrays, num_devices: int, seed: int, *, fused: bool = True, overhead: bool = True,
                memory: bool = False, unsupported: float = 0.1) -> CostModel:
    rng = np.random.default_rng(seed)
    n = graph.num_nodes
    compute = graph.role == NodeRole.COMPUTE
    ms = np.where(compute[:, None], rng.uniform(0.1, 2.0, (n, num_devices)), 0.0)
    for i in np.flatnonzero(compute):
        if rng.random() < unsupported:
            ms[i, rng.integers(num_devices)] = np.inf  # one device cannot run it
    unfused = ms.copy()
    fused_into = np.full(n, -1, dtype=np.int64)
    if fused:
        for s, t in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()):
            if compute[s] and compute[t] and fused_into[t] < 0 and fused_into[s] != t and rng.random() < 0.4:
                fused_into[t] = s
                unfused[t] = ms[t] * rng.uniform(1.0, 2.0)
                ms[t] *= 0.3
                unfused[s] = np.maximum(unfused[s], ms[s] * rng.uniform(1.0, 1.3))
    lat = rng.uniform(0.05, 0.5, (num_devices, num_devices))
    per_byte = rng.uniform(0.0, 0.01, (num_devices, num_devices))
    np.fill_diagonal(lat, 0.0), np.fill_diagonal(per_byte, 0.0)
    weights = np.where(graph.role == NodeRole.CONSTANT, np.maximum(graph.out_bytes, 0), 0)
    weights = weights + np.where(compute, rng.integers(0, 64, n), 0)
    caps = np.full(num_devices, np.inf)
    if memory:  # every device but the last holds only part of the weights; the last holds everything
        caps[:-1] = rng.uniform(0.3, 0.7, num_devices - 1) * weights.sum() + 32
    return CostModel(
        devices=tuple(f"D{d}" for d in range(num_devices)), node_names=tuple(graph.names), compute_ms=ms,
        unfused_ms=unfused, fused_into=fused_into, link_latency_ms=lat, link_ms_per_byte=per_byte,
        submodel_overhead_ms=rng.uniform(0.05, 0.5, num_devices) if overhead else np.zeros(num_devices),
        node_memory_bytes=weights.astype(np.int64), device_memory_bytes=caps, simulated=True, source="test")


def small_graph(seed: int, max_active: int) -> GraphArrays:
    """A random DAG (not prepared: its f16 Convert stays) with at most ``max_active`` active nodes."""
    for num_ops in range(max_active, 2, -1):
        graph = extract_graph(random_dag(seed, num_ops))
        if active_mask(graph).sum() <= max_active:
            return graph
    raise AssertionError("could not build a small enough graph")


def active_mask(graph: GraphArrays) -> np.ndarray:
    compute = graph.role == NodeRole.COMPUTE
    return compute & ~constant_subgraph_mask(graph)


# ----------------------------------------------------------------- brute force
def brute_latency(cost: CostModel, graph: GraphArrays, device: np.ndarray, *, overhead: bool = True,
                  memory: bool = True, clip_fusion: bool = False) -> float:
    """The CostModel docstring, one loop per term, for one full placement."""
    role = graph.role
    compute = role == NodeRole.COMPUTE
    constant_like = constant_subgraph_mask(graph)
    active = compute & ~constant_like
    for i in np.flatnonzero(compute):
        if not np.isfinite(cost.compute_ms[i, device[i]]):
            return np.inf
    split = set()
    for i in np.flatnonzero(compute):
        j = cost.fused_into[i]
        if j >= 0 and compute[j] and device[i] != device[j]:
            split.update((int(i), int(j)))
    total = 0.0
    for i in np.flatnonzero(compute):
        extra = cost.unfused_ms[i, device[i]] - cost.compute_ms[i, device[i]] if i in split else 0.0
        total += cost.compute_ms[i, device[i]] + (max(extra, 0.0) if clip_fusion else extra)
    paid = set()
    for s, t, port, nbytes in zip(graph.edge_src, graph.edge_dst, graph.edge_src_port, graph.edge_bytes):
        if constant_like[s] or role[t] == NodeRole.RESULT or device[s] == device[t]:
            continue
        if (s, port, device[t]) not in paid:
            paid.add((s, port, device[t]))
            total += cost.transfer_ms(max(int(nbytes), 0), int(device[s]), int(device[t]))
    if overhead:
        adjacent = {int(i): set() for i in np.flatnonzero(active)}
        for s, t in zip(graph.edge_src, graph.edge_dst):
            if active[s] and active[t] and device[s] == device[t]:
                adjacent[int(s)].add(int(t)), adjacent[int(t)].add(int(s))
        seen = set()
        for i in adjacent:
            if i in seen:
                continue
            total += cost.submodel_overhead_ms[device[i]]
            queue = deque([i])
            seen.add(i)
            while queue:
                for j in adjacent[queue.popleft()] - seen:
                    seen.add(j), queue.append(j)
    if memory and not brute_memory_ok(cost, graph, device):
        return np.inf
    return total


def brute_memory_ok(cost: CostModel, graph: GraphArrays, device: np.ndarray) -> bool:
    role = graph.role
    active = active_mask(graph)
    used = np.zeros(len(cost.devices))
    largest = np.zeros(len(cost.devices))
    for i in range(graph.num_nodes):
        if role[i] == NodeRole.RESULT:
            continue
        if role[i] == NodeRole.CONSTANT:  # duplicated onto every consumer's device
            holders = {int(device[t]) for s, t in zip(graph.edge_src, graph.edge_dst)
                       if s == i and role[t] != NodeRole.RESULT} or {int(device[i])}
            for d in holders:
                used[d] += cost.node_memory_bytes[i]
        else:
            used[device[i]] += cost.node_memory_bytes[i]
        if active[i] or role[i] == NodeRole.PARAMETER:
            largest[device[i]] = max(largest[device[i]], max(int(graph.out_bytes[i]), 0))
    return bool((used + largest <= cost.device_memory_bytes).all())


def legal(graph: GraphArrays, proposal: np.ndarray, devices, max_submodels=None) -> tuple[np.ndarray, int]:
    support = np.ones((graph.num_nodes, len(devices)), dtype=bool)
    placement = legalize(graph, proposal, devices, support, max_submodels=max_submodels)
    return np.array([devices.index(placement.assignment[n]) for n in graph.names]), placement.num_submodels


def brute_force_optimum(cost: CostModel, graph: GraphArrays, max_submodels: int | None = None) -> float:
    """Min over every device choice of the active nodes, anchors placed by legalize()."""
    act = np.flatnonzero(active_mask(graph))
    best = np.inf
    for choice in itertools.product(range(len(cost.devices)), repeat=act.size):
        proposal = np.zeros(graph.num_nodes, dtype=np.int64)
        proposal[act] = choice
        device, _ = legal(graph, proposal, cost.devices)
        if max_submodels is not None and (joined_parts(graph, device) > max_submodels
                                          or 1 + switch_depth(graph, device) > max_submodels):
            continue  # the MILP bounds two lower bounds of HETERO's count: parts joined through shared inputs, paths
        best = min(best, brute_latency(cost, graph, device))
    return best


def joined_parts(graph: GraphArrays, device: np.ndarray) -> int:
    """Same-device parts of the active nodes, joined also through a follower on their device and through any
    Constant or Parameter (on every device, whatever its own): the count the MILP bounds, never above HETERO's."""
    active, result = active_mask(graph), graph.role == NodeRole.RESULT
    anywhere = (graph.role == NodeRole.CONSTANT) | (graph.role == NodeRole.PARAMETER)
    src, dst, total = graph.edge_src.astype(np.int64), graph.edge_dst.astype(np.int64), 0
    for d in range(int(device.max()) + 1):
        inside = ~result & (anywhere | (device == d))
        kept = inside[src] & inside[dst]
        part = component_roots(graph.num_nodes, src[kept], dst[kept])
        total += np.unique(part[active & (device == d)]).size
    return total


def switch_depth(graph: GraphArrays, device: np.ndarray) -> int:
    """The most device changes along any path of active nodes (nodes are in topological order)."""
    active, depth = active_mask(graph), np.zeros(graph.num_nodes, dtype=np.int64)
    for s, t in sorted(zip(graph.edge_src.tolist(), graph.edge_dst.tolist()), key=lambda e: e[1]):
        if active[s] and active[t]:
            depth[t] = max(depth[t], depth[s] + int(device[s] != device[t]))
    return int(depth.max(initial=0))


def brute_force_min_cut_objective(cost: CostModel, graph: GraphArrays) -> float:
    """Min of compute + transfers (+ clipped lost fusion) with active nodes, Parameters and followers all free."""
    compute = graph.role == NodeRole.COMPUTE
    free = np.flatnonzero(compute | (graph.role == NodeRole.PARAMETER))
    best = np.inf
    for choice in itertools.product(range(2), repeat=free.size):
        device = np.zeros(graph.num_nodes, dtype=np.int64)
        device[free] = choice
        best = min(best, brute_latency(cost, graph, device, overhead=False, memory=False, clip_fusion=True))
    return best


def assert_close(a: float, b: float) -> None:
    assert abs(a - b) <= REL * max(1.0, abs(b)), (a, b)


# ----------------------------------------------------------------- the three models agree
@pytest.mark.parametrize("seed", range(4))
def test_cost_terms_and_simulator_agree_with_brute_force(seed):
    graph = small_graph(seed, 12)
    cost = random_cost(graph, 3, seed, memory=True, unsupported=0.0)
    terms = CostTerms(cost, graph)
    rng = np.random.default_rng(seed)
    try:
        from ov_autoplace.costmodel.simulator import Simulator
        from ov_autoplace.costmodel.anchors import AnchorFixer
    except ImportError:
        Simulator = AnchorFixer = None
    feasible = 0
    proposals = [np.full(graph.num_nodes, 2)] + [rng.integers(0, 3, graph.num_nodes) for _ in range(39)]
    for proposal in proposals:  # all on the unbounded device first: that one fits
        device, _ = legal(graph, proposal, cost.devices)
        expected = brute_latency(cost, graph, device, memory=False)
        assert_close(terms.latency_ms(device) if terms.memory_ok(device) else expected, expected)
        assert terms.memory_ok(device) == brute_memory_ok(cost, graph, device)
        feasible += terms.memory_ok(device)
        if Simulator is not None:
            assert_close(Simulator(cost, graph)(device), expected)
            assert Simulator(cost, graph).memory_ok(device) == brute_memory_ok(cost, graph, device)
            assert (AnchorFixer(graph, 3)(device) == device).all()
    assert 0 < feasible < 40  # the capacities bind on some placements and not on others


# ----------------------------------------------------------------- min cut
@pytest.mark.parametrize("seed", range(6))
def test_min_cut_matches_brute_force(seed):
    graph = small_graph(seed, 11)
    cost = random_cost(graph, 2, seed, overhead=False)
    result = min_cut_placement(cost, graph)
    assert_close(result.objective_ms, brute_force_min_cut_objective(cost, graph))
    assert result.optimal and result.method == "min_cut"
    assert_close(result.predicted_ms, brute_latency(cost, graph, result.placement))
    assert (legal(graph, result.placement, cost.devices)[0] == result.placement).all()


def test_min_cut_needs_two_devices():
    graph = small_graph(0, 8)
    with pytest.raises(PlacementError, match="exactly 2 devices"):
        min_cut_placement(random_cost(graph, 3, 0), graph)


# ----------------------------------------------------------------- MILP
@pytest.mark.parametrize("num_devices,seed,memory", [
    (2, 0, False), (2, 1, True), (2, 2, True), (2, 3, False), (3, 4, False), (3, 5, True), (3, 6, True),
])
def test_milp_matches_brute_force_on_the_full_model(num_devices, seed, memory):
    graph = small_graph(seed, 11 if num_devices == 2 else 7)
    cost = random_cost(graph, num_devices, seed, memory=memory)
    result = milp_placement(cost, graph, time_limit=60)
    assert result.optimal
    expected = brute_force_optimum(cost, graph)
    assert_close(result.objective_ms, expected)
    assert_close(brute_latency(cost, graph, result.placement), expected)  # what it returns costs what it says
    assert (legal(graph, result.placement, cost.devices)[0] == result.placement).all()
    if result.simulated_ms is not None:
        assert_close(result.simulated_ms, expected)


@pytest.mark.parametrize("seed", [7, 8])
def test_milp_respects_max_submodels(seed):
    graph = small_graph(seed, 10)
    cost = random_cost(graph, 2, seed, unsupported=0.0, overhead=False)
    cheap_links = {k: (np.asarray(v) * 0.01).tolist() for k, v in cost.to_dict().items() if k.startswith("link_")}
    cost = CostModel.from_dict({**cost.to_dict(), **cheap_links})  # the free optimum fragments
    active = active_mask(graph)
    free = milp_placement(cost, graph, time_limit=60)
    free_islands = count_islands(graph, free.placement, active)
    fewest = count_islands(graph, legal(graph, np.zeros(graph.num_nodes, dtype=np.int64), cost.devices)[0], active)
    bound = max(fewest, free_islands - 2)
    assert bound < free_islands  # the bound binds
    result = milp_placement(cost, graph, time_limit=60, max_submodels=bound)
    assert result.num_submodels <= bound  # HETERO's count, after the legalizer
    assert_close(result.objective_ms, brute_force_optimum(cost, graph, max_submodels=bound))


def test_islands_within_the_bound_whose_hetero_split_is_not_are_not_the_milp_s_answer():
    """a -> b -> c with a -> c as well: b on the other device leaves two islands ({a, c} and {b}), but HETERO's
    submodels form a DAG, so {a, c} is cut in two (3 submodels). Under a bound of 2 that placement is not legal:
    the MILP keeps to placements whose every path changes device at most once, so what it returns is what it
    priced (no merge by the legalizer), and its bound stays below the best legal placement."""
    x = ops.parameter(SHAPE, np.float32, name="x")
    a = ops.relu(x)
    b = ops.tanh(a)
    c = ops.add(a, b)
    graph = extract_graph(ov.Model([ops.result(ops.sigmoid(c))], [x], "cycle"))
    cost = random_cost(graph, 2, 0, fused=False, unsupported=0.0, overhead=False)
    compute = np.asarray(cost.compute_ms).copy()
    finite = np.isfinite(compute) & (compute > 0)
    compute[finite] = np.where(np.nonzero(finite)[1] == 0, 1.0, 3.0)  # every op 1 ms on D0, 3 ms on D1
    compute[graph.names.index(b.get_friendly_name())] = [3.0, 0.1]  # b is much cheaper on D1
    cost = CostModel.from_dict({**cost.to_dict(), "compute_ms": compute.tolist(), "unfused_ms": compute.tolist(),
                                "link_latency_ms": [[0.0, 0.01], [0.01, 0.0]], "link_ms_per_byte": [[0.0, 0.0],
                                                                                                     [0.0, 0.0]]})
    result = milp_placement(cost, graph, time_limit=60, max_submodels=2)
    assert result.optimal and result.num_submodels <= 2
    assert_close(result.objective_ms, result.predicted_ms)  # nothing merged after the solve
    best_legal = min(CostTerms(cost, graph).latency_ms(legal(graph, p, cost.devices, max_submodels=2)[0])
                     for p in _proposals(graph, 2))
    assert_close(result.predicted_ms, best_legal)
    assert result.dual_bound_ms <= best_legal * (1 + 1e-6)


def test_islands_one_shared_parameter_joins_are_one_submodel_within_the_bound():
    """a, b, c each read the Parameter x; a and c are cheap on D0, b on D1. Three islands ({a}, {c}, {b}), but
    HETERO joins {x, a, c} through x: two submodels, legal under a bound of 2 and the best placement there. The
    MILP bounds the parts joined through shared inputs, not the islands, so it finds it (and prices its islands'
    overhead as the cost model does)."""
    x = ops.parameter(SHAPE, np.float32, name="x")
    a, b, c = ops.relu(x), ops.tanh(x), ops.sigmoid(x)
    graph = extract_graph(ov.Model([ops.result(n) for n in (a, b, c)], [x], "shared_input"))
    cost = random_cost(graph, 2, 0, fused=False, unsupported=0.0, overhead=False)
    compute = np.asarray(cost.compute_ms).copy()
    for node, row in ((a, [0.1, 3.0]), (b, [3.0, 0.1]), (c, [0.1, 3.0])):
        compute[graph.names.index(node.get_friendly_name())] = row
    cost = CostModel.from_dict({**cost.to_dict(), "compute_ms": compute.tolist(), "unfused_ms": compute.tolist(),
                                "link_latency_ms": [[0.0, 0.01], [0.01, 0.0]], "link_ms_per_byte": [[0.0, 0.0],
                                                                                                     [0.0, 0.0]]})
    split = np.zeros(graph.num_nodes, dtype=np.int64)
    split[graph.names.index(b.get_friendly_name())] = 1
    device, submodels = legal(graph, split, cost.devices, max_submodels=2)
    assert submodels == 2 and count_islands(graph, device, active_mask(graph)) == 3  # the premise
    result = milp_placement(cost, graph, time_limit=60, max_submodels=2)
    assert result.optimal and (result.placement == device).all()
    assert_close(result.objective_ms, CostTerms(cost, graph).latency_ms(device))


def _proposals(graph: GraphArrays, num_devices: int):
    act = np.flatnonzero(active_mask(graph))
    for choice in itertools.product(range(num_devices), repeat=act.size):
        proposal = np.zeros(graph.num_nodes, dtype=np.int64)
        proposal[act] = choice
        yield proposal


@pytest.mark.parametrize("seed", [3, 7, 11, 19, 23])
def test_the_dual_bound_under_a_submodel_bound_never_exceeds_a_legal_placement_within_it(seed):
    """Every proposal legalized at the bound (HETERO's count within it) costs at least the MILP's dual bound: the
    joined parts and the device-change levels cut away no legal placement, also where a shared Parameter or
    Constant makes one submodel of two islands."""
    graph = small_graph(seed, 8)
    cost = random_cost(graph, 2, seed, unsupported=0.0)
    cheap_links = {k: (np.asarray(v) * 0.01).tolist() for k, v in cost.to_dict().items() if k.startswith("link_")}
    cost = CostModel.from_dict({**cost.to_dict(), **cheap_links})
    terms, legal_rows = CostTerms(cost, graph), []
    for proposal in _proposals(graph, 2):
        device, submodels = legal(graph, proposal, cost.devices, max_submodels=3)
        assert submodels <= 3 and 1 + switch_depth(graph, device) <= submodels  # the levels' premise
        assert joined_parts(graph, device) <= submodels  # the parts' premise
        legal_rows.append(terms.latency_ms(device))
    result = milp_placement(cost, graph, time_limit=60, max_submodels=3)
    assert result.optimal and result.dual_bound_ms <= min(legal_rows) * (1 + 1e-6)


def test_milp_equals_min_cut_when_the_models_coincide():
    """Two devices, no overhead, no memory limit, no constant-subgraph nodes: both solve the same problem."""
    from tests import synthetic_graphs as sg
    from ov_autoplace.model.prepare import prepare_model

    graph = extract_graph(prepare_model(sg.attention_like()))
    cost = random_cost(graph, 2, 11, overhead=False)
    cost = CostModel.from_dict({**cost.to_dict(), "link_latency_ms": [[0, 0.2], [0.2, 0]],
                                "link_ms_per_byte": [[0, 1e-4], [1e-4, 0]]})  # symmetric: anchors cost the same
    cut, milp = min_cut_placement(cost, graph), milp_placement(cost, graph, time_limit=60)
    assert milp.optimal
    assert_close(milp.objective_ms, cut.objective_ms)
    assert_close(cut.predicted_ms, cut.objective_ms)


def test_infeasible_memory_is_reported():
    graph = small_graph(3, 8)
    cost = random_cost(graph, 2, 3)
    cost = CostModel.from_dict({**cost.to_dict(), "device_memory_bytes": [1.0, 1.0]})
    with pytest.raises(PlacementError, match="no solution"):
        milp_placement(cost, graph)


def test_optimum_strategy_proposes_the_milp_optimum():
    graph = small_graph(9, 9)
    cost = random_cost(graph, 2, 9, memory=True)
    context = PlacementContext(graph=graph, devices=cost.devices, support=np.ones((graph.num_nodes, 2), bool))
    strategy = OptimumStrategy(lambda ctx: cost, max_submodels=None)
    proposal = strategy.propose(context)
    device, _ = legal(graph, proposal, cost.devices)
    assert strategy.last_result.method == "milp"
    assert_close(brute_latency(cost, graph, device), brute_force_optimum(cost, graph))


def test_cost_model_for_another_graph_is_rejected():
    graph, other = small_graph(1, 8), small_graph(2, 9)
    with pytest.raises(PlacementError, match="prepared model"):
        milp_placement(random_cost(other, 2, 0), graph)


def test_no_solution_in_time_falls_back_to_the_best_heuristic():
    from tests import synthetic_graphs as sg
    from ov_autoplace.model.prepare import prepare_model
    from ov_autoplace_lab.baselines.critical_path import CriticalPathGreedyStrategy
    from ov_autoplace.strategies.heft import HeftStrategy

    graph = extract_graph(prepare_model(sg.attention_like()))
    cost = random_cost(graph, 3, 0, memory=True)
    result = milp_placement(cost, graph, time_limit=0.0)
    assert not result.optimal and result.status == "time limit, no solution"
    assert (legal(graph, result.placement, cost.devices)[0] == result.placement).all()
    context = PlacementContext(graph=graph, devices=cost.devices, support=np.ones((graph.num_nodes, 3), bool))
    heuristics = [brute_latency(cost, graph, legal(graph, s(cost).propose(context), cost.devices)[0])
                  for s in (HeftStrategy, CriticalPathGreedyStrategy)]
    assert np.isfinite(result.predicted_ms)
    assert_close(result.predicted_ms, min(heuristics))


# ----------------------------------------------------------------- when an optimum counts as proven
def test_proven_rejects_a_4_percent_objective_gap_and_accepts_0_1_percent():
    from ov_autoplace_lab.optimum.exact_optimum import PROVEN_TOLERANCE, proven_optimal

    assert PROVEN_TOLERANCE == 0.005
    # the gap quoted in issue 19: MILP objective 3.570256 != model latency 3.721341 (4.1 %)
    proven, why = proven_optimal(True, 3.570256, 3.721341)
    assert not proven and "4.06 %" in why and "3.570256" in why
    assert proven_optimal(True, 1.001, 1.0)[0]  # 0.1 %
    assert proven_optimal(True, 0.999, 1.0)[0]
    assert not proven_optimal(True, 1.006, 1.0)[0]  # just beyond 0.5 %


def test_a_milp_stopped_at_its_time_limit_is_never_proven_even_with_a_zero_gap():
    from ov_autoplace_lab.optimum.exact_optimum import proven_optimal

    proven, why = proven_optimal(False, 2.0, 2.0)
    assert not proven and "time limit" in why
    assert not proven_optimal(True, 2.0, None)[0]  # no finite simulated latency to compare with


def test_a_solved_milp_result_is_proven_when_objective_and_simulator_agree():
    model = random_dag(3, 7)
    graph = extract_graph(model)
    cost = random_cost(graph, 3, 2, memory=False)
    result = milp_placement(cost, graph, time_limit=30.0)
    assert result.optimal and result.simulated_ms is not None
    assert result.proven  # the exact formulation on a small graph: objective == simulated latency


# ----------------------------------------------------------------- warm start and dual bound
def test_a_warm_started_milp_keeps_the_start_as_incumbent_and_bounds_it():
    """Started from a placement, the MILP never returns worse than it, and HiGHS's dual bound is a lower bound."""
    from tests import synthetic_graphs as sg
    from ov_autoplace.model.prepare import prepare_model

    graph = extract_graph(prepare_model(sg.attention_like()))
    cost = random_cost(graph, 3, 0, memory=True)
    optimum = milp_placement(cost, graph, time_limit=60)
    assert optimum.optimal and optimum.dual_bound_ms is not None
    assert optimum.dual_bound_ms <= optimum.objective_ms * (1 + 1e-6)
    warm = milp_placement(cost, graph, time_limit=30, start=optimum.placement)
    assert any("HiGHS accepted it" in n for n in warm.notes)
    assert_close(warm.predicted_ms, optimum.predicted_ms)
    assert warm.dual_bound_ms <= warm.predicted_ms * (1 + 1e-6)
    # an infeasible start (here: over a memory capacity) is refused, and the solve goes on from scratch
    rng = np.random.default_rng(0)
    bad = legal(graph, rng.integers(0, 3, graph.num_nodes), cost.devices)[0]
    assert not np.isfinite(brute_latency(cost, graph, bad))
    again = milp_placement(cost, graph, time_limit=60, start=bad)
    assert any("HiGHS refused it" in n for n in again.notes) and again.optimal
    assert_close(again.predicted_ms, optimum.predicted_ms)
    # another HiGHS seed takes another search path to the same optimum; a seed needs the warm start's HiGHS
    seeded = milp_placement(cost, graph, time_limit=30, start=optimum.placement, random_seed=7)
    assert seeded.optimal and seeded.dual_bound_ms <= optimum.objective_ms * (1 + 1e-6)
    assert_close(seeded.predicted_ms, optimum.predicted_ms)
    with pytest.raises(ValueError, match="random_seed needs a warm start"):
        milp_placement(cost, graph, time_limit=30, random_seed=7)


@pytest.mark.parametrize("seed", [1, 5])
def test_the_dual_bound_never_exceeds_the_brute_force_optimum(seed):
    graph = small_graph(seed, 9 if seed == 1 else 7)
    cost = random_cost(graph, 2 if seed == 1 else 3, seed, memory=True)
    result = milp_placement(cost, graph, time_limit=60)
    assert result.optimal and result.dual_bound_ms <= brute_force_optimum(cost, graph) * (1 + 1e-6)
