"""benchmarks/bench_profile_drift.py on the f32 testbed: one round of one model, through to its markdown page."""

from __future__ import annotations

from tests.lab.paper_bench import bench_script


def test_one_round_profiles_both_devices_and_writes_the_table(tmp_path, capsys):
    script = bench_script("bench_profile_drift")
    page = tmp_path / "profile-drift.md"
    assert script.main(["--rounds", "1", "--models", "attention_small", "--markdown", str(page)]) == 0
    text = page.read_text()
    assert "HETERO:CPU,CPUF in f32" in text and "--rounds 1" in text
    [row] = [line for line in text.splitlines() if line.startswith("| attention_small |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[1]) > 0 and cells[2].endswith("%]")
    assert all(c.split(" ")[:3][1:] == ["/", "1"] for c in cells[3:]), cells  # counts of one round
    assert "round  1 attention_small  e2e" in capsys.readouterr().out
