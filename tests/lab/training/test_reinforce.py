"""The losses: paper REINFORCE (no baseline, 1/latency), the default with baseline, PPO and cross-entropy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ov_autoplace_lab.hsdag_torch.model import PolicyInputs
from ov_autoplace_lab.training import reinforce as rl
from tests.lab.training.conftest import sim_env, small_policy


@pytest.fixture
def setup(synthetic_prepared):
    env = sim_env(synthetic_prepared)
    policy = small_policy([env])
    inputs = PolicyInputs.from_graph(env.graph, env.cost, config=policy.config)
    return env, policy, inputs


def _log_lik(policy, inputs, coarse):
    with torch.no_grad():
        return rl.log_likelihood(policy(inputs), inputs, coarse)


def test_sampled_log_prob_is_the_sum_of_group_log_probs(setup):
    _, policy, inputs = setup
    out = policy(inputs)
    roll = rl.sample_rollout(out, inputs, 5, torch.Generator().manual_seed(0))
    log_p = torch.log_softmax(out.logits, -1)
    group_devices = roll.coarse_devices[:, [int((rl.coarse_groups(out, inputs) == g).nonzero()[0]) for g in
                                            range(out.num_groups)]]
    expected = log_p.gather(1, group_devices.T).sum(0)
    assert torch.allclose(roll.log_prob, expected, atol=1e-5)
    assert roll.node_placements.shape == (5, inputs.num_nodes)


def test_paper_loss_is_reinforce_without_baseline_with_reward_one_over_latency(setup):
    _, policy, inputs = setup
    roll = rl.sample_rollout(policy(inputs), inputs, 4, torch.Generator().manual_seed(1))
    latency = np.array([1.0, 2.0, 4.0, 8.0])
    loss = rl.paper_loss(roll.log_prob, latency)
    assert loss.item() == pytest.approx(-(roll.log_prob.detach() * torch.tensor(1.0 / latency)).mean().item(), rel=1e-5)
    # no baseline: even when every sample is equally fast the gradient is not zero
    policy.zero_grad()
    rl.paper_loss(roll.log_prob, np.full(4, 3.0)).backward()
    assert sum(float(p.grad.abs().sum()) for p in policy.parameters() if p.grad is not None) > 0


@pytest.mark.parametrize("mode", ["paper", "reinforce"])
def test_faster_placement_gains_log_probability(setup, mode):
    _, policy, inputs = setup
    out = policy(inputs)
    groups = rl.coarse_groups(out, inputs)
    fast = torch.zeros(inputs.x.shape[0], dtype=torch.int64)[None, :]
    slow = torch.ones(inputs.x.shape[0], dtype=torch.int64)[None, :]
    coarse = torch.cat([fast, slow])
    before = _log_lik(policy, inputs, coarse)
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.05)
    log_prob = rl.log_likelihood(policy(inputs), inputs, coarse)
    latency = np.array([1.0, 3.0])  # sample 0 is three times faster
    if mode == "paper":
        loss = rl.paper_loss(log_prob, latency)
    else:
        loss = rl.reinforce_loss(log_prob, latency, rl.mean_entropy(policy(inputs)), entropy_weight=0.0)
    loss.backward()
    optimizer.step()
    after = _log_lik(policy, inputs, coarse)
    assert groups.numel() == inputs.x.shape[0]
    assert after[0] - after[1] > before[0] - before[1]  # the faster one gained relative to the slower one
    assert after[0] > before[0]


def test_default_mode_uses_a_baseline(setup):
    _, policy, inputs = setup
    roll = rl.sample_rollout(policy(inputs), inputs, 4, torch.Generator().manual_seed(2))
    adv = rl.advantages(np.array([1.0, 2.0, 4.0, 8.0]))
    assert adv.sum().item() == pytest.approx(0.0, abs=1e-6) and adv[0] > 0 > adv[-1]
    assert torch.all(rl.advantages(np.full(4, 3.0)) == 0)
    policy.zero_grad()
    rl.reinforce_loss(roll.log_prob, np.full(4, 3.0), roll.entropy, entropy_weight=0.0).backward()
    assert all(p.grad is None or float(p.grad.abs().sum()) == 0 for p in policy.parameters())


def test_failed_placements_count_as_slowest():
    lat = rl.finite_latencies(np.array([1.0, np.inf, 3.0]))
    assert lat[1] == 6.0 and rl.advantages(np.array([1.0, np.inf, 3.0]))[1] < 0


def test_ppo_ratio_is_one_before_an_update_and_clipped_after(setup):
    _, policy, inputs = setup
    roll = rl.sample_rollout(policy(inputs), inputs, 6, torch.Generator().manual_seed(3))
    adv = rl.advantages(np.arange(1.0, 7.0))
    loss = rl.ppo_loss(roll.log_prob, roll.log_prob.detach(), adv, clip=0.2)
    assert loss.item() == pytest.approx(-adv.mean().item(), abs=1e-6)  # ratio 1: the plain surrogate
    shifted = rl.ppo_loss(roll.log_prob.detach() + 5.0, roll.log_prob.detach(), adv, clip=0.2)
    assert shifted.item() == pytest.approx(-(torch.where(adv > 0, 1.2, np.exp(5.0)) * adv).mean().item(), rel=1e-4)
    elites = rl.elite_indices(np.array([5.0, 1.0, 3.0, 2.0, 9.0]), 0.4)
    assert elites.tolist() == [1, 3]
    assert rl.cross_entropy_loss(roll.log_prob[:2]).item() == pytest.approx(-roll.log_prob[:2].mean().item())


def test_single_device_placements_join_the_batch(setup):
    _, policy, inputs = setup
    out = policy(inputs)
    roll = rl.with_single_device_placements(rl.sample_rollout(out, inputs, 3, torch.Generator().manual_seed(0)),
                                            out, inputs)
    assert roll.coarse_devices.shape[0] == 5 and roll.log_prob.shape == (5,)
    assert (roll.node_placements[3] == 0).all() and (roll.node_placements[4] == 1).all()
    log_p = torch.log_softmax(out.logits, -1)
    assert roll.log_prob[4].item() == pytest.approx(log_p[:, 1].sum().item(), rel=1e-5)


def test_guided_rows_only_pull():
    guided = torch.tensor([False, False, True, True])
    adv = rl.advantages(np.array([2.0, 3.0, 1.0, 9.0]), guided)
    plain = rl.advantages(np.array([2.0, 3.0, 1.0, 9.0]))
    assert adv[2] == plain[2] > 0 and plain[3] < 0 and adv[3] == 0 and torch.equal(adv[:2], plain[:2])
