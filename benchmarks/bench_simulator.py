"""Simulator throughput: predicted placements per second on the zoo models.

    python benchmarks/bench_simulator.py [--platform paper|laptop] [--repeats 5]

For Inception-V3, ResNet-50 and BERT-base (prepared, needs the ``zoo`` extras)
and batch sizes 1, 100 and 10,000, prints the median wall time of one
``Simulator.__call__`` on random legal placements and the placements/s it
gives (target: >= 10,000/s on BERT-base), plus the throughput of
``AnchorFixer`` (the batched legalizer that made those placements legal) and
the one-off ``Simulator`` construction time. Latencies come from a simulated
platform, so the printed mean latency is labelled simulated.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ov_autoplace_lab import models as zoo
from ov_autoplace.costmodel.platforms import PLATFORMS  # noqa: E402
from ov_autoplace.costmodel.sim_costs import cost_model_for  # noqa: E402
from ov_autoplace.costmodel.simulator import Simulator  # noqa: E402
from ov_autoplace.costmodel.anchors import AnchorFixer
from ov_autoplace.graph.arrays import extract_graph  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402

MODELS = ("inception_v3", "resnet50", "bert_base")
BATCHES = (1, 100, 10_000)


def median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up: lazy imports and first-touch allocations
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", choices=sorted(PLATFORMS), default="paper")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    platform = PLATFORMS[args.platform]
    rng = np.random.default_rng(0)
    print(platform.describe())
    print(f"{'model':<13} {'nodes':>5} {'batch':>6} {'simulate ms':>12} {'placements/s':>13} {'fix_anchors/s':>14}"
          "  mean latency")
    for name in MODELS:
        graph = extract_graph(prepare_model(zoo.load(name)))
        cost = cost_model_for(graph, platform)
        t0 = time.perf_counter()
        sim = Simulator(cost, graph)
        build_ms = 1e3 * (time.perf_counter() - t0)
        fixer = AnchorFixer(graph, len(cost.devices), support=np.isfinite(cost.compute_ms))
        for batch in BATCHES:
            proposals = rng.integers(0, len(cost.devices), (batch, graph.num_nodes))
            placements = fixer(proposals)
            fix_s = median_seconds(lambda: fixer(proposals), args.repeats)
            sim_s = median_seconds(lambda: sim(placements), args.repeats)
            mean = float(np.mean(sim(placements)))
            print(f"{name:<13} {graph.num_nodes:>5} {batch:>6} {1e3 * sim_s:>12.3f} {batch / sim_s:>13,.0f} "
                  f"{batch / fix_s:>14,.0f}  {mean:.2f} ms [{cost.label}]")
        print(f"{name:<13} Simulator(cost, graph) built in {build_ms:.1f} ms")


if __name__ == "__main__":
    main()
