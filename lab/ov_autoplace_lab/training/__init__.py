"""Training the HSDAG policy (needs torch; install ``ov-autoplace-lab[train]``).

* :mod:`.env` - rewards: :class:`SimEnv` (simulator) and :class:`MeasuredEnv` (real HETERO compiles);
* :mod:`.reinforce` - sampling and the losses (paper REINFORCE, REINFORCE with baseline, PPO + cross-entropy);
* :mod:`.trainer` - :class:`Trainer`, :class:`TrainConfig`, logs, checkpoints;
* :mod:`.finetune` - :func:`fine_tune` under a placement / time budget;
* :mod:`.tasks` and :mod:`.graph_family` - the pretraining tasks (zoo, random DAGs, perturbed platforms);
* :mod:`.pretrain` - the recipe that produced the shipped policy; :mod:`.evaluate` - scoring for benchmarks.

The names below are imported lazily, so ``graph_family``, ``tasks`` and ``env`` work without torch.
"""

from __future__ import annotations

import importlib
from pathlib import Path

#: The first pretrained policy (:mod:`.pretrain`'s recipe, float16 as it shipped until 2026-11-27): where the
#: shipped ``hsdag_v2`` started (its targets' start policy and its imitation's initial weights, docs/training.md).
V1_POLICY = Path(__file__).with_name("hsdag_v1.npz")


def named_policy(name: str) -> str:
    """A policy file by name: ``pretrained`` = the shipped one, ``v1`` = :data:`V1_POLICY`, else ``name`` (a path)."""
    if name == "pretrained":
        from ov_autoplace.policy.pretrained import PRETRAINED_POLICY

        return str(PRETRAINED_POLICY)
    return str(V1_POLICY) if name == "v1" else name

_LAZY = {
    "MeasuredEnv": ".env", "PlacementEnv": ".env", "SimEnv": ".env",
    "FINE_TUNE_CONFIG": ".finetune", "fine_tune": ".finetune",
    "MODES": ".trainer", "TrainConfig": ".trainer", "Trainer": ".trainer", "make_policy": ".trainer",
    "torch_policy": ".trainer",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FINE_TUNE_CONFIG", "MODES", "MeasuredEnv", "PlacementEnv", "SimEnv", "TrainConfig", "Trainer",
           "fine_tune", "make_policy", "torch_policy"]
