"""Cost-model fidelity on the testbed: predicted vs measured latency of many legal placements.

    python benchmarks/bench_fidelity.py [--quick] [--models inception_v3,resnet50,bert_base] [--per-model 50]
        [--iterations 20] [--batch 10] [--out benchmarks/out/fidelity.png] [--json PATH] [--profile-dir DIR]

For every zoo model the measured testbed CostModel (``measure_model_profile``,
freshly profiled into a temporary store unless ``--profile-dir`` names one to
reuse) predicts, through the ``Simulator``, the latency of ``--per-model``
distinct legal placements:

* each single device, HEFT, critical-path greedy, the MILP optimum (<= 8
  submodels) and the min-cut optimum, placed on the cost model itself;
* random per-node placements bounded by a random ``max_submodels`` (the
  legalizer merges islands down to it; some bounds exceed 8, so fragmented
  placements are in the set - BERT's stay <= 12: fragmented BERT placements
  take seconds to compile);
* random contiguous splits of the topological order (1-7 cuts).

Measuring (the machine is shared; load bursts last seconds and the 2-thread
CPUF device slows 2-4x in them): the placements of one model are measured in
*batches* of ``--batch``, each batch together with the model's two
single-device placements. A batch is compiled (``compile_placement``), then
timed run by run in ``--iterations`` cycles, each cycle one ``measure_latency``
run of every member in a fresh random order, so every member of a batch sees
the same load. Batches of all models run in one shuffled order, and which
placements share a batch is random, so load drift correlates with neither a
kind nor a model. A placement's latency is the median of its runs; the
single-device references are measured in every batch, so their drift over the
batches is the load drift the run saw.

Prints per model (error = predicted / measured - 1):

* *raw*: Spearman rank correlation and median absolute error of the
  predictions against the measurements, over all placements and over the
  non-fragmented ones (<= 8 submodels) - what the brief's targets
  (Spearman >= 0.9, median error <= 10 %) are about;
* *load-matched*: the same for the non-single placements after scaling each
  device's costs so the single-device placements of the same batch are
  matched exactly. This removes the machine's load level (which differs
  between profiling and measuring, and between batches) and leaves what the
  cost model itself gets right: how per-op costs compose into a split;
* the noise ceiling: the odd runs vs the even runs of the same placements
  (Spearman, median difference);
* median signed errors per kind and per submodel count, with the cores an
  inference kept busy (process CPU time over wall time per run: 1.0 for the
  1-thread CPU device, 2.0 for the 2-thread CPUF - a split that keeps both
  cores busy while predicted mostly on CPU ran with more threads than the
  profile measured), the reference drift and the 1-min load average at start
  and end.

Writes a scatter plot (raw and load-matched panels, one colour per model,
y = x) to ``--out`` (PNG; keep it out of commits).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import resource
import tempfile
import time

import numpy as np
from scipy.stats import spearmanr

from _common import (REPO, ZOO_MODELS, ZooCase, load_average, load_case, markdown_table, profile_store,
                     write_json)
import ov_autoplace as oa
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.placement.legalizer import legalize
from ov_autoplace.placement.assignment import Placement
from ov_autoplace_lab.optimum.strategy import OptimumStrategy  # noqa: E402
from ov_autoplace.strategies import HeftStrategy, PlacementContext, RandomStrategy
from ov_autoplace_lab.baselines.critical_path import CriticalPathGreedyStrategy
from ov_autoplace.devices.testbed import Testbed, make_testbed
from ov_autoplace.devices.timing import measure_latency, random_inputs

NON_FRAGMENTED = 8  # submodels; place()'s default bound
HEURISTIC_BOUND = 8  # place()'s default max_submodels, applied to the heuristics as place() would
RANDOM_BOUNDS = (2, 3, 4, 5, 6, 8, 8, 12, 16, 24)  # max_submodels drawn for random per-node placements
BERT_MAX_BOUND = 12  # fragmented BERT placements take 3-5 s to compile
MAX_TRIES = 20  # draws per wanted placement before giving up on finding a new distinct one
WARMUP = 2  # untimed runs per compiled member before a batch's cycles


@dataclasses.dataclass
class Sample:
    """One placement of one model: what the cost model predicts and what was measured."""

    model: str
    kind: str
    label: str
    submodels: int
    predicted_ms: float
    placement: Placement | None = None
    runs_ms: list[float] = dataclasses.field(default_factory=list)  # every timed run, all batches
    cores_busy: list[float] = dataclasses.field(default_factory=list)  # process CPU time / wall time per run
    batch: int | None = None  # the batch it was measured in (singles: every batch of their model)
    matched_ms: float | None = None  # prediction after matching the batch's single-device medians
    compile_s: float | None = None

    @property
    def measured_ms(self) -> float:
        return float(np.median(self.runs_ms))

    def halves_ms(self) -> tuple[float, float]:
        """Median of the odd and of the even runs (same load, independent noise)."""
        return float(np.median(self.runs_ms[0::2])), float(np.median(self.runs_ms[1::2]))

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out.pop("placement")
        out["measured_ms"] = self.measured_ms
        return out


def candidate_placements(case: ZooCase, tb: Testbed, count: int, seed: int) -> tuple[list[Sample], list[str]]:
    """``count`` distinct legal placements of ``case`` (deterministic for a seed), predictions attached,
    and notes naming the deterministic placements that equal an earlier one (counted once)."""
    rng = np.random.default_rng(seed)
    graph, n = case.graph, case.graph.num_nodes
    context = PlacementContext(graph=graph, devices=tb.devices, support=case.support, core=tb.core, seed=seed)
    seen: dict[bytes, str] = {}
    samples: list[Sample] = []
    notes: list[str] = []

    def add(kind: str, label: str, proposal: np.ndarray, bound: int | None) -> None:
        placement = legalize(graph, np.asarray(proposal, dtype=np.int64), tb.devices, case.support,
                             max_submodels=bound, strategy=label)
        device = case.devices_of(placement, tb.devices)
        key = device.tobytes()
        if key in seen:
            if not kind.startswith("random"):
                notes.append(f"{label} = {seen[key]}")
            return
        seen[key] = label
        samples.append(Sample(case.name, kind, label, placement.num_submodels, case.predict(device), placement))

    for d, name in enumerate(tb.devices):
        add("single", f"all on {name}", np.full(n, d), None)
    cost_based = [("heft", HeftStrategy(case.cost), HEURISTIC_BOUND),
                  ("critical_path", CriticalPathGreedyStrategy(case.cost), HEURISTIC_BOUND),
                  ("optimum", OptimumStrategy(case.cost, method="milp", max_submodels=HEURISTIC_BOUND), None),
                  ("min_cut", OptimumStrategy(case.cost, method="min_cut", max_submodels=None), None)]
    for kind, strategy, bound in cost_based:
        add(kind, kind, strategy.propose(context), bound)
    bounds = [b for b in RANDOM_BOUNDS if case.name != "bert_base" or b <= BERT_MAX_BOUND]
    tries = 0
    while len(samples) < count and tries < MAX_TRIES * count:
        tries += 1
        s = int(rng.integers(1 << 30))
        if len(samples) % 2:
            bound = int(rng.choice(bounds))
            add("random_node", f"random node k<={bound} seed {s}", RandomStrategy(s, mode="node").propose(context),
                bound)
        else:
            cuts = int(rng.integers(1, 8))
            bound = BERT_MAX_BOUND if case.name == "bert_base" else None
            add("random_contiguous", f"random contiguous {cuts} cuts seed {s}",
                RandomStrategy(s, mode="contiguous", max_cuts=cuts).propose(context), bound)
    return samples, notes


def make_batches(samples: list[Sample], size: int, rng: np.random.Generator) -> list[tuple[str, list[int]]]:
    """Per model, its non-single placements split at random into near-equal batches of <= ``size``, each with
    the model's single-device placements added; all batches in one shuffled order."""
    batches = []
    for model in dict.fromkeys(s.model for s in samples):
        singles = [k for k, s in enumerate(samples) if s.model == model and s.kind == "single"]
        mixed = [k for k, s in enumerate(samples) if s.model == model and s.kind != "single"]
        mixed = [mixed[i] for i in rng.permutation(len(mixed))]
        for chunk in np.array_split(np.array(mixed, dtype=np.int64), max(1, -(-len(mixed) // size))):
            batches.append((model, [int(k) for k in chunk] + singles))
    return [batches[i] for i in rng.permutation(len(batches))]


def measure_batch(case: ZooCase, members: list[Sample], tb: Testbed, cycles: int,
                  rng: np.random.Generator) -> None:
    """Compile ``members``, then time them run by run in ``cycles`` shuffled cycles (appends to ``runs_ms``)."""
    compiled, inputs = [], []
    for s in members:
        started = time.perf_counter()
        compiled.append(oa.compile_placement(case.model, s.placement, core=tb.core))
        s.compile_s = max(s.compile_s or 0.0, time.perf_counter() - started)
        inputs.append(random_inputs(compiled[-1]))
        measure_latency(compiled[-1], inputs[-1], warmup=WARMUP, iterations=1)  # warm-up, its run discarded
    for _ in range(cycles):
        for k in rng.permutation(len(members)):
            cpu, wall = _cpu_seconds(), time.perf_counter()
            members[k].runs_ms.append(float(measure_latency(compiled[k], inputs[k], warmup=0,
                                                               iterations=1).samples_ms[0]))
            members[k].cores_busy.append((_cpu_seconds() - cpu) / (time.perf_counter() - wall))
    del compiled


def _cpu_seconds() -> float:
    """CPU time of this process (all threads): over a run's wall time, the cores the inference kept busy."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def matched_simulator(case: ZooCase, factor: np.ndarray) -> Simulator:
    """The case's simulator with each device's compute costs multiplied by ``factor[d]``."""
    cost = dataclasses.replace(case.cost, compute_ms=case.cost.compute_ms * factor,
                               unfused_ms=case.cost.unfused_ms * factor)
    return Simulator(cost, case.graph)


def run_batches(samples: list[Sample], cases: dict[str, ZooCase], tb: Testbed, iterations: int, size: int,
                seed: int) -> list[dict]:
    """Measure every sample in batches; fill ``matched_ms``; return one record per batch (references, load)."""
    rng = np.random.default_rng(seed + 1)
    batches = make_batches(samples, size, rng)
    records: list[dict] = []
    started = time.perf_counter()
    for b, (model, members) in enumerate(batches):
        case = cases[model]
        singles = [samples[k] for k in members if samples[k].kind == "single"]
        before = {s.label: len(s.runs_ms) for s in singles}
        measure_batch(case, [samples[k] for k in members], tb, iterations, rng)
        ref = {s.label: float(np.median(s.runs_ms[before[s.label]:])) for s in singles}
        factor = np.ones(len(tb.devices))
        for s in singles:
            factor[tb.devices.index(s.label.removeprefix("all on "))] = ref[s.label] / s.predicted_ms
        sim = matched_simulator(case, factor)
        for k in members:
            if samples[k].kind != "single":
                samples[k].batch = b
                samples[k].matched_ms = float(sim(case.devices_of(samples[k].placement, tb.devices)))
        records.append({"batch": b, "model": model, "members": len(members), "time_s": time.perf_counter() - started,
                        "load1": os.getloadavg()[0], **{f"{label} ms": v for label, v in ref.items()},
                        "factor": factor.tolist()})
        print(f"  batch {b + 1}/{len(batches)} {model}: {len(members)} placements ({time.perf_counter() - started:.0f} s,"
              f" load {os.getloadavg()[0]:.2f}); " + ", ".join(f"{k} {v:.1f} ms" for k, v in ref.items()), flush=True)
    return records


def fidelity(pred: list[float], meas: list[float]) -> dict:
    """Spearman rank correlation and median (absolute) relative error of ``pred`` against ``meas``."""
    if len(pred) < 3:
        return {"n": len(pred), "spearman": None, "median_abs_err": None, "median_err": None}
    pred_a, meas_a = np.asarray(pred), np.asarray(meas)
    err = pred_a / meas_a - 1
    return {"n": len(pred), "spearman": float(spearmanr(pred_a, meas_a).correlation),
            "median_abs_err": float(np.median(np.abs(err))), "median_err": float(np.median(err))}


def pct(v: float | None, signed: bool = True) -> str | None:
    return None if v is None else f"{100 * v:+.1f} %" if signed else f"{100 * v:.1f} %"


def _row(model: str, f: dict) -> list:
    return [model, f["n"], f["spearman"], pct(f["median_abs_err"], False), pct(f["median_err"])]


def _signed(errs: list[float]) -> str | None:
    return f"{100 * np.median(errs):+.1f} % ({len(errs)})" if errs else None


def _cores(chosen: list[Sample]) -> str | None:
    """Median over placements of the median cores busy per run (1 = one thread, 2 = both cores)."""
    return f"{np.median([np.median(s.cores_busy) for s in chosen]):.2f}" if chosen else None


def report(samples: list[Sample], records: list[dict], devices: tuple[str, ...]) -> dict:
    summary, raw_rows, matched_rows, noise_rows = {}, [], [], []
    for model in dict.fromkeys(s.model for s in samples):
        mine = [s for s in samples if s.model == model]
        compact = [s for s in mine if s.submodels <= NON_FRAGMENTED]
        mixed = [s for s in mine if s.kind != "single"]
        halves = [s.halves_ms() for s in mixed]
        f = {"raw_all": fidelity([s.predicted_ms for s in mine], [s.measured_ms for s in mine]),
             "raw_non_fragmented": fidelity([s.predicted_ms for s in compact], [s.measured_ms for s in compact]),
             "matched_all": fidelity([s.matched_ms for s in mixed], [s.measured_ms for s in mixed]),
             "matched_non_fragmented": fidelity([s.matched_ms for s in mixed if s.submodels <= NON_FRAGMENTED],
                                                [s.measured_ms for s in mixed if s.submodels <= NON_FRAGMENTED]),
             "odd_vs_even_runs": fidelity([h[0] for h in halves], [h[1] for h in halves])}
        summary[model] = f
        raw_rows.append(_row(model, f["raw_all"]) + _row("", f["raw_non_fragmented"])[1:])
        matched_rows.append(_row(model, f["matched_all"]) + _row("", f["matched_non_fragmented"])[1:])
        noise_rows.append(_row(model, f["odd_vs_even_runs"])[:4])
    cols = ["n", "Spearman", "median abs err", "median err"]
    print("\n### Raw fidelity (Simulator on the measured testbed CostModel vs measured median)\n")
    print(markdown_table(["model", *cols, *[f"{c} (<=8 sub)" for c in cols]], raw_rows))
    print("\n### Load-matched fidelity (non-single placements; each device's costs scaled so the single-device "
          "placements of the same batch match)\n")
    print(markdown_table(["model", *cols, *[f"{c} (<=8 sub)" for c in cols]], matched_rows))
    print("\n### Noise ceiling: odd runs vs even runs of the same (non-single) placements\n")
    print(markdown_table(["model", "n", "Spearman", "median abs diff"], noise_rows))
    kinds = list(dict.fromkeys(s.kind for s in samples))
    krows = []
    for model in summary:
        for name, value in (("raw", lambda s: s.predicted_ms), ("load-matched", lambda s: s.matched_ms)):
            krows.append([model, name, *[_signed([value(s) / s.measured_ms - 1 for s in samples if s.model == model
                                                  and s.kind == kind and value(s) is not None]) for kind in kinds]])
        krows.append([model, "cores busy", *[_cores([s for s in samples if s.model == model and s.kind == kind])
                                             for kind in kinds]])
    print("\n### Median signed error per kind (count), and the cores an inference kept busy (process CPU / wall)\n")
    print(markdown_table(["model", "row", *kinds], krows))
    frag = []
    for model in summary:
        for lo, hi in ((1, 1), (2, 4), (5, 8), (9, 12), (13, 99)):
            chosen = [s for s in samples if s.model == model and lo <= s.submodels <= hi]
            if chosen:
                frag.append([model, f"{lo}-{hi}", len(chosen), _signed([s.predicted_ms / s.measured_ms - 1
                                                                        for s in chosen]),
                             _signed([s.matched_ms / s.measured_ms - 1 for s in chosen if s.matched_ms]),
                             _cores(chosen)])
    print("\n### Median signed error by submodel count\n")
    print(markdown_table(["model", "submodels", "n", "raw", "load-matched", "cores busy"], frag))
    labels = [f"all on {d} ms" for d in devices]
    print("\n### Reference drift: each model's single-device placements, re-timed in every batch\n")
    print(markdown_table(["batch", "model", "time s", "load 1-min", *labels],
                         [[r["batch"] + 1, r["model"], round(r["time_s"]), round(r["load1"], 2),
                           *[r.get(label) for label in labels]] for r in records]))
    drift = {}
    for model in summary:
        for label in labels:
            v = np.array([r[label] for r in records if r["model"] == model and label in r])
            profiled = next(s.predicted_ms for s in samples if s.model == model and f"{s.label} ms" == label)
            drift[f"{model} {label}"] = {"profiled": profiled, "min": float(v.min()), "median": float(np.median(v)),
                                         "max": float(v.max())}
            print(f"  {model} {label.removesuffix(' ms')}: profiled {profiled:.1f} ms; over {len(v)} batches min "
                  f"{v.min():.1f}, median {np.median(v):.1f}, max {v.max():.1f} ms (max/min {v.max() / v.min():.2f})")
    return {"per_model": summary, "reference_drift": drift}


def plot(samples: list[Sample], path: pathlib.Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(13, 6.5))
    markers = {"single": "s", "heft": "^", "critical_path": "v", "optimum": "*", "min_cut": "P",
               "random_node": "o", "random_contiguous": "D"}
    colours = dict(zip(dict.fromkeys(s.model for s in samples), plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    panels = (("raw: profiled CostModel", lambda s: s.predicted_ms, samples),
              ("load-matched: costs scaled to the batch's single-device medians", lambda s: s.matched_ms,
               [s for s in samples if s.matched_ms is not None]))
    for ax, (name, value, chosen) in zip(axes, panels):
        for s in chosen:
            ax.scatter(value(s), s.measured_ms, color=colours[s.model], marker=markers[s.kind], s=28, alpha=0.8,
                       edgecolors="none")
        values = [v for s in chosen for v in (value(s), s.measured_ms)]
        lo, hi = min(values) * 0.8, max(values) * 1.25
        line = np.array([lo, hi])
        ax.plot(line, line, "k-", lw=1, label="y = x")
        ax.plot(line, line * 1.1, "k:", lw=0.8, label="+-10 %")
        ax.plot(line, line / 1.1, "k:", lw=0.8)
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="predicted latency (ms, simulator)",
               ylabel="measured latency (ms, median)", title=name)
        ax.grid(True, which="both", lw=0.3)
    for model, colour in colours.items():
        axes[0].scatter([], [], color=colour, marker="o", label=model)
    for kind, marker in markers.items():
        axes[0].scatter([], [], color="grey", marker=marker, label=kind)
    axes[0].legend(fontsize=7, loc="upper left", ncol=2)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(ZOO_MODELS))
    parser.add_argument("--per-model", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=20, help="timed runs per placement (median)")
    parser.add_argument("--batch", type=int, default=10, help="placements measured together with the references")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="ResNet-50 only, 12 placements, 10 runs (smoke run)")
    parser.add_argument("--profile-dir", default=None,
                        help="profile store to reuse (default: a fresh temporary store, i.e. profile now)")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "out" / "fidelity.png"))
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.quick:
        args.models, args.per_model, args.iterations, args.batch = "resnet50", 12, 10, 5
    started = time.perf_counter()
    tb = make_testbed()
    print(tb.describe())
    load_start = load_average()
    print(f"start: {load_start}")
    with tempfile.TemporaryDirectory() as tmp:
        store = profile_store(args.profile_dir or tmp)
        cases, samples = {}, []
        for i, name in enumerate(args.models.split(",")):
            case = load_case(name.strip(), tb, store)
            cases[case.name] = case
            t0 = time.perf_counter()
            mine, notes = candidate_placements(case, tb, args.per_model, args.seed + i)
            samples += mine
            singles = ", ".join(f"{r.device} {r.e2e_ms:.1f} ms" for r in case.reports)
            print(f"{case.name}: {case.graph.num_nodes} nodes, {case.cost.label}; profiled in "
                  f"{case.profile_seconds:.0f} s (single device end-to-end then: {singles}); {len(mine)} placements "
                  f"({time.perf_counter() - t0:.0f} s to place), submodels {min(s.submodels for s in mine)}-"
                  f"{max(s.submodels for s in mine)}" + (f"; duplicates: {'; '.join(notes)}" if notes else ""),
                  flush=True)
    print(f"measuring {len(samples)} placements in batches of <= {args.batch} + 2 references, {args.iterations} "
          f"interleaved runs each; {load_average()}")
    records = run_batches(samples, cases, tb, args.iterations, args.batch, args.seed)
    summary = report(samples, records, tb.devices)
    load_end = load_average()
    print(f"\nstart: {load_start}\nend:   {load_end}")
    out = pathlib.Path(args.out)
    plot(samples, out, f"Cost-model fidelity on the testbed ({len(samples)} placements, {load_end})")
    print(f"scatter plot: {out}")
    print(f"total {time.perf_counter() - started:.0f} s")
    write_json(args.json, {"testbed": tb.describe(), "iterations": args.iterations, "load_start": load_start,
                           "load_end": load_end, **summary, "batches": records,
                           "samples": [s.to_dict() for s in samples]})


if __name__ == "__main__":
    main()
