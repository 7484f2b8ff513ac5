"""Truth models other than the one a method optimised: scoring simulated placements honestly.

On the simulated platforms every method (the local search above all) optimises
the platform's fitted device model, and the headroom table scores it with that
same model: a placement tuned to the model's errors looks best exactly where the
model is wrong. This module scores the placements a row produced under models
the methods did not see:

(a) ``draws`` perturbations of the fitted device model (:func:`score_draws`):
    every compute node's cost on device ``d`` is multiplied by a factor
    ``f[d, category]`` drawn log-normal with median 1 and the ``sigma`` fitted to
    the held-out calibration error (:func:`held_out_sigma`: the zero-mean
    maximum-likelihood sigma of ``log(simulated / published)`` over the
    calibration points the fit never saw). A device's factors depend only on
    (seed, draw, device identity), so draw ``k`` is the same hardware in every
    row and on every platform that reuses the device. Links and per-submodel
    overheads keep their values: the calibration data (single-device latencies)
    says nothing about them.
(b) leave-platform-out (:func:`score_leave_platform_out`): the platform's devices
    as the prior models hardware nobody calibrated (``prior_cost_model`` with the
    platforms its devices were fitted on excluded: spec sheets plus the *other*
    platforms' fits).

Under each truth the row's reference points are re-derived: the optimum (a MILP
on that truth, time-limited, or the best of every known placement when that is
faster - flagged unproven by the 0.5 % rule of ``costmodel.optimum``), the best
single device, and the plain call (HETERO's own affinity). Every number is
simulated.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import zlib
from typing import Iterable, Mapping

import numpy as np

from ov_autoplace_lab.calibration.calibration_data import load_calibration
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.device_model import SuitePlatform
from ov_autoplace_lab.optimum.exact_optimum import proven_optimal
from ov_autoplace.costmodel.platforms import CATEGORIES, op_category
from ov_autoplace.costmodel.sim_costs import simulated_support
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.graph.arrays import GraphArrays

#: Draws of the perturbed device model per row: the 20 the truth tables were specified with (one draw = 5 % of a row).
TRUTH_DRAWS = 20
#: Seconds the MILP gets per truth; the best known placement under the truth is used when it is faster.
TRUTH_MILP_SECONDS = 2.0
#: Keys of ``placements`` that are reference points, not methods.
PLAIN_CALL, SINGLE_PREFIX = "plain_call", "single:"


def held_out_log_errors(suite: Mapping[str, SuitePlatform], load_graph) -> np.ndarray:
    """``log(simulated / published)`` of every held-out calibration point whose device the suite models."""
    from ov_autoplace_lab.calibration.fit_terms import prepare_load, single_device_ms

    devices = {d.calibration_key: d for p in suite.values() if p.kind == "calibrated" for d in p.devices
               if d.calibration_key}
    errors = []
    for point in load_calibration():
        device = devices.get(point.key)
        if not point.held_out or device is None:
            continue
        ms = single_device_ms(device, prepare_load(load_graph(point.model)), point.precision,
                              ignore_support=device.spec.kind == "npu")
        if math.isfinite(ms) and ms > 0:
            errors.append(math.log(ms / point.latency_ms))
    return np.asarray(errors)


def held_out_sigma(log_errors: np.ndarray) -> float:
    """Maximum-likelihood sigma of a zero-mean normal on the log errors (the bias counts as spread)."""
    e = np.asarray(log_errors, np.float64)
    if e.size == 0:
        raise ValueError("no held-out calibration point has a simulated latency; cannot fit the truth sigma")
    return float(np.sqrt(np.mean(e ** 2)))


@dataclasses.dataclass(frozen=True)
class TruthSpec:
    """How the perturbed truths are drawn."""

    sigma: float
    draws: int = TRUTH_DRAWS
    seed: int = 0
    milp_seconds: float = TRUTH_MILP_SECONDS


def device_identity(platform: SuitePlatform, index: int) -> str:
    """The key a device's factors are drawn under: its calibration key (the same hardware on every platform that
    reuses it), else platform and device name."""
    device = platform.devices[index]
    return device.calibration_key or f"{platform.name}/{device.name}"


def category_factors(platform: SuitePlatform, spec: TruthSpec, draw: int) -> np.ndarray:
    """float [D, len(CATEGORIES)]: draw ``draw``'s multiplicative error per device and op category."""
    out = np.empty((len(platform.devices), len(CATEGORIES)))
    for d in range(len(platform.devices)):
        key = zlib.crc32(device_identity(platform, d).encode())
        rng = np.random.default_rng([spec.seed, draw, key])
        out[d] = np.exp(spec.sigma * rng.standard_normal(len(CATEGORIES)))
    return out


def perturbed_cost(cost: CostModel, graph: GraphArrays, factors: np.ndarray) -> CostModel:
    """``cost`` with each node's compute (fused and unfused) on device d scaled by ``factors[d, its category]``."""
    category = np.array([CATEGORIES.index(op_category(t)) for t in graph.op_types], np.int64)
    scale = np.asarray(factors)[:, category].T  # [N, D]
    with np.errstate(invalid="ignore"):  # inf stays inf, 0 stays 0
        compute = np.where(np.isfinite(cost.compute_ms), np.asarray(cost.compute_ms) * scale, np.inf)
        unfused = np.where(np.isfinite(cost.unfused_ms), np.asarray(cost.unfused_ms) * scale, np.inf)
    return dataclasses.replace(cost, compute_ms=compute, unfused_ms=unfused,
                               source=f"{cost.source}, per-category error draw")


def _latencies(cost: CostModel, graph: GraphArrays, placements: Mapping[str, np.ndarray]) -> dict[str, float | None]:
    """Every placement's simulated latency under ``cost``; None where infinite or out of memory."""
    keys = list(placements)
    if not keys:
        return {}
    simulator = Simulator(cost, graph)
    batch = np.stack([np.asarray(placements[k], np.int64) for k in keys])
    ms = simulator.feasible_ms(batch)
    return {k: (float(m) if math.isfinite(m) else None) for k, m in zip(keys, ms)}


def _truth_optimum(cost: CostModel, graph: GraphArrays, known: dict[str, float | None],
                   milp_seconds: float) -> tuple[float | None, bool, str]:
    """(optimum ms, proven, whose) under ``cost``: a MILP on it, or the best known placement when faster."""
    from ov_autoplace_lab.optimum.strategy import OptimumStrategy
    from ov_autoplace.strategies.base import PlacementContext
    from ov_autoplace_lab.paper_bench.methods import MAX_SUBMODELS
    from ov_autoplace.placement.legalizer import legalize

    support = simulated_support(cost, graph)
    best_key = min((k for k, v in known.items() if v is not None), key=lambda k: known[k], default=None)
    best = (known[best_key], False, best_key) if best_key is not None else (None, False, "none")
    if milp_seconds <= 0:
        return best
    strategy = OptimumStrategy(cost, method="milp", max_submodels=MAX_SUBMODELS, time_limit=milp_seconds)
    solver_log = logging.getLogger("ov_autoplace.optimum")
    level = solver_log.level
    solver_log.setLevel(logging.ERROR)  # a short MILP often stops at its limit: the result says so, not a warning
    try:
        proposal = strategy.propose(PlacementContext(graph=graph, devices=tuple(cost.devices), support=support))
    except Exception:  # noqa: BLE001 - no MILP solution under this truth: the best known placement stands
        return best
    finally:
        solver_log.setLevel(level)
    legal = legalize(graph, np.asarray(proposal, np.int64), tuple(cost.devices), support,
                     max_submodels=MAX_SUBMODELS, strategy="truth optimum")
    row = legal.device_indices(graph.names, cost.devices)
    ms = _latencies(cost, graph, {"milp": row})["milp"]
    result = strategy.last_result
    proven = proven_optimal(result is not None and result.optimal, None if result is None else result.objective_ms,
                            ms)[0]
    if ms is not None and (best[0] is None or ms <= best[0] * (1 + 1e-9)):
        return ms, proven, "milp"
    return best


def _reference_points(values: dict[str, float | None]) -> tuple[float | None, float | None, dict]:
    """(best single device, plain call, methods) out of one truth's latencies."""
    singles = [v for k, v in values.items() if k.startswith(SINGLE_PREFIX) and v is not None]
    methods = {k: v for k, v in values.items() if k != PLAIN_CALL and not k.startswith(SINGLE_PREFIX)}
    return (min(singles) if singles else None), values.get(PLAIN_CALL), methods


def score_draws(platform: SuitePlatform, graph: GraphArrays, placements: Mapping[str, np.ndarray],
                spec: TruthSpec, cost: CostModel | None = None) -> dict:
    """The row's ``"truth"`` entry: every placement under ``spec.draws`` perturbed truths (same draw order in every
    list): ``optimum_ms``, ``optimum_proven``, ``best_single_device_ms``, ``plain_call_ms`` and ``<method>_ms``."""
    cost = cost if cost is not None else platform.cost_model(graph)
    out: dict = {"draws": spec.draws, "sigma": spec.sigma, "seed": spec.seed, "milp_seconds": spec.milp_seconds,
                 "optimum_ms": [], "optimum_proven": [], "optimum_source": [], "best_single_device_ms": [],
                 "plain_call_ms": []}
    for k in range(spec.draws):
        truth = perturbed_cost(cost, graph, category_factors(platform, spec, k))
        values = _latencies(truth, graph, placements)
        optimum, proven, source = _truth_optimum(truth, graph, values, spec.milp_seconds)
        best_single, plain, methods = _reference_points(values)
        out["optimum_ms"].append(optimum), out["optimum_proven"].append(proven)
        out["optimum_source"].append(source)
        out["best_single_device_ms"].append(best_single), out["plain_call_ms"].append(plain)
        for key, ms in methods.items():
            out.setdefault(key, []).append(ms)
    return out


def leave_out_platforms(platform: SuitePlatform) -> tuple[str, ...]:
    """The calibration platforms whose fits the platform's devices use (all of them are left out)."""
    names = {d.calibration_key.split("/")[0] for d in platform.devices if d.calibration_key}
    return tuple(sorted(names | {platform.name}))


def score_leave_platform_out(platform: SuitePlatform, graph: GraphArrays, placements: Mapping[str, np.ndarray],
                             milp_seconds: float = TRUTH_MILP_SECONDS, cost: CostModel | None = None) -> dict | None:
    """The row's ``"truth_leave_platform_out"`` entry (one truth, scalars), or None when the prior cannot model
    some device without the left-out fits. ``cost``: that truth, when the row prices something else than one
    inference of ``graph`` (a decoder's generation: ``decoder_rows.leave_platform_out_cost``)."""
    from ov_autoplace.costmodel.prior_costs import prior_cost_model

    excluded = leave_out_platforms(platform)
    if cost is None:
        cpu = next((d.spec for d in platform.devices if d.spec.kind == "cpu"), None)
        cost = prior_cost_model(graph, platform_facts(platform), cpu_spec=cpu, exclude_platforms=excluded).cost
    if cost is None:
        return None
    values = _latencies(cost, graph, placements)
    optimum, proven, source = _truth_optimum(cost, graph, values, milp_seconds)
    best_single, plain, methods = _reference_points(values)
    return {"excluded_fits": list(excluded), "model": cost.source, "optimum_ms": optimum,
            "optimum_proven": proven, "optimum_source": source, "best_single_device_ms": best_single,
            "plain_call_ms": plain, **methods}


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def summarize(rows: Iterable[dict], methods: Iterable[str], truth_key: str = "truth") -> dict[str, dict]:
    """Per method, pooled over every (row, draw) of ``rows[truth_key]``: the median ratio to the truth optimum, the
    share within 5 % of it, the shares slower than the plain call and than the best single device (strictly, by more
    than 1e-9), and - where the method's own model predicted a gain of >= 5 % over the best single device - the
    median share of that gain the truth keeps (1 = all of it, below 0 = slower than the best single device)."""
    rows = [r for r in rows if r.get(truth_key)]
    out: dict[str, dict] = {}
    for method in methods:
        ratios, slower_plain, slower_single, kept = [], [], [], []
        for r in rows:
            t = r[truth_key]
            values = _as_list(t.get(method))
            if not values or all(v is None for v in values):
                continue
            predicted_gain = None
            if r.get(method) is not None and r.get("best_single_device_ms"):
                predicted_gain = 1.0 - r[method] / r["best_single_device_ms"]
            for ms, opt, plain, single in zip(values, _as_list(t["optimum_ms"]), _as_list(t["plain_call_ms"]),
                                              _as_list(t["best_single_device_ms"])):
                if ms is None or opt is None:
                    continue
                ratios.append(ms / opt)
                if plain is not None:
                    slower_plain.append(ms > plain * (1 + 1e-9))
                if single is not None:
                    slower_single.append(ms > single * (1 + 1e-9))
                    if predicted_gain is not None and predicted_gain >= 0.05:
                        kept.append((1.0 - ms / single) / predicted_gain)
        if not ratios:
            continue
        ratio = np.asarray(ratios)
        out[method] = {"pairs": int(ratio.size), "median_ratio_to_optimum": float(np.median(ratio)),
                       "p90_ratio_to_optimum": float(np.quantile(ratio, 0.9)),
                       "within_5pct_of_optimum": float(np.mean(ratio <= 1.05)),
                       "slower_than_plain_call": float(np.mean(slower_plain)) if slower_plain else None,
                       "slower_than_best_single_device": float(np.mean(slower_single)) if slower_single else None,
                       "predicted_gain_pairs": len(kept),
                       "median_gain_kept": float(np.median(kept)) if kept else None}
    return out


def summary_lines(summary: dict[str, dict], titles: Mapping[str, str] | None = None) -> list[str]:
    """The summary as an aligned text table (one line per method)."""
    titles = titles or {}
    lines = [f"{'method':<36} {'pairs':>5} {'median/opt':>10} {'p90/opt':>8} {'<=1.05x':>8} {'>plain':>7} "
             f"{'>best1':>7} {'gain kept':>9}"]
    for method, s in summary.items():
        pct = lambda v: "n/a" if v is None else f"{100 * v:.1f}%"  # noqa: E731
        kept = "n/a" if s["median_gain_kept"] is None else f"{s['median_gain_kept']:.2f} ({s['predicted_gain_pairs']})"
        lines.append(f"{titles.get(method, method):<36} {s['pairs']:>5} {s['median_ratio_to_optimum']:>9.3f}x "
                     f"{s['p90_ratio_to_optimum']:>7.3f}x {pct(s['within_5pct_of_optimum']):>8} "
                     f"{pct(s['slower_than_plain_call']):>7} {pct(s['slower_than_best_single_device']):>7} {kept:>9}")
    return lines


#: FULL_DEVICE_NAME of the calibrated devices as OpenVINO reports them (the CPU plugin reads the CPU's model
#: name; the GPU plugin appends "(iGPU)"/"(dGPU)"; every Core Ultra NPU is "Intel(R) AI Boost").
REPORTED_NAMES = {"paper/CPU": "12th Gen Intel(R) Core(TM) i9-12900K",
                  "paper/GPU": "Intel(R) Data Center GPU Flex 170 (dGPU)",
                  "laptop/CPU": "Intel(R) Core(TM) Ultra 7 165H",
                  "laptop/GPU": "Intel(R) Arc(TM) Graphics (iGPU)",
                  "laptop/NPU": "Intel(R) AI Boost"}


def draw_risk(draws: Mapping[str, list], key: str) -> tuple[int, int, int]:
    """(draws slower than the best single device, draws slower than the plain call, draws) of ``draws[key]``
    (one row's truth draws, as ``score_draws`` gives them)."""
    single = plain = n = 0
    for ms, best, call in zip(draws[key], draws["best_single_device_ms"], draws["plain_call_ms"]):
        if ms is None:
            continue
        n += 1
        single += best is not None and ms > best * (1 + 1e-9)
        plain += call is not None and ms > call * (1 + 1e-9)
    return single, plain, n


def platform_facts(platform: SuitePlatform) -> list:
    """What each simulated device would report to the prior: the properties ``read_device_facts`` reads."""
    from ov_autoplace.costmodel.prior_costs import DeviceFacts

    facts = []
    for device in platform.devices:
        spec = device.spec
        rates = {**spec.peak_flops, **spec.matrix_peak_flops}  # DEVICE_GOPS: the best rate per precision
        gops = tuple(sorted((p, r / 1e9) for p, r in rates.items())) if spec.kind != "cpu" else ()
        facts.append(DeviceFacts(spec.name, f"openvino_intel_{spec.kind}_plugin",
                                 "Type.INTEGRATED" if spec.shares_host_memory else "Type.DISCRETE", None,
                                 REPORTED_NAMES.get(device.calibration_key or "", spec.product),
                                 (), gops, spec.memory_bytes if spec.kind == "gpu" else None, platform.precision, None))
    return facts


__all__ = ["PLAIN_CALL", "draw_risk", "REPORTED_NAMES", "SINGLE_PREFIX", "TRUTH_DRAWS", "TRUTH_MILP_SECONDS", "TruthSpec",
           "category_factors", "device_identity", "held_out_log_errors", "held_out_sigma", "leave_out_platforms",
           "perturbed_cost", "platform_facts", "score_draws", "score_leave_platform_out", "summarize",
           "summary_lines"]
