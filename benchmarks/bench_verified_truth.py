"""What the verification would keep on the simulated platforms, scored under the truth draws (simulated).

    python benchmarks/bench_verified_truth.py [--json docs/bench/platforms.json]

Reads the truth draws that ``bench_platforms.py`` wrote per headroom row (``truth``: per draw the truth optimum,
the plain call, the best single device and every method's placement) and models the verification
(``ov_autoplace/decision/verification.py``) as a perfect measurement under each draw: the candidate (HSDAG one pass + local
search) or the best single device is kept only when at least ``MIN_GAIN`` faster than the plain call, the
fastest such, else the plain call. It prints, for the split rows and for all rows, the share of draws where the
kept placement is within 5 % of the truth optimum, its median ratio to it, and how many draws end slower than
the plain call. A real verification measures with noise and abstains when unsure; this is its ideal.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ov_autoplace.decision.verification import MIN_GAIN  # noqa: E402


def kept_under_truth(truth: dict, draw: int, candidate_key: str = "hsdag_refined_ms") -> float | None:
    plain = truth["plain_call_ms"][draw]
    if plain is None:
        return None
    winners = [ms for ms in (truth[candidate_key][draw], truth["best_single_device_ms"][draw])
               if ms is not None and ms < plain * (1 - MIN_GAIN)]
    return min(winners) if winners else plain


def summary(rows: list[dict], split_only: bool) -> dict:
    within = slower = 0
    ratios = []
    for row in rows:
        if split_only and not row["split_pays"]:
            continue
        truth = row["truth"]
        for draw in range(truth["draws"]):
            kept, optimum, plain = kept_under_truth(truth, draw), truth["optimum_ms"][draw], truth["plain_call_ms"][draw]
            if kept is None or optimum is None:
                continue
            ratios.append(kept / optimum)
            within += kept <= 1.05 * optimum
            slower += kept > plain * (1 + 1e-9)
    return {"draws": len(ratios), "within_1_05": within / len(ratios), "median_ratio": statistics.median(ratios),
            "slower_than_plain": slower}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("docs/bench/platforms.json"))
    args = parser.parse_args(argv)
    rows = json.loads(args.json.read_text())["headroom"]
    for split_only in (True, False):
        s = summary(rows, split_only)
        print(f"{'split rows' if split_only else 'all rows':<10} {s['draws']:5d} draws: kept <= 1.05x the truth optimum "
              f"in {s['within_1_05']:.1%}, median {s['median_ratio']:.3f}x, slower than the plain call in "
              f"{s['slower_than_plain']} (simulated; verification modelled as a perfect measurement)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
