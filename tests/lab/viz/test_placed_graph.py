"""Submodels in execution order, transfers, and the placement/model mismatch check."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.legalizer import constant_subgraph_mask
from ov_autoplace.placement.submodels import count_islands
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace_lab.viz.placed_graph import analyze, check_placement_matches, group_label, name_scope
from tests import synthetic_graphs as sg


def test_submodels_match_the_legalizer_and_run_in_topological_order(sim_case):
    case = sim_case(sg.residual(blocks=4))
    placement = case.alternating(5)
    placed = analyze(case.graph, placement)
    # residual skips make some same-device islands depend on themselves through the other device:
    # those are split (HETERO has to), so there are at least as many submodels as islands
    assert placed.num_submodels >= count_islands(case.graph, placed.device, placed.active)
    for s, t in zip(case.graph.edge_src.tolist(), case.graph.edge_dst.tolist()):
        a, b = placed.submodel[s], placed.submodel[t]
        if a >= 0 and b >= 0:
            assert a <= b, "a tensor flows from a later submodel to an earlier one"
    assert len(set(placed.submodel_device.tolist())) == 2
    for t in placed.transfers:
        assert t.src_submodel < t.dst_submodel
        assert placed.device[t.producer] != placed.submodel_device[t.dst_submodel] and t.nbytes > 0


def test_without_cycles_the_submodels_are_the_legalizers_islands(sim_case):
    case = sim_case(sg.residual(blocks=4))
    half = case.graph.num_nodes // 2
    placement = case.placement((np.arange(case.graph.num_nodes) >= half).astype(np.int64))
    placed = analyze(case.graph, placement)
    assert placed.num_submodels == placement.num_submodels == 2
    assert [t.src_submodel for t in placed.transfers] == [0] * len(placed.transfers)


def test_one_device_has_one_submodel_and_no_transfers(sim_case):
    case = sim_case(sg.attention_like())
    placed = analyze(case.graph, case.placement(np.zeros(case.graph.num_nodes)))
    assert placed.num_submodels == 1 and placed.transfers == ()


def test_placement_of_another_model_is_refused_naming_the_mismatch(sim_case):
    mine = sim_case(sg.residual(blocks=2))
    other = sim_case(sg.attention_like())
    foreign = other.alternating()
    with pytest.raises(PlacementError, match=r"made for another model: \d+ of the model's \d+ nodes are not in it"):
        analyze(mine.graph, foreign)
    with pytest.raises(PlacementError, match="placement p.json was made for another model"):
        check_placement_matches(foreign, mine.graph, source="placement p.json")


def test_a_placement_naming_an_unlisted_device_is_refused(sim_case):
    case = sim_case(sg.residual(blocks=2))
    placement = case.alternating()
    placement.assignment[case.graph.names[3]] = "NPU"
    with pytest.raises(PlacementError, match=r"assigns nodes to \['NPU'\]"):
        analyze(case.graph, placement)


def test_labels_name_the_heaviest_op_types_and_the_shared_scope():
    graph = extract_graph(prepare_model(sg.sdpa_block()))
    compute = np.flatnonzero(~constant_subgraph_mask(graph) & (graph.role == 0))
    label = group_label(graph, compute)
    assert label.split(",")[0].split(" x")[0] in {"MatMul", "ScaledDotProductAttention"}
    assert name_scope(graph, compute) == ""  # synthetic names carry no module path
