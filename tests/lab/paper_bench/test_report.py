"""The benchmark report: schema checks that name the bad path, Markdown tables, files and figures.

All numbers below are TEST DATA made up for these tests, not benchmark results.
"""

from __future__ import annotations

import copy
import json
import logging
import re

import pytest

from ov_autoplace_lab.paper_bench.report import markdown_report, write_report
from ov_autoplace_lab.paper_bench.results_schema import validate_results

MODELS = ["inception_v3", "resnet50", "bert_base"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def cell(median, ref, *, simulated=False, optimum=None, evaluated=1, budget=None, error=None):
    """TEST DATA: one cell, with speed-up and optimum gap computed like the runner does."""
    measured = not simulated
    return {
        "median_ms": median, "q1_ms": median * 0.97 if measured else None, "q3_ms": median * 1.04 if measured else None,
        "runs": 5 if measured else 0, "speedup": ref / median - 1.0,
        "vs_optimum": None if optimum is None else median / optimum - 1.0, "evaluated": evaluated,
        "compiles": evaluated if measured else 0, "search_s": 0.5 * evaluated, "budget": budget, "submodels": 2,
        "counts": {"CPU": 40, "CPUF": 12}, "max_abs_diff": 1.5e-3 if measured else None,
        "cosine": 0.99999 if measured else None, "error": error, "notes": [],
    }


def setting(name, simulated):
    """TEST DATA: the Optimum wins inception_v3 and resnet50; it errors on bert_base, where HEFT wins."""
    ref = {"inception_v3": 20.0, "resnet50": 10.0, "bert_base": 40.0}
    table = {  # method, kind -> medians per model
        ("CPU only", "single"): (20.0, 10.0, 40.0),
        ("CPUF only", "single"): (25.0, 12.0, 38.0),
        ("OpenVINO HETERO auto", "openvino"): (20.5, 10.2, 40.5),
        ("HEFT", "heuristic"): (18.0, 9.5, 30.0),
        ("Optimum", "optimum"): (15.0, 8.0, 29.0),
        ("HSDAG", "learned"): (16.0, 8.4, 31.0),
    }
    optimum = dict(zip(MODELS, table[("Optimum", "optimum")]))
    rows = []
    for (method, kind), medians in table.items():
        learned = kind == "learned"
        rows.append({"method": method, "kind": kind, "cells": {
            m: cell(v, ref[m], simulated=simulated, optimum=optimum[m], evaluated=20 if learned else 1,
                    budget=20 if learned else None) for m, v in zip(MODELS, medians)}})
    rows[3]["cells"]["bert_base"]["notes"] = ["test note"]
    # Optimum wins everywhere on latency by construction; drop it from bert_base with an error cell.
    rows[4]["cells"]["bert_base"] = {"error": "time limit reached", "median_ms": None}
    del rows[2]["cells"]["resnet50"]  # a missing cell
    curves = {"HSDAG": {m: [[1, v * 1.5], [5, v * 1.2], [20, v]] for m, v in zip(MODELS, table[("HSDAG", "learned")])}}
    title = "Simulated paper platform: i9-12900K + Flex 170" if simulated else "Measured on the testbed: CPU + CPUF"
    return {"name": name, "title": title, "simulated": simulated, "models": list(MODELS), "reference": "CPU only",
            "rows": rows, "curves": curves}


@pytest.fixture
def results():
    """TEST DATA: a measured and a simulated setting."""
    return {"meta": {"date": "2026-01-01", "openvino": "2026.4.1", "command": "ov-autoplace bench --quick",
                     "quick": True, "budget": 20, "runs": 5, "machine": "test machine", "seconds": 12.5},
            "settings": [setting("measured", False), setting("paper", True)]}


def test_valid_results_pass(results):
    validate_results(results)
    validate_results(json.loads(json.dumps(results)))  # JSON round trip


def _set(path):
    def mutate(r, value):
        *head, last = path
        target = r
        for key in head:
            target = target[key]
        target[last] = value
    return mutate


CORRUPTIONS = [
    (("settings", 0, "rows", 3, "cells", "bert_base", "median_ms"), "x",
     r"settings\[0\]\.rows\[3\]\.cells\['bert_base'\]\.median_ms: expected a non-negative number or null, got 'x'"),
    (("settings", 0, "rows", 1, "cells", "resnet50", "median_ms"), float("nan"),
     r"settings\[0\]\.rows\[1\]\.cells\['resnet50'\]\.median_ms: expected a non-negative number"),
    (("settings", 0, "rows", 0, "cells", "resnet50", "runs"), True,
     r"settings\[0\]\.rows\[0\]\.cells\['resnet50'\]\.runs: expected a non-negative integer, got True"),
    (("settings", 0, "rows", 1, "kind"), "magic", r"settings\[0\]\.rows\[1\]\.kind: expected one of"),
    (("settings", 0, "rows", 1, "method"), "CPU only", r"settings\[0\]\.rows\[1\]\.method: expected a method name"),
    (("settings", 1, "reference"), "GPU only", r"settings\[1\]\.reference: expected the method of a row"),
    (("settings", 1, "name"), "measured", r"settings\[1\]\.name: expected a unique name"),
    (("settings", 0, "name"), "a/b", r"settings\[0\]\.name"),
    (("settings", 0, "rows", 5, "cells", "resnet50", "q1_ms"), 99.0,
     r"settings\[0\]\.rows\[5\]\.cells\['resnet50'\]\.median_ms: expected q1_ms <= median_ms <= q3_ms"),
    (("settings", 1, "rows", 3, "cells", "inception_v3", "cosine"), 0.9,
     r"settings\[1\]\.rows\[3\]\.cells\['inception_v3'\]\.cosine: expected null in a simulated setting"),
    (("settings", 0, "rows", 3, "cells", "inception_v3", "speedup"), 0.5,
     r"settings\[0\]\.rows\[3\]\.cells\['inception_v3'\]\.speedup: expected reference median / median - 1 = 0\.111"),
    (("settings", 0, "rows", 3, "cells", "inception_v3", "counts"), {"CPU": -1},
     r"settings\[0\]\.rows\[3\]\.cells\['inception_v3'\]\.counts\['CPU'\]: expected a non-negative integer"),
    (("settings", 0, "rows", 3, "cells", "inception_v3", "notes"), ["ok", 3],
     r"settings\[0\]\.rows\[3\]\.cells\['inception_v3'\]\.notes\[1\]: expected a string"),
    (("settings", 0, "rows", 3, "cells", "vgg16"), {}, r"settings\[0\]\.rows\[3\]\.cells\['vgg16'\]: expected a model"),
    (("settings", 0, "curves", "HSDAG", "resnet50", 1), [5, 100.0],
     r"settings\[0\]\.curves\['HSDAG'\]\['resnet50'\]\[1\]: expected evaluated not decreasing"),
    (("settings", 0, "curves", "RNN"), {}, r"settings\[0\]\.curves\['RNN'\]: expected a method among the rows"),
    (("meta", "quick"), "yes", r"meta\.quick: expected a boolean, got 'yes'"),
]


@pytest.mark.parametrize("path,value,message", CORRUPTIONS, ids=[m[:40] for _, _, m in CORRUPTIONS])
def test_corruptions_are_rejected_with_their_path(results, path, value, message):
    bad = copy.deepcopy(results)
    _set(path)(bad, value)
    with pytest.raises(ValueError, match=message):
        validate_results(bad)


@pytest.mark.parametrize("remove,message", [
    (("meta", "date"), r"^meta\.date: missing \(required\)"),
    (("settings", 0, "rows", 0, "cells", "resnet50", "evaluated"),
     r"^settings\[0\]\.rows\[0\]\.cells\['resnet50'\]\.evaluated: missing \(required\)"),
    (("settings", 1, "curves"), r"^settings\[1\]\.curves: missing"),
])
def test_missing_fields_are_named(results, remove, message):
    target = results
    for key in remove[:-1]:
        target = target[key]
    del target[remove[-1]]
    with pytest.raises(ValueError, match=message):
        validate_results(results)


def test_top_level_must_be_an_object():
    with pytest.raises(ValueError, match=r"^results: expected an object"):
        validate_results([])


def _section(md, title_start):
    start = md.index("## " + title_start)
    end = md.find("\n## ", start + 3)
    return md[start:end if end >= 0 else len(md)]


def test_markdown_has_every_method_model_and_bold_winners(results):
    md = markdown_report(results)
    for header in ("Date: 2026-01-01", "OpenVINO: 2026.4.1", "`ov-autoplace bench --quick`", "Machine: test machine"):
        assert header in md
    for s in results["settings"]:
        for row in s["rows"]:
            assert md.count(f"| {row['method']} |") >= 3  # latency, search cost, placements tables
    for model in MODELS:
        assert model in md
    measured = _section(md, "Measured")
    # Winners: Optimum on inception_v3 / resnet50, HEFT on bert_base (the Optimum errored there). Cells: median [q1–q3] (speed-up)
    assert "**15.0 ms [14.5–15.6] (+33.3 %)**" in measured
    assert "**8.00 ms [7.76–8.32] (+25.0 %)**" in measured
    assert "**30.0 ms [29.1–31.2] (+33.3 %)**" in measured
    assert "**16.0 ms" not in measured  # HSDAG is second: not bold
    assert measured.count("| **") == 3  # one bold cell per model
    assert ("- **bert_base**: HEFT at 30.0 ms, +33.3 % vs CPU only (no paired rounds recorded: lowest median only, "
            "not tested against the noise); from the optimum: ") in measured
    assert "HSDAG +6.9 %" in measured and "Optimum +0.0 %" not in measured  # 31 / 29 - 1
    assert "error†" in measured and "Optimum / bert_base: time limit reached" in measured
    assert "### Correctness" in measured and "1.50e-03 / 0.999990" in measured
    assert "20 / 20 / 10.0 s / 20" in measured  # HSDAG's search cost
    assert "HEFT / bert_base: test note" in measured


def test_simulated_sections_are_labelled_and_have_no_spread(results):
    results["settings"][1]["title"] = "Paper platform: i9-12900K + Flex 170"
    md = markdown_report(results)
    simulated = _section(md, "Paper platform")
    assert simulated.startswith("## Paper platform: i9-12900K + Flex 170 (simulated)")
    assert "All numbers are simulated" in simulated
    assert "**15.0 ms (+33.3 %)**" in simulated
    assert not re.search(r"\d ms \[", simulated)  # no interquartile range: nothing was timed
    assert "### Correctness" not in simulated
    assert md.count("### Correctness") == 1


def test_write_report_writes_all_files(results, tmp_path):
    written = write_report(results, tmp_path / "out")
    expected = {"json", "markdown", "speedup_measured", "speedup_paper", "curves_measured", "curves_paper"}
    assert set(written) == expected
    for key, path in written.items():
        assert path.is_file() and path.stat().st_size > 0, key
        if key.startswith(("speedup_", "curves_")):
            assert path.read_bytes()[:8] == PNG_MAGIC, key
    assert written["speedup_paper"].name == "speedup_paper.png"
    assert json.loads(written["json"].read_text()) == results
    md = written["markdown"].read_text()
    assert "![speedup_measured.png](speedup_measured.png)" in md and "(curves_paper.png)" in md


def test_write_report_without_matplotlib_still_writes_the_text(results, tmp_path, monkeypatch, caplog):
    for module in ("matplotlib", "matplotlib.figure", "matplotlib.backends", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(__import__("sys").modules, module, None)
    with caplog.at_level(logging.WARNING, logger="ov_autoplace_lab.paper_bench.report"):
        written = write_report(results, tmp_path)
    assert set(written) == {"json", "markdown"}
    assert "matplotlib is not installed" in caplog.text
    assert not list(tmp_path.glob("*.png"))


def test_write_report_rejects_bad_results_before_writing(results, tmp_path):
    results["meta"]["runs"] = -1
    with pytest.raises(ValueError, match=r"meta\.runs"):
        write_report(results, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def _with_rounds(results, rounds: dict[str, dict[str, list[float]]]):
    """TEST DATA: per-round medians for the measured setting (method -> model -> rounds); medians follow them."""
    measured = results["settings"][0]
    ref_rounds = rounds["CPU only"]
    for row in measured["rows"]:
        for model, values in rounds.get(row["method"], {}).items():
            c = row["cells"][model]
            c["round_ms"] = values
            c["median_ms"] = sorted(values)[len(values) // 2]
            c["q1_ms"], c["q3_ms"] = min(values), max(values)
            ref = sorted(ref_rounds[model])[len(values) // 2]
            c["speedup"] = ref / c["median_ms"] - 1.0
    return results


def test_a_measured_winner_needs_to_win_every_paired_round(results):
    """TEST DATA modelled on 2026-11-22's inception_v3: a +5 % median over CPU only that loses one paired round
    is no winner; a method faster in all five rounds is, and one it does not beat in every round ties with it."""
    models = {"inception_v3": None}
    cpu = [29.6, 30.5, 28.9, 29.2, 30.1]
    rounds = {"CPU only": {"inception_v3": cpu},
              "HEFT": {"inception_v3": [28.1, 29.9, 27.8, 29.4, 28.3]},  # median 28.3, round 4 slower than CPU only
              "Optimum": {"inception_v3": [31.0, 31.5, 30.2, 30.8, 31.9]},
              "HSDAG": {"inception_v3": [31.0, 31.5, 30.2, 30.8, 31.9]},
              "CPUF only": {"inception_v3": [55.0, 54.0, 56.0, 54.5, 55.5]},
              "OpenVINO HETERO auto": {"inception_v3": [29.0, 30.6, 28.5, 29.3, 29.9]}}
    for row in results["settings"][0]["rows"]:  # errors / missing cells elsewhere do not matter here
        for m in list(row["cells"]):
            if m not in models:
                del row["cells"][m]
    results["settings"][0]["models"] = list(models)
    results["settings"] = results["settings"][:1]
    results["settings"][0]["curves"] = {}
    md = markdown_report(_with_rounds(results, rounds))
    assert "- **inception_v3**: no difference: no method was faster than CPU only in every one of the 5 paired rounds" \
        in md and "lowest median: HEFT at 28.3 ms" in md
    assert "| **" not in md  # nothing bold: no winner
    rounds["HEFT"]["inception_v3"] = [28.1, 29.9, 27.8, 28.9, 28.3]  # now faster in every round
    rounds["OpenVINO HETERO auto"]["inception_v3"] = [29.0, 29.6, 28.5, 29.1, 28.2]  # also, but HEFT not always faster
    md = markdown_report(_with_rounds(results, rounds))
    assert ("- **inception_v3**: HEFT, OpenVINO HETERO auto at 28.3 ms, +4.6 % vs CPU only, faster in all 5 paired "
            "rounds (paired ratio 0.940–0.990); not distinguishable from OpenVINO HETERO auto") in md
    assert md.count("| **") == 2


def _measured_only(results, model: str) -> None:
    """Keep the measured setting and one model's cells (in place)."""
    for row in results["settings"][0]["rows"]:
        for m in list(row["cells"]):
            if m != model:
                del row["cells"][m]
    results["settings"] = results["settings"][:1]
    results["settings"][0].update(models=[model], curves={})


def test_a_paired_win_below_the_minimum_gain_is_no_difference(results):
    """TEST DATA modelled on 2026-11-25's resnet50: AUTO (which runs on that very CPU) faster than CPU only in all
    five rounds, but by ~1.5 %: not named a winner."""
    _measured_only(results, "resnet50")
    cpu = [21.3, 21.5, 21.0, 21.4, 21.2]
    rounds = {"CPU only": {"resnet50": cpu}, "HEFT": {"resnet50": [v * 0.985 for v in cpu]},
              "CPUF only": {"resnet50": [41.0] * 5}, "Optimum": {"resnet50": [28.0] * 5},
              "HSDAG": {"resnet50": [v * 1.001 for v in cpu]}}
    md = markdown_report(_with_rounds(results, rounds))
    assert "- **resnet50**: no difference: no method was faster than CPU only in every one of the 5 paired rounds " \
           "by at least 2 % in the median round (lowest median: HEFT" in md
    assert "| **" not in md


def test_a_paired_win_within_the_reference_compiled_twice_is_no_difference(results):
    """TEST DATA modelled on 2026-11-25's quiet bert_base: OpenVINO AUTO (on that very CPU) faster than CPU only in
    every round by ~4 %, while CPU only compiled a second time differed from its first compile by ~4.5 %: the gain
    needed is the control's, so nobody wins; a gain beyond the control is named, with the control beside it."""
    _measured_only(results, "bert_base")
    cpu = [59.6, 59.9, 59.3, 60.1, 59.5]
    rounds = {"CPU only": {"bert_base": cpu}, "OpenVINO HETERO auto": {"bert_base": [v * 0.96 for v in cpu]},
              "CPUF only": {"bert_base": [110.0] * 5}, "Optimum": {"bert_base": [v * 0.99 for v in cpu]},
              "HSDAG": {"bert_base": cpu}, "HEFT": {"bert_base": [v * 1.01 for v in cpu]}}
    results["settings"][0]["controls"] = {"bert_base": {"round_ms": cpu, "round_ratio": [0.955, 0.96, 0.95, 0.958,
                                                                                         0.954]}}
    md = markdown_report(_with_rounds(results, rounds))
    assert "- **bert_base**: no difference: no method was faster than CPU only in every one of the 5 paired rounds " \
           "by at least 4.5 % in the median round (CPU only compiled twice differed by -4.5 % here, its control)" in md
    assert "| **" not in md
    rounds["OpenVINO HETERO auto"]["bert_base"] = [v * 0.93 for v in cpu]
    md = markdown_report(_with_rounds(results, rounds))
    assert "- **bert_base**: OpenVINO HETERO auto at" in md and "its control)" in md
    assert md.count("| **") == 1
    results["settings"][0]["controls"] = {"elsewhere": {"round_ms": cpu, "round_ratio": [1.0] * 5}}
    with pytest.raises(ValueError, match=r"controls\['elsewhere'\]: expected a model among \['bert_base'\]"):
        markdown_report(results)
