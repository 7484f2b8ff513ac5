"""Where the one pass gains or loses, stage by stage: the policy's proposal as legalised, then the guard.

    python benchmarks/bench_one_pass_stages.py [--policy pretrained] [--graphs validation] [--platforms P,...]
        [--json OUT.json] [--markdown OUT.md]

The first start runs the policy once, legalises its proposal (the bound of 8 priced on the policy's CostModel) and
guards it (``decision/prediction_guard.py``: the 2 % rule and the risk rule). A table of one-pass ratios shows the
end of that pipeline; this benchmark shows each stage, so a candidate policy can be told apart from the guard that
hides its mistakes. For every graph (default: the validation split's graphs, ``training.splits.VALIDATION_GRAPHS``,
never a held-out one) on every suite platform as fitted, all latencies SIMULATED by the platform's own model (the
one the policy reads, so "slower" here is the policy's error, not the model's):

* the legalised proposal: its latency and whether it splits;
* the guarded placement (what ``compile_model`` compiles at a first start);
* references: the best single device, HEFT, and the cost-model local search started from the one pass. The row's
  best is the lowest of these and of the two stages; it is not the MILP's and proves nothing.

A split "pays" where the row's best is >= 5 % faster than the best single device (the headroom table's rule on
this reference). Nothing here is measured or trained; choosing a policy stays docs/heldout.md's rule 3.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table  # noqa: E402
from ov_autoplace.costmodel.sim_costs import simulated_support  # noqa: E402
from ov_autoplace.costmodel.simulator import Simulator  # noqa: E402
from ov_autoplace.costmodel.suite import load_suite  # noqa: E402
from ov_autoplace.decision.prediction_guard import guard_placement  # noqa: E402
from ov_autoplace.placement.legalizer import effective_max_submodels  # noqa: E402
from ov_autoplace.strategies.heft import HeftStrategy  # noqa: E402
from ov_autoplace.strategies.hsdag import HSDAGStrategy  # noqa: E402
from ov_autoplace_lab.paper_bench.headroom import single_device_latencies  # noqa: E402
from ov_autoplace_lab.paper_bench.methods import LOCAL_SEARCH_OPTIONS, MAX_SUBMODELS, Case  # noqa: E402
from ov_autoplace_lab.training import named_policy  # noqa: E402
from ov_autoplace_lab.training.splits import SUITE_PLATFORMS, VALIDATION_GRAPHS  # noqa: E402
from ov_autoplace_lab.training.targets import load_graph  # noqa: E402

PAYS = 1.05


def stage_row(platform, name: str, graph, policy: str) -> dict:
    """One graph on one platform: each stage's simulated latency and device count, and the references."""
    cost = platform.cost_model(graph)
    support = simulated_support(cost, graph)
    bound, _ = effective_max_submodels(graph, support, MAX_SUBMODELS)
    case = Case(name, graph, platform.device_names, support, cost, True)
    simulator = Simulator(cost, graph)

    def priced(placement) -> tuple[float, int]:
        devices = placement.device_indices(graph.names, case.devices)
        return simulator.feasible_ms(devices), len(set(devices.tolist()))

    singles = [ms for ms in single_device_latencies(platform, graph, cost).values() if ms is not None]
    strategy = HSDAGStrategy(policy, cost)
    legal = case.legal(strategy.propose(case.context(0)), "one pass", bound, cost=strategy.last_cost)
    guarded = case.as_compiled(guard_placement(legal, graph, strategy.last_cost, support, max_submodels=bound), bound)
    refined = HSDAGStrategy(policy, cost, refine=True, refine_options=LOCAL_SEARCH_OPTIONS)
    heft = HeftStrategy(cost)
    row = {"graph": name, "platform": platform.name, "best_single_ms": min(singles) if singles else None}
    row["legal_ms"], row["legal_devices"] = priced(legal)
    row["guarded_ms"], row["guarded_devices"] = priced(guarded)
    row["local_search_ms"], _ = priced(case.legal(refined.propose(case.context(0)), "ls", bound,
                                                  cost=refined.last_cost))
    row["heft_ms"], _ = priced(case.legal(heft.propose(case.context(0)), "heft", bound, cost=heft.last_cost))
    known = [v for v in (row["best_single_ms"], row["legal_ms"], row["guarded_ms"], row["local_search_ms"],
                         row["heft_ms"]) if v is not None and np.isfinite(v)]
    row["best_ms"] = min(known)
    row["split_pays"] = row["best_single_ms"] is None or row["best_ms"] * PAYS < row["best_single_ms"]
    return row


def summary(rows: list[dict]) -> list[str]:
    def count(test) -> int:
        return sum(1 for r in rows if test(r))

    def faster(r) -> bool:
        return r["best_single_ms"] is None or r["legal_ms"] < r["best_single_ms"] * (1 - 1e-9)

    pays = [r for r in rows if r["split_pays"]]
    return [
        f"rows: {len(rows)}; a split pays (the row's best >= 5 % under the best single device) in {len(pays)}",
        f"legalised proposal: a split in {count(lambda r: r['legal_devices'] > 1)}, of which faster than the best "
        f"single device {count(lambda r: r['legal_devices'] > 1 and faster(r))}; slower than the best single device "
        f"in {count(lambda r: not faster(r) and r['legal_ms'] > r['best_single_ms'] * (1 + 1e-9))} rows",
        f"guard: kept a split in {count(lambda r: r['guarded_devices'] > 1)}; turned a split faster than the best "
        f"single device into one device in "
        f"{count(lambda r: r['legal_devices'] > 1 and faster(r) and r['guarded_devices'] == 1)}",
        f"split rows: the legalised proposal within 1.05x of the row's best in "
        f"{sum(r['legal_ms'] <= PAYS * r['best_ms'] for r in pays)} of {len(pays)}, the guarded one in "
        f"{sum(r['guarded_ms'] <= PAYS * r['best_ms'] for r in pays)}; the guarded one a split in "
        f"{sum(r['guarded_devices'] > 1 for r in pays)}",
        f"all rows: the guarded one within 1.05x of the row's best in "
        f"{count(lambda r: r['guarded_ms'] <= PAYS * r['best_ms'])} of {len(rows)}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="pretrained", help="'pretrained' (the shipped one), 'v3', or a .npz")
    ap.add_argument("--graphs", default="validation",
                    help="'validation' (training.splits.VALIDATION_GRAPHS) or comma-separated load_graph names")
    ap.add_argument("--platforms", default=",".join(SUITE_PLATFORMS))
    ap.add_argument("--json", default=None)
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args(argv)
    names = list(VALIDATION_GRAPHS) if args.graphs == "validation" else args.graphs.split(",")
    suite, policy = load_suite(), named_policy(args.policy)
    start = time.perf_counter()
    rows = []
    for name in names:
        graph = load_graph(name)  # refuses a frozen held-out graph (docs/heldout.md)
        for platform_name in args.platforms.split(","):
            rows.append(stage_row(suite[platform_name], name, graph, policy))
            r = rows[-1]
            print(f"{name:28s} {platform_name:12s} single {r['best_single_ms']:9.3f} legal {r['legal_ms']:9.3f} "
                  f"({r['legal_devices']}) guarded {r['guarded_ms']:9.3f} ({r['guarded_devices']}) "
                  f"best {r['best_ms']:9.3f}",
                  flush=True)
    counts = summary(rows)
    command = "python benchmarks/bench_one_pass_stages.py " + " ".join(argv if argv is not None else sys.argv[1:])
    table = markdown_table(
        ["graph", "platform", "best single (ms)", "legalised proposal (ms, devices)", "guarded (ms, devices)",
         "local search from it", "HEFT", "split pays"],
        [[r["graph"], r["platform"], f"{r['best_single_ms']:.3f}", f"{r['legal_ms']:.3f} ({r['legal_devices']})",
          f"{r['guarded_ms']:.3f} ({r['guarded_devices']})", f"{r['local_search_ms']:.3f}", f"{r['heft_ms']:.3f}",
          "yes" if r["split_pays"] else ""] for r in rows])
    lines = ["# The one pass stage by stage: the proposal as legalised, then the guard (SIMULATED)", "",
             f"Generated by `{command.strip()}` ({time.strftime('%Y-%m-%d', time.gmtime())}, "
             f"{time.perf_counter() - start:.0f} s, policy {Path(policy).name}). What each column is: the "
             "benchmark's docstring. Every latency is the platform's own model, the one the policy reads.", "",
             "```", *counts, "```", "", table, ""]
    text = "\n".join(lines)
    print("\n".join(counts))
    if args.json:
        Path(args.json).write_text(json.dumps({"command": command, "policy": policy, "rows": rows}, indent=1))
    if args.markdown:
        Path(args.markdown).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
