"""List scheduling on the cost model (``search/list_scheduling.py``): the incremental placer HEFT and the
critical-path greedy share prices exactly, HEFT's rank order is topological, the critical path is a heaviest
path. The strategies built on them: ``tests/strategies/test_heuristics.py``."""

from __future__ import annotations

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.search.list_scheduling import IncrementalPlacer, upward_rank
from ov_autoplace_lab.baselines.critical_path import critical_path
from tests.lab.optimum.test_exact_optimum import brute_latency, legal, random_cost, small_graph


def test_incremental_placer_prices_placements_exactly():
    """With Parameters and followers fixed where the legalizer puts them, the running total is the model's latency."""
    graph = small_graph(4, 11)
    cost = random_cost(graph, 3, 4, unsupported=0.0)
    follower = CostTerms(cost, graph).follower  # the greedy leaves these to the legalizer: make them free
    fused_into = np.where(follower | follower[np.maximum(cost.fused_into, 0)], -1, cost.fused_into)
    cost = CostModel.from_dict({**cost.to_dict(), "fused_into": fused_into.tolist(),
                                "compute_ms": np.where(follower[:, None], 0.0, cost.compute_ms).tolist(),
                                "unfused_ms": np.where(follower[:, None], 0.0, cost.unfused_ms).tolist()})
    terms = CostTerms(cost, graph)
    assert terms.follower.any() and terms.parameter.any()
    rng = np.random.default_rng(4)
    for _ in range(10):
        device, _ = legal(graph, rng.integers(0, 3, graph.num_nodes), cost.devices)
        placer = IncrementalPlacer(terms)
        for i in rng.permutation(np.flatnonzero(terms.active)).tolist():  # any order
            placer.place(i, int(device[i]))
        anchors_free = brute_latency(cost, graph, device, memory=False) - _anchor_transfers(terms, device)
        assert abs(placer.total_ms - anchors_free) < 1e-9


def _anchor_transfers(terms, device):
    """Transfers out of Parameters, which the greedy leaves to the legalizer."""
    total = 0.0
    for s, nbytes, consumers in terms.outputs:
        if terms.parameter[s]:
            receivers = {int(device[c]) for c in consumers} - {int(device[s])}
            total += sum(terms.link_ms(nbytes)[device[s], b] for b in receivers)
    return total


def test_heft_rank_order_is_topological():
    graph = small_graph(5, 11)
    terms = CostTerms(random_cost(graph, 2, 5), graph)
    rank = upward_rank(terms)
    for s, _, consumers in terms.outputs:
        for c in consumers:
            if terms.active[s] and terms.active[c]:
                assert rank[s] > rank[c]


def test_critical_path_is_a_heaviest_path():
    graph = small_graph(6, 11)
    terms = CostTerms(random_cost(graph, 2, 6, unsupported=0.0), graph)
    path = critical_path(terms)
    edges = {(s, c) for s, _, cs in terms.outputs for c in cs}
    assert all((a, b) in edges for a, b in zip(path, path[1:]))
    weight = terms.compute_cost.min(axis=1)
    assert weight[path].sum() >= weight[terms.active].max()
