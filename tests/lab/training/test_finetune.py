"""fine_tune: budget in distinct placements and seconds, a legal best Placement, a log."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ov_autoplace.placement.assignment import Placement
from ov_autoplace_lab.training import fine_tune
from ov_autoplace_lab.training.evaluate import greedy_latency
from tests.lab.training.conftest import sim_env, small_policy


@pytest.fixture
def start(synthetic_prepared):
    env = sim_env(synthetic_prepared, devices=("CPU", "NPU"), max_submodels=8)
    return small_policy([env]), env


@pytest.mark.parametrize("budget", [1, 7, 30])
def test_budget_of_distinct_placements_is_never_exceeded(start, budget):
    policy, env = start
    placement, records = fine_tune(policy, env, budget_samples=budget, seed=1)
    assert 1 <= env.num_evaluated <= budget
    assert records[0]["event"] == "greedy" and records[-1]["evaluated"] == env.num_evaluated
    assert isinstance(placement, Placement) and placement.strategy == "hsdag+fine_tune"
    index = {d: k for k, d in enumerate(env.devices)}
    row = np.array([index[placement.assignment[n]] for n in env.graph.names])
    assert env.simulator(row) == pytest.approx(env.best_ms)
    assert env.best_ms <= records[0]["greedy_ms"]


def test_fine_tune_improves_on_the_greedy_start_and_leaves_the_policy_alone(start):
    policy, env = start
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    greedy = greedy_latency(policy, env)
    _, records = fine_tune(policy, env, budget_samples=60, seed=0, lr=1e-2)
    assert env.best_ms < greedy
    assert all(torch.equal(v, before[k]) for k, v in policy.state_dict().items())
    assert any(r.get("event") == "step" for r in records)


def test_time_budget_stops_early(start):
    policy, env = start
    _, records = fine_tune(policy, env, budget_samples=10_000, budget_seconds=0.0)
    assert len(records) == 1 and env.num_evaluated == 1  # only the greedy placement


def test_fine_tune_accepts_an_exported_file(start, tmp_path):
    from ov_autoplace_lab.policy_export import export_policy
    from ov_autoplace.policy.numpy_policy import NumpyHSDAGPolicy

    policy, env = start
    path = export_policy(policy, tmp_path / "p.npz")
    placement, _ = fine_tune(path, env, budget_samples=5)
    assert placement.num_submodels >= 1
    placement2, _ = fine_tune(NumpyHSDAGPolicy.load(path), env, budget_samples=5)
    assert set(placement2.assignment) == set(env.graph.names)
    with pytest.raises(ValueError, match="budget_samples"):
        fine_tune(path, env, budget_samples=0)


@pytest.mark.slow
def test_fine_tune_on_real_devices_returns_a_measured_placement(testbed):
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace_lab.training.env import MeasuredEnv
    from ov_autoplace.model.prepare import prepare_model
    from tests import synthetic_graphs
    from tests.stand_in_costs import stand_in_cost_model

    model = synthetic_graphs.residual(blocks=1)
    graph = extract_graph(prepare_model(model))
    env = MeasuredEnv(model, testbed.core, testbed.devices, cost=stand_in_cost_model(graph), iterations=3, warmup=1,
                      max_seconds=0.5)
    placement, records = fine_tune(small_policy([env]), env, budget_samples=6, samples=2)
    assert env.num_compiles == env.num_evaluated <= 6
    assert placement.measured_latency_ms == pytest.approx(env.best_ms) and placement.measured_latency_ms > 0
    assert records[-1]["evaluated"] == env.num_evaluated


def test_a_saturated_policy_still_explores(start):
    """Logits scaled 10,000x: sampling at temperature 1 only redraws the greedy placement; the rising
    temperature must still find new placements within the budget."""
    policy, env = start
    with torch.no_grad():
        for p in policy.placer.out.parameters():
            p.mul_(1e4)
    _, records = fine_tune(policy, env, budget_samples=12, seed=0, max_steps=40)
    assert env.num_evaluated >= 8, records[-3:]  # 6 without the temperature (greedy + singles + 3)


@pytest.mark.parametrize("budget", [1, 2, 12])
def test_refine_counts_every_placement_it_evaluates_on_the_environment(start, budget):
    """The local search prices on env.cost (not counted); the refined placements it hands to env.evaluate are
    samples like any other, and the budget still holds."""
    policy, env = start
    placement, records = fine_tune(policy, env, budget_samples=budget, seed=1, refine=True)
    assert 1 <= env.num_evaluated <= budget
    events = [r["event"] for r in records]
    if budget >= 2:
        assert events[1] == "refined greedy" and ("refined best" in events or env.num_evaluated == budget)
        assert placement.strategy == "hsdag+fine_tune+local_search"
        assert any("not counted as samples" in n for n in placement.notes)
        refined = records[1]
        assert refined["refined_ms"] <= records[0]["greedy_ms"] + 1e-9  # never worse (the env is the cost model)
    else:
        assert "refined greedy" not in events  # no room for a refined sample
    assert records[-1]["evaluated"] == env.num_evaluated


def test_offset_sweep_spends_its_share_of_the_budget_then_reinforce_the_rest(start):
    policy, env = start
    _, records = fine_tune(policy, env, budget_samples=30, seed=1, offset_samples=10)
    sweep = [r for r in records if r["event"] == "offsets"]
    assert len(sweep) == 1 and 1 <= sweep[0]["new"] <= 10
    assert any(r["event"] == "step" for r in records) and env.num_evaluated <= 30


def test_offset_samples_zero_is_reinforce_alone(start):
    policy, env = start
    _, records = fine_tune(policy, env, budget_samples=12, seed=1, offset_samples=0)
    assert not any(r["event"] == "offsets" for r in records)
