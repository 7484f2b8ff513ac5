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
