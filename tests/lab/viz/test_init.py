"""The assembled picture: panels, labels, consistency with the simulator, sizes and the files written."""

from __future__ import annotations

from xml.etree import ElementTree

import numpy as np
import pytest

from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.errors import PlacementError
from ov_autoplace_lab.viz import placement_picture, write_picture
from ov_autoplace_lab.viz.scene import matplotlib_available, to_svg
from tests import synthetic_graphs as sg


def test_picture_shows_summary_timeline_and_graph(sim_case):
    case = sim_case(sg.residual(blocks=4))
    placement = case.placement((np.arange(case.graph.num_nodes) >= case.graph.num_nodes // 2).astype(np.int64))
    picture = placement_picture(case.graph, placement, title="residual", cost=case.cost)
    svg = to_svg(picture.scene)
    ElementTree.fromstring(svg)
    for text in ("Per device", "Timeline of one inference (SIMULATED)", "Graph:", "this placement", " only"):
        assert text in svg
    (timeline,) = picture.timelines
    predicted = Simulator(case.cost, case.graph)(
        np.array([case.devices.index(placement.assignment[n]) for n in case.graph.names]))
    assert picture.summary.placed_ms == pytest.approx(predicted)
    assert f"{100 * timeline.transfer_share:.1f} %" in svg
    assert set(picture.summary.single_ms) == set(case.devices)
    assert sum(r.nodes for r in picture.summary.rows) == len(placement.compute_nodes)


def test_picture_refuses_a_placement_of_another_model(sim_case):
    case = sim_case(sg.residual())
    foreign = sim_case(sg.branching()).alternating()
    with pytest.raises(PlacementError, match="another model"):
        placement_picture(case.graph, foreign, title="x", cost=case.cost)


def test_written_files(sim_case, tmp_path):
    case = sim_case(sg.attention_like())
    picture = placement_picture(case.graph, case.alternating(), title="t", cost=case.cost)
    written, skipped = write_picture(picture, tmp_path / "sub" / "p")
    names = {p.suffix for p in written}
    assert {".svg", ".html"} <= names
    if matplotlib_available():
        assert skipped is None and (tmp_path / "sub" / "p.png").read_bytes()[:4] == b"\x89PNG"
    else:
        assert ".png" not in names and "matplotlib" in skipped
