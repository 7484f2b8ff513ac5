"""Draw-robust targets (issue 22): the choice across perturbed draws, abstaining, the robust environment."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.placement.legalizer import legalize
from ov_autoplace_lab.paper_bench.truth import TruthSpec, category_factors
from ov_autoplace_lab.training.imitation import active_mask, expressible_target
from ov_autoplace_lab.training.robust import (ROBUST_STREAM, SLOWER_PENALTY, VALIDATION_STREAM, DrawScorer,
                                              RobustOptions, candidate_rows, choose_robust, clears_min_gain,
                                              draw_costs, robust_env, robust_retarget)
from ov_autoplace_lab.training.targets import TargetOptions, TargetSpec, case_cost, generate_target, variant_platform

FAST = TargetOptions(sigma=0.46, max_evaluations=300, local_search_seconds=5.0, policy=None)
ROBUST = TargetOptions(sigma=0.46, max_evaluations=300, local_search_seconds=5.0, policy=None,
                       robust=RobustOptions(draws=8))


def test_off_by_default_so_existing_manifests_and_targets_do_not_move():
    assert "robust" not in FAST.to_dict() and ROBUST.to_dict()["robust"]["draws"] == 8
    assert ROBUST.search_options().to_dict() == FAST.to_dict()
    target = generate_target(TargetSpec("family:3", "paper"), FAST)
    assert "robust" not in target and target["source"] in target["candidates"]


def test_draws_are_seeded_apart_from_the_truth_and_the_validation():
    platform, _ = variant_platform(TargetSpec("family:0", "laptop"), 0.46)
    f = {seed: category_factors(platform, TruthSpec(sigma=0.46, seed=seed), 0)
         for seed in (0, ROBUST_STREAM, VALIDATION_STREAM)}
    assert not np.allclose(f[0], f[ROBUST_STREAM]) and not np.allclose(f[ROBUST_STREAM], f[VALIDATION_STREAM])
    spec = TargetSpec("family:0", "laptop", 2)  # a variant: device order shuffled, draws follow it
    graph, cost, _ = case_cost(spec, 0.46)
    a, b = (draw_costs(spec, cost, graph, 0.46, 3, ROBUST_STREAM) for _ in range(2))
    assert all(np.array_equal(x.compute_ms, y.compute_ms) for x, y in zip(a, b))
    assert not np.array_equal(a[0].compute_ms, a[1].compute_ms) and list(a[0].devices) == list(cost.devices)


def test_choice_takes_the_best_quantile_among_those_rarely_slower_than_the_plain_call():
    # candidates: 0 plain call, 1 a split faster in most draws but slower in 2 of 8, 2 a split never slower
    ms = np.array([[10, 6, 9], [10, 6, 9], [10, 6, 9], [10, 6, 9], [10, 6, 9], [10, 6, 9], [10, 12, 9],
                   [10, 12, 9]], float)
    nominal = np.array([10.0, 6.0, 9.0])
    chosen, best, score, slower = choose_robust(ms, nominal, 0, 0.8, 0.1)
    assert (chosen, best) == (2, 1) and slower.tolist() == [0.0, 0.25, 0.0]
    assert choose_robust(ms, nominal, 0, 0.8, 0.25)[0] == 1  # allowed to gamble a quarter of the draws
    gamble = ms[:, :2]  # only the plain call and the gamble: abstain
    assert choose_robust(gamble, nominal[:2], 0, 0.8, 0.1)[0] == 0
    no_plain = np.array([np.inf, 6.0, 9.0])  # the plain call cannot run: every candidate is eligible
    assert choose_robust(np.where(np.arange(3) == 0, np.inf, ms), no_plain, 0, 0.8, 0.1)[0] == 1


def test_a_gain_inside_min_gain_is_an_abstention():
    # candidates: 0 plain call, 1 a split 1 % faster under the fitted model and in every draw, 2 one 3 % faster
    ms = np.tile([10.0, 9.9, 9.7], (8, 1))
    nominal = np.array([10.0, 9.9, 9.7])
    assert choose_robust(ms, nominal, 0, 0.8, 0.1)[0] == 2
    assert choose_robust(ms[:, :2], nominal[:2], 0, 0.8, 0.1)[0] == 1  # no margin: the 1 % split is taken
    chosen, best, _, _ = choose_robust(ms[:, :2], nominal[:2], 0, 0.8, 0.1, min_gain=0.02)
    assert (chosen, best) == (0, 1)  # inside the 2 % margin: the plain call, reported as an abstention
    assert choose_robust(ms, nominal, 0, 0.8, 0.1, min_gain=0.02)[0] == 2  # 3 % clears it
    # the margin is the plain call's, under the fitted model: a split faster in every draw still needs it
    assert choose_robust(ms, nominal, 0, 0.8, 0.1, min_gain=0.05)[0] == 0
    # without a margin the fitted model does not veto: a candidate nominally 1 % slower but best across the draws
    robust = np.array([[10.0, 9.0]] * 7 + [[10.0, 9.5]])
    assert choose_robust(robust, np.array([10.0, 10.1]), 0, 0.8, 0.1)[0] == 1
    assert choose_robust(robust, np.array([10.0, 10.1]), 0, 0.8, 0.1, min_gain=0.02)[0] == 0


def test_the_min_gain_test_is_the_one_both_rules_use():
    nominal = np.array([10.0, 9.9, 9.7, np.inf, 10.2])  # the reference, 1 % and 3 % faster, cannot run, slower
    assert clears_min_gain(nominal, 10.0, 0.0).all()  # off: everything clears it
    assert clears_min_gain(nominal, 10.0, 0.02).tolist() == [False, False, True, False, False]
    # choose_robust takes it for every candidate but the plain call: one priced the same is not an alternative
    ms = np.tile(nominal[[0, 0, 1]], (8, 1))
    assert choose_robust(ms, nominal[[0, 0, 1]], 1, 0.8, 0.1, min_gain=0.02)[0] == 1


def test_the_imitated_target_keeps_a_min_gain_abstention():
    """``min_gain`` is judged where the target is chosen and again where imitation descends from it: a row the
    fitted model prices neither as the plain call nor ``min_gain`` faster scores the penalty, so the descent
    cannot walk the abstention back to a split (before, 23 of the 27 abstentions of a 2 % run were walked back)."""
    spec = TargetSpec("family:2", "npu_cpu")
    strict = TargetOptions(sigma=0.46, max_evaluations=300, local_search_seconds=5.0, policy=None,
                           robust=RobustOptions(draws=8, max_slower=1.0, min_gain=0.99))
    target = robust_retarget(spec, generate_target(spec, FAST), strict)
    assert target["source"] == "plain_call" and target["robust"]["min_gain"] == 0.99  # nothing is 99 % faster
    graph, cost, support = case_cost(spec, strict.sigma)
    env = robust_env(spec, target, strict.sigma, graph, cost, support, 8)
    plain = np.asarray(target["placement"])
    singles = env.fixer(np.repeat(np.arange(len(env.devices))[:, None], graph.num_nodes, axis=1))
    fitted = env.simulator.feasible_ms(singles)
    score = env.score_rows(np.vstack([plain[None], singles]))
    assert score[0] < SLOWER_PENALTY  # the plain call itself: no penalty
    differs = ~np.isclose(fitted, float(env.simulator(plain[None])[0]), rtol=1e-9, atol=0.0)
    assert differs.any() and (score[1:][differs] >= SLOWER_PENALTY).all()
    row, ms = expressible_target(env, np.arange(graph.num_nodes), plain, active_mask(graph), rounds=5)
    assert ms == pytest.approx(float(env.simulator(plain[None])[0]))  # the abstention survives the descent


@pytest.mark.parametrize("spec", [TargetSpec("family:1", "npu_cpu", 0), TargetSpec("family:4", "laptop", 1),
                                  TargetSpec("family:decoder:0", "paper")])
def test_robust_target_is_a_legal_candidate_and_obeys_the_rule(spec):
    searched = generate_target(spec, FAST)
    target = robust_retarget(spec, searched, ROBUST)
    graph, cost, support = case_cost(spec, ROBUST.sigma)
    devices = tuple(cost.devices)
    row = np.asarray(target["placement"])
    again = legalize(graph, row, devices, support, max_submodels=8, strategy="check")
    assert [devices[d] for d in row] == [again.assignment[n] for n in graph.names]  # legal as stored
    assert float(Simulator(cost, graph)(row)) == pytest.approx(target["latency_ms"])
    # recomputed independently: the kept row is never slower than the plain call in more than 10 % of the draws,
    # and no eligible candidate has a lower 80th-percentile ratio
    rows = candidate_rows(spec, graph, cost, support, searched["placement"], None)
    scorer = DrawScorer(graph, draw_costs(spec, cost, graph, ROBUST.sigma, 8, ROBUST_STREAM))
    ms = scorer.latencies(np.stack([row, *rows.values()]))
    plain = 1 + list(rows).index("plain_call")
    slower = np.mean(ms > ms[:, [plain]] * (1 + 1e-9), axis=0)
    ratio = np.quantile(ms / ms[:, 1:].min(axis=1, keepdims=True), 0.8, axis=0)
    assert slower[0] <= 0.1
    assert all(ratio[0] <= ratio[i] + 1e-9 for i in range(1, len(ratio)) if slower[i] <= 0.1)
    info = target["robust"]
    assert info["search_ms"] == searched["latency_ms"] and info["draws"] == 8
    if info["abstained"]:  # the plain call's row, although another candidate scored better across the draws
        assert target["source"] == "plain_call" and info["unconstrained_best"] != "plain_call"
    else:
        assert target["source"] == info["unconstrained_best"] or slower[1 + list(rows).index(
            info["unconstrained_best"])] > 0.1


def test_robust_env_rewards_the_draws_and_the_imitated_target_follows_them():
    spec = TargetSpec("family:2", "npu_cpu")
    target = robust_retarget(spec, generate_target(spec, FAST), ROBUST)
    graph, cost, support = case_cost(spec, ROBUST.sigma)
    env = robust_env(spec, target, ROBUST.sigma, graph, cost, support, 8)
    plain = np.asarray(env.scorer.reference_ms)
    assert len(plain) == 8 and np.isfinite(plain).all()
    singles = np.repeat(np.arange(len(env.devices))[:, None], graph.num_nodes, axis=1)
    legal = env.legal_rows(singles)
    assert np.allclose(env.evaluate_uncounted(singles), env.reference_ms * env.scorer.score(legal))
    coarse = np.arange(graph.num_nodes)  # node-level groups: the finest grouping
    row, ms = expressible_target(env, coarse, np.asarray(target["placement"]), active_mask(graph), rounds=5)
    assert ms == pytest.approx(float(env.simulator(env.fixer(row[None]))[0]))  # the fitted model's ms
    fixed = env.fixer(np.stack([row, *singles]))
    score = env.score_rows(fixed)
    assert score[0] <= score[1:].min() + 1e-9  # never worse across the draws than any single device it started from
