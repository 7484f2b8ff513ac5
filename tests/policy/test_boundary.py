"""The boundary features: what moving a group off the graph's best device trades its compute gain against."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.policy import build_policy_arrays
from ov_autoplace.policy.boundary import BOUNDARY_FEATURE_NAMES, BoundaryInputs, GroupBoundary
from ov_autoplace.policy.config import HSDAGConfig
from ov_autoplace.policy.policy_file import expected_feature_names
from tests.stand_in_costs import stand_in_cost_model

LATENCY = np.array([[0.0, 10.0], [20.0, 0.0]])  # us; r -> d = 10, d -> r = 20
PER_BYTE = np.array([[0.0, 0.001], [0.002, 0.0]])  # us per byte
OVERHEAD = np.array([5.0, 7.0])


def _inputs(src, dst, tensor, nbytes) -> BoundaryInputs:
    return BoundaryInputs(src=np.array(src), dst=np.array(dst), tensor=np.array(tensor),
                          nbytes=np.array(nbytes, dtype=np.float64), latency_us=LATENCY, us_per_byte=PER_BYTE,
                          overhead_us=OVERHEAD)


def _column(features: np.ndarray, name: str) -> np.ndarray:
    return features[..., BOUNDARY_FEATURE_NAMES.index(name)]


def test_a_chain_by_hand():
    """0 -> 1 -> 2, each coarse node its own group; device 0 is the cheaper one over the graph (the reference)."""
    inputs = _inputs(src=[0, 1], dst=[1, 2], tensor=[0, 1], nbytes=[1000, 2000])
    us = np.array([[100.0, 300.0], [500.0, 100.0], [100.0, 300.0]])
    f = GroupBoundary(inputs, np.arange(3), 3, us).features()
    assert f.shape == (3, 2, len(BOUNDARY_FEATURE_NAMES)) and f.dtype == np.float32
    # the middle group on device 1: one tensor in over 0 -> 1, one out over 1 -> 0, one submodel on 1
    transfer = 10.0 + 1000 * 0.001 + 20.0 + 2000 * 0.002 + 7.0
    np.testing.assert_allclose(_column(f, "log_boundary_transfer_us")[1], [0.0, np.log1p(transfer) / 10], rtol=1e-6)
    net = 500.0 - 100.0 - transfer
    np.testing.assert_allclose(_column(f, "log_net_saving_us")[1, 1], np.log1p(net) / 10, rtol=1e-6)
    np.testing.assert_allclose(_column(f, "net_saving_share")[1, 1], min(10 * net / 700.0, 1.0), rtol=1e-6)
    # the first group gains nothing on 1 and pays its output: a negative saving, signed
    first = 100.0 - 300.0 - (20.0 + 1000 * 0.002 + 7.0)
    np.testing.assert_allclose(_column(f, "log_net_saving_us")[0, 1], -np.log1p(-first) / 10, rtol=1e-6)
    # the whole graph could gain the middle group's saving on device 1; on the reference device nothing
    np.testing.assert_allclose(_column(f, "graph_saving_share")[:, 1], net / 700.0, rtol=1e-6)
    assert not f[:, 0].any()


def test_groups_see_only_their_own_boundary_and_a_tensor_once_per_receiving_group():
    """Node 0's one output feeds coarse nodes 1 and 2; grouped together they receive it once."""
    inputs = _inputs(src=[0, 0, 1], dst=[1, 2, 2], tensor=[0, 0, 1], nbytes=[4000, 4000, 10])
    us = np.array([[10.0, 500.0], [100.0, 10.0], [100.0, 10.0]])  # device 0 is the reference
    together = GroupBoundary(inputs, np.array([0, 1, 1]), 2, us).features()
    apart = GroupBoundary(inputs, np.arange(3), 3, us).features()
    once = 10.0 + 4000 * 0.001 + 7.0  # no output leaves group 1
    np.testing.assert_allclose(_column(together, "log_boundary_transfer_us")[1, 1], np.log1p(once) / 10, rtol=1e-6)
    # apart, coarse node 1 also sends its 10 bytes to node 2
    alone = 10.0 + 4000 * 0.001 + 20.0 + 10 * 0.002 + 7.0
    np.testing.assert_allclose(_column(apart, "log_boundary_transfer_us")[1, 1], np.log1p(alone) / 10, rtol=1e-6)


def test_the_reference_is_the_cheaper_device_over_the_whole_graph():
    inputs = _inputs(src=[0], dst=[1], tensor=[0], nbytes=[100])
    us = np.array([[100.0, 10.0], [100.0, 10.0]])  # device 1 is the graph's best
    f = GroupBoundary(inputs, np.arange(2), 2, us).features()
    assert not _column(f, "log_boundary_transfer_us")[:, 1].any() and _column(f, "net_saving_share")[:, 0].max() < 0


def test_policy_arrays_carry_the_edges_between_coarse_nodes(synthetic_prepared):
    _, graph = synthetic_prepared["attention_like"]
    cost = stand_in_cost_model(graph, ("CPU", "CPUF", "NPU"))
    arrays = build_policy_arrays(graph, cost, coarsening_rule="cost_cut")
    b = arrays.boundary
    assert (b.src != b.dst).all() and b.src.max() < arrays.num_coarse and (b.nbytes >= 0).all()
    inside = arrays.node_coarse[graph.edge_src] == arrays.node_coarse[graph.edge_dst]
    assert b.src.shape[0] == int((~inside).sum())
    f = GroupBoundary(b, np.arange(arrays.num_coarse), arrays.num_coarse, arrays.compute_us).features()
    assert f.shape == (arrays.num_coarse, 3, 4) and np.isfinite(f).all()


def test_the_config_names_its_placer_inputs_and_old_headers_stay_as_they_were():
    plain, wide = HSDAGConfig(), HSDAGConfig(placer_inputs="boundary")
    assert "placer_inputs" not in plain.to_dict() and HSDAGConfig.from_dict(wide.to_dict()) == wide
    assert expected_feature_names(wide)["pair"][-4:] == list(BOUNDARY_FEATURE_NAMES)
    assert wide.pair_features == plain.pair_features + 4 and (plain.graph_features, wide.graph_features) == (0, 128)
    with pytest.raises(ValueError, match="placer_inputs must be one of"):
        HSDAGConfig(placer_inputs="edges")
    passes = HSDAGConfig(placer_inputs="boundary", placer_passes=4)
    assert passes.to_dict()["placer_passes"] == 4 and "placer_passes" not in wide.to_dict()
    with pytest.raises(ValueError, match="1 unless placer_inputs is 'boundary'"):
        HSDAGConfig(placer_passes=2)
    lean = HSDAGConfig(placer_inputs="boundary", placer_passes=4, graph_summary=False)
    assert lean.graph_features == 0 and lean.pair_features == wide.pair_features
    assert lean.to_dict()["graph_summary"] is False and "graph_summary" not in passes.to_dict()
    assert HSDAGConfig.from_dict(lean.to_dict()) == lean
    with pytest.raises(ValueError, match="graph_summary=False only applies to placer_inputs='boundary'"):
        HSDAGConfig(graph_summary=False)


def test_a_later_pass_prices_the_moves_with_the_neighbours_where_the_previous_pass_put_them():
    """The chain again, with the first two groups already on device 1 and the last on device 0."""
    inputs = _inputs(src=[0, 1], dst=[1, 2], tensor=[0, 1], nbytes=[1000, 2000])
    us = np.array([[100.0, 300.0], [500.0, 100.0], [100.0, 300.0]])
    f = GroupBoundary(inputs, np.arange(3), 3, us).features(np.array([1, 1, 0]))
    # the middle group stays on 1: its input is there already, its output goes 1 -> 0; no new submodel
    stay = 2000 * 0.002 + 20.0
    np.testing.assert_allclose(_column(f, "log_boundary_transfer_us")[1, 1], np.log1p(stay) / 10, rtol=1e-6)
    # moving it to 0 reads its input over 1 -> 0 and joins the last group's submodel
    back = 20.0 + 1000 * 0.002
    saving = (100.0 + stay) - (500.0 + back)
    np.testing.assert_allclose(_column(f, "log_net_saving_us")[1, 0], -np.log1p(-saving) / 10, rtol=1e-6)
    assert _column(f, "net_saving_share")[1, 1] == 0.0  # staying saves nothing
    # all on the reference device reads as no placement at all
    np.testing.assert_array_equal(GroupBoundary(inputs, np.arange(3), 3, us).features(np.zeros(3, int)),
                                  GroupBoundary(inputs, np.arange(3), 3, us).features())
