"""benchmarks/bench_timed_compile.py: which compiles the verification's stopwatch runs before the timing, and the
summary it prints (timed against fresh, pair by pair)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lab.paper_bench import bench_script


@pytest.fixture(scope="module")
def script():
    return bench_script("bench_timed_compile")


def test_one_compile_of_each_pair_is_run_by_the_verifications_stopwatch_on_the_llm_objective(script, monkeypatch):
    made, timed = [], []
    monkeypatch.setattr(script, "compile_plain_call", lambda *a, **k: made.append(object()) or made[-1])
    monkeypatch.setattr(script, "time_rounds", lambda contenders, inputs, **kw: timed.append(
        (contenders["plain"], kw["generation"])))
    contenders = script.make_contenders(None, ("CPU", "CPUF"), None, replicates=3, paths=[])
    assert list(contenders) == ["fresh 1", "timed 1", "timed 2", "fresh 2", "fresh 3", "timed 3"]  # alternately
    assert [c for c, _ in timed] == [contenders[f"timed {k}"][0] for k in (1, 2, 3)]
    assert all(g == script.VERIFIED and (g.prompt_tokens, g.new_tokens) == (128, 128) for _, g in timed)
    assert len({id(c) for (c,) in contenders.values()}) == 6  # six compiles, none shared


def _samples(per_token: float, ratios) -> np.ndarray:
    """[rounds, 3] (TTFT, per token, generation) with per-token times ``per_token * ratios``."""
    r = np.asarray(ratios, np.float64)
    return np.stack([np.full_like(r, 10.0), per_token * r, np.full_like(r, 100.0)], axis=1)


def test_the_summary_reads_each_pair_against_the_fresh_compiles_median(script):
    rounds = np.ones(9)
    times = {"fresh 1": {128: _samples(4.0, rounds)}, "timed 1": {128: _samples(4.2, rounds)},
             "timed 2": {128: _samples(4.0, rounds)}, "fresh 2": {128: _samples(4.0, rounds)},
             "heft path": {128: _samples(3.9, rounds)}}
    rows, summary = script.section(times, replicates=2)
    assert summary["fresh"] == [1.0, 1.0] and summary["timed"] == pytest.approx([1.05, 1.0])
    assert summary["timed_slower_in_pair"] == 1 and summary["timed_over_fresh"] == pytest.approx(1.025)
    assert rows[1] == "| timed 1 | 4.200 | 1.050 | 1.050-1.050 |" and rows[-1].startswith("| heft path | 3.900 | 0.975")
