"""Fixtures of the training tests: small synthetic graphs with the TEST-ONLY stand-in CostModel (simulated)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from ov_autoplace.policy.config import HSDAGConfig  # noqa: E402
from ov_autoplace_lab.training import SimEnv, TrainConfig, make_policy  # noqa: E402
from tests.stand_in_costs import stand_in_cost_model  # noqa: E402

#: A small policy keeps every test fast.
SMALL = HSDAGConfig(hidden=16, max_pool_iterations=1)


def sim_env(synthetic_prepared, name: str = "attention_like", devices=("CPU", "CPUF"), **kwargs) -> SimEnv:
    _, graph = synthetic_prepared[name]
    return SimEnv(graph, stand_in_cost_model(graph, devices), name=name, **kwargs)


def small_policy(envs, seed: int = 0, **config):
    return make_policy(TrainConfig(seed=seed, calibrate_fraction=0.5, **config), envs, SMALL)


@pytest.fixture
def envs(synthetic_prepared):
    """Three fresh environments (their counters start at zero in every test)."""
    return [sim_env(synthetic_prepared, n) for n in ("attention_like", "residual", "branching")]
