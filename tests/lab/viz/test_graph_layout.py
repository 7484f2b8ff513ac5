"""Collapsing and layout: one device per box, bounded box count at 3,000 nodes, legend above every box."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ov_autoplace_lab.viz.graph_layout import MAX_BOXES, box_details, collapse, draw_graph
from ov_autoplace_lab.viz.placed_graph import analyze
from ov_autoplace_lab.viz.scene import Rect, Text
from tests import synthetic_graphs as sg


def _check_boxes(placed, boxes):
    drawn = np.flatnonzero(boxes.box_of_node >= 0)
    assert np.array_equal(drawn, np.flatnonzero(placed.active)), "every active node is in exactly one box"
    for b in range(boxes.num_boxes):
        members = np.flatnonzero(boxes.box_of_node == b)
        assert len(set(placed.device[members].tolist())) == 1, "a box mixes devices"
        assert len(set(placed.submodel[members].tolist())) == 1, "a box mixes submodels"


def test_small_graph_keeps_chain_groups(sim_case):
    case = sim_case(sg.residual(blocks=3))
    placed = analyze(case.graph, case.alternating(6))
    boxes = collapse(placed)
    _check_boxes(placed, boxes)
    assert boxes.band == 1 and boxes.num_boxes < placed.active.sum()


@pytest.mark.slow
def test_three_thousand_nodes_collapse_to_a_readable_count(sim_case):
    case = sim_case(sg.long_chain(375))  # 3,002 nodes
    assert case.graph.num_nodes >= 3000
    placed = analyze(case.graph, case.alternating(97))
    boxes = collapse(placed)
    _check_boxes(placed, boxes)
    assert boxes.num_boxes <= MAX_BOXES and boxes.band > 1
    cut_pairs = {(int(placed.device[s]), int(placed.device[t])) for s, t in
                 zip(case.graph.edge_src.tolist(), case.graph.edge_dst.tolist())
                 if placed.active[s] and placed.active[t] and placed.device[s] != placed.device[t]}
    box_cuts = sum(1 for a, b, _ in boxes.edges if boxes.device[a] != boxes.device[b])
    assert cut_pairs and box_cuts >= 1, "device changes survive collapsing"


def test_legend_is_above_every_box_and_boxes_do_not_overlap(sim_case):
    case = sim_case(sg.attention_like(layers=3))
    placed = analyze(case.graph, case.alternating(5))
    boxes = collapse(placed)
    scene = draw_graph(placed, boxes, box_details(placed, boxes, None))
    box_rects = [s for s in scene.shapes if isinstance(s, Rect) and s.key.startswith("box")]
    legend = [s for s in scene.shapes if isinstance(s, (Rect, Text)) and s.y < 40]
    assert len(box_rects) == boxes.num_boxes and legend
    assert min(r.y for r in box_rects) > max(s.y for s in legend) + 5
    for i, a in enumerate(box_rects):
        for b in box_rects[i + 1:]:
            assert a.x + a.w <= b.x or b.x + b.w <= a.x or a.y + a.h <= b.y or b.y + b.h <= a.y, "boxes overlap"


def test_box_details_carry_ops_device_and_time(sim_case):
    case = sim_case(sg.residual(blocks=2))
    placed = analyze(case.graph, case.alternating(6))
    boxes = collapse(placed)
    node_ms = np.arange(case.graph.num_nodes, dtype=float)
    details = box_details(placed, boxes, node_ms)
    assert sum(d["nodes"] for d in details) == int(placed.active.sum())
    for d in details:
        members = np.flatnonzero(boxes.box_of_node == d["box"])
        assert d["ms"] == pytest.approx(node_ms[members].sum()) and d["device"] in case.devices
        assert all(re.match(r".+ \(\w+\)$", op) for op in d["ops"])
