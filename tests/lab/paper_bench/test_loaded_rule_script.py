"""benchmarks/bench_loaded_rule.py: its loads are there while they run and gone after, both rules read one
verification's rounds as the rules say, and the table counts what they decided."""

from __future__ import annotations

import math

import pytest

from ov_autoplace.measuring.noise import LoadProbe
from tests.lab.paper_bench import bench_script


@pytest.fixture(scope="module")
def script():
    return bench_script("bench_loaded_rule")


@pytest.mark.parametrize("name", ["hog", "ov app"])
def test_a_load_keeps_cores_busy_while_the_block_runs_and_is_gone_after(script, name, monkeypatch):
    started = []
    popen = script.subprocess.Popen
    monkeypatch.setattr(script.subprocess, "Popen", lambda *a, **kw: started.append(popen(*a, **kw)) or started[-1])
    with script.condition(name):
        other = LoadProbe().start().other_cores()
        assert started[0].poll() is None, "the load process died inside its block"
    assert math.isnan(other) or other > 0.3, other
    assert started[0].poll() is not None, "the load process outlived its block"


def test_both_rules_read_one_verifications_rounds(script):
    model, prepared, graph, cases = script.cases()
    assert set(cases) == {"identical", "one thread"}
    core, devices, split, _ = cases["identical"]
    assert devices == ("CPU", "CPUF") and split.num_submodels == 3
    assert cases["one thread"][2].counts_per_device()["CPU"] == 0  # CPUS alone
    r = script.verify_once(cases["identical"], model, prepared, graph)
    assert r["rounds"] >= 4 and r["best"] == "candidate" and r["ratio"] > 0
    v5_won, v6_won = r["v5"] in ("kept", "provisional"), r["v6"] in ("kept", "provisional")
    assert not v6_won or v5_won, "v6 is v5 with a wider margin under load: it never wins where v5 did not"
    if not r["loaded"]:  # quiet, the two rules are one
        assert r["v5"] == r["v6"]
    assert script.verification.decide.__name__ == "decide", "the recording wrapper was left in place"


def test_each_rule_reads_the_rounds_as_it_says(script, monkeypatch):
    """Crafted rounds through verify_once's bookkeeping: a one-thread device 20 % faster, tightly, under load: v5 and
    v6 use it provisionally, the fixed 25 % margin abstains; quiet all three keep it; as fast as the plain call, none
    wins."""
    import numpy as np

    def rounds(alt_ms):
        rng = np.random.default_rng(0)
        return {"plain": 10 * rng.lognormal(0, 0.02, 25), "plain'": 10 * rng.lognormal(0, 0.02, 25),
                "single:CPUS": alt_ms * rng.lognormal(0, 0.02, 25)}

    def verdicts(alt_ms, other_cores):
        fake = lambda *a, **kw: script.verification.decide(rounds(alt_ms), other_cores=other_cores)  # noqa: E731
        monkeypatch.setattr(script.verification, "verify_placement", fake)
        r = script.verify_once((None, ("CPU", "CPUS"), None, None), None, None, None)
        return r["v5"], r["25 %"], r["v6"]

    assert verdicts(8.0, 1.0) == ("provisional", "abstained", "provisional")
    assert verdicts(8.0, 0.0) == ("kept", "kept", "kept")
    assert verdicts(10.0, 1.0) == ("abstained",) * 3 and verdicts(10.0, 0.0) == ("plain",) * 3


def test_the_table_counts_each_rules_wins(script):
    def row(v5, rule25, v6, loaded=True):
        return {"v5": v5, "25 %": rule25, "v6": v6, "loaded": loaded, "other_cores": 1.0, "ratio": 0.95}

    results = {("identical", "hog"): [row("provisional", "abstained", "abstained"),
                                      row("provisional", "abstained", "provisional"),
                                      row("abstained", "abstained", "abstained")],
               ("identical", "quiet"): [row("plain", "plain", "plain", loaded=False)]}
    text = script.table(results)
    hog = next(line for line in text.splitlines() if "| hog |" in line)
    assert "| 3 | 3 | 1.00 | 0.950 [0.950-0.950] | 2 | 0 | 1 | provisional:1 abstained:2 |" in hog
    assert "| 1 | 0 | 1.00 | 0.950 [0.950-0.950] | 0 | 0 | 0 | plain:1 |" in text
