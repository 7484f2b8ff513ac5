"""The per-device summary: rows add up, single-device latencies agree with the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace_lab.viz.placed_graph import analyze
from ov_autoplace_lab.viz.scene import to_svg
from ov_autoplace_lab.viz.summary import device_summary, draw_summary, single_device_ms
from ov_autoplace_lab.viz.timeline import simulated_timeline
from tests import synthetic_graphs as sg


def test_single_device_latency_without_scipy_matches_the_simulator(sim_case):
    case = sim_case(sg.attention_like())
    sim = Simulator(case.cost, case.graph)
    for k in range(len(case.devices)):
        assert single_device_ms(sim, k) == pytest.approx(sim(np.full(case.graph.num_nodes, k, dtype=np.int64)))


def test_rows_add_up_and_the_drawing_labels_its_sources(sim_case):
    case = sim_case(sg.residual(blocks=3))
    placement = case.alternating(6)
    placed = analyze(case.graph, placement)
    timeline = simulated_timeline(placed, case.cost)
    summary = device_summary(placed, timeline, placement, case.cost)
    assert sum(r.nodes for r in summary.rows) == len(placement.compute_nodes)
    assert sum(r.flops for r in summary.rows) == pytest.approx(float(np.maximum(
        case.graph.flops[case.graph.role == 0], 0).sum()))
    assert sum(r.time_ms for r in summary.rows) == pytest.approx(sum(b.ms for b in timeline.bars))
    assert summary.placed_source == "simulated" and summary.single_source.startswith("simulated")
    svg = to_svg(draw_summary(summary))
    assert "this placement" in svg and all(f"{d} only" in svg for d in case.devices)
    placement.reference_latency_ms = {d: 1.0 + k for k, d in enumerate(case.devices)}
    measured = device_summary(placed, timeline, placement, case.cost)
    assert measured.single_source == "measured" and measured.single_ms == placement.reference_latency_ms
