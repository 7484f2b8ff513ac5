"""Candidate policies' one pass on the headroom rows, against the best known placement and HEFT (simulated).

The headroom table (``bench_platforms.py``, 30-40 min) runs every method with the shipped policy. Choosing among
retrained candidates needs only its policy column: each ``--policy NAME=PATH`` places every row of a stored
``bench_platforms.py`` JSON in one pass, legalised and guarded as ``compile_model`` runs it
(``heldout.one_pass_row``), and is scored against that JSON's best known placement and HEFT. The rows are its
platform / model pairs as fitted (``splits.evaluation_specs`` / ``unseen_specs``), so the latencies are the JSON's.
Every number is SIMULATED by the suite's batch-1 device models.

    python benchmarks/bench_candidates.py --rows docs/bench/platforms.json --policy v2=pretrained \\
        --policy cand=cand.npz --json OUT.json --markdown OUT.md

Beside the ratio, the risk: each one pass under the JSON's truth draws (its sigma, 20 draws, seed 0: the same
hardware draws as the JSON's Truth section), counted slower than the best single device and than the plain call
under each draw. ``--win-share Q`` (repeatable) runs the guard's risk rule at share ``Q`` instead of the shipped
one (each policy becomes ``NAME@Q``; the proposal is made once): the sweep the rule's threshold is chosen by on
the validation tables (docs/heldout.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "lab"))

#: One pass within these ratios of the best known placement, as the issue's targets read them.
WITHIN = (1.05, 1.10)


def score(rows: list[dict], policies: dict[str, str], sigma: float, truth_sigma: float | None,
          win_shares: list[float] | None = None) -> list[dict]:
    """Per row: every policy's one-pass latency (ms) beside the stored best known, HEFT and best single device,
    and (``truth_sigma``) its risk under the truth draws: [slower than best single, slower than plain call, draws]."""
    from ov_autoplace.costmodel.simulator import Simulator
    from ov_autoplace.decision.prediction_guard import guard_placement
    from ov_autoplace.placement.legalizer import legalize
    from ov_autoplace.policy.numpy_policy import NumpyHSDAGPolicy
    from ov_autoplace.search.memory_fit import legal_pricer
    from ov_autoplace.strategies.base import PlacementContext
    from ov_autoplace.strategies.hsdag import HSDAGStrategy
    from ov_autoplace_lab.paper_bench import truth
    from ov_autoplace_lab.paper_bench.headroom import reference_placements
    from ov_autoplace_lab.paper_bench.methods import Case
    from ov_autoplace_lab.training import named_policy
    from ov_autoplace_lab.training.heldout import MAX_SUBMODELS
    from ov_autoplace_lab.training.targets import TargetSpec, case_cost, variant_platform

    loaded = {name: NumpyHSDAGPolicy.load(named_policy(path)) for name, path in policies.items()}
    out = []
    for row in rows:
        spec = TargetSpec(f"zoo:{row['model']}", row["platform"])
        graph, cost, support = case_cost(spec, sigma)
        devices = tuple(cost.devices)
        simulator = Simulator(cost, graph)
        placements, one_pass = {}, {}
        for name, policy in loaded.items():  # one pass + legalize + guard, as heldout.one_pass_row runs it
            proposal = HSDAGStrategy(policy, cost).propose(PlacementContext(graph=graph, devices=devices,
                                                                            support=support))
            legal = legalize(graph, proposal, devices, support, max_submodels=MAX_SUBMODELS, strategy="hsdag",
                             price=legal_pricer(cost, graph, support))
            for q in (win_shares or [None]):
                key = name if q is None else f"{name}@{q:g}"
                kwargs = {} if q is None else {"min_win_share": q}
                guarded = guard_placement(dataclasses.replace(legal, notes=list(legal.notes)), graph, cost, support,
                                          **kwargs)
                placements[key] = guarded.device_indices(graph.names, devices)
                one_pass[key] = float(simulator.feasible_ms(placements[key]))
        scored = {k: row[k] for k in ("platform", "model", "split_pays", "optimum_ms", "heft_ms",
                                      "best_single_device_ms")} | {"one_pass_ms": one_pass}
        if truth_sigma is not None:
            platform, _ = variant_platform(spec, sigma)
            refs = reference_placements(Case(row["model"], graph, devices, support, cost, True))
            draws = truth.score_draws(platform, graph, refs | {f"{k}_ms": v for k, v in placements.items()},
                                      truth.TruthSpec(sigma=truth_sigma, milp_seconds=0.0), cost=cost)
            scored["risk"] = {k: list(truth.draw_risk(draws, f"{k}_ms")) for k in placements}
        out.append(scored)
    return out


def summary(scored: list[dict], name: str) -> dict:
    """The split rows' counts for one policy (a tie with HEFT is not behind it)."""
    split = [r for r in scored if r["split_pays"]]
    ratios = [r["one_pass_ms"][name] / r["optimum_ms"] for r in split]
    behind = [f"{r['platform']}/{r['model']}" for r in split if r["one_pass_ms"][name] > r["heft_ms"] * (1 + 1e-9)]
    slower = [r for r in split if r["one_pass_ms"][name] > r["best_single_device_ms"] * (1 + 1e-9)]
    risk = [r["risk"][name] for r in split if "risk" in r]
    draws = sum(x[2] for x in risk)
    return {"split_rows": len(split), **{f"within_{w:.2f}x": sum(x <= w + 1e-9 for x in ratios) for w in WITHIN},
            "behind_heft": behind, "slower_than_best_single": len(slower),
            "max_ratio": max(ratios, default=None),
            "truth_draws": draws, "draws_slower_than_best_single": sum(x[0] for x in risk),
            "draws_slower_than_plain_call": sum(x[1] for x in risk)}


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.1f} %)"


def markdown(data: dict) -> list[str]:
    names = list(data["summary"])
    lines = [f"# Candidate policies' one pass on {data['rows_from']} (all latencies simulated)", "",
             f"Generated by `{data['command']}` ({data['date']}, {data['seconds']:.0f} s). One pass legalised and "
             "guarded as `compile_model` runs it; ratios to the JSON's best known placement. "
             "Every latency is SIMULATED by the suite's batch-1 device models.", "",
             "| policy | split rows | <= 1.05x | <= 1.10x | behind HEFT | slower than best single | max | "
             "truth draws slower than best single / plain call (split rows) |",
             "|---|---|---|---|---|---|---|---|"]
    for name in names:
        s = data["summary"][name]
        behind = ", ".join(s["behind_heft"]) or "none"
        lines.append(f"| {name} | {s['split_rows']} | {s['within_1.05x']} | {s['within_1.10x']} | "
                     f"{len(s['behind_heft'])} ({behind}) | {s['slower_than_best_single']} | {s['max_ratio']:.3f}x | "
                     + (f"{_pct(s['draws_slower_than_best_single'], n)} / {_pct(s['draws_slower_than_plain_call'], n)}"
                        if (n := s["truth_draws"]) else "n/a") + " |")
    lines += ["", "Split rows, each policy's one pass over the best known (HEFT beside it):", "",
              "| platform | model | HEFT | " + " | ".join(names) + " |", "|---|---|---|" + "---|" * len(names)]
    for r in data["rows"]:
        if r["split_pays"]:
            cells = " | ".join(f"{r['one_pass_ms'][n] / r['optimum_ms']:.3f}x" for n in names)
            lines.append(f"| {r['platform']} | {r['model']} | {r['heft_ms'] / r['optimum_ms']:.3f}x | {cells} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=Path, required=True, help="a bench_platforms.py JSON (its headroom rows)")
    parser.add_argument("--policy", action="append", required=True, metavar="NAME=PATH",
                        help="a policy file ('pretrained': the shipped one; 'v1'), repeatable")
    parser.add_argument("--sigma", type=float, default=0.4625, help="only names the fitted case (variant -1)")
    parser.add_argument("--win-share", type=float, action="append", metavar="Q",
                        help="run the guard's risk rule at share Q (repeatable; default: the shipped rule)")
    parser.add_argument("--no-truth", action="store_true", help="skip the truth draws (the risk columns)")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args(argv)
    policies = dict(p.split("=", 1) for p in args.policy)
    start = time.perf_counter()
    stored = json.loads(args.rows.read_text())
    rows = stored["headroom"]
    truth_sigma = None if args.no_truth else stored["truth_model"]["sigma"]
    scored = score(rows, policies, args.sigma, truth_sigma, args.win_share)
    data = {"command": "python benchmarks/bench_candidates.py " + " ".join(argv or sys.argv[1:]),
            "date": datetime.date.today().isoformat(), "simulated": True, "rows_from": args.rows.name,
            "policies": policies, "seconds": round(time.perf_counter() - start, 1), "rows": scored,
            "summary": {name: summary(scored, name) for name in scored[0]["one_pass_ms"]}}
    args.json.write_text(json.dumps(data, indent=1))
    if args.markdown:
        args.markdown.write_text("\n".join(markdown(data)) + "\n")
    for name in data["summary"]:
        print(name, json.dumps(data["summary"][name]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
