"""The bound's priced walk with and without the islands' halving steps (``merge_to_bound.HALVE_ISLAND_MOVES``).

    python benchmarks/bench_priced_walk.py --markdown docs/bench/priced-walk.md

Per model of the zoo, extra and unseen sets (their built IRs; never a frozen held-out one: this is a validation
set, docs/heldout.md) and per graph of the lab's seeded families, on each suite platform's simulated CostModel,
proposals are legalised with the bound of 8, the merges priced as ``compile_model`` prices them, once with the
halving steps and once without. The proposals: the shipped policy's one pass and HEFT's (models only: the
headroom table's columns), the policy's pass with 15 % of its nodes on a random device, and block splits of 8 and
32 nodes over two random devices (seeded by the row's name: every run legalises the same proposals). Per row it
records the priced steps (pricing calls), the predicted latency of each legal placement (simulated) and the faster
of two wall times of each legalize. The page sums the rows that end elsewhere (faster, slower, the geometric mean
of new / old over all rows) and lists them, with the rows whose walk is longest. Simulated: a latency here is the
CostModel's, not a measurement.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import statistics
import sys
import time
import zlib

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from _common import load_average, markdown_table, write_json  # noqa: E402
from ov_autoplace.api import DEFAULT_MAX_SUBMODELS  # noqa: E402
from ov_autoplace.costmodel.sim_costs import simulated_support  # noqa: E402
from ov_autoplace.costmodel.simulator import Simulator  # noqa: E402
from ov_autoplace.costmodel.suite import load_suite  # noqa: E402
from ov_autoplace.graph.arrays import extract_graph  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace.placement import merge_to_bound  # noqa: E402
from ov_autoplace.placement.legalizer import legalize  # noqa: E402
from ov_autoplace.policy import NumpyHSDAGPolicy  # noqa: E402
from ov_autoplace.policy.pretrained import PRETRAINED_POLICY  # noqa: E402
from ov_autoplace.search.memory_fit import legal_pricer  # noqa: E402
from ov_autoplace.strategies.base import PlacementContext  # noqa: E402
from ov_autoplace.strategies.heft import HeftStrategy  # noqa: E402
from ov_autoplace.strategies.hsdag import HSDAGStrategy  # noqa: E402

PLATFORMS = ("paper", "laptop", "small_memory", "cpu_igpu", "npu_cpu")


def proposals(name: str, graph, cost, support, policy) -> dict[str, np.ndarray]:
    """The row's proposals, seeded by its name (the policy's only where ``policy`` is given)."""
    devices = tuple(cost.devices)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    out = {}
    if policy is not None:
        context = PlacementContext(graph=graph, devices=devices, support=support)
        out["policy"] = np.asarray(HSDAGStrategy(policy, cost).propose(context), dtype=np.int64)
        out["heft"] = np.asarray(HeftStrategy(cost).propose(context), dtype=np.int64)
        noisy = out["policy"].copy()
        flip = rng.random(noisy.size) < 0.15
        noisy[flip] = rng.integers(0, len(devices), int(flip.sum()))
        out["noisy"] = noisy
    for block in (8, 32):
        pair = rng.choice(len(devices), 2, replace=False)
        out[f"blocks{block}"] = pair[(np.arange(graph.num_nodes) // block) % 2]
    return out


def walk(graph, proposal, cost, support, halve: bool) -> tuple[np.ndarray, int, float]:
    """(legal placement as device indices, pricing calls, the faster of two wall times in s)."""
    devices, calls, times, setting = tuple(cost.devices), [], [], merge_to_bound.HALVE_ISLAND_MOVES
    merge_to_bound.HALVE_ISLAND_MOVES = halve
    try:
        for _ in range(2):
            fresh, calls = dataclasses.replace(graph), []  # no split remembered from the run before
            pricer = legal_pricer(cost, fresh, support)

            def counted(rows, **fit):
                calls.append(len(rows))
                return pricer(rows, **fit)

            start = time.perf_counter()
            legal = legalize(fresh, proposal, devices, support, max_submodels=DEFAULT_MAX_SUBMODELS,
                             strategy="hsdag", price=counted)
            times.append(time.perf_counter() - start)
    finally:
        merge_to_bound.HALVE_ISLAND_MOVES = setting
    return legal.device_indices(graph.names, devices), len(calls), min(times)


def cases(models: list[str], families: list[str]):
    """(row name, graph, whether the policy proposes) per model and family graph."""
    import ov_autoplace_lab.models as zoo
    from ov_autoplace_lab.training.graph_family import build

    for name in models:
        if name in zoo.FROZEN_HELD_OUT:
            raise SystemExit(f"{name} is a frozen held-out model (docs/heldout.md): not a validation row")
        yield name, extract_graph(prepare_model(zoo.load(name))), True
    for kind in families:
        for size in (2, 4, 8):
            yield f"{kind}_{size}", extract_graph(prepare_model(build(size, kind))), False


def run(models: list[str], families: list[str], platforms: list[str]) -> list[dict]:
    suite, policy, rows = load_suite(), NumpyHSDAGPolicy.load(PRETRAINED_POLICY), []
    for name, graph, with_policy in cases(models, families):
        for platform in platforms:
            cost = suite[platform].cost_model(graph)
            support, simulator = simulated_support(cost, graph), Simulator(cost, graph)
            for kind, proposal in proposals(f"{name}/{platform}", graph, cost, support,
                                            policy if with_policy else None).items():
                old, new = (walk(graph, proposal, cost, support, halve) for halve in (False, True))
                ms = [float(np.atleast_1d(simulator.feasible_ms(r[0][None].astype(np.int64)))[0]) for r in (old, new)]
                row = {"graph": name, "platform": platform, "proposal": kind, "nodes": graph.num_nodes,
                       "same": bool((old[0] == new[0]).all()), "ms": ms, "pricings": [old[1], new[1]],
                       "seconds": [old[2], new[2]]}
                rows.append(row)
                print(f"{name:22s} {platform:13s} {kind:9s} pricings {old[1]:3d} -> {new[1]:3d}  "
                      f"{ms[0]:9.3f} -> {ms[1]:9.3f} ms  {old[2] * 1e3:7.1f} -> {new[2] * 1e3:7.1f} ms wall",
                      flush=True)
    return rows


def markdown(rows: list[dict], command: str, load: tuple[str, str], seconds: float) -> str:
    ratios = [r["ms"][1] / r["ms"][0] for r in rows]
    moved = [(r, x) for r, x in zip(rows, ratios) if not r["same"]]
    faster, slower = sum(x < 1 for _, x in moved), sum(x > 1 for _, x in moved)
    wall = [sum(r["seconds"][k] for r in rows) for k in (0, 1)]
    pricings = [sum(r["pricings"][k] for r in rows) for k in (0, 1)]
    lines = [
        "# The priced walk with and without the islands' halving steps (SIMULATED latencies)", "",
        f"Generated by `{command}` ({time.strftime('%Y-%m-%d')}, {seconds:.0f} s; {load[0]} before, {load[1]} "
        "after). What it runs: the benchmark's docstring. The models are a validation set: no frozen held-out "
        "model is read.", "",
        f"* {len(rows)} rows; {len(moved)} end in another placement with the halving steps: {faster} faster, "
        f"{slower} slower (new / old: min {min(ratios):.3f}, max {max(ratios):.3f}); geometric mean of new / old "
        f"over all rows {statistics.geometric_mean(ratios):.4f}.",
        f"* Pricing calls {pricings[0]} -> {pricings[1]}; wall time of the legalizes {wall[0]:.1f} -> {wall[1]:.1f} s "
        "(the faster of two runs each, this machine, not paired against anything).", "",
        "Rows that end elsewhere:", "",
        markdown_table(["graph", "platform", "proposal", "nodes", "pricings", "predicted ms", "new / old"],
                       [[r["graph"], r["platform"], r["proposal"], r["nodes"], f"{r['pricings'][0]} -> "
                         f"{r['pricings'][1]}", f"{r['ms'][0]:.3f} -> {r['ms'][1]:.3f}", f"{x:.3f}"]
                        for r, x in moved]), "",
        "The ten longest walks (by pricing calls without the halving steps):", "",
        markdown_table(["graph", "platform", "proposal", "pricings", "legalize ms (wall)", "same placement"],
                       [[r["graph"], r["platform"], r["proposal"], f"{r['pricings'][0]} -> {r['pricings'][1]}",
                         f"{r['seconds'][0] * 1e3:.1f} -> {r['seconds'][1] * 1e3:.1f}", "yes" if r["same"] else "no"]
                        for r in sorted(rows, key=lambda r: -r["pricings"][0])[:10]]), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import ov_autoplace_lab.models as zoo
    from ov_autoplace_lab.training.graph_family import ALL_KINDS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(dict.fromkeys(zoo.ALL_MODELS + tuple(zoo.UNSEEN))),
                    help="comma-separated zoo / extra / unseen models")
    ap.add_argument("--families", default=",".join(ALL_KINDS), help="comma-separated graph families ('' for none)")
    ap.add_argument("--platforms", default=",".join(PLATFORMS))
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    before, start = load_average(), time.perf_counter()
    rows = run([m for m in args.models.split(",") if m], [f for f in args.families.split(",") if f],
               args.platforms.split(","))
    after = load_average()
    write_json(args.json, {"rows": rows})
    if args.markdown:
        command = "python benchmarks/bench_priced_walk.py " + " ".join(argv or sys.argv[1:])
        pathlib.Path(args.markdown).write_text(markdown(rows, command, (before, after), time.perf_counter() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
