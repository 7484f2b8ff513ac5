"""``ov-autoplace whatif``: every device subset ranked by simulated optimum latency."""

from __future__ import annotations

import math

import openvino as ov
import pytest

from ov_autoplace import CalibrationDataError
from ov_autoplace.cli import main as cli
from ov_autoplace.costmodel.device_model import Batch1Terms, ModelDevice, SuitePlatform
from ov_autoplace.costmodel.platforms import ARC_IGPU_155H, CORE_ULTRA_7_155H, NPU_155H
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace_lab.whatif import format_table, load_model_graph, named_platform, rank_subsets
from tests import synthetic_graphs as sg

pytest.importorskip("scipy")

TERMS = dict(dispatch_ms=0.005, occupancy_mflop=1.0, compute_scale=1.0, memory_scale=1.0, submodel_ms=0.05,
             link_latency_ms=0.01, link_gbps=60.0)


def _laptop() -> SuitePlatform:
    cpu = ModelDevice(CORE_ULTRA_7_155H, Batch1Terms(**{**TERMS, "link_gbps": math.inf, "link_latency_ms": 0.0}))
    return SuitePlatform("toy_laptop", "CPU + iGPU + NPU", (cpu, ModelDevice(ARC_IGPU_155H, Batch1Terms(**TERMS)),
                                                           ModelDevice(NPU_155H, Batch1Terms(**TERMS))), "f16")


def test_every_subset_is_ranked_fastest_first():
    graph = extract_graph(prepare_model(sg.gather_model()))
    rows = rank_subsets(_laptop(), graph)
    assert len(rows) == 7  # 2**3 - 1
    latencies = [r["optimum_ms"] for r in rows]
    finite = [ms for ms in latencies if ms is not None]
    assert finite == sorted(finite) and latencies[: len(finite)] == finite  # infeasible subsets last
    npu_alone = next(r for r in rows if r["devices"] == ["NPU"])
    assert npu_alone["optimum_ms"] is None  # the spec-sheet NPU list lacks Gather
    full = next(r for r in rows if len(r["devices"]) == 3)
    assert full["optimum_ms"] <= min(finite) + 1e-9  # more devices never hurt the optimum
    text = format_table(_laptop(), "attention", rows, 0)
    assert "SIMULATED" in text and "cannot run" in text


def test_the_cli_ranks_a_model_file_on_a_suite_platform(tmp_path, capsys):
    path = tmp_path / "m.xml"
    ov.save_model(sg.residual(blocks=2), path)
    assert cli.main(["whatif", "-m", str(path), "--platform", "cpu_igpu", "--json", str(tmp_path / "w.json")]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED" in out and "GPU+CPU" in out
    assert (tmp_path / "w.json").exists()


def test_unknown_model_and_platform_are_clear_errors(tmp_path, capsys):
    assert cli.main(["whatif", "-m", "no_such_model", "--platform", "laptop"]) == 2
    assert "not a zoo model name" in capsys.readouterr().err
    path = tmp_path / "m.xml"
    ov.save_model(sg.residual(blocks=1), path)
    assert cli.main(["whatif", "-m", str(path), "--platform", "moon"]) == 2
    assert "unknown platform 'moon'" in capsys.readouterr().err
    with pytest.raises(Exception):
        load_model_graph(str(tmp_path / "missing.xml"))


def test_subsets_rank_by_the_best_placement_any_method_found_and_say_whose():
    graph = extract_graph(prepare_model(sg.gather_model()))
    rows = rank_subsets(_laptop(), graph, milp_seconds=10.0)
    for r in rows:
        known = [r.get(k) for k in ("milp_ms", "hsdag_ms", "hsdag_refined_ms", "heft_ms", "openvino_hetero_auto_ms")]
        known = [v for v in known if v is not None]
        if r["optimum_ms"] is not None:
            assert r["optimum_ms"] <= min(known) + 1e-9  # nothing any method found beats the rank's latency
    singles = [r for r in rows if len(r["devices"]) == 1 and r["optimum_ms"] is not None]
    assert singles and all(r["optimum_exact"] and r["optimum_source"] == "single device" for r in singles)


def test_an_unproven_optimum_is_said_so():
    from ov_autoplace_lab.whatif import proof_cell

    base = {"devices": ["CPU", "GPU"], "optimum_ms": 1.0, "optimum_devices": ["CPU", "GPU"], "notes": []}
    assert proof_cell({**base, "optimum_exact": True, "optimum_source": "milp_ms"}) == "proven"
    stopped = {**base, "optimum_exact": False, "optimum_source": "milp_ms",
               "optimum_proof": "the MILP stopped before proving optimality (time limit)"}
    assert proof_cell(stopped) == "MILP time limit"
    gap = {**base, "optimum_exact": False, "optimum_source": "milp_ms",
           "optimum_proof": "MILP objective 3.570256 ms differs from the simulator's 3.721341 ms by 4.06 %"}
    assert proof_cell(gap) == "MILP gap to simulator"
    other = {**base, "optimum_exact": False, "optimum_source": "hsdag_refined_ms"}
    assert proof_cell(other) == "best known: HSDAG+local search"
    text = format_table(_laptop(), "m", [stopped], 0)
    assert "NOT PROVEN OPTIMAL in 1 subset(s) (CPU+GPU)" in text and "MILP time limit" in text
    assert "Every subset's optimum is proven" in format_table(_laptop(), "m", [{**base, "optimum_exact": True}], 0)


def test_unknown_platform_lists_the_names():
    with pytest.raises(CalibrationDataError, match="unknown platform 'desktop'.*'laptop'"):
        named_platform("desktop")
