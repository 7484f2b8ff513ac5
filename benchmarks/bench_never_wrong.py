"""What "never wrong, never slower" costs and what it catches (issue #14).

    python benchmarks/bench_never_wrong.py [--rounds 5] [--skip-int8]

1. The legality check of a cached placement: ``query_model`` (what a check
   would cost without the stored support matrix) against reading the stored
   matrix and re-legalizing, per zoo model, medians over interleaved rounds.
2. The verification (verification.py) of a RegNetY-400MF-shaped CNN with 16 nodes forced onto
   the second device (3 submodels): split vs the plain call and each single device, paired rounds,
   and its wall time. On this machine CPU and CPUF are the same f32
   device (no bf16), so no split can be a real win.
3. int8: Convolutions running u8/i8 in an int8 ResNet-50 (min-max calibrated
   FakeQuantize + i8 weights, ``tests/quantized_graphs.py``) on one device, with
   every FakeQuantize forced onto the other device than its Convolution
   (raw), and the same split legalized.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
from ov_autoplace.devices.timing import random_inputs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ov_autoplace as oa  # noqa: E402
from ov_autoplace_lab import models as zoo
from ov_autoplace.graph.arrays import extract_graph  # noqa: E402
from ov_autoplace.placement.legality_check import ensure_legal  # noqa: E402
from ov_autoplace.placement.legalizer import legalize, query_support  # noqa: E402
from ov_autoplace.decision.verification import verify_placement  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace.cache.support_store import device_support  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402

from _common import load_average  # noqa: E402


def legality_check_cost(testbed, rounds: int, scratch: Path) -> None:
    print("1. legality check of a cached placement (ms, median [min-max] of interleaved rounds)")
    for name in ("resnet50", "bert_base"):
        prepared = prepare_model(zoo.load(name))
        graph = extract_graph(prepared)
        support = device_support(testbed.core, prepared, graph, testbed.devices, scratch / name)  # fills the store
        placement = legalize(graph, np.random.default_rng(0).integers(0, 2, graph.num_nodes), testbed.devices,
                             support, max_submodels=8)
        times = {"query_model": [], "stored support": [], "ensure_legal": []}
        for _ in range(rounds):
            for label, fn in (("query_model", lambda: query_support(testbed.core, prepared, graph, testbed.devices)),
                              ("stored support", lambda: device_support(testbed.core, prepared, graph,
                                                                        testbed.devices, scratch / name)),
                              ("ensure_legal", lambda: ensure_legal(placement, graph, testbed.devices, support,
                                                                    max_submodels=8))):
                t0 = time.perf_counter()
                fn()
                times[label].append(1000 * (time.perf_counter() - t0))
        row = ", ".join(f"{k} {np.median(v):.1f} [{min(v):.1f}-{max(v):.1f}]" for k, v in times.items())
        print(f"  {name:<10} {graph.num_nodes:4d} nodes: {row}")


def guard_on_regnet(testbed) -> None:
    from tests.synthetic_graphs import forced_split, regnet_y_like

    prepared = prepare_model(regnet_y_like())
    graph = extract_graph(prepared)
    support = query_support(testbed.core, prepared, graph, testbed.devices)
    split = legalize(graph, forced_split(graph), testbed.devices, support, strategy="forced-16")
    t0 = time.perf_counter()
    guarded, _ = verify_placement(testbed.core, prepared, graph, split, support=support)
    seconds = time.perf_counter() - t0
    print(f"2. verification by measurement, RegNetY-like CNN ({graph.num_nodes} nodes), split {split.counts_per_device()} in "
          f"{split.num_submodels} submodels (testbed: CPU and CPUF both f32 here, the same device)")
    print(f"  {guarded.notes[-1]}")
    print(f"  result: {guarded.counts_per_device()} ({guarded.num_submodels} submodel), verification took {seconds:.1f} s")


def int8_precisions(testbed) -> None:
    from tests.quantized_graphs import conv_precisions, quantize_convolutions

    f32 = zoo.load("resnet50")
    model = quantize_convolutions(f32, random_inputs(testbed.core.compile_model(f32, "CPU"), seed=5))
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    support = query_support(testbed.core, prepared, graph, testbed.devices)
    proposal = np.array([0 if t == "FakeQuantize" else 1 for t in graph.op_types], dtype=np.int64)
    legal = legalize(graph, proposal, testbed.devices, support)
    raw = dict(legal.assignment)
    raw.update({n: testbed.devices[0] for n, t in zip(graph.names, graph.op_types) if t == "FakeQuantize"})
    raw_model = prepare_model(model)
    dataclasses.replace(legal, assignment=raw).apply(raw_model)
    cases = {
        "one device": testbed.core.compile_model(model, "CPU"),
        "FakeQuantize split from its conv (raw)": testbed.core.compile_model(raw_model, testbed.hetero),
        "the same split legalized": oa.compile_placement(model, legal, core=testbed.core),
    }
    print("3. int8 ResNet-50: Convolutions running u8/i8 / all Convolutions")
    for label, compiled in cases.items():
        precisions = conv_precisions(compiled)
        print(f"  {label:<40} {sum(p in {'u8', 'i8'} for p in precisions.values()):3d} / {len(precisions)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-int8", action="store_true")
    args = parser.parse_args(argv)
    import tempfile

    testbed = make_testbed(like_for_like=True)
    print(f"{load_average()} (other engineers share this machine: timings are noisy)")
    with tempfile.TemporaryDirectory() as scratch:
        legality_check_cost(testbed, args.rounds, Path(scratch))
    guard_on_regnet(testbed)
    if not args.skip_int8:
        int8_precisions(testbed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
