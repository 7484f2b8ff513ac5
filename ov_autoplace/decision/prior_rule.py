"""The prior's decision rule: keep the plain call's device, switch to another one, or split - from predictions only.

Pure given its inputs (nothing is compiled or run); its three functions: docs/architecture.md, "Module notes",
ov_autoplace/decision/prior_rule.py.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.costmodel.platforms import CATEGORIES
from ov_autoplace.costmodel.prior_costs import PRIOR_SPLIT_MARGIN, predicted_single_ms
from ov_autoplace.costmodel.sim_costs import op_category, simulated_support
from ov_autoplace.decision.placement_pipeline import InsideMargin, placement_pipeline
from ov_autoplace.decision.verification import single_device_of
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.strategies.hsdag import HSDAGStrategy


def _fmt(singles: dict[str, float]) -> str:
    return ", ".join(f"{d} {ms:.3f} ms" for d, ms in singles.items())


#: The prior's error on the log scale: the sigma of log(simulated / published) over the held-out calibration
#: points (``bench/truth.held_out_sigma``; 0.463 in docs/bench/headroom.md's truth model).
PRIOR_LOG_SIGMA = 0.463
#: Draws of that error a calibrated prior's deviation must win, every one, to run before it is verified.
LIVE_DRAWS = 40


def survives_prior_error(cost, graph: GraphArrays, support, candidate, plain, *, sigma: float = PRIOR_LOG_SIGMA,
                         draws: int = LIVE_DRAWS, seed: int = 0) -> float:
    """Share of ``draws`` draws of the prior's error in which ``candidate`` is predicted faster than ``plain``.

    A draw scales every node's compute on device d by a log-normal factor per (device, op category), median 1, as
    the calibration error is spread (the same error model as the benchmarks' truth draws, with its own seed).
    ``candidate`` and ``plain`` are device indices per node.
    """
    category = np.array([CATEGORIES.index(op_category(t)) for t in graph.op_types], np.int64)
    rng = np.random.default_rng(seed)
    wins = 0
    for _ in range(draws):
        scale = np.exp(sigma * rng.standard_normal((len(cost.devices), len(CATEGORIES))))[:, category].T
        drawn = dataclasses.replace(cost, compute_ms=np.asarray(cost.compute_ms) * scale,
                                    unfused_ms=np.asarray(cost.unfused_ms) * scale)
        terms = CostTerms(drawn, graph, support)
        wins += bool(terms.latency_ms(np.asarray(candidate)) < terms.latency_ms(np.asarray(plain)))
    return wins / draws


def prior_outcome(cost, graph: GraphArrays, devices: tuple[str, ...], support, propose, *, pins=None,
                  max_submodels=None, margin: float | None = None) -> tuple[str | None, Placement | None, str]:
    """The prior's whole decision on ``cost``: ``(device, None, reason)`` or ``(None, split, reason)``. More:
    docs/architecture.md, "Module notes", prior_rule.py."""
    margin = PRIOR_SPLIT_MARGIN if margin is None else margin
    if pins:  # the user's pins decide part of it: always the policy, legalized with the pins, no margin
        choice = PriorChoice(None, propose(cost), math.nan, predicted_single_ms(cost), math.nan,
                             reason="pinned: the prior's policy places the other nodes around the pins, no margin")
    else:
        choice = prior_choice(cost, graph, devices, lambda: propose(cost), margin=margin)
    if choice.single is not None:
        return choice.single, None, choice.reason
    try:  # pins skip the margin and the guard (the pipeline's rule): the user's call
        placement = placement_pipeline(graph, choice.proposal, devices, support(), strategy="hsdag:prior", cost=cost,
                                       pins=tuple(pins or ()), max_submodels=max_submodels, min_gain=margin)
    except InsideMargin as inside:  # legalizing cost the gain
        return choice.fallback, None, f"{choice.reason}; {inside}"
    placement.notes.append(choice.reason)
    device = single_device_of(placement)
    if device is not None:
        return device, None, choice.reason
    return None, placement, choice.reason


@dataclasses.dataclass
class PriorChoice:
    """What the prior decides: one device (``single``), or keep the policy's ``proposal``."""
    single: str | None
    proposal: Any  # int64 [N] or None
    predicted_ms: float  # the proposal's predicted latency (nan if the policy did not run)
    singles: dict  # predicted latency of each device alone
    bound_ms: float  # no placement is predicted below this
    fallback: str = ""  # the one device to use if the split is dropped later
    reason: str = ""


def prior_choice(cost, graph: GraphArrays, devices: tuple[str, ...], propose, *,
                 margin: float | None = None) -> PriorChoice:
    """The prior's rule (pure: no device is touched; ``propose()`` gives the policy's proposal on ``cost``).

    One device: HETERO's first unless another is predicted faster by more than ``margin`` (default
    ``PRIOR_SPLIT_MARGIN``). A split: only when predicted faster than the best single device by more than the
    margin. When even the bound (every op on its fastest device, nothing transferred) misses the margin, the
    policy does not run.
    """
    margin = PRIOR_SPLIT_MARGIN if margin is None else margin
    singles = predicted_single_ms(cost)
    first, best = devices[0], min(singles, key=singles.get)
    single = best if singles[best] < singles[first] * (1.0 - margin) else first
    reference = singles[best]
    compute_mask = np.asarray(graph.role) == NodeRole.COMPUTE
    with np.errstate(invalid="ignore"):
        bound = float(np.min(np.asarray(cost.compute_ms)[compute_mask], axis=1).sum()) + float(
            np.min(cost.submodel_overhead_ms))
    if not bound < reference * (1.0 - margin):
        return PriorChoice(single, None, math.nan, singles, bound, single,
                           f"prior (simulated) predicts {_fmt(singles)} alone; no split can beat {bound:.3f} ms, "
                           f"within the {margin:.0%} margin")
    proposal = np.asarray(propose(), dtype=np.int64)
    terms = CostTerms(cost, graph, simulated_support(cost, graph))
    used = set(proposal[terms.compute].tolist())
    predicted = terms.latency_ms(proposal)
    reason = (f"prior (simulated) predicts {_fmt(singles)} alone and {predicted:.3f} ms for the policy's placement; "
              f"a split must win by more than {margin:.0%}")
    if len(used) > 1 and predicted < reference * (1.0 - margin):
        return PriorChoice(None, proposal, predicted, singles, bound, single, reason)
    return PriorChoice(single, None, predicted, singles, bound, single, reason)


def policy_proposal(cost, graph, devices, policy_path):
    """The shipped HSDAG policy's proposal on ``cost`` (device index per node), support simulated from ``cost``."""
    context = PlacementContext(graph=graph, devices=devices, support=simulated_support(cost, graph))
    return HSDAGStrategy(policy_path, cost).propose(context)


__all__ = ["LIVE_DRAWS", "PRIOR_LOG_SIGMA", "PriorChoice", "policy_proposal", "prior_choice", "prior_outcome",
           "survives_prior_error"]
