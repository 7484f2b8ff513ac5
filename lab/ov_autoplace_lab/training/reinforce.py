"""Sampling placements from the policy and the policy-gradient losses (HSDAG step 5).

A placement is sampled per *group* (the policy's learned groups), so every
coarse node (chain) of a sample sits on one device. Samples are therefore
stored per coarse node, ``coarse_devices [K, C]``, and their log-likelihood
under a policy output is

    log L(sample) = sum_c log p_{g(c)}(device_c) / |g(c)|        (|g| = coarse nodes in group g)

i.e. the sum over groups of the mean member log-probability. For a sample
drawn from that same output (one device per group) this *is* the sampling
log-probability ``sum_g log p_g(d_g)``; after an update changes the grouping
(PPO epochs, cross-entropy on stored elites) it stays defined and smooth.

Losses (every one is minimised; ``latency`` in ms, ``K`` samples of one task):

* :func:`paper_loss` - the paper's code: REINFORCE **without** baseline,
  reward ``1 / latency``: ``-mean_k (1/lat_k) log L_k``. Faster placements
  get the larger weight, so their log-probability rises the most.
* :func:`reinforce_loss` - the default: reward ``-log(latency)`` (scale free
  across models and platforms), advantage = reward standardised over the K
  samples (the batch mean is the baseline), plus an entropy bonus.
* :func:`ppo_loss` + :func:`cross_entropy_loss` - Post (Gao et al., NeurIPS
  2018): a clipped-ratio PPO surrogate on the same advantages, and the
  cross-entropy method's term, the negative log-likelihood of elite samples.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch import Tensor

from ov_autoplace_lab.hsdag_torch.model import PolicyInputs, PolicyOutput


@dataclasses.dataclass
class Rollout:
    """K sampled placements of one task. ``coarse_devices`` int64 [K, C]; ``node_placements`` int64 [K, N]
    (proposals for the environment); ``log_prob`` [K] with gradients; ``entropy``: mean per-group entropy;
    ``logits``: the output's [G, D] logits."""

    coarse_devices: Tensor
    node_placements: np.ndarray
    log_prob: Tensor
    entropy: Tensor
    num_groups: int
    logits: Tensor  # [G, D], with gradients (for regularisers)
    guided: Tensor | None = None  # bool [K]: rows not drawn from the policy (single-device placements)


def coarse_groups(output: PolicyOutput, inputs: PolicyInputs) -> Tensor:
    """Group of every coarse node, int64 [C] (groups are unions of coarse nodes)."""
    num_coarse = int(inputs.x.shape[0])
    out = torch.zeros(num_coarse, dtype=torch.int64, device=output.node_group.device)
    return out.scatter_(0, inputs.node_coarse, output.node_group)


def log_likelihood(output: PolicyOutput, inputs: PolicyInputs, coarse_devices: Tensor) -> Tensor:
    """``log L`` [K] of coarse placements [K, C] under ``output`` (see the module docstring)."""
    group = coarse_groups(output, inputs)
    log_p = torch.log_softmax(output.logits, dim=-1)[group]  # [C, D]
    members = torch.bincount(group, minlength=output.num_groups).to(log_p.dtype)[group]  # [C]
    picked = log_p.unsqueeze(0).expand(coarse_devices.shape[0], -1, -1).gather(
        2, coarse_devices.unsqueeze(-1)).squeeze(-1)  # [K, C]
    return (picked / members).sum(dim=1)


def mean_entropy(output: PolicyOutput) -> Tensor:
    """Mean over groups of each group's device-distribution entropy (nats)."""
    log_p = torch.log_softmax(output.logits, dim=-1)
    return -(log_p.exp() * log_p).sum(dim=-1).mean()


def to_nodes(coarse_devices: Tensor, inputs: PolicyInputs) -> np.ndarray:
    """Node placements [K, N] of coarse placements [K, C]."""
    return coarse_devices[:, inputs.node_coarse].cpu().numpy().astype(np.int64)


def sample_rollout(output: PolicyOutput, inputs: PolicyInputs, k: int,
                   generator: torch.Generator | None = None, temperature: float = 1.0) -> Rollout:
    """Draw ``k`` placements (one device per group each) from ``output``.

    ``temperature`` > 1 samples from the flattened ``softmax(logits / T)`` to explore around a saturated
    policy; those samples are not the policy's own, so they are marked guided (they can only pull it)."""
    probs = torch.softmax(output.logits.detach() / temperature, dim=-1)
    group_devices = torch.multinomial(probs, k, replacement=True, generator=generator).T  # [K, G]
    coarse = group_devices[:, coarse_groups(output, inputs)]
    guided = None if temperature == 1.0 else torch.ones(k, dtype=torch.bool)
    return Rollout(coarse_devices=coarse, node_placements=to_nodes(coarse, inputs),
                   log_prob=log_likelihood(output, inputs, coarse), entropy=mean_entropy(output),
                   num_groups=output.num_groups, logits=output.logits, guided=guided)


def with_single_device_placements(rollout: Rollout, output: PolicyOutput, inputs: PolicyInputs) -> Rollout:
    """``rollout`` plus the D placements with every coarse node on one device (guided exploration).

    They are not drawn from the policy, so they only ever *pull* it (:func:`advantages` clips their
    advantage at 0, as self-imitation learning does): pushing down the log-probability of a placement the
    policy would never sample has no bound and only saturates the softmax."""
    num_coarse, num_devices = int(inputs.x.shape[0]), int(output.logits.shape[1])
    single = torch.arange(num_devices, device=rollout.coarse_devices.device)[:, None].expand(num_devices, num_coarse)
    coarse = torch.cat([rollout.coarse_devices, single])
    sampled = (rollout.guided if rollout.guided is not None
               else torch.zeros(rollout.coarse_devices.shape[0], dtype=torch.bool))
    guided = torch.cat([sampled, torch.ones(num_devices, dtype=torch.bool)])
    return dataclasses.replace(rollout, coarse_devices=coarse, node_placements=to_nodes(coarse, inputs),
                               log_prob=torch.cat([rollout.log_prob, log_likelihood(output, inputs, single)]),
                               guided=guided)


def greedy_coarse(output: PolicyOutput, inputs: PolicyInputs) -> Tensor:
    """The most likely placement as coarse devices [1, C]."""
    return output.logits.argmax(dim=-1)[coarse_groups(output, inputs)].unsqueeze(0)


def finite_latencies(latency: np.ndarray) -> np.ndarray:
    """Latencies with non-finite entries (failed compiles) replaced by twice the worst finite one."""
    lat = np.asarray(latency, dtype=np.float64)
    finite = np.isfinite(lat)
    if finite.all():
        return lat
    worst = lat[finite].max() if finite.any() else 1.0
    return np.where(finite, lat, 2.0 * worst)


def paper_loss(log_prob: Tensor, latency: np.ndarray) -> Tensor:
    """REINFORCE without a baseline, reward ``1 / latency`` (the paper's code)."""
    reward = torch.as_tensor(1.0 / finite_latencies(latency), dtype=log_prob.dtype)
    return -(reward * log_prob).mean()


def advantages(latency: np.ndarray, guided: Tensor | None = None, eps: float = 1e-8) -> Tensor:
    """Reward ``-log(latency)`` standardised over the batch (zero when every sample is as fast);
    ``guided`` rows (not sampled from the policy) are clipped at 0."""
    reward = -np.log(finite_latencies(latency))
    centred = reward - reward.mean()
    std = reward.std()
    adv = torch.as_tensor(centred / (std + eps) if std > 1e-9 else centred * 0.0, dtype=torch.float32)
    return adv if guided is None else torch.where(guided, adv.clamp(min=0.0), adv)


def reinforce_loss(log_prob: Tensor, latency: np.ndarray, entropy: Tensor, entropy_weight: float,
                   guided: Tensor | None = None) -> Tensor:
    """REINFORCE with the batch-mean baseline, standardised advantages and an entropy bonus (the default)."""
    return -(advantages(latency, guided) * log_prob).mean() - entropy_weight * entropy


def ppo_loss(log_prob: Tensor, old_log_prob: Tensor, advantage: Tensor, clip: float) -> Tensor:
    """PPO's clipped surrogate (Schulman et al. 2017), as Post uses it.

    The log-ratio is clamped before ``exp``: a placement the policy would never sample (the guided single-device
    ones, log-probability in the hundreds below zero) can move by more than ``exp`` holds in one epoch, and
    ``inf * 0`` (a guided sample's clipped advantage) is nan, which poisons every weight."""
    ratio = torch.exp(torch.clamp(log_prob - old_log_prob.detach(), -20.0, 20.0))
    return -torch.min(ratio * advantage, torch.clamp(ratio, 1.0 - clip, 1.0 + clip) * advantage).mean()


def cross_entropy_loss(log_prob_of_elites: Tensor) -> Tensor:
    """The cross-entropy method's update: maximise the likelihood of the elite placements."""
    return -log_prob_of_elites.mean()


def elite_indices(latency: np.ndarray, fraction: float) -> np.ndarray:
    """Indices of the fastest ``fraction`` of the samples (at least one)."""
    count = max(1, int(round(fraction * len(latency))))
    return np.argsort(finite_latencies(latency), kind="stable")[:count]


__all__ = ["Rollout", "advantages", "coarse_groups", "cross_entropy_loss", "elite_indices", "finite_latencies",
           "greedy_coarse", "log_likelihood", "mean_entropy", "paper_loss", "ppo_loss", "reinforce_loss",
           "sample_rollout", "to_nodes", "with_single_device_placements"]
