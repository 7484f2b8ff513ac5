"""The profiler on the testbed: what it measures for the zoo models, how well, and what it costs.

    python benchmarks/bench_profile.py [--quick] [--models resnet50,bert_base] [--no-validate] [--iterations 20]

Prints:

(a) the link calibration: per-transfer latency, per-MB cost (each direction),
    per-submodel overhead, R^2 of the cut part and of the whole fit, and its
    run time;
(b) per zoo model and device: per-op-type totals of the scaled per-op times
    (plus what the fused ops cost when measured alone), how many compute ops
    originalLayersNames names / the profiler attached to a neighbour, the
    unmapped fraction (Reorders etc.), and the unscaled per-op sum over the
    end-to-end median;
(c) the profiler's own time per model, and the time to load it back from the store;
(d) unless --no-validate: predicted (simulator on the measured CostModel) vs
    measured latency for single-device and random contiguous placements.

Every number is measured on the testbed; a fresh temporary profile store is
used so nothing comes from an earlier run.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import tempfile
import time

import numpy as np
from ov_autoplace.devices.timing import measure_latency
from ov_autoplace.graph.arrays import extract_graph

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import ov_autoplace as oa  # noqa: E402
from ov_autoplace_lab import models as zoo
from ov_autoplace.cache.profile_store import ProfileStore  # noqa: E402
from ov_autoplace.measuring import measure_model_profile, profile_links  # noqa: E402
from ov_autoplace.measuring.link_calibration import DEFAULT_SIZES  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace.strategies import RandomStrategy  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402

MIN_SHARE = 0.01  # op types below 1 % of both devices' time go to "other"


def print_links(links) -> None:
    print(f"\n(a) link calibration ({links.seconds:.1f} s)")
    for pair in links.pairs:
        a, b = pair["devices"]
        g = pair["globals"]
        print(f"  {a}->{b}: latency {g['latency_ab'] * 1e3:7.2f} us, {g['ms_per_mb_ab']:.4f} ms/MB")
        print(f"  {b}->{a}: latency {g['latency_ba'] * 1e3:7.2f} us, {g['ms_per_mb_ba']:.4f} ms/MB")
        print(f"  submodel overhead: {a} {g['overhead_a'] * 1e3:.2f} us, {b} {g['overhead_b'] * 1e3:.2f} us")
        print(f"  R^2: cut part {pair['r2_cut']:.3f}, whole fit {pair['r2']:.4f} ({pair['observations']} variants, "
              f"weighted by 1/single-device latency)")
        by_size = collections.defaultdict(dict)
        for row in pair["rows"]:
            by_size[row["bytes"]][row["variant"]] = row["latency_ms"]
        print(f"  {'bytes':>9} {'all_a':>9} {'all_b':>9} {'8 cuts between':>15} {'8 cuts inside':>14}  (ms, from a)")
        for nbytes, v in sorted(by_size.items()):
            print(f"  {nbytes:>9} {v['all_a']:9.3f} {v['all_b']:9.3f} {v.get('between8_from_a', np.nan):15.3f} "
                  f"{v.get('inside8_from_a', np.nan):14.3f}")


def print_profile(name: str, profile, graph) -> None:
    cost = profile.cost_model
    print(f"\n(b) {name}: {graph.num_nodes} nodes, {cost.label}")
    for d, r in enumerate(profile.reports):
        print(f"  {r.device}: end-to-end {r.e2e_ms:.2f} ms, per-op sum {r.profiled_sum_ms:.2f} ms "
              f"(ratio {r.ratio:.2f}, scaled x{r.scale:.2f}); unmapped {100 * r.unmapped_fraction:.2f} % "
              f"({r.spread_ms:.3f} ms spread); ops named {r.named_nodes}/{r.compute_nodes} "
              f"({100 * r.named_nodes / max(r.compute_nodes, 1):.1f} %), attached {r.attached_nodes}; fused {r.fused_nodes}, "
              f"alone they cost {cost.unfused_ms[cost.compute_ms[:, d] == 0, d].sum():.2f} ms")
    totals = collections.defaultdict(lambda: np.zeros(len(cost.devices)))
    for i, op_type in enumerate(graph.op_types):
        totals[op_type] += cost.compute_ms[i]
    device_totals = cost.compute_ms.sum(axis=0)
    header = "".join(f"{d:>10}" for d in cost.devices)
    print(f"  {'op type (ms, scaled)':<28}{header}{'#ops':>6}")
    counts = collections.Counter(graph.op_types)
    other = np.zeros(len(cost.devices))
    for op_type, ms in sorted(totals.items(), key=lambda kv: -kv[1].max()):
        if (ms >= MIN_SHARE * device_totals).any():
            print(f"  {op_type:<28}" + "".join(f"{x:10.2f}" for x in ms) + f"{counts[op_type]:6d}")
        else:
            other += ms
    print(f"  {'other':<28}" + "".join(f"{x:10.2f}" for x in other))


def validate(name, model, profile, graph, tb, seeds) -> None:
    from ov_autoplace.costmodel.simulator import Simulator

    print(f"  (d) {name}: predicted vs measured (median of 20 runs)")
    cases = [(f"all on {d}", d, None) for d in tb.devices]  # a single device: everything goes there
    cases += [(f"random contiguous seed {s}", tb.hetero, RandomStrategy(seed=s, mode="contiguous")) for s in seeds]
    for label, device_string, strategy in cases:
        placement = oa.place(model, device_string, core=tb.core, strategy=strategy)
        devices = placement.device_indices(graph.names, tb.devices)
        predicted = float(Simulator(profile.cost_model, graph)(devices))
        started = time.perf_counter()
        compiled = oa.compile_placement(model, placement, core=tb.core)
        compile_s = time.perf_counter() - started
        measured = measure_latency(compiled, iterations=20).median_ms
        print(f"    {label:<28} submodels {placement.num_submodels:2d}  predicted {predicted:8.2f} ms  "
              f"measured {measured:8.2f} ms  ({100 * (predicted / measured - 1):+.1f} %, compile {compile_s:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="inception_v3,resnet50,bert_base")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="3 link sizes, 10 iterations")
    parser.add_argument("--no-validate", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    tb = make_testbed()
    print(tb.describe())
    iterations = 10 if args.quick else args.iterations
    with tempfile.TemporaryDirectory() as tmp:
        store = ProfileStore(tmp)
        sizes = DEFAULT_SIZES[::2] if args.quick else DEFAULT_SIZES
        links = profile_links(tb.core, tb.devices, sizes=sizes, store=store)
        print_links(links)
        for name in args.models.split(","):
            model = zoo.load(name)
            graph = extract_graph(prepare_model(model))
            profile = measure_model_profile(model, tb.core, tb.devices, iterations=iterations, store=store,
                                            links=links)
            print_profile(name, profile, graph)
            t = time.perf_counter()
            measure_model_profile(model, tb.core, tb.devices, iterations=iterations, store=store, links=links)
            print(f"  (c) profiler time {profile.profiler_seconds:.1f} s ({iterations} iterations per device); "
                  f"loaded back from the store in {time.perf_counter() - t:.2f} s (prepare + extract + read)")
            if not args.no_validate:
                validate(name, model, profile, graph, tb, seeds=(1, 2))
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
