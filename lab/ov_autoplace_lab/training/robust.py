"""Draw-robust targets: a split is imitated only if it pays under most perturbed draws of the platform.

The search finds the fastest placement under the *fitted* device model, and under the truth draws many of those
splits lose. So a target is chosen across perturbed draws of the case's own cost model (:data:`ROBUST_STREAM`, never
the evaluation's or the validation's draws): the candidate with the best 0.8-quantile ratio to each draw's best,
among those slower than the plain call in at most ``max_slower`` of the draws (and, with ``min_gain``, predicted
faster than it by that fraction); else the plain call's placement, so the policy learns to abstain where a split is
a gamble. :class:`DrawScorer` prices under the same draws for the imitation and the REINFORCE reward. Candidates,
score and rule in full: docs/training.md, "Draw-robust targets". Everything is simulated.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace_lab.training.env import SimEnv

#: Seed of the robust draws (``truth.category_factors(platform, TruthSpec(seed=ROBUST_STREAM), k)``).
ROBUST_STREAM = 22_200
#: Seed of the validation draws (``heldout.validate``): distinct from the training draws and the truth's seed 0.
VALIDATION_STREAM = 22_300
#: An excess share of draws slower than the plain call costs this much score in ``expressible_target``'s descent.
SLOWER_PENALTY = 10.0


@dataclasses.dataclass(frozen=True)
class RobustOptions:
    """How a target is chosen across draws. ``draws`` 0: off (the fastest placement under the fitted model)."""

    draws: int = 0
    quantile: float = 0.8
    max_slower: float = 0.1
    seed: int = ROBUST_STREAM
    min_gain: float = 0.0


def draw_costs(spec, cost, graph, sigma: float, draws: int, seed: int) -> list:
    """``draws`` perturbed copies of the case's CostModel (``cost``, the variant already applied)."""
    from ov_autoplace_lab.paper_bench.truth import TruthSpec, category_factors, perturbed_cost
    from ov_autoplace_lab.training.targets import variant_platform

    platform, _ = variant_platform(spec, sigma)
    if tuple(platform.device_names) != tuple(cost.devices):
        raise ValueError(f"{spec.key}: platform devices {platform.device_names} differ from the cost model's "
                         f"{list(cost.devices)}")
    truth = TruthSpec(sigma=sigma, draws=draws, seed=seed, milp_seconds=0.0)
    return [perturbed_cost(cost, graph, category_factors(platform, truth, k)) for k in range(draws)]


def clears_min_gain(nominal_ms, reference_ms: float, min_gain: float) -> np.ndarray:
    """True where a fitted-model latency is at least ``min_gain`` faster than the reference's (the plain call's):
    the test ``choose_robust`` puts to every candidate but the plain call, and ``DrawScorer.score`` to every row
    not priced as the plain call (True everywhere at ``min_gain`` 0; otherwise False where a row cannot run)."""
    nominal_ms = np.asarray(nominal_ms, np.float64)
    if min_gain <= 0:
        return np.ones(nominal_ms.shape, bool)
    return nominal_ms <= (1.0 - min_gain) * reference_ms


class DrawScorer:
    """Latency [K, P] of rows [P, N] under K perturbed cost models (inf where a device's memory overflows), and the
    robust score of rows against a reference row (the plain call's placement)."""

    def __init__(self, graph, costs: list, quantile: float = 0.8, max_slower: float = 0.1,
                 reference: np.ndarray | None = None, *, min_gain: float = 0.0, fitted: Simulator | None = None
                 ) -> None:
        self.simulators = [Simulator(c, graph) for c in costs]
        self.quantile, self.max_slower = quantile, max_slower
        self.min_gain, self.fitted = min_gain, fitted  # the target's min_gain, judged under the fitted model
        self.reference_ms = self.reference_fitted_ms = None
        if reference is not None:
            self.set_reference(reference)

    def set_reference(self, row: np.ndarray) -> None:
        row = np.asarray(row, np.int64)[None]
        self.reference_ms = self.latencies(row)[:, 0]
        if self.fitted is not None:
            self.reference_fitted_ms = float(np.atleast_1d(self.fitted.feasible_ms(row))[0])

    def latencies(self, rows: np.ndarray) -> np.ndarray:
        rows = np.atleast_2d(np.asarray(rows, np.int64))
        return np.stack([sim.feasible_ms(rows) for sim in self.simulators])

    def score(self, rows: np.ndarray) -> np.ndarray:
        """[P]: the quantile over draws of ms / the reference's ms, plus :data:`SLOWER_PENALTY` x the share of draws
        slower than the reference beyond ``max_slower`` (inf where a draw cannot run the row), plus
        :data:`SLOWER_PENALTY` where ``min_gain`` is set and the fitted model prices the row neither as the
        reference nor ``min_gain`` faster (``choose_robust``'s rule, so a descent cannot walk an abstention back
        to the split it abstained from)."""
        ms = self.latencies(rows)
        ratio = ms / self.reference_ms[:, None]
        slower = np.mean(ms > self.reference_ms[:, None] * (1 + 1e-9), axis=0)
        with np.errstate(invalid="ignore"):
            score = np.quantile(ratio, self.quantile, axis=0) + SLOWER_PENALTY * np.maximum(0.0, slower
                                                                                             - self.max_slower)
        if self.min_gain > 0 and self.fitted is not None and self.reference_fitted_ms is not None:
            fitted = self.fitted.feasible_ms(np.atleast_2d(np.asarray(rows, np.int64)))
            ref = self.reference_fitted_ms
            inside = ~clears_min_gain(fitted, ref, self.min_gain) & ~np.isclose(fitted, ref, rtol=1e-9, atol=0.0)
            score = score + SLOWER_PENALTY * inside
        return np.where(np.isfinite(ms).all(axis=0), score, np.inf)


class RobustSimEnv(SimEnv):
    """A :class:`SimEnv` whose latency is the robust one: ``reference_ms`` (the plain call's fitted-model latency) x
    :meth:`DrawScorer.score`, so the plain call scores its own latency and REINFORCE rewards what pays across
    draws, not under the fitted model alone."""

    def __init__(self, graph, cost, scorer: DrawScorer, reference_ms: float, **kwargs) -> None:
        super().__init__(graph, cost, **kwargs)
        self.scorer, self.reference_ms = scorer, float(reference_ms)
        self.label = f"{cost.label}, robust over {len(scorer.simulators)} draws"

    def _latencies(self, legal: np.ndarray, keys: list[int]) -> np.ndarray:
        return self.reference_ms * self.scorer.score(legal)

    def score_rows(self, rows: np.ndarray) -> np.ndarray:
        """What ``imitation.expressible_target`` minimises on this environment (rows already legal)."""
        return self.scorer.score(rows)


def candidate_rows(spec, graph, cost, support, searched: np.ndarray, policy: str | None, *, priced: bool = False
                   ) -> dict[str, np.ndarray]:
    """The legal candidates of docs/training.md, "Draw-robust targets" (device index per node); ``priced``: legalised as
    ``compile_model`` legalises (``TargetOptions.priced``)."""
    from ov_autoplace.search.memory_fit import legal_pricer
    from ov_autoplace.strategies.base import PlacementContext
    from ov_autoplace.strategies.heft import HeftStrategy
    from ov_autoplace_lab.paper_bench.headroom import plain_call_placement
    from ov_autoplace_lab.paper_bench.methods import Case
    from ov_autoplace_lab.training.targets import _legal_row

    devices = tuple(cost.devices)
    price = legal_pricer(cost, graph, support) if priced else None
    context = PlacementContext(graph=graph, devices=devices, support=support)
    rows = {"search": np.asarray(searched, np.int64), "plain_call": plain_call_placement(
        Case(spec.key, graph, devices, support, cost, True))}
    for k, d in enumerate(devices):
        rows[f"single:{d}"] = _legal_row(graph, np.full(graph.num_nodes, k, np.int64), devices, support, price)
    rows["heft"] = _legal_row(graph, HeftStrategy(cost).propose(context), devices, support, price)
    if policy:
        from ov_autoplace.strategies.hsdag import HSDAGStrategy

        rows["policy"] = _legal_row(graph, HSDAGStrategy(policy, cost).propose(context), devices, support, price)
    used = np.unique(rows["search"])
    if len(used) > 1:  # the search's splits one device at a time: its nodes on d moved to e
        for d in used:
            for e in range(len(devices)):
                if e != d:
                    moved = np.where(rows["search"] == d, e, rows["search"])
                    rows[f"search:{devices[d]}->{devices[e]}"] = _legal_row(graph, moved, devices, support, price)
    return rows


def choose_robust(ms: np.ndarray, nominal: np.ndarray, plain: int, quantile: float, max_slower: float,
                  min_gain: float = 0.0) -> tuple[int, int, np.ndarray, np.ndarray]:
    """The rule of docs/training.md, "Draw-robust targets", on latencies ``ms`` [K draws, C candidates] and
    ``nominal`` [C] (the fitted model's; inf where a candidate cannot run): (chosen, best unconstrained, score [C],
    share slower than the plain call [C]). Where the plain call cannot run, every candidate is eligible; where the chosen one cannot run
    under the fitted model, the fitted model's fastest is taken."""
    with np.errstate(invalid="ignore"):
        best = ms.min(axis=1, keepdims=True)
        score = np.where(np.isfinite(ms).all(axis=0), np.quantile(ms / best, quantile, axis=0), np.inf)
    slower = np.mean(ms > ms[:, plain:plain + 1] * (1 + 1e-9), axis=0)
    key = lambda i: (score[i], nominal[i])  # noqa: E731
    candidates = range(ms.shape[1])
    unconstrained = min(candidates, key=key)
    if math.isfinite(nominal[plain]):
        clears = clears_min_gain(nominal, nominal[plain], min_gain)
        eligible = [i for i in candidates if i == plain or (slower[i] <= max_slower and clears[i])]
    else:
        eligible = candidates
    chosen = min(eligible, key=key)
    if not math.isfinite(nominal[chosen]):
        chosen = int(np.argmin(nominal))
    return chosen, unconstrained, score, slower


def robust_retarget(spec, searched: dict, options) -> dict:
    """``searched`` (a target of ``generate_target`` under the fitted model, or a robust target that kept its
    search) re-chosen across draws; the returned target keeps the search's result under ``robust`` (its source,
    latency and draw statistics) and its placement as ``search_placement``, so that another rule (a looser
    ``max_slower``, say) can re-choose it later without searching again."""
    from ov_autoplace_lab.training.targets import case_cost

    robust: RobustOptions = options.robust
    searched = searched_result(searched)
    graph, cost, support = case_cost(spec, options.sigma)
    if list(cost.devices) != list(searched["devices"]):
        raise ValueError(f"{spec.key}: the search ran on {searched['devices']}, the case has {list(cost.devices)}")
    rows = candidate_rows(spec, graph, cost, support, searched["placement"], options.policy, priced=options.priced)
    names = list(rows)
    batch = np.stack([rows[n] for n in names])
    scorer = DrawScorer(graph, draw_costs(spec, cost, graph, options.sigma, robust.draws, robust.seed),
                        robust.quantile, robust.max_slower)
    ms = scorer.latencies(batch)  # [K, C]
    nominal = Simulator(cost, graph).feasible_ms(batch)
    plain = names.index("plain_call")
    chosen, unconstrained, score, slower = choose_robust(ms, nominal, plain, robust.quantile, robust.max_slower,
                                                         robust.min_gain)
    abstained = chosen == plain and not np.array_equal(batch[unconstrained], batch[plain])
    return {**searched, "placement": batch[chosen], "latency_ms": float(nominal[chosen]), "source": names[chosen],
            "search_placement": np.asarray(searched["placement"], np.int64),
            "robust": {**dataclasses.asdict(robust), "search_source": searched["source"],
                       "search_ms": searched["latency_ms"], "abstained": bool(abstained),
                       "unconstrained_best": names[unconstrained], "chosen_slower_than_plain": float(slower[chosen]),
                       "search_slower_than_plain": float(slower[0]),
                       "scores": {n: (float(s) if math.isfinite(s) else None) for n, s in zip(names, score)}}}


def searched_result(target: dict) -> dict:
    """The search behind ``target``: itself when it is a search under the fitted model, else (a robust choice) its
    kept ``search_placement`` with the search's source and latency. A robust target written before the search's
    placement was kept raises :class:`ValueError`: the search cannot be recovered from it."""
    info = target.get("robust")
    if not info:
        return target
    if target.get("search_placement") is None:
        raise ValueError(f"{target.get('key', 'target')}: a robust choice written without its search's placement "
                         "(before search_placement was kept); re-choose from a run searched without --robust-draws, "
                         "or search again")
    rest = {k: v for k, v in target.items() if k not in ("robust", "search_placement")}
    return {**rest, "placement": np.asarray(target["search_placement"], np.int64), "source": info["search_source"],
            "latency_ms": info["search_ms"]}


def generate_robust_target(spec, options) -> dict:
    """``targets.generate_target``, then, when ``options.robust`` draws, the robust choice over its search."""
    from ov_autoplace_lab.training.targets import generate_target

    started = time.perf_counter()
    target = generate_target(spec, options)
    if options.robust and options.robust.draws:
        target = robust_retarget(spec, target, options)
        target["seconds"] = round(time.perf_counter() - started, 3)
    return target


def robust_env(spec, target: dict, sigma: float, graph, cost, support, policy_max_submodels: int) -> RobustSimEnv:
    """The training environment of a robust ``target`` (its draws, quantile and abstain share as recorded)."""
    from ov_autoplace_lab.paper_bench.headroom import plain_call_placement
    from ov_autoplace_lab.paper_bench.methods import Case

    info = target["robust"]
    plain = plain_call_placement(Case(spec.key, graph, tuple(cost.devices), support, cost, True))
    sim = Simulator(cost, graph)
    scorer = DrawScorer(graph, draw_costs(spec, cost, graph, sigma, info["draws"], info["seed"]), info["quantile"],
                        info["max_slower"], reference=plain, min_gain=info.get("min_gain", 0.0), fitted=sim)
    if not np.isfinite(scorer.reference_ms).all():  # the plain call cannot run here: the target is the reference
        plain = np.asarray(target["placement"], np.int64)
        scorer.set_reference(plain)
    return RobustSimEnv(graph, cost, scorer, float(np.atleast_1d(sim(plain[None]))[0]), name=spec.key,
                        support=support, max_submodels=policy_max_submodels)


__all__ = ["ROBUST_STREAM", "VALIDATION_STREAM", "DrawScorer", "RobustOptions", "RobustSimEnv", "candidate_rows",
           "choose_robust",
           "draw_costs", "clears_min_gain", "generate_robust_target", "robust_env", "robust_retarget"]
