"""Runs the benchmark: every method on every zoo model, measured on the testbed and simulated on two platforms.

Measured setting (the testbed: CPU bf16 + CPUF f32, all cores each,
real HETERO compiles): each model is profiled once (cached), every method
places it, every *distinct* result is compiled once (the reference, CPU only,
twice: the control of what one compile alone differs by), and all of them are
timed in ``rounds`` interleaved rounds (a fresh shuffled order per round)
with the native timer, ``runs`` timed runs each in all: the median and IQR
pool those runs, so load on the shared machine hits all methods alike. The
outputs of every placement on one set of random inputs are compared with the
f32 single-device reference (max abs difference, cosine: the paper's Table 4).

Simulated settings (the paper's i9-12900K + Flex 170, the Core Ultra laptop):
each method's legal placement is priced by the simulator under the
platform's CostModel; learned methods train on a :class:`SimEnv`. OpenVINO's
own modes are emulated there from their documented rules (labelled).
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import platform as pyplatform
import time
from typing import Callable, Sequence

import numpy as np
import openvino as ov

from ov_autoplace.costmodel.platforms import PLATFORMS
from ov_autoplace.costmodel.sim_costs import cost_model_for, simulated_support
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.legalizer import query_support
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.devices.testbed import ACCEL_DEVICE, HOST_DEVICE, make_testbed, usable_cores
from ov_autoplace.devices.timing import measure_latency, random_inputs
from ov_autoplace_lab.paper_bench.methods import Case, Method, Outcome, default_methods

log = logging.getLogger(__name__)

ZOO_MODELS = ("inception_v3", "resnet50", "bert_base")
REFERENCE = "CPU only"


@dataclasses.dataclass
class BenchConfig:
    """What ``ov-autoplace bench`` runs. ``budget``: distinct measured placements per learned method;
    ``sim_budget``: simulated placements per learned method; ``runs``: timed runs per method and model."""

    models: tuple[str, ...] = ZOO_MODELS
    settings: tuple[str, ...] = ("measured", "paper", "laptop")
    budget: int = 30
    sim_budget: int = 300
    runs: int = 30
    rounds: int = 5
    search_iterations: int = 5
    milp_seconds: float = 10.0
    seed: int = 0
    quick: bool = False
    #: registered strategy names (strategies.registry) whose rows to run; empty: every row
    strategies: tuple[str, ...] = ()

    @classmethod
    def quick_config(cls, **overrides) -> "BenchConfig":
        """The CI smoke test: every row and column, tiny search budgets (the table's shape, not its speed)."""
        return cls(**{**dict(budget=3, sim_budget=20, runs=30, rounds=3, search_iterations=2, milp_seconds=2.0,
                                 quick=True),
                      **overrides})

    def __post_init__(self) -> None:
        unknown = [s for s in self.settings if s != "measured" and s not in PLATFORMS]
        if unknown:
            raise ValueError(f"unknown setting(s) {unknown}; expected 'measured' or one of {sorted(PLATFORMS)}")
        if min(self.budget, self.sim_budget, self.runs, self.rounds, self.search_iterations) < 1:
            raise ValueError(f"budgets, runs, rounds and search_iterations must be >= 1, got {self}")
        if self.strategies:
            from ov_autoplace.strategies.registry import strategy_info, strategy_names

            benched = [name for name in strategy_names() if strategy_info(name).bench_method]
            wrong = [name for name in self.strategies if name not in benched]
            if wrong:
                raise ValueError(f"strategies {wrong} have no row in the benchmark; expected some of {benched}")


def _methods(config: BenchConfig, devices) -> list[Method]:
    """The benchmark's rows for ``devices``: every row, or the single devices plus ``config.strategies``."""
    methods = default_methods(devices)
    if not config.strategies:
        return methods
    from ov_autoplace.strategies.registry import strategy_info

    wanted = {strategy_info(name).bench_method for name in config.strategies}
    return [m for m in methods if m.kind == "single" or m.name in wanted]


def _cell(outcome: Outcome | None, error: str | None = None) -> dict:
    cell = {"median_ms": None, "q1_ms": None, "q3_ms": None, "runs": 0, "speedup": None, "vs_optimum": None,
            "evaluated": 0, "compiles": 0, "search_s": 0.0, "budget": None, "submodels": 0, "counts": {},
            "max_abs_diff": None, "cosine": None, "error": error, "notes": []}
    if outcome is not None:
        p = outcome.placement
        cell.update(evaluated=outcome.evaluated, compiles=outcome.compiles, search_s=round(outcome.search_s, 3),
                    budget=outcome.budget, submodels=p.num_submodels, counts=p.counts_per_device(),
                    notes=list(dict.fromkeys(outcome.notes))[:4])
    return cell


def _run_methods(case: Case, methods: Sequence[Method], budget: int, seed: int, tick: Callable[[str], None]
                 ) -> dict[str, Outcome | Exception]:
    outcomes: dict[str, Outcome | Exception] = {}
    for method in methods:
        tick(f"{case.model_name}: {method.name}")
        try:
            outcomes[method.name] = method.run(case, budget, seed)
        except Exception as exc:  # noqa: BLE001 - one failing method is a cell with an error, not a lost table
            log.warning("%s failed on %s: %s: %s", method.name, case.model_name, type(exc).__name__, exc)
            outcomes[method.name] = exc
    return outcomes


def _finish_row_cells(rows: dict[str, dict], model: str) -> None:
    """Speed-up over the reference and distance from the optimum, from the medians."""
    def median(name):
        return rows.get(name, {}).get(model, {}).get("median_ms")

    ref, opt = median(REFERENCE), median("Optimum (MILP)")
    for cells in rows.values():
        cell = cells.get(model)
        if cell is None or cell["median_ms"] is None:
            continue
        cell["speedup"] = None if ref is None else ref / cell["median_ms"] - 1.0
        cell["vs_optimum"] = None if opt is None else cell["median_ms"] / opt - 1.0


# ---------------------------------------------------------------- measured
def _compare(out: list[np.ndarray], ref: list[np.ndarray]) -> tuple[float, float]:
    a = np.concatenate([np.asarray(o, np.float64).ravel() for o in out])
    b = np.concatenate([np.asarray(r, np.float64).ravel() for r in ref])
    cos = float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-30))
    return float(np.max(np.abs(a - b))), cos


def _time_interleaved(compiled: list[ov.CompiledModel], inputs: list, runs: int, rounds: int, seed: int
                      ) -> list[list[np.ndarray]]:
    """Per compiled model, its samples of each round (every round times every model, in a fresh shuffled order):
    round k of two models is a pair taken under the same machine state (``report`` compares them per round)."""
    per_round = -(-runs // rounds)
    pooled: list[list[np.ndarray]] = [[] for _ in compiled]
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        for k in rng.permutation(len(compiled)):
            measure_latency(compiled[k], inputs, warmup=2, iterations=1)  # re-warm after the others ran
            pooled[k].append(measure_latency(compiled[k], inputs, warmup=0, iterations=per_round).samples_ms)
    return pooled


def measured_setting(config: BenchConfig, load_model: Callable[[str], ov.Model], tick: Callable[[str], None]
                     ) -> dict:
    from ov_autoplace.api import compile_placement
    from ov_autoplace.measuring.providers import MeasuredCostProvider

    tb = make_testbed()
    f32_device = next(d for d in tb.devices if tb.properties[d].get("INFERENCE_PRECISION_HINT") == "f32")
    methods = _methods(config, tb.devices)
    rows: dict[str, dict] = {m.name: {} for m in methods}
    curves: dict[str, dict] = {}
    notes = ["Optimum (MILP) is exact under the measured cost model (per-op profiles, submodels summed in sequence "
             "as HETERO runs them), not under the measurement: a placement the model prices higher can time faster"]
    notes.append(f"{REFERENCE} is compiled twice (after an untimed first compile of the row; again after every "
                 "other placement): its cell pools both compiles' runs and its paired rounds are their geometric "
                 "mean; the second / first ratio is the control a winner must beat")
    notes += [f"reference for correctness: {f32_device} only (f32); CPU runs bf16 where the CPU has it"
             if tb.bf16 else f"reference for correctness: {f32_device} only (f32)"]
    controls: dict[str, dict] = {}
    for model_name in config.models:
        prepared = prepare_model(load_model(model_name))
        graph = extract_graph(prepared)
        support = query_support(tb.core, prepared, graph, tb.devices)
        tick(f"{model_name}: profiling")
        start = time.perf_counter()
        cost = MeasuredCostProvider()(PlacementContext(graph, tb.devices, support, tb.core, prepared))
        notes.append(f"{model_name}: measured profile (cost model of the heuristics, optimum and HSDAG) "
                     f"{time.perf_counter() - start:.1f} s (cached across runs)")
        case = Case(model_name, graph, tb.devices, support, cost, False, tb.core, prepared,
                    dict(iterations=config.search_iterations, warmup=1, max_seconds=1.0), config.milp_seconds)
        outcomes = _run_methods(case, methods, config.budget, config.seed, tick)
        tick(f"{model_name}: compiling and timing every placement, interleaved")
        distinct: dict[object, list[str]] = {}
        for name, outcome in outcomes.items():
            if isinstance(outcome, Exception):
                rows[name][model_name] = _cell(None, f"{type(outcome).__name__}: {outcome}")
                continue
            rows[name][model_name] = _cell(outcome)
            if outcome.curve:
                curves.setdefault(name, {})[model_name] = [[int(e), float(b)] for e, b in outcome.curve]
            key = (outcome.openvino_compile[0], tuple(sorted(outcome.openvino_compile[1].items()))) \
                if outcome.openvino_compile else tuple(outcome.placement.assignment[n] for n in graph.names)
            distinct.setdefault(key, []).append(name)
        keys = list(distinct)
        ref = next((k for k, key in enumerate(keys) if REFERENCE in distinct[key]), None)

        # Two compiles of one device differ here by a few % (memory layout; the first of a row tended to differ
        # most), which a paired round cannot tell from a placement effect. So the row's first compile is made
        # and never timed, the reference is compiled again after every other placement (the control), and its
        # rounds are the geometric mean of its two compiles; the report names a winner only beyond the control.
        def compile_outcome(outcome):
            try:
                if outcome.openvino_compile:
                    device, props = outcome.openvino_compile
                    return tb.core.compile_model(prepared, device, props)
                return compile_placement(prepared, outcome.placement, core=tb.core)
            except Exception as exc:  # noqa: BLE001
                return exc

        untimed = compile_outcome(outcomes[REFERENCE]) if ref is not None else None
        compiled = [compile_outcome(outcomes[distinct[key][0]]) for key in keys]
        if ref is not None:
            compiled.append(compile_outcome(outcomes[REFERENCE]))  # the control, compiled last
        ok = [k for k, c in enumerate(compiled) if not isinstance(c, Exception)]
        inputs = random_inputs(compiled[ok[0]], seed=config.seed)
        reference = list(tb.core.compile_model(prepared, f32_device)(inputs).values())
        samples = _time_interleaved([compiled[k] for k in ok], inputs, config.runs, config.rounds, config.seed)
        control = _merge_control(compiled, ok, samples, ref)
        if control is not None:
            controls[model_name] = control
        for k, c in enumerate(compiled[:len(keys)]):
            for name in distinct[keys[k]]:
                cell = rows[name][model_name]
                if isinstance(c, Exception):
                    cell["error"] = f"compile failed: {type(c).__name__}: {str(c)[:200]}"
                    continue
                per_round = samples[ok.index(k)]
                s = np.concatenate(per_round)
                q1, med, q3 = np.percentile(s, [25, 50, 75])
                round_ms = [float(np.median(r)) for r in per_round]
                if k == ref and control is not None:
                    s = np.concatenate(per_round + samples[ok.index(len(keys))])  # both compiles' runs
                    q1, med, q3 = np.percentile(s, [25, 50, 75])
                    round_ms = control["round_ms"]
                cell.update(median_ms=float(med), q1_ms=float(q1), q3_ms=float(q3), runs=int(len(s)),
                            round_ms=round_ms)
                cell["max_abs_diff"], cell["cosine"] = _compare(list(c(inputs).values()), reference)
                if outcomes[name].openvino_compile is None:
                    cell["compiles"] += 1  # the final compile of the chosen placement
        _finish_row_cells(rows, model_name)
        del compiled, untimed
    return {"name": "measured", "simulated": False, "models": list(config.models), "reference": REFERENCE,
            "title": "Measured on the testbed: " + ", ".join(
                f"{d} ({tb.properties[d]['INFERENCE_PRECISION_HINT']}, {tb.properties[d]['INFERENCE_NUM_THREADS']} "
                f"thread{'s' if tb.properties[d]['INFERENCE_NUM_THREADS'] > 1 else ''})" for d in tb.devices),
            "rows": [{"method": m.name, "kind": m.kind, "cells": rows[m.name]} for m in methods],
            "curves": curves, "notes": notes, "controls": controls}


def _merge_control(compiled: list, ok: list[int], samples: list, ref_index: int | None) -> dict | None:
    """The reference's two compiles (``ref_index`` and the last one): per round their geometric mean, and the
    control ratio second / first - what one compile of the same device differs by in this run. The control is
    appended after every placement's compile, so it is the last one whenever there is a reference."""
    second = len(compiled) - 1
    if ref_index is None or ref_index not in ok or second not in ok:
        return None
    first_ms = [float(np.median(r)) for r in samples[ok.index(ref_index)]]
    second_ms = [float(np.median(r)) for r in samples[ok.index(second)]]
    return {"round_ms": [float(np.sqrt(a * b)) for a, b in zip(first_ms, second_ms)],
            "round_ratio": [b / a for a, b in zip(first_ms, second_ms)]}


# ---------------------------------------------------------------- simulated
def simulated_setting(platform_name: str, config: BenchConfig, load_model: Callable[[str], ov.Model],
                      tick: Callable[[str], None]) -> dict:
    platform = PLATFORMS[platform_name]
    methods = _methods(config, platform.device_names)
    rows: dict[str, dict] = {m.name: {} for m in methods}
    curves: dict[str, dict] = {}
    for model_name in config.models:
        graph = extract_graph(prepare_model(load_model(model_name)))
        cost = cost_model_for(graph, platform)
        support = simulated_support(cost, graph)
        case = Case(model_name, graph, platform.device_names, support, cost, True, milp_seconds=config.milp_seconds)
        simulator = Simulator(cost, graph)
        for name, outcome in _run_methods(case, methods, config.sim_budget, config.seed, tick).items():
            if isinstance(outcome, Exception):
                rows[name][model_name] = _cell(None, f"{type(outcome).__name__}: {outcome}")
                continue
            cell = rows[name][model_name] = _cell(outcome)
            row = outcome.placement.device_indices(graph.names, case.devices)
            cell["median_ms"] = float(simulator(row))
            if outcome.curve:
                curves.setdefault(name, {})[model_name] = [[int(e), float(b)] for e, b in outcome.curve]
        _finish_row_cells(rows, model_name)
    return {"name": platform_name, "simulated": True, "models": list(config.models), "reference": REFERENCE,
            "title": platform.describe().splitlines()[0],
            "rows": [{"method": m.name, "kind": m.kind, "cells": rows[m.name]} for m in methods],
            "curves": curves, "notes": ["latencies are SIMULATED from the platform's spec-sheet cost model"]}


def run_bench(config: BenchConfig, *, command: str = "", load_model: Callable[[str], ov.Model] | None = None,
              progress: bool = True) -> dict:
    """Every setting of ``config``; returns the results dict ``report.write_report`` writes."""
    from tqdm.auto import tqdm

    if load_model is None:
        from ov_autoplace_lab import models as zoo

        load_model = zoo.load
    start = time.perf_counter()
    bar = tqdm(total=sum(_steps(s, config) for s in config.settings), disable=not progress, unit="step",
               desc="bench")

    def tick(what: str) -> None:
        bar.set_postfix_str(what[:60])
        bar.update(1)

    settings = []
    for setting in config.settings:
        if setting == "measured":
            settings.append(measured_setting(config, load_model, tick))
        else:
            settings.append(simulated_setting(setting, config, load_model, tick))
    bar.close()
    meta = {"date": datetime.date.today().isoformat(), "openvino": ov.get_version(), "command": command,
            "quick": config.quick, "budget": config.budget, "sim_budget": config.sim_budget, "runs": config.runs,
            "machine": f"{pyplatform.processor() or pyplatform.machine()}, {usable_cores()} cores, "
                       f"{pyplatform.system()} {pyplatform.release()}",
            "seconds": round(time.perf_counter() - start, 1), "config": dataclasses.asdict(config)}
    return {"meta": meta, "settings": settings}


def _steps(setting: str, config: BenchConfig) -> int:
    """Progress ticks of a setting: one per method and model, plus profiling and timing when measured."""
    devices = (ACCEL_DEVICE, HOST_DEVICE) if setting == "measured" else PLATFORMS[setting].device_names
    return len(config.models) * (len(_methods(config, devices)) + (2 if setting == "measured" else 0))


__all__ = ["BenchConfig", "REFERENCE", "ZOO_MODELS", "measured_setting", "run_bench", "simulated_setting"]
