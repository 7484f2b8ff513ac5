"""The cost-model local search: never worse than its input, support and pins respected, deterministic,
and it finds the split a one-device proposal misses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.search.local_search import LocalSearchRefiner
from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.placement.legalizer import Pin, legalize
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg
from tests.lab.optimum.test_exact_optimum import active_mask, random_cost, random_dag


def refine_placement(cost, graph, proposal, support=None, **options):
    """One refinement, as the strategies run it (``options``: the refiner's keyword arguments)."""
    return LocalSearchRefiner(cost, graph, support, **options).refine(proposal)


def _legal_ms(cost, graph, proposal, support=None, pins=(), max_submodels=8) -> float:
    support = np.ones((graph.num_nodes, len(cost.devices)), bool) if support is None else support
    terms = CostTerms(cost, graph, support)
    # the refiner's legalize() contract: where the node can run and the cost model can price it
    placement = legalize(graph, np.asarray(proposal, np.int64), cost.devices, terms.allowed,
                         pins=pins, max_submodels=max_submodels)
    device = np.array([cost.devices.index(placement.assignment[n]) for n in graph.names])
    return terms.latency_ms(device)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("num_devices", [2, 3])
def test_never_worse_than_its_input_and_only_where_nodes_can_run(seed, num_devices):
    graph = extract_graph(random_dag(seed, 24))
    cost = random_cost(graph, num_devices, seed, memory=seed % 2 == 1)
    rng = np.random.default_rng(seed)
    support = rng.random((graph.num_nodes, num_devices)) > 0.15
    support[:, 0] = True  # every node can run somewhere
    for start in (np.zeros(graph.num_nodes, np.int64), rng.integers(0, num_devices, graph.num_nodes)):
        result = refine_placement(cost, graph, start, support, max_submodels=4, max_evaluations=3000)
        before = _legal_ms(cost, graph, start, support, max_submodels=4)
        after = _legal_ms(cost, graph, result.proposal, support, max_submodels=4)
        assert after <= before + 1e-9
        assert result.start_ms == pytest.approx(before) and result.final_ms == pytest.approx(after)
        moved = np.flatnonzero(active_mask(graph) & (result.proposal != start))  # the input is kept as given
        allowed = support & np.isfinite(cost.compute_ms)
        assert allowed[moved, result.proposal[moved]].all()


def test_pinned_nodes_never_move():
    graph = extract_graph(random_dag(3, 24))
    cost = random_cost(graph, 2, 3, unsupported=0.0)
    active = np.flatnonzero(active_mask(graph))
    pinned = [graph.names[i] for i in active[::4]]
    pins = [Pin("D1", name=n) for n in pinned]
    start = np.zeros(graph.num_nodes, np.int64)
    result = refine_placement(cost, graph, start, pins=pins, max_submodels=None)
    index = {n: i for i, n in enumerate(graph.names)}
    assert all(result.proposal[index[n]] == 1 for n in pinned)
    assert _legal_ms(cost, graph, result.proposal, pins=pins, max_submodels=None) <= \
        _legal_ms(cost, graph, start, pins=pins, max_submodels=None) + 1e-9


def test_deterministic():
    graph = extract_graph(random_dag(5, 30))
    cost = random_cost(graph, 3, 5)
    start = np.random.default_rng(0).integers(0, 3, graph.num_nodes)
    a = refine_placement(cost, graph, start)
    b = LocalSearchRefiner(cost, graph).refine(start)
    assert np.array_equal(a.proposal, b.proposal) and a.final_ms == b.final_ms and a.evaluations == b.evaluations


def _split_pays_cost(graph) -> CostModel:
    """Device 0 runs everything at 1 ms a node except the middle third of the chain, which costs it 10 ms and
    device 1 0.1 ms; device 1 is slow elsewhere (3 ms). Cheap links: one region on device 1 pays."""
    n = graph.num_nodes
    compute = graph.role == NodeRole.COMPUTE
    active = np.flatnonzero(active_mask(graph))
    ms = np.zeros((n, 2))
    ms[compute] = [1.0, 3.0]
    middle = active[len(active) // 3: 2 * len(active) // 3]
    ms[middle] = [10.0, 0.1]
    return CostModel(devices=("D0", "D1"), node_names=tuple(graph.names), compute_ms=ms, unfused_ms=ms.copy(),
                     fused_into=np.full(n, -1, np.int64), link_latency_ms=np.array([[0.0, 0.05], [0.05, 0.0]]),
                     link_ms_per_byte=np.array([[0.0, 1e-6], [1e-6, 0.0]]), submodel_overhead_ms=np.array([0.1, 0.1]),
                     node_memory_bytes=np.zeros(n, np.int64), device_memory_bytes=np.full(2, np.inf),
                     simulated=True, source="test: a split pays")


def test_finds_the_split_a_one_device_proposal_misses():
    graph = extract_graph(prepare_model(sg.long_chain(12)))
    cost = _split_pays_cost(graph)
    singles = [_legal_ms(cost, graph, np.full(graph.num_nodes, d)) for d in range(2)]
    result = refine_placement(cost, graph, np.zeros(graph.num_nodes, np.int64))  # what a one-device policy says
    after = _legal_ms(cost, graph, result.proposal)
    assert result.improved and after < 0.7 * min(singles)
    active = active_mask(graph)
    assert set(np.unique(result.proposal[active]).tolist()) == {0, 1}
    # the middle third (where device 1 is 100x faster) ended on device 1
    middle = np.flatnonzero(cost.compute_ms[:, 0] == 10.0)
    assert (result.proposal[middle] == 1).all()


_WITHOUT_SCIPY = """
import sys
class NoScipy:
    def find_spec(self, name, path=None, target=None):
        if name == "scipy" or name.startswith("scipy."):
            raise ImportError("scipy is blocked in this test")
sys.meta_path.insert(0, NoScipy())
import numpy as np
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.strategies.registry import make_strategy
from tests import synthetic_graphs as sg
from tests.search.test_local_search import _split_pays_cost
graph = extract_graph(prepare_model(sg.long_chain(12)))
from ov_autoplace.search.local_search import LocalSearchRefiner
result = LocalSearchRefiner(_split_pays_cost(graph), graph).refine(np.zeros(graph.num_nodes, np.int64))
assert make_strategy("hsdag_local_search").refine
print(result.improved, result.stopped, any(m.startswith("scipy") for m in sys.modules))
"""


def test_runs_without_scipy():
    """The runtime install has no scipy: the search (and the registry strategy built on it) must not need it."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", _WITHOUT_SCIPY], cwd=root, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "converged", "False"]


def test_respects_the_submodel_bound_and_the_budget():
    graph = extract_graph(prepare_model(sg.long_chain(12)))
    cost = _split_pays_cost(graph)
    result = refine_placement(cost, graph, np.zeros(graph.num_nodes, np.int64), max_submodels=1)
    assert np.unique(result.proposal[active_mask(graph)]).size == 1  # one submodel allowed: one device
    assert result.final_ms == pytest.approx(min(_legal_ms(cost, graph, np.full(graph.num_nodes, d), max_submodels=1)
                                                for d in range(2)))
    capped = refine_placement(cost, graph, np.zeros(graph.num_nodes, np.int64), max_evaluations=5)
    assert capped.evaluations <= 5 and capped.stopped == "evaluations"
    timed = refine_placement(cost, graph, np.zeros(graph.num_nodes, np.int64), max_seconds=0.0)
    assert timed.stopped == "seconds" and timed.final_ms <= timed.start_ms


def test_infeasible_start_reaches_a_placement_that_fits():
    """A model too big for the fast device alone: the policy's one-device proposal cannot run (inf); the local
    search moves part of it until memory fits."""
    graph = extract_graph(prepare_model(sg.long_chain(12)))
    cost = _split_pays_cost(graph)
    weights = np.where(graph.role == NodeRole.COMPUTE, 100, 0).astype(np.int64)
    caps = np.array([0.6 * weights.sum(), np.inf])
    cost = CostModel(**{**cost.__dict__, "node_memory_bytes": weights, "device_memory_bytes": caps})
    result = refine_placement(cost, graph, np.zeros(graph.num_nodes, np.int64))
    assert result.start_ms == np.inf and np.isfinite(result.final_ms)
