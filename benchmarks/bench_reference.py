"""A proven gap for a stored headroom table: the warm-started MILP's dual bound beside each row's best known value.

    python benchmarks/bench_reference.py --from docs/bench/platforms.json [--split-only] [--milp-seconds 30]
        --json docs/bench/headroom_reference.json --markdown docs/bench/headroom_reference.md
    python benchmarks/bench_reference.py --from docs/bench/heldout.json --split-only --without-policy ...
    python benchmarks/bench_reference.py --from docs/bench/platforms.json --split-only --milp-seconds 1200
        --again docs/bench/headroom_reference.json [more.json] --again-up-to 0.06 --json ... --markdown ...

The stored table keeps latencies, not placements, so each row is run again with the methods whose placements set
the best known there (HEFT, the shipped policy's one pass, the fine-tuned policy with the local search: same seeds,
same placements) and then the MILP, warm-started from the best of them and the best single device
(``headroom_row(..., milp_warm_start=True)``), so its incumbent starts at the best known and its search prunes
from there. HiGHS's dual bound is a lower bound on the row's optimum whatever
the start, so the stored best-known value gets a proven gap, (best known - bound) / best known, where the MILP's
own model prices its placement like the simulator (within 0.5 %); else "unproven". Where the MILP finds a better
placement than the stored best known, the row says so and the gap is taken to the new value. Every latency is
SIMULATED (the calibrated suite platforms). ``--without-policy`` leaves the shipped policy's pass out of the warm
start (HEFT and the best single device only): the held-out rows are read once per shipped policy
(docs/heldout.md), and a reference for them need not run the policy at all.

``--again`` runs a longer MILP on the rows an earlier reference left unproven or over 2 % (up to
``--again-up-to``), a row never twice at the same limit; the rest are kept as that reference left them. A row run
twice keeps the better best known and the larger dual bound of its runs: each bound is a lower bound on the
row's optimum, so the larger is one too. ``--platforms`` runs only those platforms' rows (the rest as the
earlier reference left them), so one limit's rows can run as processes side by side; a later ``--again`` over their
files joins them, each row taking the file where it ran at the longest limit.

``--milp-seed`` is HiGHS's random seed: the branch and bound takes another path, so a row that one seed left over
2 % runs again with another at the same or a shorter limit (never twice with one seed at one limit). Every seed's
dual bound is a lower bound on the same optimum, so the join keeps the largest of them, and the page's limit column
names the seeded runs a row holds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_platforms import PROVEN_GAP, load_graph  # noqa: E402
from ov_autoplace.costmodel.suite import load_suite  # noqa: E402
from ov_autoplace_lab.paper_bench.headroom import SOURCE_LABELS, best_known_label, headroom_row  # noqa: E402

METHODS = ("Optimum (MILP)", "HEFT", "HSDAG (pretrained, one pass)", "HSDAG (pretrained + fine-tune) + local search")
WITHOUT_POLICY = METHODS[:2]


def reference_row(stored: dict, fresh: dict) -> dict:
    """The stored row's best known, credited and bounded by the fresh warm-started MILP."""
    stored_label, _ = best_known_label(stored)
    best, label = stored["optimum_ms"], stored_label
    if fresh.get("milp_ms") is not None and best is not None and fresh["milp_ms"] < best * (1 - 1e-6):
        best, label = fresh["milp_ms"], "MILP (this run)"
    bound = fresh.get("milp_dual_bound_ms")
    proven = bound is not None and fresh.get("milp_model_agrees") and best is not None and best > 0
    return {"platform": stored["platform"], "model": stored["model"], "split_pays": stored.get("split_pays"),
            "stored_best_known_ms": stored["optimum_ms"], "stored_source": stored_label, "best_known_ms": best,
            "source": label, "milp_ms": fresh.get("milp_ms"), "milp_dual_bound_ms": bound,
            "milp_warm_start": fresh.get("milp_warm_start"), "milp_gap": fresh.get("milp_gap"),
            "proven_gap": max(0.0, (best - bound) / best) if proven else None,
            "milp_seconds": (fresh.get("seconds") or {}).get("milp_ms"), "simulated": True}


def merged(prev: dict, new: dict) -> dict:
    """A row run again: the better best known of its runs and the larger dual bound (both lower bounds)."""
    best = min((prev, new), key=lambda r: (r["best_known_ms"] is None, r["best_known_ms"] or 0.0))
    bounds = [r["milp_dual_bound_ms"] for r in (prev, new) if r["proven_gap"] is not None]
    bound, known = (max(bounds) if bounds else None), best["best_known_ms"]
    return {**new, "best_known_ms": known, "source": best["source"], "milp_dual_bound_ms": bound,
            "proven_gap": max(0.0, (known - bound) / known) if bound is not None else None,
            "milp_runs": sorted(set(runs_of(prev) + runs_of(new))),
            "before": {k: prev.get(k) for k in ("milp_limit_s", "milp_ms", "milp_dual_bound_ms", "proven_gap")}}


def runs_of(row: dict) -> list[tuple[float, int]]:
    """The (MILP limit, HiGHS seed) of every run whose bound the row holds."""
    return [tuple(r) for r in row.get("milp_runs") or [(row["milp_limit_s"], row.get("milp_seed", 0))]]


def ran_at(row: dict, limit: float, seed: int) -> bool:
    """Whether the row already ran at this limit or longer with this seed."""
    return any(at >= limit and s == seed for at, s in runs_of(row))


def earlier_rows(paths: list[str]) -> tuple[dict, list[str]]:
    """``{(platform, model): row}`` of earlier references (the row run at the longest MILP limit; of equal limits, the
    later file's), each row with the MILP limit it ran at and, where files hold runs of it with other seeds or limits,
    the better best known and the larger dual bound of them all; and the commands that made them."""
    rows, commands = {}, []
    for path in paths:
        data = json.loads(Path(path).read_text())
        commands.append(data["command"])
        for r in data["rows"]:
            row, key = {"milp_limit_s": data["milp_seconds"], **r}, (r["platform"], r["model"])
            prev = rows.get(key)
            if prev is None:
                rows[key] = row
                continue
            # the longer run's row is the one kept; another file's runs of it add their bounds
            other, longest = (prev, row) if row["milp_limit_s"] >= prev["milp_limit_s"] else (row, prev)
            rows[key] = longest if set(runs_of(row)) == set(runs_of(prev)) else merged(other, longest)
    return rows, commands


def markdown(data: dict) -> list[str]:
    rows = data["rows"]
    starts = "HEFT and the best single device" if data.get("without_policy") else \
        "HEFT, the policy's one pass, the fine-tuned policy with the local search and the best single device"
    table = ("the second held-out list's table" if "heldout2" in data["from"] else "the held-out table"
             if "heldout" in data["from"] else "the headroom table")
    md = [f"# A proven gap for {table} (simulated)", "",
          f"Generated by `{data['command']}` ({data['date']}, {data['seconds']:.0f} s). Every latency is SIMULATED on "
          "the calibrated suite platforms. The best known is the stored table's (`" + data["from"] + "`), credited to "
          "the method whose placement it is; the MILP (HiGHS, " + f"{data['milp_seconds']:g}" + " s, warm-started "
          "from the best of " + starts + ") gives the dual bound; proven gap "
          "= (best known - dual bound) / best known, unproven where HiGHS has no bound or its model disagrees with "
          "the simulator by more than 0.5 %.", ""]
    if data.get("again"):
        md[-2:-1] = [md[-2].replace("Generated by", "Rows run again by", 1).replace(
            "The best known is", f"The rows that an earlier reference left unproven or over {100 * PROVEN_GAP:g} % "
            f"(up to {100 * data['again_up_to']:g} %) ran at this limit; the others are as the earlier run left "
            "them (its limit in the last column), made by " + "; then ".join(f"`{c}`" for c in data["again"]) +
            ". A row run twice keeps the better best known of its runs and the larger dual bound (each is a lower "
            "bound on the optimum). The best known is", 1)]
    if data.get("note"):
        md[-1:] = [data["note"], ""]
    md += ["| platform | model | split pays | best known (ms) | found by | MILP, warm (ms) | dual bound (ms) | "
           "proven gap | MILP limit (s) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        gap = "unproven" if r["proven_gap"] is None else f"{100 * r['proven_gap']:.2f} %"
        fmt = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
        md.append(f"| {r['platform']} | {r['model']} | {r['split_pays']} | {fmt(r['best_known_ms'])} | {r['source']} "
                  f"| {fmt(r['milp_ms'])} | {fmt(r['milp_dual_bound_ms'])} | {gap} | "
                  f"{limits(r, data['milp_seconds'])} |")
    md += ["", "```", *summary(rows), "```", ""]
    return md


def limits(row: dict, default: float) -> str:
    """The row's MILP limit, and the runs with another HiGHS seed whose bounds it holds."""
    seeded = [f"{at:g} (seed {seed})" for at, seed in runs_of(row) if seed] if "milp_limit_s" in row else []
    return f"{row.get('milp_limit_s', default):g}" + "".join(f"; {s}" for s in seeded)


def summary(rows: list[dict]) -> list[str]:
    out = []
    for name, chosen in (("split rows", [r for r in rows if r["split_pays"]]), ("all rows run", rows)):
        if chosen:
            proven = sum(r["proven_gap"] is not None and r["proven_gap"] <= PROVEN_GAP for r in chosen)
            out.append(f"proven gap <= {100 * PROVEN_GAP:g} % on {proven} of {len(chosen)} {name}; unproven on "
                       f"{sum(r['proven_gap'] is None for r in chosen)}; best known improved by this run's MILP on "
                       f"{sum(r['source'] == 'MILP (this run)' for r in chosen)}" +
                       (f"; run at {sorted({r['milp_limit_s'] for r in chosen if 'milp_limit_s' in r})} s"
                        if any("milp_limit_s" in r for r in chosen) else ""))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", required=True, help="a JSON bench_platforms.py wrote")
    parser.add_argument("--json", required=True)
    parser.add_argument("--markdown")
    parser.add_argument("--milp-seconds", type=float, default=30.0)
    parser.add_argument("--split-only", action="store_true", help="only the rows where a split pays")
    parser.add_argument("--without-policy", action="store_true",
                        help="warm-start from HEFT and the best single device only (the held-out rows)")
    parser.add_argument("--again", nargs="+", metavar="REFERENCE_JSON",
                        help="run only the rows these references left unproven or over 2 %% (module doc)")
    parser.add_argument("--note", default="", help="a sentence for the page (how an input file was made)")
    parser.add_argument("--again-up-to", type=float, default=1.0, help="...and not over this gap (0.06: 6 %%)")
    parser.add_argument("--platforms", help="comma-separated: run only these platforms' rows (module doc)")
    parser.add_argument("--milp-seed", type=int, default=0,
                        help="HiGHS's random seed: with --again, rows already run at this limit run again on another "
                             "search path (module doc)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    stored = json.loads(Path(args.source).read_text())["headroom"]
    stored = [r for r in stored if r.get("split_pays") or not args.split_only]
    earlier, commands = earlier_rows(args.again) if args.again else ({}, [])
    suite, rows = load_suite(), []
    for r in stored:
        t, prev = time.perf_counter(), earlier.get((r["platform"], r["model"]))
        gap = None if prev is None else prev["proven_gap"]
        elsewhere = args.platforms and r["platform"] not in args.platforms.split(",")
        if elsewhere and not args.again:
            continue
        if args.again and (prev is None or ran_at(prev, args.milp_seconds, args.milp_seed) or elsewhere or
                           (gap is not None and not PROVEN_GAP < gap <= args.again_up_to)):
            if prev is not None:
                rows.append(prev)
            continue
        fresh = headroom_row(suite[r["platform"]], r["model"], load_graph(r["model"]), milp_seconds=args.milp_seconds,
                             methods=WITHOUT_POLICY if args.without_policy else METHODS, milp_warm_start=True,
                             milp_seed=args.milp_seed)
        rows.append({**reference_row(r, fresh), "milp_limit_s": args.milp_seconds, "milp_seed": args.milp_seed})
        if prev is not None:
            rows[-1] = merged(prev, rows[-1])
        x = rows[-1]
        print(f"{x['platform']:<13} {x['model']:<20} best known {x['best_known_ms']:.3f} ({x['source']}) bound "
              f"{x['milp_dual_bound_ms']} gap {x['proven_gap']} [{time.perf_counter() - t:.1f} s]", flush=True)
    data = {"command": "python benchmarks/bench_reference.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d"), "from": args.source, "milp_seconds": args.milp_seconds,
            "milp_seed": args.milp_seed,
            "simulated": True, "seconds": round(time.perf_counter() - start, 1), "rows": rows,
            "without_policy": args.without_policy, "again": commands, "again_up_to": args.again_up_to,
            "note": args.note,
            "sources": sorted(set(SOURCE_LABELS.values()))}
    Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    print("\n".join(summary(rows)))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(markdown(data)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
