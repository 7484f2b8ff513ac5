"""benchmarks/bench_one_pass_stages.py: each stage of the one pass priced on the platform's own model, the guard
never slower than the best single device, and the page it writes."""

from __future__ import annotations

import json

import pytest

from tests.lab.paper_bench import bench_script


def test_a_validation_graph_on_two_platforms_through_to_the_page(tmp_path, capsys):
    script = bench_script("bench_one_pass_stages")
    page, data = tmp_path / "stages.md", tmp_path / "stages.json"
    assert script.main(["--graphs", "family:25", "--platforms", "paper,laptop", "--json", str(data),
                        "--markdown", str(page)]) == 0
    rows = json.loads(data.read_text())["rows"]
    assert [(r["graph"], r["platform"]) for r in rows] == [("family:25", "paper"), ("family:25", "laptop")]
    for r in rows:
        assert r["best_ms"] <= min(r["best_single_ms"], r["legal_ms"], r["guarded_ms"], r["heft_ms"])
        assert r["guarded_ms"] <= r["best_single_ms"] * 1.02  # the guard's fallback is a single device
        assert r["split_pays"] == (r["best_ms"] * 1.05 < r["best_single_ms"])
    text = page.read_text()
    assert "--graphs family:25 --platforms paper,laptop" in text and "rows: 2;" in text
    assert "| family:25 | laptop |" in text and "rows: 2;" in capsys.readouterr().out


def test_a_held_out_graph_is_refused():
    from ov_autoplace_lab.training.heldout_guard import HeldOutContamination

    with pytest.raises(HeldOutContamination):
        bench_script("bench_one_pass_stages").main(["--graphs", "zoo:maxvit_t", "--platforms", "paper"])
