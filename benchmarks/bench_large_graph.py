"""Place and compile a synthetic graph of 20,000+ nodes on the testbed; report time and memory.

    python benchmarks/bench_large_graph.py [--blocks 2500] [--strategy hsdag]

With the default strategy (the HSDAG policy) the place stage includes the
first-compile profile of the model on both devices (a fresh, temporary
profile store, so nothing is reused from an earlier run).

The graph is ``tests.synthetic_graphs.long_chain(blocks)`` (8 nodes per block).
Times are wall-clock for each stage of ``ov_autoplace.compile_model``'s path;
memory is the process's peak resident set size (ru_maxrss) after each stage.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import resource
import sys
import time
from pathlib import Path

import numpy as np
from ov_autoplace.api import DEFAULT_STRATEGY
from ov_autoplace.devices.timing import measure_latency

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ov_autoplace as oa  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402
from tests.synthetic_graphs import long_chain  # noqa: E402


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=2500)
    parser.add_argument("--strategy", default=DEFAULT_STRATEGY.value, choices=[s.value for s in oa.StrategyName])
    args = parser.parse_args(argv)
    os.environ["OV_AUTOPLACE_PROFILE_DIR"] = tempfile.mkdtemp(prefix="ov_autoplace_profiles_")
    testbed = make_testbed()
    stages = []

    def stage(name, fn):
        t0 = time.perf_counter()
        value = fn()
        stages.append((name, time.perf_counter() - t0, peak_mb()))
        return value

    model = stage("build model", lambda: long_chain(args.blocks))
    if args.strategy == oa.StrategyName.HSDAG.value:  # the first compile's profile, then reused by place()
        from ov_autoplace.measuring.providers import MeasuredCostProvider
        from ov_autoplace.graph.arrays import extract_graph
        from ov_autoplace.placement.legalizer import query_support
        from ov_autoplace.model.prepare import prepare_model
        from ov_autoplace.strategies import PlacementContext

        def profile():
            prepared = prepare_model(model)
            graph = extract_graph(prepared)
            support = query_support(testbed.core, prepared, graph, testbed.devices)
            return MeasuredCostProvider()(PlacementContext(graph, testbed.devices, support, testbed.core, prepared))

        stage("profile on both devices (first compile only, then cached)", profile)
    placement = stage("place (prepare, extract, query, strategy, legalize)",
                      lambda: oa.place(model, testbed.hetero, core=testbed.core, strategy=args.strategy))
    compiled = stage("HETERO compile", lambda: oa.compile_placement(model, placement, core=testbed.core))
    stats = stage("time 5 inferences", lambda: measure_latency(compiled, iterations=5, warmup=1))
    print(f"long_chain({args.blocks}): {len(model.get_ordered_ops())} nodes, real testbed {testbed.hetero}")
    print(placement.summary())
    for name, seconds, mb in stages:
        print(f"  {name:<55} {seconds:8.2f} s   peak RSS {mb:8.0f} MB")
    print(f"  latency {stats}")
    total = sum(s for n, s, _ in stages if not n.startswith(("build", "time")))
    print(f"  total profile + place + compile: {total:.2f} s; peak RSS {peak_mb():.0f} MB")
    return 0 if np.isfinite(stats.median_ms) else 1


if __name__ == "__main__":
    raise SystemExit(main())
