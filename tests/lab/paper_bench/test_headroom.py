"""The headroom row: best feasible single device, the optimum and the methods, on small simulated platforms."""

from __future__ import annotations

import math

import pytest

from ov_autoplace_lab.paper_bench.headroom import headroom_row, single_device_latencies, split_pays
from ov_autoplace.costmodel.device_model import Batch1Terms, ModelDevice, SuitePlatform
from ov_autoplace.costmodel.platforms import CORE_ULTRA_7_155H, NPU_155H
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg

pytest.importorskip("scipy")

TERMS = dict(dispatch_ms=0.002, occupancy_mflop=1.0, compute_scale=1.0, memory_scale=1.0, submodel_ms=0.05,
             link_latency_ms=0.01, link_gbps=60.0)


def _npu_cpu() -> SuitePlatform:
    npu = ModelDevice(NPU_155H, Batch1Terms(**TERMS))
    cpu = ModelDevice(CORE_ULTRA_7_155H, Batch1Terms(**{**TERMS, "link_gbps": math.inf, "link_latency_ms": 0.0}))
    return SuitePlatform("npu_cpu_test", "NPU + CPU", (npu, cpu), "f16", kind="hypothetical")


def test_a_device_lacking_ops_is_not_a_feasible_single_device_and_the_split_pays():
    graph = extract_graph(prepare_model(sg.gather_model(seq=128, hidden=256)))
    platform = _npu_cpu()
    singles = single_device_latencies(platform, graph)
    assert singles["NPU"] is None and singles["CPU"] is not None
    row = headroom_row(platform, "attention", graph, finetune_budget=0,
                       methods=("Optimum (MILP)", "HEFT", "HSDAG (pretrained, one pass)"))
    assert row["simulated"] is True and row["best_single_device"] == "CPU"
    assert row["optimum_ms"] <= row["best_single_device_ms"] + 1e-9
    for key in ("heft_ms", "hsdag_ms"):
        assert row[key] is None or row[key] >= row["optimum_ms"] - 1e-9 or row["optimum_exact"] is False
    assert row["split_pays"] == (row["optimum_ms"] <= 0.95 * row["best_single_device_ms"])


def test_split_pays_rule():
    assert split_pays({"optimum_ms": 9.0, "best_single_device_ms": 10.0}) is True
    assert split_pays({"optimum_ms": 9.6, "best_single_device_ms": 10.0}) is False
    assert split_pays({"optimum_ms": 9.6, "best_single_device_ms": None}) is True
    assert split_pays({"optimum_ms": None, "best_single_device_ms": 1.0}) is None


def test_a_warm_started_milp_runs_last_from_the_best_known_and_the_row_says_who_found_it_and_the_gap():
    from ov_autoplace_lab.paper_bench.headroom import best_known_label

    graph = extract_graph(prepare_model(sg.gather_model(seq=128, hidden=256)))
    row = headroom_row(_npu_cpu(), "attention", graph, finetune_budget=0, milp_seconds=30, milp_warm_start=True,
                       methods=("Optimum (MILP)", "HEFT", "HSDAG (pretrained, one pass)"))
    warm = row["milp_warm_start"]
    assert list(row["seconds"])[-1] == "milp_ms"  # the MILP ran after the others
    assert warm["source"] in ("heft_ms", "hsdag_ms", "best single device")
    candidates = [v for v in (row["heft_ms"], row["hsdag_ms"], row["best_single_device_ms"]) if v is not None]
    assert warm["ms"] == min(candidates) and row["milp_ms"] <= warm["ms"] * (1 + 1e-9)  # never worse than its start
    label, gap = best_known_label(row)
    assert row["milp_dual_bound_ms"] is not None and row["milp_dual_bound_ms"] <= row["optimum_ms"] * (1 + 1e-6)
    assert gap is not None and 0.0 <= gap <= 1.0
    tie = row["best_single_device_ms"] <= row["optimum_ms"] * (1 + 1e-9)  # a tie with one device is credited to it
    assert label == ("single device" if tie else "MILP" if warm["improved"] else
                     {"heft_ms": "HEFT", "hsdag_ms": "policy"}[warm["source"]])


def test_a_best_known_without_a_dual_bound_is_unproven_and_a_warm_start_it_did_not_improve_credits_the_start():
    from ov_autoplace_lab.paper_bench.headroom import best_known_label

    row = {"optimum_ms": 10.0, "optimum_source": "hsdag_refined_ms", "milp_dual_bound_ms": None}
    assert best_known_label(row) == ("local search", None)
    row = {"optimum_ms": 10.0, "optimum_source": "milp_ms", "milp_dual_bound_ms": 9.9, "milp_model_agrees": True,
           "milp_warm_start": {"source": "heft_ms", "ms": 10.0, "improved": False}}
    assert best_known_label(row) == ("HEFT", pytest.approx(0.01))
    assert best_known_label({**row, "milp_model_agrees": False})[1] is None  # the bound is not the simulator's
