"""Held-out evaluation of amortised policies: the policy alone, policy + local search, the search alone.

Every row is one zoo model on one suite platform as fitted (the headroom
table's rows), run as a Ray task. Per policy it records what
``bench.methods`` records for the HSDAG rows - ``hsdag_ms`` (one pass, legalised
with the bound of 8 and the guard, as ``compile_model`` runs it) and
``hsdag_refined_ms`` (the same with the cost-model local search) - plus the
wall time of each; with ``decodings`` K > 0 also ``hsdag_decoded_ms``, the
same pass decoded K more ways and priced (``ov_autoplace_lab/training/decoding.py``: a choice
among the policy's own placements by the cost model, counted apart from the
policy alone); ``search_only_ms`` is the local search from HETERO's own
affinity with no policy. The reference is the best placement known: the
headroom table's optimum (``docs/bench/platforms.json``) or the target's
search, whichever is faster. Rows are tagged ``in_training``,
``held_out_architecture``, ``held_out_platform`` or both. Every number is
simulated. The truth draws of ``bench.truth`` (20 perturbations of the fitted
device model at the held-out sigma, seed 0; reference = the best of the row's
placements under each draw, no MILP) score the same placements under models no
method optimised.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Iterable

import numpy as np

from ov_autoplace_lab.training.decoding import LEGALISED
from ov_autoplace_lab.training.splits import HELD_OUT_ARCHITECTURES, HELD_OUT_PLATFORMS, evaluation_specs
from ov_autoplace_lab.training.targets import MAX_SUBMODELS, TargetSpec, case_cost, load_target, target_path

PLATFORMS_JSON = Path(__file__).resolve().parents[3] / "docs" / "bench" / "platforms.json"
SPLIT_PAYS = 0.05


def _table_optima() -> dict[tuple[str, str], float]:
    if not PLATFORMS_JSON.exists():
        return {}
    rows = json.loads(PLATFORMS_JSON.read_text()).get("headroom", [])
    return {(r["platform"], r["model"]): r["optimum_ms"] for r in rows if r.get("optimum_ms")}


def evaluate_row(args: tuple) -> dict:
    """One row (a Ray task): ``args`` = (spec, {name: policy path}, sigma, reference ms, decode); ``decode``:
    ``{"decodings": K, "legalised": L}`` adds ``hsdag_decoded_ms`` (None, or K = 0: not)."""
    from ov_autoplace_lab.paper_bench import truth
    from ov_autoplace_lab.paper_bench.methods import LOCAL_SEARCH_OPTIONS, Case
    from ov_autoplace_lab.paper_bench.headroom import reference_placements
    from ov_autoplace.search.local_search import LocalSearchRefiner
    from ov_autoplace.search.memory_fit import legal_pricer
    from ov_autoplace.costmodel.simulator import Simulator
    from ov_autoplace.decision.prediction_guard import guard_placement
    from ov_autoplace.placement.legalizer import legalize
    from ov_autoplace.strategies.base import PlacementContext
    from ov_autoplace_lab.training.decoding import DecodedHSDAGStrategy
    from ov_autoplace_lab.training.targets import variant_platform

    spec, policies, sigma, reference, decode = args
    decode = dict(decode or {})
    methods = [("hsdag_ms", False, 0), ("hsdag_refined_ms", True, 0)]
    if decode.get("decodings"):
        methods.append(("hsdag_decoded_ms", False, decode["decodings"]))
    graph, cost, support = case_cost(spec, sigma)
    devices = tuple(cost.devices)
    simulator = Simulator(cost, graph)
    price = legal_pricer(cost, graph, support)  # the bound's merges priced, as compile_model legalizes them
    context = PlacementContext(graph=graph, devices=devices, support=support)

    def row_of(placement) -> np.ndarray:
        return placement.device_indices(graph.names, devices)

    def ms_of(row: np.ndarray) -> float | None:
        ms = simulator.feasible_ms(row)
        return ms if math.isfinite(ms) else None

    out = {"platform": spec.platform, "model": spec.model, "nodes": graph.num_nodes, "simulated": True,
           "held_out_architecture": spec.model in HELD_OUT_ARCHITECTURES,
           "held_out_platform": spec.platform in HELD_OUT_PLATFORMS, "policies": {}}
    placements = reference_placements(Case(spec.model, graph, devices, support, cost, True))
    feasible = [v for v in (ms_of(placements[f"single:{d}"]) for d in devices) if v is not None]
    out["best_single_device_ms"] = min(feasible) if feasible else None
    plain = placements["plain_call"]
    for name, path in policies.items():
        cells = {}
        for key, refine, decodings in methods:
            start = time.perf_counter()
            strategy = DecodedHSDAGStrategy(path, cost, refine=refine, refine_options=LOCAL_SEARCH_OPTIONS,
                                            decodings=decodings, decode_options={
                                                "max_submodels": MAX_SUBMODELS,
                                                "legalised": decode.get("legalised", LEGALISED)} if decodings else None)
            placement = legalize(graph, strategy.propose(context), devices, support, max_submodels=MAX_SUBMODELS,
                                 strategy=strategy.name, price=price)
            placement = guard_placement(placement, graph, cost, support)
            cells[key.replace("_ms", "_s")] = round(time.perf_counter() - start, 4)
            row = row_of(placement)
            cells[key] = ms_of(row)
            placements[f"{name}:{key}"] = row
        out["policies"][name] = cells
    start = time.perf_counter()
    result = LocalSearchRefiner(cost, graph, support, **LOCAL_SEARCH_OPTIONS).refine(plain)
    searched = row_of(legalize(graph, result.proposal, devices, support, max_submodels=MAX_SUBMODELS,
                               strategy="local_search", price=price))
    out["search_only_s"] = round(time.perf_counter() - start, 4)
    out["search_only_ms"] = ms_of(searched)
    placements["search_only_ms"] = searched
    known = [v for v in [reference, out["search_only_ms"], out["best_single_device_ms"],
                         *(c.get(k) for c in out["policies"].values() for k in ("hsdag_ms", "hsdag_refined_ms"))]
             if v is not None]
    out["optimum_ms"] = min(known) if known else None
    out["split_pays"] = (out["optimum_ms"] is not None and (out["best_single_device_ms"] is None or
                         out["optimum_ms"] <= (1 - SPLIT_PAYS) * out["best_single_device_ms"]))
    platform, _ = variant_platform(spec, sigma)
    out["truth"] = truth.score_draws(platform, graph, placements,
                                     truth.TruthSpec(sigma=sigma, draws=truth.TRUTH_DRAWS, seed=0, milp_seconds=0.0),
                                     cost=cost)
    return out


def one_pass_row(policy, graph, cost, support) -> np.ndarray:
    """The policy alone as the default path runs it: one pass, legalised with the bound, guarded; device indices."""
    from ov_autoplace.search.memory_fit import legal_pricer
    from ov_autoplace.decision.prediction_guard import guard_placement
    from ov_autoplace.placement.legalizer import legalize
    from ov_autoplace.strategies.base import PlacementContext
    from ov_autoplace.strategies.hsdag import HSDAGStrategy

    devices = tuple(cost.devices)
    proposal = HSDAGStrategy(policy, cost).propose(PlacementContext(graph=graph, devices=devices, support=support))
    placement = guard_placement(legalize(graph, proposal, devices, support, max_submodels=MAX_SUBMODELS,
                                         strategy="hsdag", price=legal_pricer(cost, graph, support)),
                                graph, cost, support)
    return placement.device_indices(graph.names, devices)


def one_pass_ratios(directory: str | Path, policy: str, specs: list[TargetSpec]) -> dict[str, float | None]:
    """A quick check (no Ray, no search): the policy alone, one pass + legalize + guard, over each spec's target
    (simulated; None where infeasible). For validation during training, on training specs."""
    from ov_autoplace.costmodel.simulator import Simulator
    from ov_autoplace.policy.numpy_policy import NumpyHSDAGPolicy
    from ov_autoplace_lab.training.targets import run_sigma

    sigma, loaded, out = run_sigma(directory), NumpyHSDAGPolicy.load(policy), {}
    for spec in specs:
        target = load_target(target_path(directory, spec))
        graph, cost, support = case_cost(spec, sigma)
        ms = Simulator(cost, graph).feasible_ms(one_pass_row(loaded, graph, cost, support))
        out[spec.key] = ms / target["latency_ms"] if math.isfinite(ms) else None
    return out


def _subset(row: dict) -> str:
    a, p = row["held_out_architecture"], row["held_out_platform"]
    return "held-out arch + platform" if a and p else "held-out architecture" if a else \
        "held-out platform" if p else "in training"


SUBSETS = ("in training", "held-out architecture", "held-out platform", "held-out arch + platform")
#: Every split row, whatever the split: the issue's "13 of 16" is counted here.
EVERY_ROW = "every split row"


def _subset_rows(rows: list[dict], subset: str) -> list[dict]:
    return [r for r in rows if r["split_pays"] and (subset == EVERY_ROW or _subset(r) == subset)]


def _names_in(subset: str, names: list[str], trained_on_all: frozenset[str]) -> list[str]:
    """The policies a subset reports: one trained on all data has no held-out rows, only training ones."""
    return [n for n in names if subset in ("in training", EVERY_ROW) or n not in trained_on_all]


def summary_table(rows: list[dict], names: list[str], trained_on_all: frozenset[str] = frozenset()) -> list[str]:
    """Per subset and method: split rows, <=1.05x / <=1.10x the best known, slower than the best single device,
    median ratio and median seconds. A policy in ``trained_on_all`` shows in the training subset and over every
    split row only."""
    lines = [f"{'subset':<26} {'method':<34} {'rows':>4} {'<=1.05x':>7} {'<=1.10x':>7} {'>best1':>6} "
             f"{'median':>7} {'max':>7} {'sec':>7}"]
    for subset in (*SUBSETS, EVERY_ROW):
        sub = _subset_rows(rows, subset)
        if not sub:
            continue
        shown = _names_in(subset, names, trained_on_all)
        decoded = [n for n in shown if all("hsdag_decoded_ms" in r["policies"][n] for r in sub)]
        methods = [(f"{n} alone (one pass)", n, "hsdag_ms") for n in shown] + \
                  [(f"{n} + decodings", n, "hsdag_decoded_ms") for n in decoded] + \
                  [(f"{n} + local search", n, "hsdag_refined_ms") for n in shown] + \
                  [("local search alone", None, "search_only_ms")]
        for title, name, key in methods:
            ms = [(r["policies"][name] if name else r).get(key) for r in sub]
            sec = [(r["policies"][name] if name else r).get(key.replace("_ms", "_s")) for r in sub]
            ratio = np.array([m / r["optimum_ms"] if m is not None else np.inf for m, r in zip(ms, sub)])
            slower = sum(1 for m, r in zip(ms, sub) if m is None or (r["best_single_device_ms"] is not None and
                                                                     m > r["best_single_device_ms"] * (1 + 1e-9)))
            lines.append(f"{subset:<26} {title:<34} {len(sub):>4} {int((ratio <= 1.05).sum()):>7} "
                         f"{int((ratio <= 1.10).sum()):>7} {slower:>6} {np.median(ratio):>6.3f}x "
                         f"{ratio.max():>6.3f}x {np.median(sec):>7.3f}")
    return lines


def check_trained_on_all(trained_on_all: Iterable[str], policies: dict[str, str]) -> frozenset[str]:
    """``trained_on_all`` as a set, or ValueError naming each name that is not one of ``policies``."""
    unknown = sorted(set(trained_on_all) - set(policies))
    if unknown:
        raise ValueError(f"--trained-on-all {unknown}: not a --policy NAME (the policies are {sorted(policies)})")
    return frozenset(trained_on_all)


def evaluate_policies(directory: str | Path, policies: dict[str, str], *, address: str | None = None,
                      num_cpus: int = 2, progress: bool = True, rows: str = "all",
                      trained_on_all: Iterable[str] = (), decodings: int = 0, legalised: int = LEGALISED) -> dict:
    """Every evaluation row as a Ray task (``rows='split'``: only where the target says a split pays).
    ``trained_on_all``: names of policies trained with ``--all-data`` (see :func:`summary_table`);
    ``decodings`` > 0: also each policy's pass + that many priced decodings, ``legalised`` of them in full."""
    trained_on_all = check_trained_on_all(trained_on_all, policies)
    from ov_autoplace_lab.paper_bench import truth
    from ov_autoplace_lab.training.distributed import run_tasks
    from ov_autoplace_lab.training.targets import run_sigma

    sigma = run_sigma(directory)
    optima = _table_optima()
    items = []
    for spec in evaluation_specs():
        path = target_path(directory, spec)
        target = load_target(path) if path.exists() else None
        reference = [v for v in (optima.get((spec.platform, spec.model)), target and target["latency_ms"]) if v]
        if rows == "split" and target is not None and target["latency_ms"] > (1 - SPLIT_PAYS) * target[
                "best_single_ms"] and (not reference or min(reference) > (1 - SPLIT_PAYS) * target["best_single_ms"]):
            continue
        items.append((spec, policies, sigma, min(reference) if reference else None,
                      {"decodings": decodings, "legalised": legalised}))
    results: list[dict] = []
    started = time.perf_counter()
    failures = run_tasks(evaluate_row, items, lambda item, row: results.append(row), address=address,
                         num_cpus=num_cpus, progress=progress, description="evaluation")
    if failures:
        from ov_autoplace_lab.training.targets import TargetGenerationError

        raise TargetGenerationError(f"{len(failures)} evaluation rows failed: "
                                    + "; ".join(f"{i[0].key}: {e}" for i, e in failures[:5]))
    order = {s.key: k for k, s in enumerate(evaluation_specs())}
    results.sort(key=lambda r: order[TargetSpec(f"zoo:{r['model']}", r["platform"]).key])
    names = list(policies)
    truth_summary = {}
    keys = ("hsdag_ms", "hsdag_decoded_ms", "hsdag_refined_ms") if decodings else ("hsdag_ms", "hsdag_refined_ms")
    for subset in (*SUBSETS, EVERY_ROW):
        sub = [{**r, **{f"{n}:{k}": r["policies"][n][k] for n in names for k in keys}}
               for r in _subset_rows(results, subset)]
        methods = [f"{n}:{k}" for n in _names_in(subset, names, trained_on_all) for k in keys] + ["search_only_ms"]
        if sub:
            truth_summary[subset] = truth.summarize(sub, methods)
    table = summary_table(results, names, trained_on_all)
    for subset, summary in truth_summary.items():
        table += ["", f"truth draws ({subset}, split rows):", *truth.summary_lines(summary)]
    return {"policies": policies, "sigma": sigma, "decodings": decodings, "legalised": legalised,
            "held_out_architectures": list(HELD_OUT_ARCHITECTURES), "held_out_platforms": list(HELD_OUT_PLATFORMS),
            "trained_on_all": sorted(trained_on_all), "seconds": round(time.perf_counter() - started, 1),
            "rows": results, "truth_summary": truth_summary, "table": table}


__all__ = ["check_trained_on_all", "evaluate_policies", "evaluate_row", "one_pass_ratios", "summary_table"]
