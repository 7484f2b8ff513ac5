"""HSDAG ablation, as in the paper: which inputs and which grouping matter (SIMULATED latencies).

    python benchmarks/bench_ablation.py [--steps 50] [--samples 20] [--seeds 2] [--platforms paper,laptop,testbed]

Every variant trains a fresh policy (hidden 128, REINFORCE with baseline + entropy bonus,
Adam 3e-3) on one zoo model with the same budget (``steps`` x ``samples`` sampled placements),
then reports, relative to the exact optimum (MILP, max_submodels=8):

* ``best``: the fastest placement evaluated during training,
* ``greedy``: the trained policy's greedy placement, legalised with max_submodels=8,

averaged over ``seeds``. Variants: the full model; without output shapes; without node ids
(positional encoding and position); without structural features (degrees, depth, fractal
dimension); without the GPN - every chain-coarsened node its own group; and without GPN and
chain coarsening - every node its own group. Platforms: the simulated paper and laptop
platforms and ``testbed`` = the testbed's measured profile (a CostModel from measured per-op
times, evaluated by the simulator). Optima come from bench_hsdag's cache when present.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from benchmarks.bench_hsdag import References  # noqa: E402
from ov_autoplace.graph.arrays import GraphArrays  # noqa: E402
from ov_autoplace.placement.legalizer import constant_subgraph_mask  # noqa: E402
from ov_autoplace.policy.coarsen import Coarsening, unique_pairs  # noqa: E402
from ov_autoplace.policy.config import HSDAGConfig  # noqa: E402
from ov_autoplace.policy.features import NodeFeatureConfig  # noqa: E402
from ov_autoplace_lab.training import TrainConfig, Trainer, make_policy  # noqa: E402
from ov_autoplace_lab.training.env import SimEnv  # noqa: E402
from ov_autoplace_lab.training.evaluate import legal_latency  # noqa: E402
from ov_autoplace_lab.training.reinforce import greedy_coarse, to_nodes  # noqa: E402
from ov_autoplace_lab.training.tasks import measured_testbed_envs, platform_draws, sim_envs, zoo_graphs  # noqa: E402


def every_node_its_own_group(graph: GraphArrays) -> Coarsening:
    """No chain coarsening: one coarse node per node (edges from constants dropped, as chain_coarsen does)."""
    n = graph.num_nodes
    carries = ~constant_subgraph_mask(graph)[graph.edge_src]
    src, dst = unique_pairs(graph.edge_src[carries].astype(np.int64), graph.edge_dst[carries].astype(np.int64), n)
    keep = src != dst
    return Coarsening(group_of_node=np.arange(n, dtype=np.int64), num_groups=n, edge_src=src[keep],
                      edge_dst=dst[keep], member_count=np.ones(n, dtype=np.int64))


VARIANTS = {
    "full HSDAG": dict(),
    "w/o output shape": dict(features=NodeFeatureConfig(use_output_shape=False)),
    "w/o node id": dict(features=NodeFeatureConfig(use_node_id=False)),
    "w/o structural": dict(features=NodeFeatureConfig(use_structural=False)),
    "w/o GPN (chains = groups)": dict(pool_iterations=0),
    "w/o GPN, w/o chains (nodes = groups)": dict(pool_iterations=0, coarsening=every_node_its_own_group),
}


def run_variant(env: SimEnv, variant: dict, steps: int, samples: int, seed: int) -> tuple[float, float]:
    fresh = SimEnv(env.graph, env.cost, name=env.name)
    config = TrainConfig(steps=steps, samples=samples, lr=3e-3, seed=seed, calibrate_fraction=0.1)
    policy_config = HSDAGConfig(hidden=128, max_pool_iterations=variant.get("pool_iterations", 2),
                                feature_config=variant.get("features", NodeFeatureConfig()))
    policy = make_policy(config, [fresh], policy_config)
    trainer = Trainer(policy, [fresh], config, progress=False, coarsening=variant.get("coarsening"))
    trainer.run()
    import torch

    with torch.no_grad():
        inputs = trainer.inputs[0]
        proposal = to_nodes(greedy_coarse(policy(inputs), inputs), inputs)[0]
    return fresh.best_ms, legal_latency(fresh, proposal)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--platforms", default="paper,laptop,testbed")
    parser.add_argument("--cache", type=pathlib.Path,
                        default=pathlib.Path.home() / ".cache/ov_autoplace/bench_hsdag_refs.json")
    parser.add_argument("--time-limit", type=float, default=30.0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    refs = References(args.cache, args.time_limit)
    zoo = zoo_graphs()
    wanted = args.platforms.split(",")
    envs = sim_envs(zoo, [d for d in platform_draws(np.random.default_rng(0), 0) if d.tag in wanted])
    if "testbed" in wanted:
        envs += measured_testbed_envs({n: (lambda n=n: __import__("ov_autoplace_lab.models", fromlist=["load"]).load(n)) for n in zoo})
    print(f"HSDAG ablation: {args.steps} steps x {args.samples} samples per run, {args.seeds} seed(s), "
          "latencies relative to the exact optimum (MILP, max_submodels=8); SIMULATED from each task's CostModel")
    names = list(VARIANTS)
    print(f"\n  {'task':<34}" + "".join(f"{n[:22]:>24}" for n in names))
    means = {n: [] for n in names}
    for env in envs:
        opt = refs.get(env)["optimum_8"]
        cells = []
        for name in names:
            runs = [run_variant(env, VARIANTS[name], args.steps, args.samples, s) for s in range(args.seeds)]
            best, greedy = (float(np.mean([r[k] for r in runs]) / opt - 1) for k in (0, 1))
            means[name].append((best, greedy))
            cells.append(f"{100 * best:+7.2f}% / {100 * greedy:+7.2f}%")
        print(f"  {env.name:<34}" + "".join(f"{c:>24}" for c in cells) + f"   [{env.label}]")
    print(f"  {'mean':<34}" + "".join(
        f"{100 * np.mean([b for b, _ in means[n]]):+7.2f}% / {100 * np.mean([g for _, g in means[n]]):+7.2f}%"
        .rjust(24) for n in names))
    print("  (cells: best placement found during training / final greedy placement, vs optimum(8))")
    print(f"\nwall time {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
