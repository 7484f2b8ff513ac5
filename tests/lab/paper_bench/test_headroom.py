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
