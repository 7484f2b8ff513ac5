"""benchmarks/bench_candidates.py: the split rows' counts per candidate policy and their Markdown."""

from __future__ import annotations

import pytest

from tests.lab.paper_bench import bench_script
from ov_autoplace_lab.paper_bench import truth


@pytest.fixture(scope="module")
def script():
    return bench_script("bench_candidates")


def _row(model, split, a, b):
    return {"platform": "paper", "model": model, "split_pays": split, "optimum_ms": 1.0, "heft_ms": 1.02,
            "best_single_device_ms": 1.2, "one_pass_ms": {"a": a, "b": b}}


def test_counts_read_the_split_rows_only_and_a_tie_with_heft_is_not_behind(script):
    rows = [_row("m1", True, 1.02, 1.04), _row("m2", True, 1.0, 1.3), _row("m3", False, 5.0, 5.0)]
    a, b = script.summary(rows, "a"), script.summary(rows, "b")
    assert a == {"split_rows": 2, "within_1.05x": 2, "within_1.10x": 2, "behind_heft": [],
                 "slower_than_best_single": 0, "max_ratio": pytest.approx(1.02),
                 "truth_draws": 0, "draws_slower_than_best_single": 0, "draws_slower_than_plain_call": 0}
    assert b["behind_heft"] == ["paper/m1", "paper/m2"] and b["within_1.05x"] == 1 and b["within_1.10x"] == 1
    assert b["slower_than_best_single"] == 1


def test_markdown_names_the_policies_rows_and_that_it_is_simulated(script):
    rows = [_row("m1", True, 1.02, 1.04), _row("m3", False, 5.0, 5.0)]
    data = {"rows_from": "platforms.json", "command": "python benchmarks/bench_candidates.py", "date": "2026-11-28",
            "seconds": 1.0, "policies": {"a": "a.npz", "b": "b.npz"}, "rows": rows,
            "summary": {n: script.summary(rows, n) for n in "ab"}}
    text = "\n".join(script.markdown(data))
    assert "SIMULATED" in text and "| a | 1 | 1 | 1 | 0 (none) | 0 | 1.020x | n/a |" in text
    assert "| b | 1 | 1 | 1 | 1 (paper/m1) | 0 | 1.040x | n/a |" in text
    assert "| paper | m1 | 1.020x | 1.020x | 1.040x |" in text and "m3" not in text.split("HEFT beside it")[1]


def test_the_risk_beside_the_ratio_counts_the_split_rows_truth_draws(script):
    """[slower than the best single device, slower than the plain call, draws] per row, summed over split rows."""
    rows = [_row("m1", True, 1.02, 1.04) | {"risk": {"a": [3, 1, 20], "b": [0, 0, 20]}},
            _row("m3", False, 5.0, 5.0) | {"risk": {"a": [9, 9, 20], "b": [9, 9, 20]}}]
    a = script.summary(rows, "a")
    assert (a["truth_draws"], a["draws_slower_than_best_single"], a["draws_slower_than_plain_call"]) == (20, 3, 1)
    draws = {"hsdag_ms": [1.0, 2.0, None], "best_single_device_ms": [1.5, 1.5, 1.0], "plain_call_ms": [0.5, 3.0, 1.0]}
    assert truth.draw_risk(draws, "hsdag_ms") == (1, 1, 2)
    data = {"rows_from": "platforms.json", "command": "python benchmarks/bench_candidates.py", "date": "2026-12-02",
            "seconds": 1.0, "policies": {"a": "a.npz"}, "rows": rows, "summary": {"a": a}}
    assert "| 3/20 (15.0 %) / 1/20 (5.0 %) |" in "\n".join(script.markdown(data))
