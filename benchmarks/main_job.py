"""The main job: place BERT-base on the testbed and measure it against each single device.

    python benchmarks/main_job.py [--model bert_base] [--strategy hsdag] [--search-budget 20] [--rounds 6]

Builds the zoo model if its IR is not cached, places it with ov_autoplace on
the standard testbed (real execution on two configurations of the CPU plugin),
prints the placement summary, then times the placed model and every single
device interleaved in rounds (so machine noise hits all alike) with the native
timer, and prints median and IQR of each.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import openvino as ov
from ov_autoplace.api import DEFAULT_STRATEGY
from ov_autoplace.devices.timing import LatencyStats, measure_latency, random_inputs, round_order
from ov_autoplace.graph.arrays import extract_graph

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ov_autoplace as oa  # noqa: E402
from ov_autoplace_lab import models as zoo
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402
from ov_autoplace_lab.same_device_note import SAME_DEVICE_NOTE, simulated_headroom_lines  # noqa: E402


def interleaved_latency(compiled: dict[str, ov.CompiledModel], inputs, rounds: int, per_round: int):
    """Median/IQR per candidate, timed round-robin so drifts in machine load are shared; the order rotates
    every round (``round_order``: in a fixed order the placed model always followed CPUF-only, f32 with twice
    the weights to stream)."""
    samples: dict[str, list[np.ndarray]] = {name: [] for name in compiled}
    for name, model in compiled.items():  # warm every candidate once before the rounds
        measure_latency(model, inputs, warmup=3, iterations=1)
    for r in range(rounds):
        for name in round_order(list(compiled), r):
            samples[name].append(measure_latency(compiled[name], inputs, warmup=1, iterations=per_round).samples_ms)
    return {name: LatencyStats(np.concatenate(s)) for name, s in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bert_base", choices=zoo.ZOO)
    parser.add_argument("--strategy", default=DEFAULT_STRATEGY.value, choices=[s.value for s in oa.StrategyName])
    parser.add_argument("--search-budget", type=int, default=None,
                        help="fine-tune the policy on the testbed with this many measured placements")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved timing rounds")
    parser.add_argument("--per-round", type=int, default=6, help="timed inferences per candidate per round")
    parser.add_argument("--save", type=Path, help="write the placement JSON here")
    parser.add_argument("--no-simulated", action="store_true",
                        help="skip the model's headroom on the simulated platforms")
    args = parser.parse_args(argv)

    testbed = make_testbed()
    print(f"OpenVINO {ov.get_version()}  |  {testbed.describe()}")
    t0 = time.perf_counter()
    model = zoo.load(args.model)
    print(f"{args.model}: {len(model.get_ordered_ops())} nodes (IR ready in {time.perf_counter() - t0:.1f} s)")

    t0 = time.perf_counter()
    placement = oa.place(model, testbed.hetero, core=testbed.core, strategy=args.strategy,
                         search_budget=args.search_budget)
    place_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    candidates = {"placed": oa.compile_placement(model, placement, core=testbed.core)}
    compile_s = time.perf_counter() - t0
    for device in testbed.devices:
        candidates[device] = testbed.core.compile_model(model, device)
    inputs = random_inputs(candidates["placed"])
    stats = interleaved_latency(candidates, inputs, args.rounds, args.per_round)

    placement.measured_latency_ms = stats["placed"].median_ms
    placement.reference_latency_ms = {d: stats[d].median_ms for d in testbed.devices}
    print(placement.summary())
    print(f"  place: {place_s:.2f} s, HETERO compile: {compile_s:.2f} s")
    print("\nlatency (native timer, interleaved rounds, real testbed):")
    best_single = min(testbed.devices, key=lambda d: stats[d].median_ms)
    for name, st in stats.items():
        label = f"placed ({placement.strategy})" if name == "placed" else f"{name}-only"
        print(f"  {label:<22} {st}")
    ratio = stats["placed"].median_ms / stats[best_single].median_ms  # placement / best single device
    used = [device for device, count in placement.counts_per_device().items() if count > 0]
    if testbed.bf16 and used == [best_single]:  # one compile a side of one device: the ratio is their spread
        print(f"  placement / best single device ({best_single}): {ratio:.3f}x -- the placement is {best_single} "
              "alone (through HETERO, one submodel), so this is the spread between two compiles of one device; "
              "benchmarks/bench_never_slower.py times three compiles a side")
    elif testbed.bf16:
        print(f"  speed-up of the placement over the best single device ({best_single}): {1 / ratio:.3f}x")
    else:  # the two names are one f32 device: a ratio between them is noise, so do not call it a speed-up
        print(f"  placement / best single device ({best_single}): {ratio:.3f}x -- {SAME_DEVICE_NOTE}")
    if not args.no_simulated:
        t0 = time.perf_counter()
        graph = extract_graph(prepare_model(model))
        print("\n" + "\n".join(simulated_headroom_lines(args.model, graph)))
        print(f"  ({time.perf_counter() - t0:.1f} s)")
    if args.save:
        placement.save(args.save)
        print(f"placement written to {args.save}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
