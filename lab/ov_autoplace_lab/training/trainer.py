"""The HSDAG training loop: one or many environments, three algorithms, logs, checkpoints, fixed seeds.

``Trainer(policy, envs, TrainConfig(...)).run()``: each step samples placements on a few seeded environments,
evaluates them (simulated or measured, ``env``) and updates the policy with ``mode="paper"`` (the paper's
REINFORCE), ``"reinforce"`` (baseline, standardised -log latency, entropy bonus; the default) or ``"ppo"`` (Post's
clipped surrogate plus cross-entropy on elites). ``logit_penalty`` and ``single_device_samples`` keep the softmax from
saturating before a move-everything optimum is explored. One JSON log line per task and step; checkpoints resume a run
exactly; ``config.seed`` fixes weights, task order and samples. In full: docs/training.md, "The training loop".
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.policy.coarsen import Coarsening
from ov_autoplace.policy.config import HSDAGConfig
from ov_autoplace.policy.features import NodeFeatureConfig
from ov_autoplace.policy.inputs import build_policy_arrays
from ov_autoplace.policy.policy_file import ExportedPolicy, load_policy_file
from ov_autoplace_lab.policy_export import export_policy
from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy, PolicyInputs
from ov_autoplace.policy.numpy_policy import NumpyHSDAGPolicy
from ov_autoplace_lab.training import reinforce as rl
from ov_autoplace_lab.training.env import PlacementEnv, SimEnv

log = logging.getLogger(__name__)

MODES = ("paper", "reinforce", "ppo")


@dataclasses.dataclass
class TrainConfig:
    """Hyper-parameters of a training run (the modes: docs/training.md, "The training loop")."""

    mode: str = "reinforce"
    steps: int = 25
    samples: int = 20
    lr: float = 1e-3
    hidden: int = 128
    entropy_weight: float = 0.01
    logit_penalty: float = 0.0  # weight of mean(logits**2): keeps softmax from saturating (entropy 0, no gradient)
    single_device_samples: bool = False  # add the D everything-on-one-device placements to every batch
    tasks_per_step: int = 1
    ppo_epochs: int = 4
    ppo_clip: float = 0.2
    elite_fraction: float = 0.2
    ce_weight: float = 0.5
    grad_clip: float | None = 1.0
    calibrate_fraction: float = 0.3
    evaluate_greedy: bool = False
    cosine_lr: bool = False  # decay lr to lr / 10 over `steps` (cosine); stateless, so resuming is exact
    seed: int = 0
    threads: int = 1

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.samples < 1 or self.steps < 0 or self.tasks_per_step < 1:
            raise ValueError(f"need samples >= 1, steps >= 0, tasks_per_step >= 1; got {self}")

    @classmethod
    def paper(cls, **overrides: Any) -> "TrainConfig":
        """The paper's public code: REINFORCE without baseline, 1/latency, 25 x 20 samples, Adam 1e-3, hidden 128."""
        base = dict(mode="paper", steps=25, samples=20, lr=1e-3, hidden=128, entropy_weight=0.0, grad_clip=None)
        return cls(**{**base, **overrides})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def make_policy(config: TrainConfig, envs: Sequence[PlacementEnv], policy_config: HSDAGConfig | None = None
                ) -> HSDAGPolicy:
    """A freshly initialised policy (seeded) with its merge threshold calibrated on ``envs``' graphs."""
    torch.manual_seed(config.seed)
    policy = HSDAGPolicy(policy_config or HSDAGConfig(hidden=config.hidden))
    inputs = [PolicyInputs.from_graph(e.graph, e.cost, config=policy.config) for e in envs]
    with_edges = [i for i in inputs if i.edge_index.shape[1] > 0]
    if with_edges:
        policy.calibrate_merging(with_edges, edge_fraction=config.calibrate_fraction)
    return policy


def torch_policy(source: str | Path | ExportedPolicy | NumpyHSDAGPolicy | HSDAGPolicy) -> HSDAGPolicy:
    """A trainable torch policy from an exported file, its contents, a numpy policy or a torch policy (copied)."""
    if isinstance(source, HSDAGPolicy):
        copy = HSDAGPolicy(source.config)
        copy.load_state_dict(source.state_dict())
        return copy
    if isinstance(source, (str, Path)):
        source = load_policy_file(source)
    if isinstance(source, NumpyHSDAGPolicy):
        config, weights = source.config, source.w
    elif isinstance(source, ExportedPolicy):
        config, weights = source.config, source.weights
    else:
        raise TypeError(f"expected a policy path, ExportedPolicy, NumpyHSDAGPolicy or HSDAGPolicy, got {type(source)}")
    policy = HSDAGPolicy(config)
    policy.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in weights.items()})
    return policy


def policy_inputs(config: HSDAGConfig, env: PlacementEnv, feature_config: NodeFeatureConfig | None = None,
                  coarsening: Callable[[GraphArrays], Coarsening] | None = None) -> PolicyInputs:
    """The policy's inputs on ``env``; ``feature_config`` and ``coarsening`` are the ablation switches."""
    arrays = build_policy_arrays(env.graph, env.cost, feature_config or config.feature_config, vocab=config.vocab,
                                 pos_dim=config.pos_dim, coarsening=coarsening(env.graph) if coarsening else None,
                                 coarsening_rule=config.coarsening)
    return PolicyInputs.from_arrays(arrays)


class Trainer:
    """Trains ``policy`` on ``envs`` (see the module docstring). ``weights``: how often each task is drawn;
    ``feature_config`` / ``coarsening``: ablations of the inputs (see :func:`policy_inputs`)."""

    def __init__(self, policy: HSDAGPolicy, envs: Sequence[PlacementEnv], config: TrainConfig = TrainConfig(), *,
                 log_path: str | Path | None = None, checkpoint_path: str | Path | None = None,
                 checkpoint_every: int = 0, progress: bool = True, weights: Sequence[float] | None = None,
                 feature_config: NodeFeatureConfig | None = None,
                 coarsening: Callable[[GraphArrays], Coarsening] | None = None, _resuming: bool = False) -> None:
        if not envs:
            raise ValueError("Trainer needs at least one environment")
        torch.set_num_threads(config.threads)
        self.policy, self.envs, self.config = policy, list(envs), config
        if weights is not None and len(weights) != len(self.envs):
            raise ValueError(f"weights must have one entry per environment ({len(self.envs)}), got {len(weights)}")
        w = np.ones(len(self.envs)) if weights is None else np.asarray(weights, dtype=np.float64)
        self.task_probability = w / w.sum()  # how often each task is drawn
        self.inputs = [policy_inputs(policy.config, e, feature_config, coarsening) for e in self.envs]
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr)
        self.rng = np.random.default_rng(config.seed)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.step_count = 0
        self.temperature = 1.0  # sampling temperature; fine_tune raises it when nothing new is sampled
        self.best_coarse: list[torch.Tensor | None] = [None] * len(self.envs)  # fastest sample per task (for CE)
        self.best_coarse_ms = [float("inf")] * len(self.envs)
        self.reference_ms = [float(np.min(e.single_device_ms())) if isinstance(e, SimEnv) else float("nan")
                             for e in self.envs]
        self.log_path = Path(log_path) if log_path else None
        self.checkpoint_path = Path(checkpoint_path) if checkpoint_path else None
        self.checkpoint_every, self.progress = checkpoint_every, progress
        self.records: list[dict[str, Any]] = []
        self._started = time.perf_counter()
        if self.log_path and not _resuming:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_path.write_text("")
            self._write({"event": "start", "config": config.to_dict(), "policy": policy.config.to_dict(),
                         "tasks": [{"name": e.name, "nodes": e.num_nodes, "devices": list(e.devices),
                                    "label": e.label} for e in self.envs]})

    # ------------------------------------------------------------------ logging
    def _write(self, record: dict[str, Any]) -> None:
        if self.log_path:
            with open(self.log_path, "a") as f:
                f.write(json.dumps(record) + "\n")

    def _record(self, task: int, latency: np.ndarray, rollout: rl.Rollout, loss: float,
                greedy_ms: float | None) -> dict[str, Any]:
        env = self.envs[task]
        lat = rl.finite_latencies(latency)
        if rollout.guided is not None and not rollout.guided.all():  # statistics of the policy's own samples
            lat = lat[~rollout.guided.numpy()]
        record = {"event": "step", "step": self.step_count, "task": env.name, "samples": int(len(latency)),
                  "evaluated": env.num_evaluated, "best_ms": env.best_ms, "mean_ms": float(lat.mean()),
                  "min_ms": float(lat.min()), "entropy": float(rollout.entropy.detach()),
                  "num_groups": rollout.num_groups, "loss": loss,
                  "vs_single": float(lat.min() / self.reference_ms[task]),
                  "elapsed_s": round(time.perf_counter() - self._started, 3)}
        if greedy_ms is not None:
            record["greedy_ms"] = greedy_ms
        return record

    # ------------------------------------------------------------------ one step
    def _rollout(self, task: int, samples: int) -> tuple[rl.Rollout, np.ndarray, float | None]:
        env, inputs = self.envs[task], self.inputs[task]
        output = self.policy(inputs)
        rollout = rl.sample_rollout(output, inputs, samples, self.generator, temperature=self.temperature)
        if self.config.single_device_samples:
            rollout = rl.with_single_device_placements(rollout, output, inputs)
        latency = env.evaluate(rollout.node_placements)
        greedy_ms = None
        if self.config.evaluate_greedy:
            greedy_ms = float(env.evaluate(rl.to_nodes(rl.greedy_coarse(output, inputs), inputs))[0])
        best = int(np.argmin(rl.finite_latencies(latency)))
        if self.best_coarse[task] is None or latency[best] < self.best_coarse_ms[task]:
            self.best_coarse[task], self.best_coarse_ms[task] = rollout.coarse_devices[best].clone(), latency[best]
        return rollout, latency, greedy_ms

    def _clip_and_step(self) -> None:
        c = self.config
        if c.cosine_lr and c.steps > 0:
            progress = min(self.step_count / c.steps, 1.0)
            for group in self.optimizer.param_groups:
                group["lr"] = c.lr * (0.1 + 0.9 * 0.5 * (1.0 + np.cos(np.pi * progress)))
        if c.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.config.grad_clip)
        self.optimizer.step()

    def step(self, samples: int | None = None) -> list[dict[str, Any]]:
        """One update; returns (and logs) one record per task it used."""
        c = self.config
        samples = samples or c.samples
        tasks = self.rng.choice(len(self.envs), size=min(c.tasks_per_step, len(self.envs)), replace=False,
                                p=self.task_probability).tolist()
        records = []
        self.optimizer.zero_grad()
        if c.mode in ("paper", "reinforce"):
            for t in tasks:
                rollout, latency, greedy_ms = self._rollout(t, samples)
                if c.mode == "paper":
                    loss = rl.paper_loss(rollout.log_prob, latency)
                else:
                    loss = rl.reinforce_loss(rollout.log_prob, latency, rollout.entropy, c.entropy_weight,
                                             rollout.guided)
                if c.logit_penalty:
                    loss = loss + c.logit_penalty * rollout.logits.pow(2).mean()
                (loss / len(tasks)).backward()
                records.append(self._record(t, latency, rollout, float(loss.detach()), greedy_ms))
            self._clip_and_step()
        else:
            records = self._ppo_step(tasks, samples)
        self.step_count += 1
        for r in records:
            self._write(r)
        self.records.extend(records)
        if self.checkpoint_path and self.checkpoint_every and self.step_count % self.checkpoint_every == 0:
            self.save_checkpoint(self.checkpoint_path)
        return records

    def _ppo_step(self, tasks: list[int], samples: int) -> list[dict[str, Any]]:
        c = self.config
        batch = []
        with torch.no_grad():
            for t in tasks:
                rollout, latency, greedy_ms = self._rollout(t, samples)
                elites = rollout.coarse_devices[torch.from_numpy(rl.elite_indices(latency, c.elite_fraction))]
                elites = torch.cat([elites, self.best_coarse[t].unsqueeze(0)])
                batch.append((t, rollout, latency, rl.advantages(latency, rollout.guided), elites, greedy_ms))
        losses = {t: 0.0 for t in tasks}
        for epoch in range(c.ppo_epochs):
            if epoch:
                self.optimizer.zero_grad()
            for t, rollout, _, adv, elites, _ in batch:
                output = self.policy(self.inputs[t])
                log_prob = rl.log_likelihood(output, self.inputs[t], rollout.coarse_devices)
                loss = (rl.ppo_loss(log_prob, rollout.log_prob, adv, c.ppo_clip)
                        + c.ce_weight * rl.cross_entropy_loss(rl.log_likelihood(output, self.inputs[t], elites))
                        - c.entropy_weight * rl.mean_entropy(output)
                        + c.logit_penalty * output.logits.pow(2).mean())
                (loss / len(batch)).backward()
                losses[t] = float(loss.detach())
            self._clip_and_step()
        return [self._record(t, latency, rollout, losses[t], greedy_ms)
                for t, rollout, latency, _, _, greedy_ms in batch]

    def run(self, steps: int | None = None) -> list[dict[str, Any]]:
        """Run ``steps`` (default: the config's, less those already done) with a progress bar."""
        from tqdm.auto import tqdm

        steps = max(self.config.steps - self.step_count, 0) if steps is None else steps
        start = len(self.records)
        with tqdm(total=steps, disable=not self.progress, desc=f"hsdag {self.config.mode}", unit="step") as bar:
            for _ in range(steps):
                records = self.step()
                bar.update(1)
                recent = self.records[-50:]
                bar.set_postfix(vs_single=f"{np.mean([r['vs_single'] for r in recent]):.3f}",
                                groups=f"{np.mean([r['num_groups'] for r in recent]):.1f}",
                                entropy=f"{records[-1]['entropy']:.3f}")
        if self.checkpoint_path:
            self.save_checkpoint(self.checkpoint_path)
        return self.records[start:]

    # ------------------------------------------------------------------ persistence
    def save_checkpoint(self, path: str | Path) -> Path:
        """Everything needed to continue this run exactly (torch.save)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({
            "policy_config": self.policy.config.to_dict(), "train_config": self.config.to_dict(),
            "policy": self.policy.state_dict(), "optimizer": self.optimizer.state_dict(), "step": self.step_count,
            "numpy_rng": self.rng.bit_generator.state, "torch_generator": self.generator.get_state(),
            "envs": [e.state_dict() for e in self.envs], "env_names": [e.name for e in self.envs],
            "best_coarse": self.best_coarse, "best_coarse_ms": self.best_coarse_ms,
        }, path)
        return path

    @classmethod
    def resume(cls, path: str | Path, envs: Sequence[PlacementEnv], **kwargs: Any) -> "Trainer":
        """A trainer continuing the run checkpointed at ``path`` on the same ``envs`` (same order)."""
        state = torch.load(path, weights_only=False)
        names = [e.name for e in envs]
        if names != state["env_names"]:
            raise ValueError(f"checkpoint {path} was trained on tasks {state['env_names'][:5]}..., "
                             f"got {names[:5]}...; pass the same environments in the same order")
        policy = HSDAGPolicy(HSDAGConfig.from_dict(state["policy_config"]))
        policy.load_state_dict(state["policy"])
        trainer = cls(policy, envs, TrainConfig(**state["train_config"]), _resuming=True, **kwargs)
        trainer.optimizer.load_state_dict(state["optimizer"])
        trainer.step_count = state["step"]
        trainer.rng.bit_generator.state = state["numpy_rng"]
        trainer.generator.set_state(state["torch_generator"])
        for env, env_state in zip(trainer.envs, state["envs"]):
            env.load_state_dict(env_state)
        trainer.best_coarse, trainer.best_coarse_ms = state["best_coarse"], state["best_coarse_ms"]
        return trainer

    def export(self, path: str | Path, metadata: dict[str, Any] | None = None) -> Path:
        """The trained policy as a torch-free ``.npz`` (``ov_autoplace_lab.policy_export.export_policy``) with the run's metadata."""
        meta = {"training": self.config.to_dict(), "steps_done": self.step_count,
                "tasks": len(self.envs), **(metadata or {})}
        return export_policy(self.policy, path, metadata=meta)


__all__ = ["MODES", "TrainConfig", "Trainer", "make_policy", "policy_inputs", "torch_policy"]
