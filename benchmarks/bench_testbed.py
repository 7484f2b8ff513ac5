"""What the two-device testbed looks like on this machine, measured for real.

    python benchmarks/bench_testbed.py [--quick] [--json PATH] [--models bert_base,resnet50]

Prints, for the zoo models:

(a) single-device latency on CPU and on CPUF (median, IQR) and their ratio.
    The devices are timed in interleaved rounds and the rounds pooled, so slow
    drift of the noisy 2-core machine hits both devices alike;
(b) the compile time of random per-node placements of BERT-base (the worst
    case for fragmentation, i.e. the cost of one training sample at its worst);
(c) per-op-type time on CPU vs CPUF from the plugin's performance counters:
    which runtime kernels each device is faster at, i.e. what a placement can
    exploit.

Nothing here is simulated: every number comes from compiled models executing.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import pathlib
import sys
import time

import numpy as np
import openvino as ov
from ov_autoplace.devices.timing import measure_latency, random_inputs

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import ov_autoplace as oa  # noqa: E402
from ov_autoplace_lab import models as zoo
from ov_autoplace.strategies import RandomStrategy  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402

MIN_SHARE = 0.01  # op types below 1 % of a device's profiled time go to "other"


def _stats(samples: np.ndarray) -> dict:
    p25, p75 = np.percentile(samples, [25, 75])
    return {"median_ms": float(np.median(samples)), "p25_ms": float(p25), "p75_ms": float(p75), "n": len(samples)}


def bench_latency(tb, model: ov.Model, rounds: int, iterations: int) -> dict:
    """(a) Interleaved rounds of measure_latency per device, samples pooled per device."""
    compiled = {d: tb.core.compile_model(model, d) for d in tb.devices}
    inputs = random_inputs(compiled[tb.devices[0]])  # same data for both devices
    samples: dict[str, list[np.ndarray]] = {d: [] for d in tb.devices}
    for r in range(rounds):
        # The other device just ran on the same cores, so each round re-warms
        # (caches, thread pool wake-up); the first round pays one-time setup too.
        for d in tb.devices:
            stats = measure_latency(compiled[d], inputs, warmup=3 if r == 0 else 1, iterations=iterations)
            samples[d].append(stats.samples_ms)
    result = {d: _stats(np.concatenate(s)) for d, s in samples.items()}
    for d, s in samples.items():  # per-round medians expose load from other processes (bimodal rounds)
        result[d]["round_medians_ms"] = [float(np.median(x)) for x in s]
    a, b = tb.devices
    result["ratio"] = result[b]["median_ms"] / result[a]["median_ms"]
    return result


def bench_random_compile(tb, model: ov.Model, seeds: list[int]) -> dict:
    """(b) Place (RandomStrategy, per node, no submodel cap) and compile; compile time is the point."""
    runs = []
    for seed in seeds:
        t0 = time.perf_counter()
        placement = oa.place(model, tb.hetero, core=tb.core, max_submodels=None,
                             strategy=RandomStrategy(seed=seed, mode="node"))
        t1 = time.perf_counter()
        compiled = oa.compile_placement(model, placement, core=tb.core)
        t2 = time.perf_counter()
        del compiled
        runs.append({"seed": seed, "place_s": t1 - t0, "compile_s": t2 - t1,
                     "submodels": placement.num_submodels, "counts": placement.counts_per_device()})
        print(f"  seed {seed}: place {t1 - t0:5.2f} s, compile {t2 - t1:6.2f} s, "
              f"{placement.num_submodels:4d} submodels, nodes {placement.counts_per_device()}", flush=True)
    return {"runs": runs, "median_compile_s": float(np.median([r["compile_s"] for r in runs]))}


def profile_op_types(core: ov.Core, model: ov.Model, device: str, inferences: int) -> dict:
    """(c) ms per inference spent in each runtime op type (PERF_COUNT), plus its dominant kernel.

    profiling_info needs a Python infer request; that is fine here because we
    want per-op times, not end-to-end latency.
    """
    compiled = core.compile_model(model, device, {"PERF_COUNT": True})
    request = compiled.create_infer_request()
    inputs = random_inputs(compiled)
    for _ in range(2):  # warm-up: first inferences include lazy kernel/buffer setup
        request.infer(inputs)
    ms: dict[str, float] = collections.defaultdict(float)
    kernel_ms: dict[tuple[str, str], float] = collections.defaultdict(float)
    for _ in range(inferences):
        request.infer(inputs)
        for info in request.profiling_info:  # counters of the last inference only
            if info.status != ov.ProfilingInfo.Status.EXECUTED:
                continue  # fused into another node or optimised out: no time of its own
            t = info.real_time.total_seconds() * 1e3
            ms[info.node_type] += t
            kernel_ms[(info.node_type, info.exec_type)] += t
    kernels = {}
    for (op, kernel), t in sorted(kernel_ms.items(), key=lambda kv: kv[1]):
        kernels[op] = kernel  # ascending sort: the last write is the kernel with the most time
    return {"ms": {op: t / inferences for op, t in ms.items()}, "kernel": kernels}


def op_table(tb, profiles: dict[str, dict]) -> list[dict]:
    """Rows for op types with >= MIN_SHARE of either device's time, the rest pooled in 'other'."""
    a, b = tb.devices
    ms = {d: profiles[d]["ms"] for d in tb.devices}
    totals = {d: sum(ms[d].values()) for d in tb.devices}
    ops = sorted(set(ms[a]) | set(ms[b]), key=lambda op: -(ms[a].get(op, 0.0) + ms[b].get(op, 0.0)))
    rows, other = [], {d: 0.0 for d in tb.devices}
    for op in ops:
        t = {d: ms[d].get(op, 0.0) for d in tb.devices}
        if any(t[d] >= MIN_SHARE * totals[d] for d in tb.devices):
            rows.append({"op": op, **{d: t[d] for d in tb.devices},
                         **{f"{d}_kernel": profiles[d]["kernel"].get(op, "-") for d in tb.devices}})
        else:
            for d in tb.devices:
                other[d] += t[d]
    rows.append({"op": "(other)", **other})
    rows.append({"op": "TOTAL", **totals})
    for row in rows:
        row["ratio"] = row[b] / row[a] if row[a] > 0 else float("nan")
    return rows


def print_op_table(tb, rows: list[dict]) -> None:
    a, b = tb.devices
    print(f"  {'op type':<22}{a + ' ms':>10}{b + ' ms':>10}{b + '/' + a:>10}   kernels ({a} | {b})")
    for row in rows:
        kernels = f"{row.get(a + '_kernel', '')} | {row.get(b + '_kernel', '')}" if a + "_kernel" in row else ""
        print(f"  {row['op']:<22}{row[a]:10.3f}{row[b]:10.3f}{row['ratio']:10.2f}   {kernels}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one model, fewer iterations and seeds (~1 min)")
    ap.add_argument("--json", type=pathlib.Path, metavar="PATH", help="also write all numbers to PATH as JSON")
    ap.add_argument("--models", help="comma-separated zoo models (default: all three; --quick: bert_base)")
    args = ap.parse_args(argv)

    models = args.models.split(",") if args.models else (["bert_base"] if args.quick else list(zoo.ZOO))
    rounds, iterations = (2, 5) if args.quick else (5, 8)  # full: 5 x 8 = 40 timed runs per device
    seeds = [0] if args.quick else [0, 1, 2]
    inferences = 3 if args.quick else 10

    tb = make_testbed()
    a, b = tb.devices
    now = datetime.datetime.now().astimezone()
    print("=== ov_autoplace testbed benchmark: REAL testbed (compiled models executing, not simulated) ===")
    print(f"date: {now.isoformat(timespec='seconds')}")
    print(f"OpenVINO: {ov.get_version()}")
    print(f"CPU: {tb.core.get_property('CPU', 'FULL_DEVICE_NAME')}")
    print(tb.describe())
    # Other processes on the 2 cores hurt the 2-thread CPUF far more than 1-thread CPU: show the load.
    print(f"load average (1 min) at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"mode: {'quick' if args.quick else 'full'}; models: {', '.join(models)}\n")
    report: dict = {"date": now.isoformat(), "openvino": ov.get_version(), "testbed": tb.describe(),
                    "bf16": tb.bf16, "quick": args.quick, "latency": {}, "op_types": {}}
    start = time.perf_counter()
    loaded = {name: zoo.load(name, tb.core) for name in models}

    print(f"(a) single-device latency, {rounds} interleaved rounds x {iterations} iterations per device")
    print(f"  {'model':<14}{a + ' median [IQR]':>28}{b + ' median [IQR]':>28}{b + '/' + a:>10}")
    for name, model in loaded.items():
        res = report["latency"][name] = bench_latency(tb, model, rounds, iterations)
        cells = "".join(f"{res[d]['median_ms']:10.2f} [{res[d]['p25_ms']:7.2f}-{res[d]['p75_ms']:7.2f}]"
                        for d in tb.devices)
        print(f"  {name:<14}{cells}{res['ratio']:10.3f}")
        print("      round medians: " + "; ".join(
            f"{d} " + " ".join(f"{m:.1f}" for m in res[d]["round_medians_ms"]) for d in tb.devices), flush=True)

    if "bert_base" in loaded:
        print(f"\n(b) compile time of random per-node placements, bert_base on {tb.hetero} (max_submodels=None)")
        res = report["random_compile_bert_base"] = bench_random_compile(tb, loaded["bert_base"], seeds)
        print(f"  median compile time: {res['median_compile_s']:.2f} s over {len(seeds)} seed(s)")

    print(f"\n(c) per-op-type time (PERF_COUNT, ms per inference, mean of {inferences}), "
          f"types with >= {MIN_SHARE:.0%} of either device's time")
    for name, model in loaded.items():
        profiles = {d: profile_op_types(tb.core, model, d, inferences) for d in tb.devices}
        rows = report["op_types"][name] = op_table(tb, profiles)
        print(f" {name}:")
        print_op_table(tb, rows)

    report["elapsed_s"] = time.perf_counter() - start
    report["loadavg_end"] = os.getloadavg()[0]
    print(f"\nelapsed: {report['elapsed_s']:.0f} s; load average (1 min) at end: {report['loadavg_end']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
