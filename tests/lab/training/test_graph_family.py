"""The seeded random DAG family: deterministic, varied, compilable, held-out split disjoint."""

from __future__ import annotations

import openvino as ov
import pytest

from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace_lab.training import graph_family as gf
from ov_autoplace.model.prepare import prepare_model


def test_same_seed_same_graph_other_seed_other_graph():
    a, b, c = (extract_graph(prepare_model(gf.build(s))) for s in (3, 3, 6))
    assert a.op_types == b.op_types  # auto-generated friendly names differ between builds; structure does not
    assert (a.out_shape == b.out_shape).all() and (a.flops == b.flops).all() and (a.edge_src == b.edge_src).all()
    assert a.op_types != c.op_types


@pytest.mark.parametrize("kind", gf.KINDS)
def test_every_kind_builds_realistic_ops(kind):
    graph = extract_graph(prepare_model(gf.build(4, kind)))
    ops = set(graph.op_types)
    expected = {"conv": {"Convolution", "Add", "Softmax"}, "transformer": {"MatMul", "Softmax", "MVN"},
                "mlp": {"MatMul", "Add"}}[kind]
    assert expected <= ops and graph.num_nodes >= 10 and (graph.flops > 0).any()


def test_splits_are_disjoint_and_named():
    train, held = gf.family("train"), gf.family("held_out")
    assert not {n for n, _ in train} & {n for n, _ in held}
    assert len(gf.family("train", 5)) == 5
    with pytest.raises(ValueError, match="split"):
        gf.family("test")
    with pytest.raises(ValueError, match="kind"):
        gf.build(0, "rnn")


@pytest.mark.slow
def test_held_out_graphs_compile_on_cpu():
    core = ov.Core()
    for _, build in gf.family("held_out", 3):
        core.compile_model(build(), "CPU")
