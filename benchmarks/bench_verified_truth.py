"""What the verification would keep on the simulated platforms, scored under the truth draws (simulated).

    python benchmarks/bench_verified_truth.py [--json docs/bench/platforms.json] [--rows]

Reads the truth draws that ``bench_platforms.py`` wrote per headroom row (``truth``: per draw the truth optimum,
the plain call, the best single device and every method's placement) and models the verification
(``ov_autoplace/decision/verification.py``) as a perfect measurement under each draw, with the contenders the code
measures: the candidate (HSDAG one pass + local search, what the profile path and the background worker place),
the runner-up splits of the same costs (``verification.RUNNER_UP_METHODS``: HEFT; like the code, only where the
guard lets it through: predicted on the row's own costs no slower than the best single device, else it is that
device, measured anyway) and the single devices. One is
kept only when at least ``MIN_GAIN`` faster than the plain call, the fastest such, else the plain call. The truth
draws only grade: no contender is chosen by them. It prints, for the split rows and for all rows, the share of
draws where the kept placement is within 5 % of the truth optimum, its median ratio to it, and how many draws end
slower than the plain call; the same for the candidate alone (the verification before it measured runner-ups),
for comparison. ``--rows`` prints every split-row draw the verification misses by more than 5 %.
A real verification measures with noise and abstains when unsure; this is its ideal.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ov_autoplace.decision.verification import MIN_GAIN, RUNNER_UP_METHODS  # noqa: E402

CANDIDATE_KEY = "hsdag_refined_ms"  # place_on_measured_costs: the HSDAG policy + the local search, guarded
RUNNER_UP_KEYS = tuple(f"{m}_ms" for m in RUNNER_UP_METHODS)
CANDIDATE_ALONE = (CANDIDATE_KEY, "best_single_device_ms")


def as_coded(row: dict) -> tuple[str, ...]:
    """The truth keys of what ``verify_placement`` measures for ``row``: the candidate, each runner-up the guard
    keeps (predicted on the row's costs, which the simulated rows price without spread, no slower than the best
    single device: ``decision/prediction_guard.py``), and the single devices. Decided on the predictions, never on the truth draws."""
    kept = tuple(k for k in RUNNER_UP_KEYS
                 if row.get(k) is not None and row[k] <= row["best_single_device_ms"] * (1 + 1e-9))
    return (CANDIDATE_KEY, *kept, "best_single_device_ms")


def kept_under_truth(truth: dict, draw: int, contenders: tuple[str, ...]) -> float | None:
    """The truth latency of what a perfect verification keeps among ``contenders`` (truth keys) in ``draw``."""
    plain = truth["plain_call_ms"][draw]
    if plain is None:
        return None
    winners = [truth[key][draw] for key in contenders
               if truth[key][draw] is not None and truth[key][draw] < plain * (1 - MIN_GAIN)]
    return min(winners) if winners else plain


def summary(rows: list[dict], split_only: bool, contenders=as_coded) -> dict:
    """``contenders(row)``: the truth keys measured for a row."""
    within = slower = 0
    ratios = []
    for row in rows:
        if split_only and not row["split_pays"]:
            continue
        truth = row["truth"]
        for draw in range(truth["draws"]):
            kept, optimum = kept_under_truth(truth, draw, contenders(row)), truth["optimum_ms"][draw]
            if kept is None or optimum is None:
                continue
            ratios.append(kept / optimum)
            within += kept <= 1.05 * optimum
            slower += kept > truth["plain_call_ms"][draw] * (1 + 1e-9)
    return {"draws": len(ratios), "within_1_05": within / len(ratios), "median_ratio": statistics.median(ratios),
            "slower_than_plain": slower}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def missed_draws(rows: list[dict]) -> list[str]:
    """Per split row, the draws kept > 1.05x the truth optimum: each contender's, the plain call's and the optimum's ms."""
    lines = []
    for row in rows:
        if not row["split_pays"]:
            continue
        truth = row["truth"]
        measured = as_coded(row)
        misses = [d for d in range(truth["draws"]) if truth["optimum_ms"][d] is not None
                  and (kept_under_truth(truth, d, measured) or 0) > 1.05 * truth["optimum_ms"][d]]
        alone = sum((kept_under_truth(truth, d, CANDIDATE_ALONE) or 0) > 1.05 * (truth["optimum_ms"][d] or 0)
                    for d in range(truth["draws"]) if truth["optimum_ms"][d] is not None)
        lines.append(f"{row['platform']:<13} {row['model']:<17} missed in {len(misses):2d}/{truth['draws']} draws "
                     f"(candidate alone: {alone}); measured: {', '.join(k[:-3] for k in measured)}")
        for d in misses:
            optimum = truth["optimum_ms"][d]
            parts = " ".join(f"{key[:-3]} {_ms(truth[key][d])} ({truth[key][d] / optimum:.3f}x)"
                             for key in (CANDIDATE_KEY, *RUNNER_UP_KEYS, "best_single_device_ms")
                             if truth[key][d] is not None)
            lines.append(f"    draw {d:2d}: optimum {optimum:.3f} ({truth['optimum_source'][d]}), plain call "
                         f"{_ms(truth['plain_call_ms'][d])}, {parts}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("docs/bench/platforms.json"))
    parser.add_argument("--rows", action="store_true", help="print every split-row draw missed by more than 5 %%")
    args = parser.parse_args(argv)
    rows = json.loads(args.json.read_text())["headroom"]
    if args.rows:
        print("\n".join(missed_draws(rows)))
    for title, contenders in ((f"as coded: candidate + guarded {', '.join(RUNNER_UP_METHODS)} + single devices", as_coded),
                              ("candidate alone + single devices (before the runner-ups)", lambda row: CANDIDATE_ALONE)):
        print(f"{title}:")
        for split_only in (True, False):
            s = summary(rows, split_only, contenders)
            print(f"  {'split rows' if split_only else 'all rows':<10} {s['draws']:5d} draws: kept <= 1.05x the truth "
                  f"optimum in {s['within_1_05']:.1%}, median {s['median_ratio']:.3f}x, slower than the plain call "
                  f"in {s['slower_than_plain']} (simulated; verification modelled as a perfect measurement)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
