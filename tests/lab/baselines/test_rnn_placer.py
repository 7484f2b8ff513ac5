"""RNN placer (Mirhoseini et al. 2017): budget, legality, determinism, the reward's sign, improvement, 3 devices."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ov_autoplace_lab.baselines.rnn_placer import (
    GroupInputs,
    RNNPlacerPolicy,
    RNNPlacerSearch,
    build_group_inputs,
    topological_group_order,
)
from ov_autoplace_lab.baselines.search import run_search
from ov_autoplace_lab.optimum.exact_optimum import min_cut_placement
from ov_autoplace.policy.coarsen import Coarsening, chain_coarsen
from ov_autoplace_lab.training import SimEnv
from tests.stand_in_costs import stand_in_cost_model
from tests.lab.training.conftest import sim_env


class RecordingEnv(SimEnv):
    """A SimEnv that keeps the latencies of every batch the search evaluates."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.batches: list[np.ndarray] = []

    def evaluate(self, proposals):
        ms = super().evaluate(proposals)
        self.batches.append(np.atleast_1d(ms).copy())
        return ms


def one_fast_device_env(synthetic_prepared, fast: int, factor: float = 20.0) -> RecordingEnv:
    """Two devices; device ``fast`` is ``factor`` times faster than the other on every node."""
    _, graph = synthetic_prepared["attention_like"]
    cost = stand_in_cost_model(graph, ("CPU", "CPU"))
    ms = cost.compute_ms.copy()
    ms[:, 1 - fast] *= factor
    return RecordingEnv(graph, dataclasses.replace(cost, compute_ms=ms, unfused_ms=ms.copy()), name="one_fast")


def fast_device_probability(policy: RNNPlacerPolicy, inputs: GroupInputs, fast: int) -> float:
    """Mean per-group probability of ``fast`` along the all-``fast`` placement (teacher-forced)."""
    actions = torch.full((1, inputs.num_groups), fast, dtype=torch.long)
    with torch.no_grad():
        _, log_probs, _ = policy(torch.from_numpy(inputs.op_ids), torch.from_numpy(inputs.features), actions=actions)
    return float(log_probs.exp().mean())


@pytest.mark.parametrize("budget", [1, 12])
def test_budget_is_respected_and_the_best_row_is_legal(synthetic_prepared, budget):
    env = sim_env(synthetic_prepared, "attention_like")
    threads = torch.get_num_threads()
    result = run_search(RNNPlacerSearch(), env, budget_samples=budget, seed=0)
    assert 1 <= result.evaluated == env.num_evaluated <= budget
    row = result.best_row
    assert row is not None and row.shape == (env.num_nodes,)
    assert np.array_equal(env.legal_rows(row[None])[0], row)
    assert env.simulator(row[None])[0] == pytest.approx(result.best_ms)
    assert torch.get_num_threads() == threads  # restored after explore


def test_same_seed_same_search_other_seed_other_samples(synthetic_prepared):
    runs = [run_search(RNNPlacerSearch(), sim_env(synthetic_prepared, "attention_like"), budget_samples=16, seed=s)
            for s in (3, 3, 4)]
    assert runs[0].curve == runs[1].curve and np.array_equal(runs[0].best_row, runs[1].best_row)
    assert runs[0].curve != runs[2].curve


@pytest.mark.parametrize("fast", [0, 1])
def test_reward_sign_makes_the_faster_device_likelier(synthetic_prepared, fast):
    # A flipped sign (maximising sqrt(latency)) would push this probability *down*; a bias towards one
    # device index would fail one of the two parametrisations.
    env = one_fast_device_env(synthetic_prepared, fast)
    search = RNNPlacerSearch()
    run_search(search, env, budget_samples=40, seed=0)
    before = fast_device_probability(search.make_policy(search.inputs, 2, seed=0), search.inputs, fast)
    after = fast_device_probability(search.policy, search.inputs, fast)
    assert abs(before - 0.5) < 0.05  # the first policy is near uniform
    assert after > before + 0.25
    assert np.mean(env.batches[-1]) < np.mean(env.batches[0])


def test_search_improves_and_gets_close_to_the_exact_optimum(synthetic_prepared):
    _, graph = synthetic_prepared["attention_like"]
    env = RecordingEnv(graph, stand_in_cost_model(graph, ("CPU", "NPU")), name="attention_like")
    optimum = env.evaluate_uncounted(min_cut_placement(env.cost, graph).placement)
    env.batches.clear()
    result = run_search(RNNPlacerSearch(), env, budget_samples=40, seed=0)
    assert result.best_ms <= env.batches[0][0]
    assert np.mean(env.batches[-1]) < 0.8 * np.mean(env.batches[0])  # the policy moved, not only a lucky sample
    assert result.best_ms <= 1.25 * optimum


def test_three_devices_with_an_npu_that_cannot_run_everything(synthetic_prepared):
    env = sim_env(synthetic_prepared, "attention_like", devices=("CPU", "CPUF", "NPU"))
    assert not env.support.all()  # Softmax / MVN / Gelu cannot go to the NPU
    result = run_search(RNNPlacerSearch(), env, budget_samples=30, seed=1)
    row = result.best_row
    assert row is not None and env.support[np.arange(env.num_nodes), row].all()
    assert np.array_equal(env.legal_rows(row[None])[0], row)
    assert result.best_ms <= 1.25 * env.single_device_ms().min()
    assert any("steps" in n for n in result.notes)


def test_teacher_forcing_scores_the_sampled_actions_and_greedy_is_the_argmax(synthetic_prepared):
    _, graph = synthetic_prepared["residual"]
    inputs = build_group_inputs(graph)
    policy = RNNPlacerSearch(hidden=16).make_policy(inputs, 3, seed=0)
    op_ids, feats = torch.from_numpy(inputs.op_ids), torch.from_numpy(inputs.features)
    gen = torch.Generator().manual_seed(0)
    actions, log_probs, entropy = policy(op_ids, feats, num_samples=5, generator=gen)
    g = inputs.num_groups
    assert actions.shape == log_probs.shape == entropy.shape == (5, g)
    assert actions.min() >= 0 and actions.max() < 3 and (log_probs <= 0).all()
    assert ((entropy >= 0) & (entropy <= np.log(3) + 1e-5)).all()
    _, scored, _ = policy(op_ids, feats, actions=actions)
    torch.testing.assert_close(scored, log_probs)
    greedy, greedy_lp, _ = policy(op_ids, feats, greedy=True)
    assert greedy.shape == (1, g) and (greedy_lp >= np.log(1 / 3) - 1e-6).all()  # the argmax has p >= 1/D
    assert torch.equal(greedy_lp, policy(op_ids, feats, actions=greedy)[1])


def test_precomputed_decoder_matches_a_plain_lstmcell_reference(synthetic_prepared):
    _, graph = synthetic_prepared["branching"]
    inputs = build_group_inputs(graph)
    policy = RNNPlacerPolicy(2, inputs.features.shape[1], hidden=8, bidirectional=True)
    op_ids, feats = torch.from_numpy(inputs.op_ids), torch.from_numpy(inputs.features)
    actions = torch.tensor([[0, 1, 1, 0, 1][: inputs.num_groups], [1, 1, 0, 0, 0][: inputs.num_groups]])
    _, log_probs, _ = policy(op_ids, feats, actions=actions)
    with torch.no_grad():  # the model written out step by step with nn.LSTMCell
        x = torch.tanh(policy.input(torch.cat([policy.op_embed(op_ids), feats], 1)))
        enc, (hn, cn) = policy.encoder(x[None])
        enc, k = enc[0], actions.shape[0]
        h, c = hn.transpose(0, 1).reshape(1, -1).repeat(k, 1), cn.transpose(0, 1).reshape(1, -1).repeat(k, 1)
        prev, expected = torch.full((k,), 2), []
        for t in range(inputs.num_groups):
            h, c = policy.decoder(torch.cat([policy.device_embed(prev), enc[t].expand(k, -1)], 1), (h, c))
            alpha = torch.softmax(h @ policy.attend(enc).T, 1)
            logits = policy.out(torch.tanh(policy.combine(torch.cat([h, alpha @ enc], 1))))
            expected.append(torch.log_softmax(logits, 1).gather(1, actions[:, t:t + 1])[:, 0])
            prev = actions[:, t]
    torch.testing.assert_close(log_probs.detach(), torch.stack(expected, 1))


def test_group_order_is_topological_even_when_root_order_is_not():
    gon = np.arange(4, dtype=np.int64)
    c = Coarsening(gon, 4, np.array([0, 2, 3]), np.array([1, 1, 2]), np.ones(4, dtype=np.int64))
    order = topological_group_order(c)
    position = np.argsort(order)
    assert sorted(order.tolist()) == [0, 1, 2, 3] and (position[c.edge_src] < position[c.edge_dst]).all()
    cyclic = Coarsening(gon, 4, np.array([1, 2]), np.array([2, 1]), np.ones(4, dtype=np.int64))
    assert sorted(topological_group_order(cyclic).tolist()) == [0, 1, 2, 3]


def test_group_inputs_map_group_devices_back_to_nodes(synthetic_prepared):
    _, graph = synthetic_prepared["attention_like"]
    c = chain_coarsen(graph)
    inputs = build_group_inputs(graph, c)
    assert inputs.num_groups == c.num_groups and np.isfinite(inputs.features).all()
    assert inputs.op_ids.min() >= 0 and inputs.op_ids.max() < 128
    actions = np.random.default_rng(0).integers(0, 2, size=(3, c.num_groups))
    proposals = inputs.proposals(actions)
    position = np.argsort(inputs.order)
    assert np.array_equal(proposals, actions[:, position[c.group_of_node]])


def test_bad_arguments_and_repr():
    with pytest.raises(ValueError, match="samples_per_step"):
        RNNPlacerSearch(samples_per_step=0)
    with pytest.raises(ValueError, match="hidden"):
        RNNPlacerPolicy(2, 4, hidden=7, bidirectional=True)
    assert "hidden=32" in repr(RNNPlacerSearch(hidden=32)) and RNNPlacerSearch.name == "RNN placer"
    assert "devices=3" in repr(RNNPlacerPolicy(3, 4))
