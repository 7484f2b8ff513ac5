"""Training the HSDAG policy (needs torch; install ``ov-autoplace-lab[train]``).

* :mod:`.env` - rewards: :class:`SimEnv` (simulator) and :class:`MeasuredEnv` (real HETERO compiles);
* :mod:`.reinforce` - sampling and the losses (paper REINFORCE, REINFORCE with baseline, PPO + cross-entropy);
* :mod:`.trainer` - :class:`Trainer`, :class:`TrainConfig`, logs, checkpoints;
* :mod:`.finetune` - :func:`fine_tune` under a placement / time budget;
* :mod:`.tasks` and :mod:`.graph_family` - the pretraining tasks (zoo, random DAGs, perturbed platforms);
* :mod:`.pretrain` - the recipe of the first policy (v1); :mod:`.amortise` - v2's, v3's and the shipped v4's
  (imitation of a search); :mod:`.evaluate` - scoring for benchmarks.

The names below are imported lazily, so ``graph_family``, ``tasks`` and ``env`` work without torch.
"""

from __future__ import annotations

import importlib
from pathlib import Path

#: The first pretrained policy (:mod:`.pretrain`'s recipe, float16 as it shipped): where ``hsdag_v2``
#: started (its imitation's initial weights) and the start policy of the targets of v2 and v3 (docs/training.md).
V1_POLICY = Path(__file__).with_name("hsdag_v1.npz")
#: The second (:mod:`.amortise`'s recipe, ``cost_cut`` coarsening, seed 0; docs/bench/training-log.md): the initial
#: weights of the shipped ``hsdag_v3`` and the reference of its evaluations (``amortise evaluate --shipped v2``).
V2_POLICY = Path(__file__).with_name("hsdag_v2.npz")
#: The third (the same recipe warm-started from v2, shipped 2026-11-28 to 2026-12-06): the policy the wider
#: training's candidates were judged against, kept so its tables can be run again (docs/bench/training-log.md).
V3_POLICY = Path(__file__).with_name("hsdag_v3.npz")


def named_policy(name: str) -> str:
    """A policy file by name: ``pretrained`` = the shipped one, ``v1`` / ``v2`` / ``v3`` = :data:`V1_POLICY` /
    :data:`V2_POLICY` / :data:`V3_POLICY`, else ``name`` (a path)."""
    if name == "pretrained":
        from ov_autoplace.policy.pretrained import PRETRAINED_POLICY

        return str(PRETRAINED_POLICY)
    return str({"v1": V1_POLICY, "v2": V2_POLICY, "v3": V3_POLICY}.get(name, name))


#: How many of float16's 10 mantissa bits the shipped policy's weights keep (docs/bench/policy_precision.md).
SHIPPED_MANTISSA_BITS = 8


def write_shipped_policy(exported: str | Path, destination: str | Path) -> Path:
    """The float32 export ``exported`` in the form the runtime wheel ships (``policy/pretrained/``): float16 at
    :data:`SHIPPED_MANTISSA_BITS` mantissa bits, and training's metadata without its curve of one-pass misses per
    500 steps (about 0.4 KB deflated, in a wheel with under 1 KB to spare; the export keeps it)."""
    from ov_autoplace.policy.policy_file import load_policy_file
    from ov_autoplace_lab.policy_export import write_policy_file

    trained = load_policy_file(exported)
    metadata = {k: v for k, v in (trained.header.get("metadata") or {}).items() if k != "one_pass_misses"}
    metadata.setdefault("converted_from", trained.header.get("weight_dtype", "float32"))
    return write_policy_file(destination, trained.config, trained.weights, metadata=metadata, weight_dtype="float16",
                             mantissa_bits=SHIPPED_MANTISSA_BITS)


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


__all__ = ["FINE_TUNE_CONFIG", "MODES", "SHIPPED_MANTISSA_BITS", "V1_POLICY", "V2_POLICY", "MeasuredEnv", "PlacementEnv", "SimEnv",
           "TrainConfig", "Trainer", "fine_tune", "make_policy", "named_policy", "torch_policy", "write_shipped_policy"]
