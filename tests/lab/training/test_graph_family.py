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


@pytest.mark.parametrize("kind, expected", [
    ("detection", {"Convolution", "Interpolate", "Sigmoid", "Exp", "Concat"}),
    ("decoder", {"Gather", "MatMul", "Softmax", "Power", "ReduceMean", "Sqrt"}),
    ("multibranch", {"Convolution", "Concat", "Add", "ReduceMean", "Softmax"}),
    ("state_space", {"MatMul", "Sigmoid"}),
])
def test_every_extra_kind_builds_its_ops_and_is_seeded(kind, expected):
    a, b = (extract_graph(prepare_model(gf.build(2, kind))) for _ in range(2))
    assert expected <= set(a.op_types) and a.num_nodes >= 50 and (a.flops > 0).any()
    assert a.op_types == b.op_types and (a.edge_src == b.edge_src).all()
    assert a.op_types != extract_graph(prepare_model(gf.build(3, kind))).op_types


def test_extra_kinds_leave_the_default_cycle_alone_and_reach_thousands_of_nodes():
    assert gf.KINDS == ("conv", "transformer", "mlp")  # build(seed) of the existing seeds is unchanged
    assert set(gf.EXTRA_KINDS) <= set(gf.BUILDERS)
    sizes = {kind: [extract_graph(prepare_model(gf.build(s, kind))).num_nodes for s in range(4)]
             for kind in ("decoder", "state_space")}
    assert max(sizes["decoder"]) >= 1000, sizes
    assert min(min(v) for v in sizes.values()) < 300, sizes  # and small ones too


def test_state_space_has_both_the_scan_and_the_unrolled_cell():
    ops = [set(extract_graph(prepare_model(gf.build(s, "state_space"))).op_types) for s in range(8)]
    assert any("CumSum" in o and "GroupConvolution" in o for o in ops)
    assert any("Tanh" in o and "Split" in o for o in ops)


@pytest.mark.slow
def test_extra_kinds_compile_on_cpu():
    core = ov.Core()
    for kind in gf.EXTRA_KINDS:
        core.compile_model(gf.build(0, kind), "CPU")
