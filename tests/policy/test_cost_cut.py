"""Cost-cut coarsening (issue 22): chains cut where the cheapest device changes, and the old policies untouched."""

from __future__ import annotations

import json

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from ov_autoplace.graph.arrays import NodeRole
from ov_autoplace.placement.legalizer import constant_subgraph_mask
from ov_autoplace.policy import NumpyHSDAGPolicy, build_policy_arrays
from ov_autoplace.policy.coarsen import chain_coarsen, preferred_device_class
from ov_autoplace.policy.config import HSDAGConfig
from ov_autoplace.policy.features import group_compute_us
from tests import synthetic_graphs
from tests.stand_in_costs import prepared_graph, stand_in_cost_model


def _chain_graph():
    x = ops.parameter([2, 3], np.float32, name="x")
    a = ops.relu(x)
    a.set_friendly_name("a")
    b = ops.sigmoid(a)
    b.set_friendly_name("b")
    c = ops.tanh(b)
    c.set_friendly_name("c")
    return prepared_graph(ov.Model([c], [x], "chain"))[1]


def test_a_chain_is_cut_exactly_where_the_class_changes():
    graph = _chain_graph()
    assert chain_coarsen(graph).num_groups == 1
    idx = {name: graph.names.index(name) for name in "abc"}
    same = np.zeros(graph.num_nodes, np.int64)
    assert np.array_equal(chain_coarsen(graph, same).group_of_node, chain_coarsen(graph).group_of_node)
    cls = same.copy()
    cls[idx["c"]] = 1  # a, b cheapest on device 0, c on device 1
    group = chain_coarsen(graph, cls).group_of_node
    assert group[idx["a"]] == group[idx["b"]] != group[idx["c"]]
    with pytest.raises(ValueError, match="one entry per node"):
        chain_coarsen(graph, cls[:-1])


def test_preferred_device_class_is_the_cheapest_device():
    us = np.array([[3.0, 1.0], [1.0, 3.0], [2.0, 2.0]])
    assert preferred_device_class(us).tolist() == [1, 0, 0]


@pytest.mark.parametrize("build", list(synthetic_graphs.PLACEMENT_GRAPHS.values()), ids=lambda b: b.__name__)
def test_cost_cut_groups_refine_the_chains_and_share_a_cheapest_device(build):
    graph = prepared_graph(build())[1]
    cost = stand_in_cost_model(graph, ("CPU", "CPUF", "NPU"))
    chains = build_policy_arrays(graph, cost)
    cut = build_policy_arrays(graph, cost, coarsening_rule="cost_cut")
    assert cut.num_coarse >= chains.num_coarse
    # a refinement: nodes of one cost-cut group are in one chain
    pairs = set(zip(cut.node_coarse.tolist(), chains.node_coarse.tolist()))
    assert len({g for g, _ in pairs}) == len(pairs)
    # the active nodes of a group share their cheapest device (what the cut is for)
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    cheapest = preferred_device_class(group_compute_us(cost, graph))
    for g in np.unique(cut.node_coarse[active]):
        assert len(set(cheapest[active & (cut.node_coarse == g)].tolist())) == 1
    # and the totals the placer reads are the same graph's
    np.testing.assert_allclose(cut.compute_us.sum(0), chains.compute_us.sum(0), rtol=1e-5)
    with pytest.raises(ValueError, match="coarsening rule"):
        build_policy_arrays(graph, cost, coarsening_rule="chains")


def test_config_keeps_the_default_implicit_and_round_trips_the_cut():
    assert "coarsening" not in HSDAGConfig().to_dict()  # headers and digests of older policies do not move
    assert HSDAGConfig.from_dict(HSDAGConfig().to_dict()).coarsening == "chain"
    for rule in ("cost_cut", "cost_cut_fused"):
        cut = HSDAGConfig(coarsening=rule)
        assert HSDAGConfig.from_dict(json.loads(json.dumps(cut.to_dict()))) == cut
    with pytest.raises(ValueError, match="coarsening must be one of"):
        HSDAGConfig(coarsening="per_node")


def test_the_first_policy_is_a_chain_policy_and_places_as_with_the_paper_chains(synthetic_prepared):
    from ov_autoplace_lab.training import V1_POLICY  # hsdag_v1, shipped until hsdag_v2 (a cost_cut policy)

    policy = NumpyHSDAGPolicy.load(V1_POLICY)
    assert policy.config.coarsening == "chain"
    for _, graph in synthetic_prepared.values():
        cost = stand_in_cost_model(graph, ("CPU", "CPUF", "NPU"))
        explicit = build_policy_arrays(graph, cost, policy.config.feature_config, vocab=policy.config.vocab,
                                       pos_dim=policy.config.pos_dim, coarsening=chain_coarsen(graph))
        assert np.array_equal(policy.place(graph, cost), policy.forward(explicit).node_placement())


def test_a_cost_cut_policy_exports_loads_and_matches_torch(tmp_path, synthetic_prepared):
    torch = pytest.importorskip("torch")
    from ov_autoplace_lab.policy_export import export_policy
    from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy, PolicyInputs

    torch.manual_seed(0)
    policy = HSDAGPolicy(HSDAGConfig(coarsening="cost_cut")).eval()
    twin = NumpyHSDAGPolicy.load(export_policy(policy, tmp_path / "cut.npz"))
    assert twin.config.coarsening == "cost_cut"
    graph = synthetic_prepared[next(iter(synthetic_prepared))][1]
    cost = stand_in_cost_model(graph, ("CPU", "CPUF", "NPU"))
    arrays = twin.inputs(graph, cost)
    assert np.array_equal(arrays.node_coarse, build_policy_arrays(graph, cost, coarsening_rule="cost_cut").node_coarse)
    with torch.no_grad():
        want = policy(PolicyInputs.from_graph(graph, cost, config=policy.config))
    np.testing.assert_allclose(twin.forward(arrays).logits, want.logits.numpy(), rtol=1e-5, atol=1e-5)


def test_a_fused_node_takes_its_fusers_class():
    # nodes 1 and 3 are fused into node 0 and node 2 (zero compute everywhere: the tie alone says device 0)
    us = np.array([[3.0, 1.0], [0.0, 0.0], [1.0, 3.0], [0.0, 0.0], [0.0, 0.0]])
    assert preferred_device_class(us).tolist() == [1, 0, 0, 0, 0]
    assert preferred_device_class(us, np.array([-1, 0, -1, 2, -1])).tolist() == [1, 1, 0, 0, 0]
    assert preferred_device_class(us, np.array([-1, 0, -1, 0, -1])).tolist() == [1, 1, 0, 1, 0]


def _conv_gelu_transpose():
    x = ops.parameter([1, 64, 56, 56], np.float32, name="x")
    w = ops.constant(np.random.default_rng(0).standard_normal((64, 64, 3, 3)).astype(np.float32))
    conv = ops.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1])
    conv.set_friendly_name("conv")
    act = ops.gelu(conv, "erf")
    act.set_friendly_name("gelu")
    t = ops.transpose(act, ops.constant(np.array([0, 2, 3, 1], np.int64)))
    t.set_friendly_name("transpose")
    return prepared_graph(ov.Model([ops.mvn(t, ops.constant(np.array([3], np.int64)), True, 1e-5, "inside_sqrt")],
                                   [x], "conv_gelu"))[1]


def test_cost_cut_fused_keeps_a_fused_kernel_in_one_group():
    """The defect cost_cut_fused fixes, on the paper platform's fitted cost model (simulated): the Gelu fused into
    the Convolution costs 0 on both devices, the tie sent it to device 0 (the CPU) while the Convolution is
    cheapest on the GPU, so cost_cut grouped the Gelu with the CPU ops after it and no group decision could keep
    the fused kernel on one device while cutting after it (paper / wav2vec2's feature extractor)."""
    from ov_autoplace.costmodel.suite import load_suite

    graph = _conv_gelu_transpose()
    cost = load_suite()["paper"].cost_model(graph)
    conv, gelu = graph.names.index("conv"), graph.names.index("gelu")
    assert cost.fused_into[gelu] == conv and cost.devices == ("CPU", "GPU")
    old = build_policy_arrays(graph, cost, coarsening_rule="cost_cut").node_coarse
    new = build_policy_arrays(graph, cost, coarsening_rule="cost_cut_fused").node_coarse
    assert old[gelu] != old[conv]
    assert new[gelu] == new[conv]
    # every fused pair of active nodes that the paper's chains keep together stays together
    chains = chain_coarsen(graph).group_of_node
    for i in np.flatnonzero(np.asarray(cost.fused_into) >= 0):
        j = int(cost.fused_into[i])
        if chains[i] == chains[j]:
            assert new[i] == new[j]
