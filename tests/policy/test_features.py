"""Node, device and node-device features: widths, ablations, values on hand-built graphs."""

from __future__ import annotations

import dataclasses

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.policy.features import (
    DEVICE_FEATURE_NAMES,
    NODE_DEVICE_FEATURE_NAMES,
    OP_VOCAB,
    UNSUPPORTED_LOG_COST,
    NodeFeatureConfig,
    device_features,
    node_device_features,
    node_feature_names,
    node_features,
    positional_encoding,
)
from tests.stand_in_costs import stand_in_cost_model

ABLATIONS = [NodeFeatureConfig(**{f.name: False}) for f in dataclasses.fields(NodeFeatureConfig)]


def _columns(prefix: str, names: list[str]) -> np.ndarray:
    return np.array([n.startswith(prefix) for n in names])


def test_vocabulary_has_the_ops_that_matter_and_no_duplicates():
    for op in ("Convolution", "GroupConvolution", "MatMul", "ScaledDotProductAttention", "Add", "Multiply", "Relu",
               "Gelu", "MVN", "Softmax", "Reshape", "Transpose", "Concat", "Gather", "MaxPool", "AvgPool",
               "ReduceMean", "Parameter", "Constant", "Result"):
        assert op in OP_VOCAB
    assert len(set(OP_VOCAB)) == len(OP_VOCAB)
    assert 50 <= len(OP_VOCAB) <= 80


def test_width_is_independent_of_the_ablation_switches(synthetic_prepared):
    _, graph = synthetic_prepared["attention_like"]
    names = node_feature_names()
    full = node_features(graph)
    assert full.shape == (graph.num_nodes, len(names)) and full.dtype == np.float32
    assert np.isfinite(full).all()
    blocks = {"use_output_shape": "shape_", "use_op_cost": "log_", "use_node_id": ("pos_enc", "rel_position"),
              "use_structural": ("log_in_degree", "log_out_degree", "rel_depth", "fractal_dim")}
    for config in ABLATIONS:
        off = next(f.name for f in dataclasses.fields(config) if not getattr(config, f.name))
        ablated = node_features(graph, config)
        assert ablated.shape == full.shape
        prefixes = blocks[off] if isinstance(blocks[off], tuple) else (blocks[off],)
        cols = np.array([any(n.startswith(p) for p in prefixes) for n in names])
        if off == "use_op_cost":
            cols = np.isin(names, ["log_bytes", "log_flops"])
        assert cols.any()
        assert (ablated[:, cols] == 0).all()
        assert np.array_equal(ablated[:, ~cols], full[:, ~cols])  # nothing else changes
        assert (full[:, cols] != 0).any()  # and the block carried something


def test_values_on_a_small_graph():
    x = ops.parameter([1, 3, 16, 16], np.float32, name="x")
    conv = ops.convolution(x, ops.constant(np.ones((8, 3, 3, 3), np.float32)), [1, 1], [1, 1], [1, 1], [1, 1])
    conv.set_friendly_name("conv")
    odd = ops.ceiling(conv)  # not in the vocabulary
    odd.set_friendly_name("odd")
    model = ov.Model([odd], [x], "small")
    graph = extract_graph(model)
    names = node_feature_names()
    feats = node_features(graph)
    col = {n: k for k, n in enumerate(names)}
    onehot = feats[:, _columns("op=", names)]
    assert (onehot.sum(axis=1) == 1).all()
    c, o = graph.names.index("conv"), graph.names.index("odd")
    assert feats[c, col["op=Convolution"]] == 1 and feats[o, col["op=other"]] == 1
    assert feats[c, col["role=compute"]] == 1
    # output [1, 8, 16, 16]: trailing dims right-aligned, rank / 8
    assert np.allclose(feats[c, [col[f"shape_dim[{k}]"] for k in range(-4, 0)]], np.log1p([1, 8, 16, 16]))
    assert feats[c, col["shape_rank"]] == pytest.approx(4 / 8) and feats[c, col["shape_dynamic"]] == 0
    assert feats[c, col["log_flops"]] == pytest.approx(np.log1p(2 * 8 * 16 * 16 * 3 * 9) / 10, rel=1e-6)
    assert feats[c, col["log_bytes"]] == pytest.approx(np.log1p(8 * 16 * 16 * 4) / 10, rel=1e-6)
    assert feats[c, col["log_in_degree"]] == pytest.approx(np.log1p(2))
    assert np.allclose(feats[:, col["pos_enc[0]"]:col["pos_enc[0]"] + graph.pos_dim], graph.pos_enc)


def test_dynamic_shapes_are_flagged_not_nan():
    from tests.synthetic_graphs import dynamic_shapes

    graph = extract_graph(dynamic_shapes())
    names = node_feature_names()
    feats = node_features(graph)
    assert np.isfinite(feats).all()
    dyn = feats[:, names.index("shape_dynamic")]
    matmul = graph.op_types.index("MatMul")
    assert dyn[matmul] == 1


def test_positional_encoding_matches_the_graph_and_is_recomputed_for_another_width(synthetic_prepared):
    _, graph = synthetic_prepared["branching"]
    assert np.allclose(positional_encoding(graph.topo_index, graph.pos_dim), graph.pos_enc, atol=1e-6)
    wide = node_features(graph, pos_dim=32)
    assert wide.shape[1] == len(node_feature_names(pos_dim=32))


def test_device_and_node_device_features(synthetic_prepared):
    _, graph = synthetic_prepared["attention_like"]
    cost = stand_in_cost_model(graph, ("CPU", "CPUF", "NPU"))
    dev = device_features(cost, graph)
    assert dev.shape == (3, len(DEVICE_FEATURE_NAMES)) and np.isfinite(dev).all()
    total = dev[:, DEVICE_FEATURE_NAMES.index("log_total_vs_fastest")]
    assert total.min() == 0 and (total >= 0).all()
    # the stand-in CPU does heavy ops 4x faster than CPUF
    heavy = dev[:, DEVICE_FEATURE_NAMES.index("log_heavy_us_per_mflop")]
    assert heavy[0] < heavy[1]
    assert dev[2, DEVICE_FEATURE_NAMES.index("unsupported_fraction")] > 0 == dev[0, 4]

    nd = node_device_features(cost, graph)
    assert nd.shape == (graph.num_nodes, 3, len(NODE_DEVICE_FEATURE_NAMES)) and np.isfinite(nd).all()
    softmax = graph.op_types.index("Softmax")
    unsupported = NODE_DEVICE_FEATURE_NAMES.index("unsupported")
    assert nd[softmax, :, unsupported].tolist() == [0.0, 0.0, 1.0]  # the stand-in NPU cannot run Softmax
    assert nd[softmax, 2, 0] == UNSUPPORTED_LOG_COST
    assert (nd[:, :, 1] >= 0).all() and (nd[:, :, 1].min(axis=1) == 0).all()  # relative to the best device
    boundary = graph.role != NodeRole.COMPUTE
    assert (nd[boundary] == 0).all()


def test_cost_model_of_another_graph_is_rejected(synthetic_prepared):
    _, small = synthetic_prepared["branching"]
    _, other = synthetic_prepared["residual"]
    with pytest.raises(ValueError, match="nodes"):
        device_features(stand_in_cost_model(other), small)
