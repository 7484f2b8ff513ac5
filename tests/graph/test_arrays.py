"""Graph extraction: the C++ extractor against the pure-Python reference, hand-checked
values on tiny graphs, and the awkward inputs (control flow, bool/string, dynamic,
no compute, empty, bad arguments)."""

from __future__ import annotations

import math
import time

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from ov_autoplace.graph.arrays import MAX_RANK, GraphArrays, NodeRole, extract_graph
from tests import synthetic_graphs as sg
from tests.reference_graph import reference_extract

_LIST_KEYS = ("names", "op_types", "op_versions", "out_element_type")
_FLOAT_KEYS = ("flops", "pos_enc", "fractal_dim")


def assert_same_graph(ga: GraphArrays, ref: dict) -> None:
    """Strings and ints exactly, floats to rtol 1e-6 (fractal/pos_enc are float32)."""
    assert ga.meta == ref["meta"]
    for key in _LIST_KEYS:
        assert list(getattr(ga, key)) == ref[key], key
    for key, want in ref.items():
        if key in _LIST_KEYS or key == "meta":
            continue
        got = getattr(ga, key)
        assert got.dtype == want.dtype, (key, got.dtype, want.dtype)
        assert got.shape == want.shape, (key, got.shape, want.shape)
        if key in _FLOAT_KEYS:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=key)
        else:
            np.testing.assert_array_equal(got, want, err_msg=key)


# ----------------------------------------------------------------- test graphs


def op_mix() -> ov.Model:
    """Every op the FLOP formulas special-case, plus multi-output, multi-edge,
    rank > 8, sub-byte element types and a dynamic-rank branch."""
    f32 = np.float32
    x = ops.parameter([1, 4, 6, 6], f32, name="x")
    gconv = ops.group_convolution(x, ops.constant(np.ones((2, 3, 2, 3, 3), f32)), [1, 1], [1, 1], [1, 1], [1, 1])
    gconv.set_friendly_name("gconv")  # out [1, 6, 6, 6]
    deconv = ops.convolution_backprop_data(x, ops.constant(np.ones((4, 2, 2, 2), f32)), [2, 2])
    deconv.set_friendly_name("deconv")  # out [1, 2, 12, 12]
    gdeconv = ops.group_convolution_backprop_data(x, ops.constant(np.ones((2, 2, 3, 2, 2), f32)), [2, 2])
    gdeconv.set_friendly_name("gdeconv")  # out [1, 6, 12, 12]

    a = ops.parameter([3, 4], f32, name="a")
    b = ops.parameter([4, 5], f32, name="b")
    es2 = ops.einsum([a, b], "ij,jk->ik")
    es2.set_friendly_name("einsum_mm")
    es1 = ops.einsum([a], "ij->i")
    es1.set_friendly_name("einsum_reduce")
    es_ell = ops.einsum([a], "...j->j...")
    es_ell.set_friendly_name("einsum_ellipsis")

    at = ops.parameter([7, 3], f32, name="at")
    mm_ta = ops.matmul(at, ops.constant(np.ones((7, 2), f32)), True, False)
    mm_ta.set_friendly_name("mm_transpose_a")  # [3, 2], K = 7
    v = ops.parameter([5], f32, name="v")
    mm_vec = ops.matmul(v, ops.constant(np.ones((5, 3), f32)), False, False)
    mm_vec.set_friendly_name("mm_vector")  # [3], K = 5

    split = ops.split(x, ops.constant(np.int64(1)), 2)
    split.set_friendly_name("split")  # 2 x [1, 2, 6, 6]
    twice = ops.add(split.output(0), split.output(0))
    twice.set_friendly_name("twice")  # multi-edge
    other = ops.relu(split.output(1))

    deep = ops.reshape(x, ops.constant(np.array([1, 1, 1, 1, 1, 1, 2, 2, 36], np.int64)), False)
    deep.set_friendly_name("rank9")

    u4 = ops.constant(np.array([1, 2, 3, 4, 5], np.uint8), dtype=ov.Type.u4)
    u4.set_friendly_name("u4_const")  # 20 bits -> 3 bytes
    u4f = ops.convert(u4, ov.Type.f32)

    dyn = ops.parameter(ov.PartialShape.dynamic(), f32, name="dyn")
    dyn_relu = ops.relu(dyn)
    dyn_relu.set_friendly_name("dyn_relu")

    outs = [gconv, deconv, gdeconv, es2, es1, es_ell, mm_ta, mm_vec, twice, other, deep, u4f, dyn_relu]
    return ov.Model(outs, [x, a, b, at, v, dyn], "op_mix")


def tiny() -> ov.Model:
    """x[1,3,8,8] -> conv(4x3x3x3, pad 1) -> relu -> mean(2,3) -> matmul(4x5) -> add(m, m)."""
    x = ops.parameter([1, 3, 8, 8], np.float32, name="x")
    w = ops.constant(np.ones((4, 3, 3, 3), np.float32))
    w.set_friendly_name("w")
    conv = ops.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1])
    conv.set_friendly_name("conv")
    relu = ops.relu(conv)
    relu.set_friendly_name("relu")
    mean = ops.reduce_mean(relu, ops.constant(np.array([2, 3], np.int64)), keep_dims=False)
    mean.set_friendly_name("mean")
    mm = ops.matmul(mean, ops.constant(np.ones((4, 5), np.float32)), False, False)
    mm.set_friendly_name("mm")
    add = ops.add(mm, mm)
    add.set_friendly_name("add")
    return ov.Model([add], [x], "tiny")


def path(length: int) -> ov.Model:
    x = ops.parameter([2], np.float32, name="x")
    h = x
    for i in range(length):
        h = ops.relu(h)
        h.set_friendly_name(f"relu{i}")
    return ov.Model([h], [x], "path")


def empty_model() -> ov.Model:
    return ov.Model([], [], "empty")


SYNTHETIC = {
    "branching": sg.branching,
    "residual": sg.residual,
    "attention_like": sg.attention_like,
    "with_if": sg.with_if,
    "with_loop": sg.with_loop,
    "bool_and_string": sg.bool_and_string,
    "dynamic_shapes": sg.dynamic_shapes,
    "param_to_result": sg.param_to_result,
    "sdpa_block": sg.sdpa_block,
    "long_chain_small": lambda: sg.long_chain(20),
    "op_mix": op_mix,
    "tiny": tiny,
    "path": lambda: path(12),
    "empty": empty_model,
}


# ------------------------------------------------------- native == reference


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_native_matches_reference(name):
    model = SYNTHETIC[name]()
    assert_same_graph(extract_graph(model), reference_extract(model))


@pytest.mark.parametrize("pos_dim,radius", [(2, 2), (8, 3), (64, 6)])
def test_native_matches_reference_other_params(pos_dim, radius):
    model = sg.attention_like()
    got = extract_graph(model, pos_dim=pos_dim, fractal_radius=radius)
    assert_same_graph(got, reference_extract(model, pos_dim, radius))
    assert got.pos_enc.shape == (got.num_nodes, pos_dim)


@pytest.fixture(scope="module")
def zoo():
    try:
        import torch  # noqa: F401
    except Exception as exc:  # a broken torch install raises OSError, not ImportError
        pytest.skip(f"zoo models need torch (pip install ov-autoplace-lab[zoo]); `import torch` failed: {exc}")
    import ov_autoplace_lab.models as zoo

    return zoo


@pytest.mark.slow
@pytest.mark.zoo
@pytest.mark.parametrize("name", ["inception_v3", "resnet50", "bert_base"])
def test_zoo_native_matches_reference(zoo, name):
    model = zoo.load(name)
    got = extract_graph(model)
    assert_same_graph(got, reference_extract(model))
    assert got.num_nodes > 100
    assert np.count_nonzero(got.flops > 0) > 10


# ------------------------------------------------------------- hand-checked


def test_tiny_graph_hand_checked():
    g = extract_graph(tiny())
    idx = g.names.index
    x, w, conv, relu, mean, mm, add = (idx(n) for n in ("x", "w", "conv", "relu", "mean", "mm", "add"))
    result = int(np.flatnonzero(g.role == NodeRole.RESULT)[0])

    assert g.op_types[conv] == "Convolution" and g.op_versions[conv] == "opset1"
    assert g.role[x] == NodeRole.PARAMETER and g.role[w] == NodeRole.CONSTANT and g.role[conv] == NodeRole.COMPUTE
    # nodes: x, w, conv, relu, axes, mean, W, mm, add, result
    assert g.num_nodes == 10
    # edges: conv(x, w), relu(conv), mean(relu, axes), mm(mean, W), add(mm, mm), result(add)
    assert g.num_edges == 10 == g.meta["num_edges"] == int(g.in_degree.sum()) == int(g.out_degree.sum())
    pairs = list(zip(g.edge_src.tolist(), g.edge_dst.tolist()))
    assert pairs.count((mm, add)) == 2
    assert g.in_degree[add] == 2 and g.out_degree[mm] == 2
    assert g.in_degree[conv] == 2 and g.out_degree[conv] == 1 and g.in_degree[x] == 0
    assert g.out_degree[add] == 1 and g.out_degree[result] == 0

    # FLOPs: conv 2 * |out|(1*4*8*8) * Cin(3) * 3*3; matmul 2 * |out|(5) * K(4); relu = elements
    assert g.flops[conv] == 2 * 256 * 3 * 9
    assert g.flops[mm] == 2 * 5 * 4
    assert g.flops[relu] == 256
    assert g.flops[x] == g.flops[w] == g.flops[result] == 0

    # bytes (f32)
    assert g.out_bytes[x] == 3 * 64 * 4
    assert g.out_bytes[w] == 4 * 27 * 4
    assert g.out_bytes[conv] == 256 * 4
    e = pairs.index((conv, relu))
    assert g.edge_bytes[e] == 256 * 4
    assert g.out_rank[conv] == 4 and g.out_shape[conv].tolist() == [1, 4, 8, 8, 0, 0, 0, 0]
    assert g.out_rank[mm] == 2 and g.out_shape[mm, :2].tolist() == [1, 5]

    # depth: longest path from a source
    assert g.depth[x] == 0 and g.depth[w] == 0
    assert g.depth[conv] == 1 and g.depth[relu] == 2 and g.depth[mean] == 3
    assert g.depth[mm] == 4 and g.depth[add] == 5 and g.depth[result] == 6

    # CSR helpers
    assert sorted(g.successors(mm).tolist()) == [add, add]
    assert g.predecessors(conv).tolist() == [x, w]
    assert g.predecessors(x).size == 0


def test_op_mix_flops_and_bytes():
    g = extract_graph(op_mix())
    f = {n: g.flops[g.names.index(n)] for n in (
        "gconv", "deconv", "gdeconv", "einsum_mm", "einsum_reduce", "einsum_ellipsis",
        "mm_transpose_a", "mm_vector", "split", "rank9", "dyn_relu")}
    assert f["gconv"] == 2 * (6 * 36) * 2 * 9  # |out| * Cin/G * k
    assert f["deconv"] == 2 * (4 * 36) * 2 * 4  # |in| * Cout * k
    assert f["gdeconv"] == 2 * (4 * 36) * 3 * 4  # |in| * Cout/G * k
    assert f["einsum_mm"] == 2 * 3 * 4 * 5
    assert f["einsum_reduce"] == 3 * 4
    assert f["einsum_ellipsis"] == 12  # ellipsis -> element count
    assert f["mm_transpose_a"] == 2 * 6 * 7
    assert f["mm_vector"] == 2 * 3 * 5
    assert f["split"] == 144  # both outputs
    assert f["dyn_relu"] == -1

    split = g.names.index("split")
    assert g.num_outputs[split] == 2 and g.out_bytes[split] == 2 * 72 * 4
    twice = g.names.index("twice")
    ports = [(int(s), int(sp), int(dp)) for s, d, sp, dp in
             zip(g.edge_src, g.edge_dst, g.edge_src_port, g.edge_dst_port) if d == twice]
    assert ports == [(split, 0, 0), (split, 0, 1)]
    relu_of_split1 = [int(d) for s, d, sp in zip(g.edge_src, g.edge_dst, g.edge_src_port) if s == split and sp == 1]
    assert len(relu_of_split1) == 1

    r9 = g.names.index("rank9")
    assert g.out_rank[r9] == 9 and g.out_shape.shape[1] == MAX_RANK == 8
    assert g.out_shape[r9].tolist() == [1, 1, 1, 1, 1, 1, 2, 2]  # 9th dim (36) truncated
    u4 = g.names.index("u4_const")
    assert g.out_element_type[u4] == "u4" and g.out_bytes[u4] == 3
    dyn = g.names.index("dyn")
    assert g.out_rank[dyn] == -1 and g.out_bytes[dyn] == -1 and (g.out_shape[dyn] == 0).all()


def test_sdpa_flops():
    g = extract_graph(sg.sdpa_block(seq=8, heads=2, head_dim=8))
    i = g.op_types.index("ScaledDotProductAttention")
    b, l, s, e, ev = 2, 8, 8, 8, 8
    assert g.flops[i] == 2 * b * l * s * e + 2 * b * l * s * ev


def test_fractal_dim_on_a_path():
    g = extract_graph(path(40), fractal_radius=4)  # Parameter, 40 Relus, Result: a path of 42 nodes
    assert g.num_nodes == 42 and g.num_edges == 41
    r = np.arange(1, 5, dtype=np.float64)
    middle = np.polyfit(np.log(r), np.log(2 * r + 1), 1)[0]
    end = np.polyfit(np.log(r), np.log(r + 1), 1)[0]
    mid = g.names.index("relu20")
    assert g.fractal_dim[mid] == pytest.approx(middle, rel=1e-6)
    assert g.fractal_dim[0] == pytest.approx(end, rel=1e-6)
    # every node at distance >= 4 from both ends sees the same 9-node ball
    assert np.allclose(g.fractal_dim[4:-4], middle, rtol=1e-6)
    assert g.depth.tolist() == list(range(42))


def test_fractal_dim_isolated_and_multi_edges():
    g = extract_graph(sg.param_to_result())
    r = np.arange(1, 5, dtype=np.float64)
    want = np.polyfit(np.log(r), np.log(np.full(4, 2.0)), 1)[0]  # N(r) = 2 for all r -> slope 0
    assert np.allclose(g.fractal_dim, want, atol=1e-7)
    # add(m, m): the multi-edge counts once in the undirected graph
    t = extract_graph(tiny(), fractal_radius=2)
    ref = reference_extract(tiny(), 16, 2)
    np.testing.assert_allclose(t.fractal_dim, ref["fractal_dim"], rtol=1e-6)


def test_positional_encoding():
    g = extract_graph(sg.residual(), pos_dim=6)
    assert g.pos_enc.dtype == np.float32 and g.pos_enc.shape == (g.num_nodes, 6)
    assert g.pos_enc[0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    i = g.num_nodes - 1
    for k in range(3):
        angle = i / 10000 ** (2 * k / 6)
        assert g.pos_enc[i, 2 * k] == pytest.approx(math.sin(angle), abs=1e-6)
        assert g.pos_enc[i, 2 * k + 1] == pytest.approx(math.cos(angle), abs=1e-6)
    assert g.topo_index.tolist() == list(range(g.num_nodes))


def test_topological_order_and_edge_order():
    g = extract_graph(sg.attention_like())
    assert (g.edge_src < g.edge_dst).all()
    # edges sorted by (dst, dst_port)
    keys = g.edge_dst.astype(np.int64) * 1000 + g.edge_dst_port
    assert (np.diff(keys) > 0).all()
    assert len(g.op_types) == g.num_nodes == len(g.names) == len(g.out_element_type)


def test_arrays_are_read_only_and_dataclass_is_frozen():
    g = extract_graph(sg.branching())
    with pytest.raises(ValueError):
        g.flops[0] = 1.0
    with pytest.raises(AttributeError):
        g.flops = None  # type: ignore[misc]
    assert "num_nodes=" in repr(g)


# ------------------------------------------------------- awkward models


def test_control_flow_ops_are_single_nodes():
    g_if = extract_graph(sg.with_if())
    assert g_if.op_types.count("If") == 1
    assert g_if.in_degree[g_if.op_types.index("If")] == 2  # cond + the data input both bodies share
    g_loop = extract_graph(sg.with_loop())
    assert g_loop.op_types.count("Loop") == 1
    assert "Relu" in g_loop.op_types and "Negative" not in g_if.op_types  # bodies not expanded


def test_bool_and_string_tensors():
    g = extract_graph(sg.bool_and_string())
    text = g.names.index("text")
    assert g.out_element_type[text] == "string" and g.out_bytes[text] == -1
    string_edges = g.edge_bytes[g.edge_src == text]
    assert string_edges.size == 1 and string_edges[0] == -1
    gt = g.op_types.index("Greater")
    assert g.out_element_type[gt] == "boolean" and g.out_bytes[gt] == 4  # 4 bools, a byte each
    assert g.flops[gt] == 4


def test_dynamic_shapes():
    g = extract_graph(sg.dynamic_shapes())
    mm = g.op_types.index("MatMul")
    assert g.flops[mm] == -1 and g.out_bytes[mm] == -1
    assert g.out_rank[mm] == 3 and g.out_shape[mm, :3].tolist() == [-1, -1, 4]
    x = g.names.index("x")
    assert g.flops[x] == 0 and g.out_bytes[x] == -1
    assert (g.edge_bytes[g.edge_src == x] == -1).all()


def test_param_to_result_and_empty():
    g = extract_graph(sg.param_to_result())
    assert g.num_nodes == 2 and g.num_edges == 1
    assert g.role.tolist() == [NodeRole.PARAMETER, NodeRole.RESULT]
    assert g.flops.tolist() == [0.0, 0.0] and g.depth.tolist() == [0, 1]

    e = extract_graph(empty_model(), pos_dim=4)
    assert e.num_nodes == 0 and e.num_edges == 0
    assert e.pos_enc.shape == (0, 4) and e.out_shape.shape == (0, MAX_RANK)
    assert e.successors_csr[0].tolist() == [0]


# ------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad", [None, 3, "model.xml", object()])
def test_non_model_raises_type_error(bad):
    with pytest.raises(TypeError, match="Model"):
        extract_graph(bad)


def test_compiled_model_is_not_a_model():
    compiled = ov.Core().compile_model(sg.param_to_result(), "CPU")
    with pytest.raises(TypeError, match="Model"):
        extract_graph(compiled)


@pytest.mark.parametrize("pos_dim", [3, 0, -2, 17])
def test_bad_pos_dim(pos_dim):
    with pytest.raises(ValueError, match="pos_dim"):
        extract_graph(sg.branching(), pos_dim=pos_dim)


@pytest.mark.parametrize("radius", [1, 0, -3])
def test_bad_fractal_radius(radius):
    with pytest.raises(ValueError, match="fractal_radius"):
        extract_graph(sg.branching(), fractal_radius=radius)


@pytest.mark.parametrize("kw", [{"pos_dim": 16.0}, {"pos_dim": True}, {"fractal_radius": "4"}])
def test_non_int_params_raise_type_error(kw):
    with pytest.raises(TypeError):
        extract_graph(sg.branching(), **kw)


def test_native_validates_on_its_own():
    """The C++ entry point checks its arguments too (it is callable without graph.py)."""
    from ov_autoplace._native_loader import load_native

    native = load_native()
    with pytest.raises(ValueError, match="pos_dim"):
        native.extract_graph(sg.branching(), pos_dim=5)
    with pytest.raises(ValueError, match="fractal_radius"):
        native.extract_graph(sg.branching(), fractal_radius=1)
    with pytest.raises(TypeError, match="Model"):
        native.extract_graph([1, 2, 3])


# ------------------------------------------------------------------- scale


@pytest.mark.slow
def test_twenty_thousand_nodes_fast():
    model = sg.long_chain(2500)
    t0 = time.perf_counter()
    g = extract_graph(model)
    elapsed = time.perf_counter() - t0
    assert g.num_nodes > 20_000
    assert elapsed < 2.0, f"extracting {g.num_nodes} nodes took {elapsed:.2f}s"
    assert (g.edge_src < g.edge_dst).all()
    assert np.isfinite(g.fractal_dim).all()
