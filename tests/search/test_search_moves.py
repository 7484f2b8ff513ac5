"""The local search's class moves: repeated-layer classes from op names (equal up to their digits)."""

from __future__ import annotations

import numpy as np
import openvino as ov
from openvino import opset13 as ops

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.search.local_search import LocalSearchRefiner
from ov_autoplace.search.search_moves import repeated_layer_classes
from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.placement.legalizer import constant_subgraph_mask
from ov_autoplace.model.prepare import prepare_model


def _named(node, name: str):
    node.set_friendly_name(name)
    return node


def _layered(layers: int = 3) -> ov.Model:
    """``layers`` repeated blocks named like a PyTorch frontend names them: a projection in a submodule, then
    the block's own Transpose / Relu ops, plus an unrepeated head."""
    rng = np.random.default_rng(0)
    x = ops.parameter([1, 4, 8], np.float32, name="x")
    h = x
    for k in range(layers):
        w = ops.constant(rng.standard_normal((8, 8)).astype(np.float32))
        proj = _named(ops.matmul(h, w, False, False), f"__module.enc.layer.{k}.attn.query/aten::linear/MatMul")
        perm = ops.constant(np.array([0, 2, 1], np.int64))
        t1 = _named(ops.transpose(proj, perm), f"__module.enc.layer.{k}.attn/aten::transpose/Transpose")
        act = _named(ops.relu(t1), f"__module.enc.layer.{k}.attn/aten::relu/Relu")
        t2 = _named(ops.transpose(act, perm), f"__module.enc.layer.{k}.attn/aten::transpose/Transpose_1")
        h = _named(ops.add(t2, h), f"__module.enc.layer.{k}/aten::add/Add")
    out = _named(ops.sigmoid(h), "head/aten::sigmoid/Sigmoid")
    return ov.Model([out], [x], "layered")


def _graph_and_active(layers: int = 3):
    graph = extract_graph(prepare_model(_layered(layers)))
    active = np.flatnonzero((np.asarray(graph.role) == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph))
    return graph, active


def _names(graph, active, members) -> set[str]:
    return {graph.names[active[p]] for p in members}


def test_repeated_layer_classes_group_one_role_or_module_of_every_layer():
    graph, active = _graph_and_active(3)
    classes = [_names(graph, active, m) for m in repeated_layer_classes(graph, active)]
    layer = "__module.enc.layer.{}"

    def every(fmt: str) -> set[str]:
        return {fmt.format(k) for k in range(3)}

    relu = every(layer + ".attn/aten::relu/Relu")
    transposes = every(layer + ".attn/aten::transpose/Transpose") | every(layer + ".attn/aten::transpose/Transpose_1")
    projections = every(layer + ".attn.query/aten::linear/MatMul")
    adds = every(layer + "/aten::add/Add")
    assert relu in classes and projections in classes and adds in classes  # one role of every layer
    assert transposes in classes  # same name up to digits: both transposes of every layer
    assert relu | transposes in classes  # the attn module's own ops (scope), without the projection submodule
    assert relu | transposes | projections in classes  # the attn module with its submodules (prefix)
    assert relu | transposes | projections | adds in classes  # every layer whole
    assert all(len(c) >= 2 for c in classes) and len(set(map(frozenset, classes))) == len(classes)
    assert not any("head/aten::sigmoid/Sigmoid" in c for c in classes)  # a name without digits repeats nothing


def test_one_layer_makes_no_class_of_its_own():
    graph, active = _graph_and_active(1)
    # digits in a single layer's names: the per-role classes have one member each and are dropped; what is left
    # holds several roles of the one layer (its scope / prefix), never a lone node
    for members in repeated_layer_classes(graph, active):
        assert len(members) >= 2
        assert all("layer.0" in graph.names[active[p]] for p in members)


def test_the_search_offers_the_repeated_layer_move():
    graph, active = _graph_and_active(3)
    n = graph.num_nodes
    ms = np.ones((n, 2))
    cost = CostModel(devices=("D0", "D1"), node_names=tuple(graph.names), compute_ms=ms, unfused_ms=ms.copy(),
                     fused_into=np.full(n, -1, np.int64), link_latency_ms=np.array([[0.0, 0.1], [0.1, 0.0]]),
                     link_ms_per_byte=np.zeros((2, 2)), submodel_overhead_ms=np.array([0.1, 0.1]),
                     node_memory_bytes=np.zeros(n, np.int64), device_memory_bytes=np.full(2, np.inf),
                     simulated=True, source="test")
    refiner = LocalSearchRefiner(cost, graph)
    relu = np.array([p for p, i in enumerate(refiner.active) if graph.op_types[i] == "Relu"])
    transposes = [p for p, i in enumerate(refiner.active) if "/aten::transpose/" in graph.names[i]]
    attn_core = np.array(sorted(set(relu.tolist()) | set(transposes)))
    moves = {(t, tuple(nodes.tolist())) for t, nodes in refiner._candidates(np.zeros(refiner.active.size, np.int64))}
    assert (1, tuple(attn_core.tolist())) in moves  # all layers' attention core (no projections) at once
