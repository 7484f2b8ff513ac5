"""Scoring a policy on environments the way ``place()`` would use it: greedy, legalised, then evaluated.

``greedy_latency`` takes the greedy proposal of a numpy or torch policy, makes
it legal with ``legalize(..., max_submodels=...)`` (``place()``'s default bound is 8)
and returns the environment's latency of that placement, without counting it
as a training sample. ``reference_latencies`` adds the exact optimum (MILP,
bounded and unbounded) and the heuristics for the benchmark tables.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS, legalize
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.policy.features import NodeFeatureConfig
from ov_autoplace.policy.numpy_policy import NumpyHSDAGPolicy
from ov_autoplace_lab.training.env import PlacementEnv, SimEnv


def greedy_proposal(policy, env: PlacementEnv, feature_config: NodeFeatureConfig | None = None) -> np.ndarray:
    """Greedy device per node of a NumpyHSDAGPolicy or a torch HSDAGPolicy on ``env``'s graph."""
    if isinstance(policy, NumpyHSDAGPolicy):
        return policy.place(env.graph, env.cost, feature_config)
    import torch

    from ov_autoplace_lab.hsdag_torch.model import PolicyInputs, greedy, to_node_placement

    with torch.no_grad():
        inputs = PolicyInputs.from_graph(env.graph, env.cost, feature_config, config=policy.config)
        out = policy(inputs)
    return to_node_placement(greedy(out), out.node_group)


def legal_latency(env: SimEnv, proposal: np.ndarray, max_submodels: int | None = DEFAULT_MAX_SUBMODELS) -> float:
    """Simulated latency of ``proposal`` after ``legalize`` with ``max_submodels``, the bound's merges priced on
    the environment's cost as ``place()`` prices them (not counted as a sample)."""
    p = legalize(env.graph, np.asarray(proposal, np.int64), env.devices, env.support, max_submodels=max_submodels,
                 price=env.legal_price)
    row = p.device_indices(env.graph.names, env.devices)
    return float(env.simulator(row))


def greedy_latency(policy, env: SimEnv, *, max_submodels: int | None = DEFAULT_MAX_SUBMODELS,
                   feature_config: NodeFeatureConfig | None = None) -> float:
    """The simulated latency of the policy's greedy placement, legalised as ``place()`` would."""
    return legal_latency(env, greedy_proposal(policy, env, feature_config), max_submodels)


def reference_latencies(env: SimEnv, *, time_limit: float = 30.0, unbounded: bool = True) -> dict[str, Any]:
    """Exact optima (MILP with max_submodels=8 and, if ``unbounded``, without a bound) and heuristics on ``env``."""
    from ov_autoplace_lab.optimum.milp import milp_placement
    from ov_autoplace.strategies.best_single import BestSingleDeviceStrategy
    from ov_autoplace_lab.baselines.critical_path import CriticalPathGreedyStrategy
    from ov_autoplace.strategies.heft import HeftStrategy

    out: dict[str, Any] = {}
    for key, bound in (("optimum_8", DEFAULT_MAX_SUBMODELS), ("optimum", None)):
        if bound is None and not unbounded:
            continue
        t0 = time.perf_counter()
        r = milp_placement(env.cost, env.graph, time_limit=time_limit, max_submodels=bound, support=env.support)
        out[key] = float(env.simulator(r.placement))
        out[key + "_status"] = r.status + ("" if r.mip_gap is None else f" (gap {r.mip_gap:.1%})")
        out[key + "_s"] = time.perf_counter() - t0
    context = PlacementContext(graph=env.graph, devices=env.devices, support=env.support)
    for strategy in (BestSingleDeviceStrategy(env.cost), HeftStrategy(env.cost), CriticalPathGreedyStrategy(env.cost)):
        out[strategy.name] = legal_latency(env, strategy.propose(context))
    out["single_ms"] = dict(zip(env.devices, np.asarray(env.single_device_ms()).round(4).tolist()))
    return out


__all__ = ["DEFAULT_MAX_SUBMODELS", "greedy_latency", "greedy_proposal", "legal_latency", "reference_latencies"]
