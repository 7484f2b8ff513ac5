"""Placeto baseline: budget, legality, determinism, the sign of its update, and more than two devices."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ov_autoplace_lab.baselines.placeto import (
    PlacetoGraph,
    PlacetoPolicy,
    PlacetoSearch,
    group_topological_order,
    keep_bias_for,
    parallel_matrix,
)
from ov_autoplace_lab.baselines.search import run_search
from ov_autoplace.policy.coarsen import Coarsening
from ov_autoplace_lab.training import SimEnv
from tests.policy import conftest as policy_conftest
from tests.lab.training.conftest import sim_env
from tests.stand_in_costs import stand_in_cost_model

synthetic_prepared = policy_conftest.synthetic_prepared  # the session fixture, visible to this module


@pytest.fixture(autouse=True)
def one_thread():
    """Tests that call the policy outside ``explore`` run it on one thread too (tiny tensors)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def crafted_env(synthetic_prepared, compute_of_group, *, links: bool = True) -> SimEnv:
    """attention_like on (CPU, CPUF) with ``compute_of_group(G) -> ms [G, 2]`` spread over each group's
    compute nodes (``links=False``: free transfers and submodels, so latency is the compute sum)."""
    _, graph = synthetic_prepared["attention_like"]
    cost = stand_in_cost_model(graph, ("CPU", "CPUF"))
    g = PlacetoGraph(SimEnv(graph, cost))
    per_group = compute_of_group(g.num_groups)
    compute = cost.compute_ms > 0
    members = np.maximum(np.bincount(g.group_of_node, weights=compute[:, 0], minlength=g.num_groups), 1)
    ms = np.where(compute, (per_group / members[:, None])[g.group_of_node], 0.0)
    changes = {"compute_ms": ms, "unfused_ms": ms.copy()}
    if not links:
        changes.update(link_latency_ms=np.zeros((2, 2)), link_ms_per_byte=np.zeros((2, 2)),
                       submodel_overhead_ms=np.zeros(2))
    return SimEnv(graph, dataclasses.replace(cost, **changes), name="crafted")


def device0_probability(search: PlacetoSearch, policy: PlacetoPolicy, graph: PlacetoGraph) -> float:
    """Mean over groups of p(device 0) with everything on device 0 and that group the one being placed."""
    g = graph.num_groups
    placement = np.zeros(g, dtype=np.int64)
    states = np.stack([graph.features(placement, np.eye(g, dtype=np.float32)[k], np.zeros(g, np.float32))
                       for k in range(g)])
    with torch.no_grad():
        probs = torch.softmax(search.logits(policy, graph, states, np.tile(placement, (g, 1))), -1)
    return float(probs[torch.arange(g), torch.arange(g), 0].mean())


@pytest.mark.parametrize("budget", [1, 10])
def test_budget_is_respected_and_the_best_row_is_legal(synthetic_prepared, budget):
    env = sim_env(synthetic_prepared, "residual")
    result = run_search(PlacetoSearch(), env, budget_samples=budget, seed=3)
    assert 1 <= result.evaluated <= budget and env.num_evaluated == result.evaluated
    assert result.best_row is not None and np.array_equal(env.legal_rows(result.best_row[None])[0], result.best_row)
    assert env.simulator(result.best_row[None])[0] == pytest.approx(result.best_ms)
    assert result.best_ms <= env.single_device_ms().min() + 1e-9  # the start (fastest device alone) is a sample
    assert "episodes" in result.notes[0] and "lr=" in result.notes[1]


def test_same_seed_same_search(synthetic_prepared):
    runs = [run_search(PlacetoSearch(), sim_env(synthetic_prepared, "branching"), budget_samples=12, seed=7)
            for _ in range(2)]
    assert runs[0].best_ms == runs[1].best_ms and runs[0].curve == runs[1].curve
    assert np.array_equal(runs[0].best_row, runs[1].best_row)


def test_finds_a_split_better_than_the_start(synthetic_prepared):
    # odd groups run 3x faster on CPUF, even ones 3x faster on CPU: the best single device is far from optimal
    env = crafted_env(synthetic_prepared, lambda g: np.where((np.arange(g) % 2 == 0)[:, None], [[1.0, 3.0]],
                                                             [[3.0, 1.0]]))
    start = env.single_device_ms().min()
    result = run_search(PlacetoSearch(), env, budget_samples=30, seed=0)
    assert result.evaluated <= 30
    assert result.best_ms < 0.9 * start
    assert result.curve[-1][1] < result.curve[0][1]  # it improved on what it evaluated first


def test_update_makes_the_faster_device_likelier(synthetic_prepared):
    # CPUF is 10x slower everywhere and nothing else costs: latency grows with every group moved to CPUF.
    # With a uniform start (no keep prior) the episodes' rewards must push p(CPU) up; a flipped sign pushes it down.
    env = crafted_env(synthetic_prepared, lambda g: np.tile([[1.0, 10.0]], (g, 1)), links=False)
    search = PlacetoSearch(init_changes=None, lr=1e-2)
    graph = PlacetoGraph(env)
    before = device0_probability(search, search.make_policy(graph, seed=0), graph)
    assert before == pytest.approx(0.5, abs=0.05)
    run_search(search, env, budget_samples=20, seed=0)
    after = device0_probability(search, search.policy, search.graph)
    assert after > before + 0.1


def test_three_devices(synthetic_prepared):
    env = sim_env(synthetic_prepared, "attention_like", devices=("CPU", "CPUF", "NPU"))
    search = PlacetoSearch(hidden=16)
    result = run_search(search, env, budget_samples=8, seed=1)
    assert result.evaluated <= 8 and result.best_row is not None
    assert np.array_equal(env.legal_rows(result.best_row[None])[0], result.best_row)
    assert set(np.unique(result.best_row)) <= {0, 1, 2}
    assert search.graph.num_devices == 3 and search.graph.static.shape[1] == 3 * 3 + 2
    # NPU cannot run Softmax: every group with a Softmax member must have NPU masked out
    softmax_groups = np.unique(search.graph.group_of_node[np.array(env.graph.op_types) == "Softmax"])
    assert softmax_groups.size and not search.graph.allowed[softmax_groups, 2].any()


def test_graph_helpers_on_a_diamond():
    #  0 -> 1 -> 3, 0 -> 2 -> 3, 4 alone: 1 and 2 are parallel, 4 is parallel to everything
    coarse = Coarsening(group_of_node=np.arange(5), num_groups=5, edge_src=np.array([0, 0, 1, 2]),
                        edge_dst=np.array([1, 2, 3, 3]), member_count=np.ones(5, dtype=np.int64))
    order = group_topological_order(coarse)
    assert sorted(order.tolist()) == list(range(5))
    pos = {v: k for k, v in enumerate(order.tolist())}
    assert all(pos[s] < pos[d] for s, d in zip(coarse.edge_src, coarse.edge_dst))
    par = parallel_matrix(coarse, order)
    assert par[1].tolist() == [0, 0, 0.5, 0, 0.5] and par[4].tolist() == [0.25, 0.25, 0.25, 0.25, 0]
    assert par[0].tolist() == [0, 0, 0, 0, 1.0]


def test_policy_shapes_prior_and_mask():
    torch.manual_seed(0)
    policy = PlacetoPolicy(6, 3, hidden=8, rounds=2, keep_bias=keep_bias_for(20, 3, 2.0))
    x, placement = torch.randn(4, 5, 6), torch.tensor([[0, 1, 2, 0, 1]] * 4)
    src, dst = torch.tensor([0, 1, 2]), torch.tensor([1, 2, 3])
    allowed = torch.ones(5, 3, dtype=torch.bool)
    allowed[4, 2] = False
    with torch.no_grad():
        logits = policy(x, placement, src, dst, None, allowed)
    assert logits.shape == (4, 5, 3) and torch.isinf(logits[:, 4, 2]).all()
    p_keep = torch.softmax(logits[:, :4], -1).gather(-1, placement[:, :4, None]).mean()
    assert float(p_keep) == pytest.approx(0.9, abs=0.02)  # 2 changes in 20 groups -> keep 90 %
    with pytest.raises(ValueError, match="rounds"):
        PlacetoPolicy(6, 3, rounds=-1)
    with pytest.raises(ValueError, match="lr"):
        PlacetoSearch(lr=0)


@pytest.mark.parametrize("advantage", [1.0, -1.0])
def test_one_update_moves_the_episode_actions_with_the_advantage(synthetic_prepared, advantage):
    env = sim_env(synthetic_prepared, "attention_like")
    search = PlacetoSearch(init_changes=None)
    graph = PlacetoGraph(env)
    policy = search.make_policy(graph, seed=0)
    final, states, placements, currents = search.rollout(policy, graph, np.zeros(graph.num_groups, np.int64),
                                                         torch.Generator().manual_seed(0))
    assert currents.sum(0).tolist() == [1] * graph.num_groups  # every group placed exactly once

    def episode_logp() -> float:  # sum_t log p(a_t | s_t), computed here, independently of episode_loss
        with torch.no_grad():
            logp = torch.log_softmax(search.logits(policy, graph, states, placements), -1).numpy()
        steps, groups = np.nonzero(currents)
        return float(logp[steps, groups, final[groups]].sum())

    before = episode_logp()
    opt = torch.optim.SGD(policy.parameters(), lr=0.05)
    search.episode_loss(policy, graph, states, placements, currents, final, advantage).backward()
    opt.step()
    assert (episode_logp() - before) * advantage > 0  # faster than the baseline -> likelier


def test_large_graph_fallback_approximates_the_parallel_set(synthetic_prepared):
    env = sim_env(synthetic_prepared, "residual")
    search = PlacetoSearch(parallel_exact_max=1)  # as if the graph were too large for the exact set
    result = run_search(search, env, budget_samples=4, seed=0)
    assert search.graph.parallel is None and "parallel=approx" in result.notes[1] and result.evaluated <= 4
