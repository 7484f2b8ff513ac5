"""The least-squares fit recovers the latencies it is fitted to, and keeps held-out rows out of the fit."""

from __future__ import annotations

import dataclasses

import pytest

from ov_autoplace_lab.calibration.calibration_data import CalibrationPoint
from ov_autoplace.costmodel.device_model import Batch1Terms, ModelDevice, SuitePlatform
from ov_autoplace_lab.calibration.fit_terms import fit_suite, prepare_load, single_device_ms
from ov_autoplace.costmodel.platforms import FLEX_170
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg

pytest.importorskip("scipy")

TRUE = Batch1Terms(dispatch_ms=0.02, occupancy_mflop=30.0, compute_scale=0.3, memory_scale=0.8, submodel_ms=0.05,
                   link_latency_ms=0.01, link_gbps=25.0)
PRIOR = dataclasses.replace(TRUE, dispatch_ms=0.005, occupancy_mflop=5.0, compute_scale=1.0, memory_scale=1.0)

GRAPHS = {
    "res_small": lambda: sg.residual(blocks=2, channels=8, size=16),
    "res_big": lambda: sg.residual(blocks=4, channels=32, size=32),
    "attention": lambda: sg.attention_like(seq=32, hidden=64, heads=4, layers=2),
    "branching": lambda: sg.branching(channels=16, size=32),
    "chain": lambda: sg.long_chain(12, width=32),
}


def _point(model: str, ms: float, held_out: bool) -> CalibrationPoint:
    return CalibrationPoint("toy", "GPU", "Flex", model, "f16", 1, ms, "synthetic", "https://example.org", "2026-11",
                            "2026.4", held_out)


def test_the_fit_recovers_latencies_generated_by_known_terms():
    graphs = {name: extract_graph(prepare_model(build())) for name, build in GRAPHS.items()}
    truth = ModelDevice(FLEX_170, TRUE, "toy/GPU")
    published = {m: single_device_ms(truth, prepare_load(g), "f16") for m, g in graphs.items()}
    held = "branching"
    points = [_point(m, ms, m == held) for m, ms in published.items()]
    suite = {"toy": SuitePlatform("toy", "toy", (ModelDevice(FLEX_170, PRIOR, "toy/GPU"),), "f16")}
    report = fit_suite(suite, points, graphs.__getitem__)
    fitted = [r for r in report.results if not r.point.held_out]
    assert max(abs(r.rel_error) for r in fitted) < 0.05
    (held_result,) = [r for r in report.results if r.point.held_out]
    assert abs(held_result.rel_error) < 0.25  # predicted, not fitted
    assert report.errors(held_out=False).size == 4 and report.errors(held_out=True).size == 1
    # a prior that is wrong by 4-6x in three terms is moved toward the truth
    assert report.terms["toy/GPU"].compute_scale < 0.6


def test_a_device_without_published_points_keeps_its_prior():
    graphs = {"chain": extract_graph(prepare_model(sg.long_chain(4)))}
    suite = {"toy": SuitePlatform("toy", "toy", (ModelDevice(FLEX_170, PRIOR, "toy/GPU"),), "f16")}
    report = fit_suite(suite, [_point("chain", 1.0, True)], graphs.__getitem__)
    assert report.terms == {} and report.results == []
