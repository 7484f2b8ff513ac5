"""bench.truth: placements scored under models other than the one they optimised (seeded draws, leave-platform-out)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ov_autoplace_lab.paper_bench import truth
from ov_autoplace_lab.paper_bench.headroom import headroom_row
from ov_autoplace.costmodel.device_model import Batch1Terms, ModelDevice, SuitePlatform
from ov_autoplace.costmodel.platforms import ARC_IGPU_155H, CATEGORIES, CORE_ULTRA_7_155H
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg

pytest.importorskip("scipy")

TERMS = dict(dispatch_ms=0.005, occupancy_mflop=1.0, compute_scale=1.0, memory_scale=1.0, submodel_ms=0.05,
             link_latency_ms=0.01, link_gbps=60.0)
METHODS = ("Optimum (MILP)", "HEFT", "OpenVINO HETERO auto")


def _cpu_igpu() -> SuitePlatform:
    cpu = ModelDevice(CORE_ULTRA_7_155H, Batch1Terms(**{**TERMS, "link_gbps": math.inf, "link_latency_ms": 0.0}),
                      calibration_key="laptop/CPU")
    gpu = ModelDevice(ARC_IGPU_155H, Batch1Terms(**TERMS), calibration_key="laptop/GPU")
    return SuitePlatform("toy_cpu_igpu", "CPU + iGPU", (cpu, gpu), "f16", kind="derived")


@pytest.fixture(scope="module")
def case():
    graph = extract_graph(prepare_model(sg.residual(blocks=3)))
    platform = _cpu_igpu()
    placements: dict = {}
    row = headroom_row(platform, "residual", graph, finetune_budget=0, milp_seconds=10.0, methods=METHODS,
                       placements_out=placements)
    return platform, graph, row, placements


def test_factors_are_seeded_per_draw_and_device_and_reproducible():
    platform = _cpu_igpu()
    spec = truth.TruthSpec(sigma=0.4, draws=3, seed=7)
    first = truth.category_factors(platform, spec, 0)
    assert first.shape == (2, len(CATEGORIES)) and (first > 0).all()
    np.testing.assert_array_equal(first, truth.category_factors(platform, spec, 0))
    assert not np.allclose(first, truth.category_factors(platform, spec, 1))
    assert not np.allclose(first, truth.category_factors(platform, truth.TruthSpec(0.4, 3, seed=8), 0))
    # the same calibrated device gets the same factors on another platform that reuses it
    alone = SuitePlatform("other", "GPU", (platform.devices[1],), "f16")
    np.testing.assert_array_equal(truth.category_factors(alone, spec, 0)[0], first[1])
    zero = truth.category_factors(platform, truth.TruthSpec(sigma=0.0), 0)
    np.testing.assert_array_equal(zero, np.ones_like(zero))


def test_sigma_is_the_zero_mean_fit_of_the_log_errors():
    assert truth.held_out_sigma(np.array([0.1, -0.1, 0.1, -0.1])) == pytest.approx(0.1)
    assert truth.held_out_sigma(np.array([0.2, 0.2])) == pytest.approx(0.2)  # a bias counts as spread
    with pytest.raises(ValueError, match="held-out"):
        truth.held_out_sigma(np.array([]))


def test_perturbed_cost_scales_each_node_by_its_device_and_category(case):
    platform, graph, _, _ = case
    cost = platform.cost_model(graph)
    factors = np.arange(1, 2 * len(CATEGORIES) + 1, dtype=float).reshape(2, len(CATEGORIES))
    moved = truth.perturbed_cost(cost, graph, factors)
    from ov_autoplace.costmodel.platforms import op_category

    for i, op in enumerate(graph.op_types):
        c = CATEGORIES.index(op_category(op))
        for d in range(2):
            expected = cost.unfused_ms[i, d] * factors[d, c]
            assert moved.unfused_ms[i, d] == pytest.approx(expected) or (math.isinf(expected) and
                                                                         math.isinf(moved.unfused_ms[i, d]))
    np.testing.assert_array_equal(moved.link_latency_ms, cost.link_latency_ms)  # links keep their values


def test_draws_are_reproducible_and_differ_from_the_own_model_score(case):
    platform, graph, row, placements = case
    spec = truth.TruthSpec(sigma=0.46, draws=4, seed=0, milp_seconds=5.0)
    first = truth.score_draws(platform, graph, placements, spec)
    assert first == truth.score_draws(platform, graph, placements, spec)
    # the MILP's placement, priced by the model it optimised, vs the same placement under each draw
    own = row["milp_ms"]
    assert own is not None and len(first["milp_ms"]) == 4
    assert all(v is not None and abs(v / own - 1) > 1e-6 for v in first["milp_ms"])
    # the truth optimum is never slower than any placement scored under the same draw
    for k in range(4):
        known = [first[key][k] for key in ("milp_ms", "heft_ms", "plain_call_ms", "best_single_device_ms")]
        assert first["optimum_ms"][k] <= min(v for v in known if v is not None) * (1 + 1e-9)
    # a draw with sigma 0 is the fitted model itself
    same = truth.score_draws(platform, graph, placements, truth.TruthSpec(0.0, 1, 0, 0.0))
    assert same["milp_ms"][0] == pytest.approx(own)


def test_a_row_truth_entry_has_the_json_schema(case):
    platform, graph, row, placements = case
    spec = truth.TruthSpec(sigma=0.3, draws=3, seed=1, milp_seconds=5.0)
    entry = truth.score_draws(platform, graph, placements, spec)
    assert entry["draws"] == 3
    for key in ("optimum_ms", "optimum_proven", "best_single_device_ms", "plain_call_ms", "milp_ms", "heft_ms",
                "openvino_hetero_auto_ms"):
        assert len(entry[key]) == 3, key
    assert not any(k.startswith(truth.SINGLE_PREFIX) for k in entry)  # reference points, not methods
    # HETERO's own affinity on CPU+iGPU is everything on the CPU (the first device that supports each node)
    assert entry["plain_call_ms"] == entry["openvino_hetero_auto_ms"]
    cpu_alone = np.zeros(graph.num_nodes, np.int64)
    assert float(Simulator(platform.cost_model(graph), graph)(cpu_alone)) == pytest.approx(row["single_device_ms"]["CPU"])
    json.loads(json.dumps({**{k: row[k] for k in ("platform", "model", "optimum_ms", "optimum_exact")},
                           "truth": entry}))


def test_leave_platform_out_models_the_devices_without_their_fits(case):
    platform, graph, _, placements = case
    assert truth.leave_out_platforms(platform) == ("laptop", "toy_cpu_igpu")
    entry = truth.score_leave_platform_out(platform, graph, placements, milp_seconds=5.0)
    assert entry is not None and entry["excluded_fits"] == ["laptop", "toy_cpu_igpu"]
    assert "prior" in entry["model"]
    own = placements["milp_ms"]
    assert entry["milp_ms"] != pytest.approx(float(Simulator(platform.cost_model(graph), graph)(own)))
    assert entry["optimum_ms"] <= min(v for k, v in entry.items() if k.endswith("_ms") and v is not None) + 1e-9


def test_summary_counts_ratios_and_slower_shares():
    rows = [{"hsdag_ms": 0.8, "best_single_device_ms": 1.0,
             "truth": {"optimum_ms": [1.0, 1.0, 2.0, 1.0], "plain_call_ms": [1.5, 1.0, 2.0, 3.0],
                       "best_single_device_ms": [1.2, 1.0, 2.5, 1.1], "hsdag_ms": [1.0, 1.1, 2.2, None]}}]
    s = truth.summarize(rows, ["hsdag_ms", "heft_ms"])["hsdag_ms"]
    assert s["pairs"] == 3 and s["median_ratio_to_optimum"] == pytest.approx(1.1)
    assert s["slower_than_plain_call"] == pytest.approx(2 / 3)  # 1.1 > 1.0 and 2.2 > 2.0
    assert s["slower_than_best_single_device"] == pytest.approx(1 / 3)  # 1.1 > 1.0
    # predicted 20 % over the best single device; kept: 1 - 1/1.2, 1 - 1.1/1.0, 1 - 2.2/2.5, each / 0.2
    assert s["median_gain_kept"] == pytest.approx((1 - 2.2 / 2.5) / 0.2)
    assert "heft_ms" not in truth.summarize(rows, ["hsdag_ms", "heft_ms"])
    loo = truth.summarize([{"hsdag_ms": 1.0, "best_single_device_ms": 1.0,
                            "truth_leave_platform_out": {"optimum_ms": 1.0, "plain_call_ms": 0.9,
                                                         "best_single_device_ms": 1.0, "hsdag_ms": 1.0}}],
                          ["hsdag_ms"], "truth_leave_platform_out")["hsdag_ms"]
    assert loo["pairs"] == 1 and loo["slower_than_plain_call"] == 1.0 and loo["slower_than_best_single_device"] == 0
