"""CPU calibration against a synthetic measured model (ov_autoplace_lab/calibration/host_cpu.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.platforms import CATEGORIES, PAPER_PLATFORM, SimPlatform, op_category
from ov_autoplace.costmodel.sim_costs import cost_model_for
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace_lab.calibration.host_cpu import LAUNCH_BOUND_SHARE, calibrate
from tests import synthetic_graphs as sg


def _as_measured(cost: CostModel, rng: np.random.Generator, noise: float) -> CostModel:
    """A 'measured' single-CPU model: the simulated costs with multiplicative log-normal noise."""
    cpu = cost.devices.index("CPU")
    noisy = cost.compute_ms[:, [cpu]] * rng.lognormal(0.0, noise, (cost.num_nodes, 1))
    return dataclasses.replace(
        cost, devices=("CPU",), compute_ms=noisy, unfused_ms=noisy, fused_into=np.full(cost.num_nodes, -1),
        link_latency_ms=np.zeros((1, 1)), link_ms_per_byte=np.zeros((1, 1)),
        submodel_overhead_ms=cost.submodel_overhead_ms[[cpu]], device_memory_bytes=cost.device_memory_bytes[[cpu]],
        simulated=False, source="synthetic host")


@pytest.mark.parametrize("builder", [lambda: sg.attention_like(seq=128, hidden=256), lambda: sg.residual(size=64)],
                         ids=["attention_like", "residual"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_calibration_recovers_known_factors(builder, seed):
    graph = extract_graph(prepare_model(builder()))
    host = PAPER_PLATFORM.device("CPU")  # pretend the measurement ran on an i9 with unknown efficiencies
    truth = {c: 0.4 + 0.1 * (k % 5) for k, c in enumerate(CATEGORIES)}  # multipliers of the default factors
    true_host = dataclasses.replace(
        host, compute_efficiency={c: host.compute_efficiency[c] * truth[c] for c in CATEGORIES},
        memory_efficiency={c: host.memory_efficiency[c] * truth[c] for c in CATEGORIES})
    exact = cost_model_for(graph, SimPlatform.from_host_links("truth", (true_host,)), precision="f32", fusion=False)
    measured = _as_measured(exact, np.random.default_rng(seed), noise=0.1)
    calibrated = calibrate(PAPER_PLATFORM, measured, graph, reference=host, reference_precision="f32")
    cpu = calibrated.device("CPU")
    category = np.array([op_category(t) for t in graph.op_types])
    ran = np.isfinite(exact.compute_ms[:, 0]) & (exact.compute_ms[:, 0] > 0)
    identifiable = set()
    for c in set(category[ran]) - {"view"}:
        nodes = ran & (category == c)
        launch_share = nodes.sum() * host.launch_overhead_ms / exact.compute_ms[nodes, 0].sum()
        if launch_share < 0.5 and nodes.sum() >= 5:  # enough signal to average the noise out
            identifiable.add(c)
            assert cpu.compute_efficiency[c] == pytest.approx(true_host.compute_efficiency[c], rel=0.10), c
            assert cpu.memory_efficiency[c] == pytest.approx(true_host.memory_efficiency[c], rel=0.10), c
        elif launch_share > 1 - LAUNCH_BOUND_SHARE:  # launch-bound: kept
            assert cpu.compute_efficiency[c] == host.compute_efficiency[c], c
    assert len(identifiable) >= 2
    for c in set(CATEGORIES) - set(category[ran]):  # nothing measured: unchanged
        assert cpu.compute_efficiency[c] == host.compute_efficiency[c]
    assert calibrated.device("GPU") is PAPER_PLATFORM.device("GPU")
    assert "calibrated" in calibrated.name and "calibrated" not in PAPER_PLATFORM.name
    # the calibrated platform predicts the measured CPU costs better than the uncalibrated one
    before = cost_model_for(graph, PAPER_PLATFORM, precision="f32", fusion=False).compute_ms[:, 0].sum()
    after = cost_model_for(graph, calibrated, precision="f32", fusion=False).compute_ms[:, 0].sum()
    target = measured.compute_ms[:, 0].sum()
    assert abs(after - target) < 0.5 * abs(before - target)
    # calibrated against this host's CPU model (the default reference), the cost model says so
    assert "calibrated" in cost_model_for(graph, calibrate(PAPER_PLATFORM, measured, graph)).source


def test_calibration_rejects_a_foreign_model():
    graph = extract_graph(prepare_model(sg.residual()))
    other = extract_graph(prepare_model(sg.branching()))
    measured = _as_measured(cost_model_for(other, PAPER_PLATFORM), np.random.default_rng(0), 0.0)
    with pytest.raises(ValueError, match="not for this graph"):
        calibrate(PAPER_PLATFORM, measured, graph)
    with pytest.raises(ValueError, match="no device 'GPU'"):
        calibrate(PAPER_PLATFORM, measured, other, measured_device="GPU")
