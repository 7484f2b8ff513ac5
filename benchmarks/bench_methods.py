"""Placement methods side by side: single devices, heuristics and exact optima, predicted and measured.

    python benchmarks/bench_methods.py [--models inception_v3,resnet50,bert_base] [--platforms paper,laptop]
        [--time-limit 10] [--iterations 20] [--rounds 4] [--no-testbed] [--profile-dir DIR] [--json PATH]

For each zoo model (prepared graph) and each cost model:

(a) the simulated platforms (``cost_model_for(graph, PAPER_PLATFORM)`` - the
    paper's i9-12900K + Flex 170 - and the 3-device laptop; numbers from
    spec-sheet rooflines, labelled *simulated*);
(b) the testbed, on its measured CostModel (``measure_model_profile``; a fresh
    temporary profile store unless ``--profile-dir`` names one to reuse),

it prints the predicted latency (``Simulator``) of: every single device, the
best single device, HEFT, critical-path greedy (both legalized with place()'s
default bound of 8 submodels, as ``place()`` would), the min-cut optimum (2
devices only; it optimises compute + transfers, the latency shown is the full
model's) and the MILP optimum with ``max_submodels=8`` and unbounded, with
each method's wall time and the solver status. For (b) every distinct
placement is also compiled (``compile_placement``) and timed
(``measure_latency``) in ``--rounds`` interleaved rounds (a fresh shuffled
order per round, ``iterations / rounds`` runs each, the median over the pooled
runs; the spread of the round medians shows the load noise; "cores busy" is
the process CPU time over wall time while timing it: 1.0 means one thread
worked, 2.0 both cores). Markdown to stdout, everything to ``--json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import tempfile
import time
from typing import Callable

import numpy as np

from _common import ZOO_MODELS, ZooCase, load_average, load_case, markdown_table, profile_store, write_json
import ov_autoplace as oa
from ov_autoplace.costmodel import CostModel
from ov_autoplace_lab.optimum.milp import milp_placement
from ov_autoplace_lab.optimum.exact_optimum import min_cut_placement
from ov_autoplace.costmodel.platforms import PLATFORMS
from ov_autoplace.costmodel.sim_costs import cost_model_for, simulated_support
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.graph.arrays import GraphArrays, extract_graph
from ov_autoplace.placement.legalizer import legalize
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.strategies import BestSingleDeviceStrategy, HeftStrategy, PlacementContext
from ov_autoplace_lab.baselines.critical_path import CriticalPathGreedyStrategy
from ov_autoplace.devices.testbed import Testbed, make_testbed
from ov_autoplace.devices.timing import measure_latency, random_inputs

PLACE_BOUND = 8  # place()'s default max_submodels


@dataclasses.dataclass
class MethodResult:
    """One method's placement on one cost model."""

    method: str
    predicted_ms: float
    submodels: int
    wall_s: float
    status: str
    placement: Placement | None = None
    measured_ms: float | None = None
    round_ms: list[float] = dataclasses.field(default_factory=list)
    cores_busy: float | None = None  # process CPU time / wall time while timing it (1 = one thread busy)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["placement_counts"] = self.placement.counts_per_device() if self.placement else None
        out.pop("placement")
        return out


def evaluate_methods(cost: CostModel, graph: GraphArrays, support: np.ndarray, time_limit: float) -> list[MethodResult]:
    """Every method's legal placement under ``cost``, with the simulator's latency and the method's wall time."""
    devices = tuple(cost.devices)
    sim = Simulator(cost, graph)
    context = PlacementContext(graph=graph, devices=devices, support=support)
    results: list[MethodResult] = []

    def add(method: str, propose: Callable[[], tuple[np.ndarray, str]], bound: int | None) -> None:
        started = time.perf_counter()
        proposal, status = propose()
        wall = time.perf_counter() - started
        placement = legalize(graph, np.asarray(proposal, dtype=np.int64), devices, support, max_submodels=bound,
                             strategy=method)
        device = placement.device_indices(graph.names, devices)
        results.append(MethodResult(method, float(sim(device)), placement.num_submodels, wall, status, placement))

    for d, name in enumerate(devices):
        add(f"all on {name}", lambda d=d: (np.full(graph.num_nodes, d), ""), None)
    for method, strategy in (("best single", BestSingleDeviceStrategy(cost)), ("HEFT", HeftStrategy(cost)),
                             ("critical-path greedy", CriticalPathGreedyStrategy(cost))):
        add(method, lambda s=strategy: (s.propose(context), ""), PLACE_BOUND)

    def solved(result) -> tuple[np.ndarray, str]:
        gap = "" if result.mip_gap is None else f", gap {result.mip_gap:.1e}"
        return result.placement, f"{result.status}{gap}"

    if len(devices) == 2:
        add("min-cut optimum", lambda: solved(min_cut_placement(cost, graph, support=support)), None)
    for bound in (PLACE_BOUND, None):
        add(f"MILP optimum (<= {bound} submodels)" if bound else "MILP optimum (unbounded)",
            lambda b=bound: solved(milp_placement(cost, graph, time_limit=time_limit, max_submodels=b,
                                                  support=support)), bound)
    return results


def measure_results(case: ZooCase, results: list[MethodResult], tb: Testbed, iterations: int, rounds: int,
                    seed: int) -> None:
    """Compile each distinct placement once, then time them in ``rounds`` shuffled rounds (pooled median)."""
    distinct: dict[bytes, list[MethodResult]] = {}
    for r in results:
        key = r.placement.device_indices(case.graph.names, tb.devices).astype(np.int8).tobytes()
        distinct.setdefault(key, []).append(r)
    groups = list(distinct.values())
    compiled = [oa.compile_placement(case.model, g[0].placement, core=tb.core) for g in groups]
    inputs = [random_inputs(c) for c in compiled]
    per_round = -(-iterations // rounds)
    pooled: list[list[np.ndarray]] = [[] for _ in groups]
    busy: list[list[float]] = [[] for _ in groups]
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        for k in rng.permutation(len(groups)):
            measure_latency(compiled[k], inputs[k], warmup=2, iterations=1)  # warm-up after the others ran
            cpu, wall = _cpu_seconds(), time.perf_counter()
            stats = measure_latency(compiled[k], inputs[k], warmup=0, iterations=per_round)
            busy[k].append((_cpu_seconds() - cpu) / (time.perf_counter() - wall))
            pooled[k].append(stats.samples_ms)
            for r in groups[k]:
                r.round_ms.append(stats.median_ms)
    for k, group in enumerate(groups):
        median = float(np.median(np.concatenate(pooled[k])))
        for r in group:
            r.measured_ms, r.cores_busy = median, float(np.median(busy[k]))
    del compiled


def _cpu_seconds() -> float:
    """CPU time of this process, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def print_table(title: str, rows_by_model: dict[str, list[MethodResult]], measured: bool) -> None:
    headers = ["model", "method", "predicted ms", "submodels", "method wall s", "status"]
    if measured:
        headers[3:3] = ["measured ms", "round medians ms", "cores busy"]
    rows = []
    for model, results in rows_by_model.items():
        for r in results:
            row = [model, r.method, r.predicted_ms, r.submodels, f"{r.wall_s:.3f}", r.status]
            if measured:
                spread = f"{min(r.round_ms):.1f}-{max(r.round_ms):.1f}" if r.round_ms else None
                row[3:3] = [r.measured_ms, spread, None if r.cores_busy is None else f"{r.cores_busy:.2f}"]
            rows.append(row)
    print(f"\n### {title}\n")
    print(markdown_table(headers, rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(ZOO_MODELS))
    parser.add_argument("--platforms", default="paper,laptop", help=f"simulated platforms, of {sorted(PLATFORMS)}")
    parser.add_argument("--time-limit", type=float, default=10.0, help="MILP time limit (s)")
    parser.add_argument("--iterations", type=int, default=20, help="timed runs per testbed placement, in all")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved measurement rounds")
    parser.add_argument("--no-testbed", action="store_true", help="simulated platforms only")
    parser.add_argument("--profile-dir", default=None,
                        help="profile store to reuse (default: a fresh temporary store, i.e. profile now)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    models = [m.strip() for m in args.models.split(",")]
    out: dict = {"simulated": {}, "testbed": {}}
    for pname in [p.strip() for p in args.platforms.split(",") if p.strip()]:
        platform = PLATFORMS[pname]
        print(f"\n{platform.describe()}")
        by_model = {}
        for name in models:
            from ov_autoplace_lab import models as zoo

            graph = extract_graph(prepare_model(zoo.load(name)))
            cost = cost_model_for(graph, platform)
            by_model[name] = evaluate_methods(cost, graph, simulated_support(cost, graph), args.time_limit)
        print_table(f"{cost.label}: predicted latency per method (SIMULATED, not measured)", by_model, False)
        out["simulated"][pname] = {m: [r.to_dict() for r in rs] for m, rs in by_model.items()}
    if not args.no_testbed:
        tb = make_testbed()
        print(f"\n{tb.describe()}\nstart: {load_average()}")
        out["load_start"] = load_average()
        by_model = {}
        with tempfile.TemporaryDirectory() as tmp:
            store = profile_store(args.profile_dir or tmp)
            for i, name in enumerate(models):
                case = load_case(name, tb, store)
                singles = ", ".join(f"{r.device} {r.e2e_ms:.1f} ms" for r in case.reports)
                print(f"{name}: profiled in {case.profile_seconds:.0f} s (single device end-to-end then: {singles})",
                      flush=True)
                results = evaluate_methods(case.cost, case.graph, case.support, args.time_limit)
                measure_results(case, results, tb, args.iterations, args.rounds, args.seed + i)
                by_model[name] = results
                del case
        print_table(f"testbed, {results[0].placement.devices} - predicted on the measured CostModel, and measured "
                    f"(median of {args.iterations} runs in {args.rounds} interleaved rounds)", by_model, True)
        out["load_end"] = load_average()
        print(f"\nstart: {out['load_start']}\nend:   {out['load_end']}")
        out["testbed"] = {"description": tb.describe(), **{m: [r.to_dict() for r in rs] for m, rs in by_model.items()}}
    print(f"total {time.perf_counter() - started:.0f} s")
    write_json(args.json, out)


if __name__ == "__main__":
    main()
