"""The simulated timeline adds up to the simulator's prediction; the drawing shows every bar and transfer."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace_lab.viz.placed_graph import analyze
from ov_autoplace_lab.viz.scene import to_svg
from ov_autoplace_lab.viz.timeline import draw_timeline, simulated_timeline
from tests import synthetic_graphs as sg


@pytest.mark.parametrize("model", [sg.residual(blocks=4), sg.attention_like(), sg.branching()])
def test_simulated_timeline_sums_to_the_simulator(sim_case, model):
    case = sim_case(model)
    placement = case.alternating(4)
    placed = analyze(case.graph, placement)
    timeline = simulated_timeline(placed, case.cost)
    sim = Simulator(case.cost, case.graph)
    breakdown = sim.breakdown(placed.device)
    # the simulator counts same-device islands; the timeline draws HETERO's submodels (submodels.py), each
    # paying its submodel overhead: that is the only difference
    split_overhead = float(np.asarray(case.cost.submodel_overhead_ms)[placed.submodel_device].sum()) \
        - breakdown.overhead_ms
    assert timeline.total_ms == pytest.approx(sim(placed.device) + split_overhead, rel=1e-9)
    assert timeline.transfer_ms == pytest.approx(breakdown.transfer_ms, rel=1e-9)
    assert timeline.transfer_bytes == breakdown.transfer_bytes
    assert len(timeline.bars) == placed.num_submodels and breakdown.num_submodels == placed.islands
    assert (split_overhead != 0) == (placed.num_submodels != placed.islands)
    assert ("submodels HETERO compiles" in timeline.source) == (placed.num_submodels != placed.islands)
    assert not timeline.measured and timeline.source.startswith("simulated")
    ends = [b.start_ms + b.ms for b in timeline.bars]
    assert all(later.start_ms >= end - 1e-12 for later, end in zip(timeline.bars[1:], ends))


def test_single_device_timeline_is_the_single_device_prediction(sim_case):
    case = sim_case(sg.residual())
    placed = analyze(case.graph, case.placement(np.ones(case.graph.num_nodes)))
    timeline = simulated_timeline(placed, case.cost)
    assert timeline.transfers == () and len(timeline.bars) == 1
    assert timeline.total_ms == pytest.approx(Simulator(case.cost, case.graph)(placed.device))


def test_timeline_drawing_labels_source_bars_and_transfers(sim_case):
    case = sim_case(sg.residual(blocks=4))
    timeline = simulated_timeline(analyze(case.graph, case.alternating(4)), case.cost)
    svg = to_svg(draw_timeline(timeline))
    assert "SIMULATED" in svg and "source: simulated" in svg
    assert svg.count('data-key="sub') == len(timeline.bars)
    assert svg.count('data-key="tr') == len(timeline.transfers) > 0
    assert 'marker-end="url(#arrow)"' in svg and "kB" in svg or "MB" in svg
    for device in case.devices:
        assert f">{device}</text>" in svg
