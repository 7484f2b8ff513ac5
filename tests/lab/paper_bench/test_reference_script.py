"""benchmarks/bench_reference.py: which rows run again (longer limit, over 2 %, one platform at a time), how two
runs of a row are joined, and how the files of processes side by side are read back."""

from __future__ import annotations

import json

from tests.lab.paper_bench import bench_script


def _stored(tmp_path):
    rows = [{"platform": p, "model": m, "split_pays": True, "optimum_ms": 10.0, "optimum_source": "HEFT",
             "heft_ms": 10.0} for p in ("paper", "laptop") for m in ("a", "b")]
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"headroom": rows}))
    return path


def _fake_milp(script, monkeypatch, bound_by_limit):
    """headroom_row without a model or a solver: the MILP finds the stored best and a bound that grows with its
    limit; the calls are recorded."""
    calls = []

    def row(platform, model, graph, *, milp_seconds, methods, milp_warm_start, milp_seed=0):
        calls.append((platform.name, model, milp_seconds) + ((milp_seed,) if milp_seed else ()))
        bound = bound_by_limit.get((milp_seconds, milp_seed), bound_by_limit.get(milp_seconds))
        return {"milp_ms": 10.0, "milp_dual_bound_ms": bound, "milp_model_agrees": True,
                "milp_warm_start": "HEFT", "milp_gap": None, "seconds": {"milp_ms": milp_seconds}}

    class Platform:
        def __init__(self, name):
            self.name = name

    monkeypatch.setattr(script, "headroom_row", row)
    monkeypatch.setattr(script, "load_graph", lambda model: None)
    monkeypatch.setattr(script, "load_suite", lambda: {p: Platform(p) for p in ("paper", "laptop")})
    return calls


def test_processes_side_by_side_by_platform_join_into_one_reference(tmp_path, monkeypatch, capsys):
    script = bench_script("bench_reference")
    calls = _fake_milp(script, monkeypatch, {300.0: 9.7, 1200.0: 9.9})
    table, first = _stored(tmp_path), tmp_path / "first.json"
    assert script.main(["--from", str(table), "--split-only", "--milp-seconds", "300", "--json", str(first)]) == 0
    assert all(abs(r["proven_gap"] - 0.03) < 1e-9 for r in json.loads(first.read_text())["rows"])
    calls.clear()
    parts = []
    for platforms in ("paper", "laptop"):
        parts.append(tmp_path / f"{platforms}.json")
        assert script.main(["--from", str(table), "--split-only", "--milp-seconds", "1200", "--again", str(first),
                            "--again-up-to", "0.06", "--platforms", platforms, "--json", str(parts[-1])]) == 0
    assert sorted(calls) == sorted((p, m, 1200.0) for p in ("paper", "laptop") for m in ("a", "b"))
    paper_part = {(r["platform"], r["model"]): r for r in json.loads(parts[0].read_text())["rows"]}
    assert paper_part[("laptop", "a")]["milp_limit_s"] == 300.0  # left as the first reference had it
    assert abs(paper_part[("paper", "a")]["proven_gap"] - 0.01) < 1e-9
    calls.clear()
    joined = tmp_path / "joined.json"
    assert script.main(["--from", str(table), "--split-only", "--milp-seconds", "1200", "--again", str(first),
                        *map(str, parts), "--again-up-to", "0.06", "--json", str(joined)]) == 0
    assert calls == []  # every row already ran at 1200 s: nothing runs, the longest run of each row is kept
    rows = json.loads(joined.read_text())["rows"]
    assert [r["milp_limit_s"] for r in rows] == [1200.0] * 4
    assert all(abs(r["proven_gap"] - 0.01) < 1e-9 for r in rows)
    assert "proven gap <= 2 % on 4 of 4 split rows" in capsys.readouterr().out


def test_a_row_run_again_keeps_the_better_best_known_and_the_larger_bound():
    script = bench_script("bench_reference")
    prev = {"best_known_ms": 10.0, "source": "HEFT", "milp_dual_bound_ms": 9.5, "proven_gap": 0.05,
            "milp_limit_s": 300.0, "milp_ms": 10.0}
    new = {"best_known_ms": 9.8, "source": "MILP (this run)", "milp_dual_bound_ms": 9.4, "proven_gap": 0.04,
           "milp_limit_s": 1200.0, "milp_ms": 9.8}
    row = script.merged(prev, new)
    assert (row["best_known_ms"], row["source"], row["milp_dual_bound_ms"]) == (9.8, "MILP (this run)", 9.5)
    assert abs(row["proven_gap"] - 0.3 / 9.8) < 1e-12 and row["before"]["milp_limit_s"] == 300.0


def test_another_highs_seed_runs_a_row_again_and_the_join_keeps_its_bound(tmp_path, monkeypatch):
    script = bench_script("bench_reference")
    calls = _fake_milp(script, monkeypatch, {300.0: 9.7, 1200.0: 9.75, (300.0, 1): 9.9})
    table, first, longer = _stored(tmp_path), tmp_path / "first.json", tmp_path / "longer.json"
    assert script.main(["--from", str(table), "--split-only", "--milp-seconds", "300", "--json", str(first)]) == 0
    assert script.main(["--from", str(table), "--split-only", "--milp-seconds", "1200", "--again", str(first),
                        "--json", str(longer)]) == 0
    calls.clear()
    seeded = tmp_path / "seeded.json"
    # a shorter limit than the row's longest run, but another seed: another search path, so it runs
    assert script.main(["--from", str(table), "--split-only", "--milp-seconds", "300", "--milp-seed", "1",
                        "--again", str(first), str(longer), "--platforms", "paper", "--json", str(seeded)]) == 0
    assert sorted(calls) == [("paper", "a", 300.0, 1), ("paper", "b", 300.0, 1)]
    calls.clear()
    joined, md = tmp_path / "joined.json", tmp_path / "joined.md"
    assert script.main(["--from", str(table), "--split-only", "--milp-seconds", "1200", "--again", str(first),
                        str(longer), str(seeded), "--json", str(joined), "--markdown", str(md)]) == 0
    assert calls == []  # every row ran at 1200 s with seed 0 already
    rows = {(r["platform"], r["model"]): r for r in json.loads(joined.read_text())["rows"]}
    # the longest run's row, with the seeded run's larger bound: each is a lower bound on the same optimum
    assert rows[("paper", "a")]["milp_limit_s"] == 1200.0 and rows[("paper", "a")]["milp_dual_bound_ms"] == 9.9
    assert abs(rows[("paper", "a")]["proven_gap"] - 0.01) < 1e-9
    assert abs(rows[("laptop", "a")]["proven_gap"] - 0.025) < 1e-9
    assert "| 1200; 300 (seed 1) |" in md.read_text() and "| 1200 |" in md.read_text()
    calls.clear()
    again = tmp_path / "again.json"  # the same seed at the same limit is not run twice
    assert script.main(["--from", str(table), "--split-only", "--milp-seconds", "300", "--milp-seed", "1",
                        "--again", str(joined), "--platforms", "paper", "--json", str(again)]) == 0
    assert calls == []
