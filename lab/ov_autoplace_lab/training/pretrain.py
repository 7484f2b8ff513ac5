"""The recipe of the first pretrained policy, ``hsdag_v1.npz`` (the first shipped policy; kept here as
``ov_autoplace_lab.training.V1_POLICY``: ``hsdag_v2.npz``, which the shipped ``hsdag_v3.npz`` started from, was
trained from it, docs/training.md).

Tasks: the zoo models (Inception-V3, ResNet-50, BERT-base; prepared graphs)
and the training split of the random DAG family (``graph_family``), each on
the simulated paper, laptop and testbed-twin platforms and on
``perturbed_platforms`` random variants of them (``tasks.platform_draws``,
seed ``platform_seed``), plus, when the profiler can measure it, the zoo
models on the measured testbed profile (``tasks.measured_testbed_envs``,
drawn ``measured_weight`` times as often as one perturbed task). Tasks on the
unperturbed platforms are drawn ``base_weight`` times as often.
Held-out graphs (``graph_family.HELD_OUT_SEEDS``) and held-out platform seeds
are never used here. Training: :class:`~.trainer.Trainer` with
:data:`PRETRAIN_CONFIG` and :data:`PRETRAIN_POLICY`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from ov_autoplace.policy.config import HSDAGConfig
from ov_autoplace_lab.training.env import SimEnv
from ov_autoplace_lab.training.tasks import family_graphs, measured_testbed_envs, platform_draws, sim_envs, suite_envs, zoo_graphs
from ov_autoplace_lab.training.trainer import TrainConfig, Trainer, make_policy

log = logging.getLogger(__name__)

#: The policy architecture shipped (the paper's hidden size 128; two parsing iterations keep ~5-20 groups).
PRETRAIN_POLICY = HSDAGConfig(hidden=128, num_gcn_layers=2, max_pool_iterations=2)
PRETRAIN_CONFIG = TrainConfig(mode="reinforce", steps=16000, samples=16, lr=1e-3, entropy_weight=0.02,
                              logit_penalty=0.001, single_device_samples=True, tasks_per_step=4, grad_clip=1.0,
                              calibrate_fraction=0.1, cosine_lr=True, seed=0, threads=1)


@dataclasses.dataclass(frozen=True)
class PretrainTasks:
    """How many of each kind of task the recipe uses."""

    family_count: int | None = None  # None: the whole training split
    perturbed_platforms: int = 24
    platform_seed: int = 12345
    use_zoo: bool = True
    use_measured: bool = True
    measured_weight: float = 8.0
    base_weight: float = 4.0
    use_suite: bool = False  # also the named batch-1 platforms fitted to published latencies (costmodel/suite.py)


def task_weights(envs: list[SimEnv], tasks: PretrainTasks) -> list[float]:
    """Draw weights: measured ``measured_weight``, unperturbed platforms (no ``~``; the suite's too)
    ``base_weight``, else 1."""
    return [tasks.measured_weight if not e.cost.simulated else 1.0 if "~" in e.name else tasks.base_weight
            for e in envs]


def build_pretrain_envs(tasks: PretrainTasks = PretrainTasks()) -> list[SimEnv]:
    """Every training environment of the recipe, in a fixed order."""
    graphs = zoo_graphs() if tasks.use_zoo else {}
    graphs.update(family_graphs("train", tasks.family_count))
    draws = platform_draws(np.random.default_rng(tasks.platform_seed), tasks.perturbed_platforms)
    envs = sim_envs(graphs, draws)
    if tasks.use_suite:
        envs += suite_envs(graphs)
    if tasks.use_zoo and tasks.use_measured:
        from ov_autoplace_lab import models as zoo

        envs += measured_testbed_envs({name: (lambda n=name: zoo.load(n)) for name in
                                       ("inception_v3", "resnet50", "bert_base")})
    log.info("pretraining on %d tasks (%d graphs x %d platforms + measured)", len(envs), len(graphs), len(draws))
    return envs


def pretrain(output: str | Path, *, config: TrainConfig = PRETRAIN_CONFIG, policy_config: HSDAGConfig = PRETRAIN_POLICY,
             tasks: PretrainTasks = PretrainTasks(), log_path: str | Path | None = None,
             checkpoint_path: str | Path | None = None, checkpoint_every: int = 500, resume: bool = False,
             progress: bool = True, metadata: dict[str, Any] | None = None) -> Path:
    """Run the recipe and export the policy to ``output``; returns its path."""
    started = time.perf_counter()
    envs = build_pretrain_envs(tasks)
    if resume and checkpoint_path and Path(checkpoint_path).exists():
        trainer = Trainer.resume(checkpoint_path, envs, log_path=log_path, checkpoint_path=checkpoint_path,
                                 checkpoint_every=checkpoint_every, progress=progress,
                                 weights=task_weights(envs, tasks))
    else:
        policy = make_policy(config, envs, policy_config)
        trainer = Trainer(policy, envs, config, log_path=log_path, checkpoint_path=checkpoint_path,
                          checkpoint_every=checkpoint_every, progress=progress, weights=task_weights(envs, tasks))
    trainer.run()
    labels = sorted({e.label.split(" (")[0] for e in envs})
    meta = {"recipe": "ov_autoplace_lab.training.pretrain", "tasks": dataclasses.asdict(tasks),
            "num_tasks": len(envs), "reward_sources": labels,
            "measured_tasks": sum(not e.cost.simulated for e in envs),
            "wall_s": round(time.perf_counter() - started, 1), **(metadata or {})}
    return trainer.export(output, metadata=meta)


__all__ = ["PRETRAIN_CONFIG", "PRETRAIN_POLICY", "PretrainTasks", "build_pretrain_envs", "pretrain", "task_weights"]
