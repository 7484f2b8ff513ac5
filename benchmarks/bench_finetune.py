"""Fine-tuning with a budget of evaluated placements: REINFORCE alone vs offset decodings first (SIMULATED).

    python benchmarks/bench_finetune.py [--budget 50] [--offsets 0,25] [--seeds 3] \
        [--policy NAME=PATH ...] [--json docs/bench/finetune.json] [--markdown docs/bench/finetune.md]

The rows are the split rows of the headroom table (``docs/bench/platforms.json``,
``split_pays``: the best known placement beats the best single device by >= 5 %),
each a zoo model on a suite platform as fitted. Per policy (default: the shipped
``hsdag_v3.npz``), per ``--offsets`` value and per seed, ``fine_tune``
(``ov_autoplace_lab/training/finetune.py``) places the model with at most
``--budget`` distinct evaluated placements on the simulator (``SimEnv``: legalised
with the bound of 8): ``--offsets 0`` is REINFORCE alone (the fine-tune before
offsets existed), ``25`` spends up to 25 of the 50 on offset decodings of the
policy's logits first. No local search. The ratio is to the table's best known
placement (below 1 where fine-tuning found a faster one).

The fine-tune evaluates on the very simulator the ratio is read from, so the
truth draws of ``bench.truth`` (20 perturbations of the fitted device model at
the held-out sigma, seed 0) score the seed-0 placements as well: no method here
chose a placement under those models.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

PLATFORMS_JSON = REPO / "docs" / "bench" / "platforms.json"


def split_rows() -> list[dict]:
    rows = json.loads(PLATFORMS_JSON.read_text())["headroom"]
    return [r for r in rows if r.get("split_pays")]


def run_row(row: dict, policies: dict[str, str], offsets: list[int], seeds: int, budget: int, sigma: float,
            modes: list[str]) -> dict:
    import torch

    from ov_autoplace.costmodel.simulator import Simulator
    from ov_autoplace_lab.paper_bench import truth
    from ov_autoplace_lab.paper_bench.headroom import reference_placements
    from ov_autoplace_lab.paper_bench.methods import Case
    from ov_autoplace_lab.training.finetune import fine_tune
    from ov_autoplace_lab.training.targets import TargetSpec, case_cost, variant_platform

    torch.set_num_threads(1)
    spec = TargetSpec(f"zoo:{row['model']}", row["platform"])
    graph, cost, support = case_cost(spec, sigma)
    devices = tuple(cost.devices)
    simulator = Simulator(cost, graph)
    out = {"platform": row["platform"], "model": row["model"], "nodes": graph.num_nodes, "simulated": True,
           "best_known_ms": row["optimum_ms"], "best_single_device_ms": row["best_single_device_ms"], "cells": {}}
    case = Case(row["model"], graph, devices, support, cost, True)
    placements = reference_placements(case)
    for name, path, mode, off in ((n, p, m, o) for n, p in policies.items() for m in modes for o in offsets):
        key = cell_key(name, mode, off)
        cell = {"ms": [], "seconds": [], "evaluated": [], "offset_placements": []}
        for seed in range(seeds):
            env = case.make_env()  # SimEnv, legalised with the bound of 8
            start = time.perf_counter()
            placement, records = fine_tune(path, env, budget_samples=budget, seed=seed, offset_samples=off,
                                           mode=mode)
            cell["seconds"].append(round(time.perf_counter() - start, 3))
            placed = np.array([devices.index(placement.assignment[n]) for n in graph.names], np.int64)
            cell["ms"].append(float(simulator.feasible_ms(placed)))
            cell["evaluated"].append(env.num_evaluated)
            cell["offset_placements"].append(sum(r.get("new", 0) for r in records if r["event"] == "offsets"))
            if seed == 0:
                placements[key] = placed
        out["cells"][key] = cell
        out[key] = cell["ms"][0]  # the fitted latency of the seed-0 placement (truth.summarize's prediction)
    platform, _ = variant_platform(spec, sigma)
    out["truth"] = truth.score_draws(platform, graph, placements,
                                     truth.TruthSpec(sigma=sigma, draws=truth.TRUTH_DRAWS, seed=0, milp_seconds=0.0),
                                     cost=cost)
    return out


def cell_key(name: str, mode: str, offsets: int) -> str:
    """A column's name; REINFORCE (the fine-tune's default mode) keeps the name earlier runs used."""
    return f"{name}/offsets={offsets}" if mode == "reinforce" else f"{name}/{mode}/offsets={offsets}"


def table(rows: list[dict], keys: list[str], seeds: int) -> list[str]:
    lines = [f"{'method':<34} " + " ".join(f"{'seed ' + str(s) + ' <=1.02/<=1.05':>20}" for s in range(seeds))
             + f" {'median ratio':>12} {'max':>7} {'median s':>8}"]
    for key in keys:
        ratios = np.array([[c / r["best_known_ms"] for c in r["cells"][key]["ms"]] for r in rows])  # [rows, seeds]
        per_seed = " ".join(f"{int((ratios[:, s] <= 1.02).sum()):>9}/{int((ratios[:, s] <= 1.05).sum()):<2} of "
                            f"{len(rows):<3}    " for s in range(seeds))
        seconds = np.median([t for r in rows for t in r["cells"][key]["seconds"]])
        lines.append(f"{key:<34} {per_seed} {np.median(ratios):>11.3f}x {ratios.max():>6.3f}x {seconds:>8.2f}")
    return lines


def row_lines(rows: list[dict], keys: list[str]) -> list[str]:
    lines = ["| platform | model | best single / best known | " + " | ".join(keys) + " |",
             "|---|---|---|" + "---|" * len(keys)]
    for r in rows:
        cells = []
        for key in keys:
            ratios = [c / r["best_known_ms"] for c in r["cells"][key]["ms"]]
            cells.append(f"{np.median(ratios):.3f}x ({min(ratios):.3f}-{max(ratios):.3f})")
        lines.append(f"| {r['platform']} | {r['model']} | {r['best_single_device_ms'] / r['best_known_ms']:.3f}x | "
                     + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=50, help="distinct evaluated placements per fine-tune")
    parser.add_argument("--offsets", default="0,25", help="offset_samples values to compare (0: REINFORCE alone)")
    parser.add_argument("--modes", default="reinforce",
                        help="fine-tune modes to compare (TrainConfig.mode: reinforce, ppo = Post's clipped "
                             "surrogate + cross-entropy on the elite placements)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--policy", action="append", default=[], help="NAME=PATH (default: the shipped policy)")
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    args = parser.parse_args(argv)
    from ov_autoplace.policy.pretrained import PRETRAINED_POLICY
    from ov_autoplace_lab.paper_bench import truth

    policies = dict(p.split("=", 1) for p in args.policy) or {PRETRAINED_POLICY.stem: str(PRETRAINED_POLICY)}
    offsets = [int(x) for x in args.offsets.split(",")]
    modes = args.modes.split(",")
    sigma = json.loads(PLATFORMS_JSON.read_text())["truth_model"]["sigma"]
    started, rows = time.perf_counter(), []
    for row in split_rows():
        rows.append(run_row(row, policies, offsets, args.seeds, args.budget, sigma, modes))
        print(f"{row['platform']:>13} {row['model']:<16} " + " ".join(
            f"{k} {np.median(c['ms']) / row['optimum_ms']:.3f}x" for k, c in rows[-1]["cells"].items()), flush=True)
    keys = [cell_key(n, m, o) for n in policies for m in modes for o in offsets]
    lines = table(rows, keys, args.seeds)
    summary = truth.summarize(rows, keys)
    lines += ["", "truth draws (seed-0 placements; 20 draws per row, sigma %.4f, seed 0):" % sigma,
              *truth.summary_lines(summary)]
    seconds = round(time.perf_counter() - started, 1)
    print("\n".join(lines))
    command = "python benchmarks/bench_finetune.py " + " ".join(argv if argv is not None else sys.argv[1:])
    date = datetime.date.today().isoformat()
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"command": command, "date": date, "simulated": True, "seconds": seconds, "budget": args.budget,
             "policies": policies, "offsets": offsets, "seeds": args.seeds, "rows": rows,
             "truth_summary": summary, "table": lines}, indent=1) + "\n")
    if args.markdown:
        text = [f"# Fine-tuning with {args.budget} evaluated placements: offset decodings (SIMULATED)", "",
                f"Generated by `{command}` ({date}, {seconds:.0f} s). Every latency is SIMULATED by the suite's "
                "batch-1 device model; nothing was compiled or measured. Rows: the split rows of the headroom "
                "table (`headroom.md`); ratio to its best known placement. `offsets=0` is REINFORCE alone; "
                "`offsets=25` evaluates up to 25 offset decodings of the policy's logits first "
                "(`training/finetune.py`; `training/decoding.py`, `offset_decodings`). The fine-tune evaluates on the simulator the ratio "
                "is read from; the truth draws score the seed-0 placements under models nothing here chose with.",
                "", "```", *lines, "```", "", "Per row (median over seeds, range in brackets):", "",
                *row_lines(rows, keys), ""]
        pathlib.Path(args.markdown).write_text("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
