"""Small synthetic OpenVINO graphs built directly from opsets.

They are fast to build and compile, and cover the shapes of graph that matter
for placement: branches that rejoin, residual skips, attention-like blocks, and
the awkward cases (control flow, boolean/string tensors, dynamic shapes, a model
with no compute at all). Weights come from a seeded generator so every run
builds the same model.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
from openvino import opset13 as ops
from openvino import opset15

from ov_autoplace.graph.arrays import NodeRole

_RNG_SEED = 1234


def _rng() -> np.random.Generator:
    return np.random.default_rng(_RNG_SEED)


def _const(rng: np.random.Generator, shape, scale: float = 0.1):
    return ops.constant((rng.standard_normal(shape) * scale).astype(np.float32))


def _conv(rng, x, cin: int, cout: int, k: int = 3, name: str | None = None):
    w = _const(rng, (cout, cin, k, k), scale=1.0 / np.sqrt(cin * k * k))
    pad = k // 2
    y = ops.convolution(x, w, [1, 1], [pad, pad], [pad, pad], [1, 1])
    b = _const(rng, (1, cout, 1, 1))
    y = ops.add(y, b)
    if name:
        y.set_friendly_name(name)
    return y


def branching(channels: int = 8, size: int = 16) -> ov.Model:
    """Inception-like: one input fans out to three conv branches that concat."""
    rng = _rng()
    x = ops.parameter([1, 3, size, size], np.float32, name="input")
    stem = ops.relu(_conv(rng, x, 3, channels, name="stem"))
    b1 = ops.relu(_conv(rng, stem, channels, channels, k=1))
    b2 = ops.relu(_conv(rng, ops.relu(_conv(rng, stem, channels, channels, k=1)), channels, channels, k=3))
    b3 = ops.max_pool(stem, [1, 1], [1, 1], [1, 1], [1, 1], [3, 3])
    b3 = ops.relu(_conv(rng, b3.output(0), channels, channels, k=1))
    cat = ops.concat([b1, b2, b3], axis=1)
    head = ops.relu(_conv(rng, cat, 3 * channels, channels, k=1))
    pooled = ops.reduce_mean(head, ops.constant(np.array([2, 3], dtype=np.int64)), keep_dims=False)
    logits = ops.matmul(pooled, _const(rng, (channels, 10)), False, False)
    out = ops.softmax(logits, 1)
    out.set_friendly_name("probs")
    return ov.Model([out], [x], "branching")


def residual(blocks: int = 3, channels: int = 8, size: int = 16, seed: int = _RNG_SEED) -> ov.Model:
    """ResNet-like: a stack of conv-relu-conv blocks with identity skips (``seed`` picks the weights)."""
    rng = np.random.default_rng(seed)
    x = ops.parameter([1, 3, size, size], np.float32, name="input")
    h = ops.relu(_conv(rng, x, 3, channels, name="stem"))
    for i in range(blocks):
        y = ops.relu(_conv(rng, h, channels, channels, name=f"block{i}_conv1"))
        y = _conv(rng, y, channels, channels, name=f"block{i}_conv2")
        h = ops.relu(ops.add(h, y))
    pooled = ops.reduce_mean(h, ops.constant(np.array([2, 3], dtype=np.int64)), keep_dims=False)
    out = ops.matmul(pooled, _const(rng, (channels, 10)), False, False)
    out.set_friendly_name("logits")
    return ov.Model([out], [x], "residual")


def attention_like(seq: int = 16, hidden: int = 32, heads: int = 4, layers: int = 2) -> ov.Model:
    """BERT-like encoder layers: QKV projections, softmax attention, MLP, LayerNorm-ish."""
    rng = _rng()
    head_dim = hidden // heads
    x = ops.parameter([1, seq, hidden], np.float32, name="hidden_states")
    h = x
    for layer in range(layers):
        def proj(inp, name):
            y = ops.matmul(inp, _const(rng, (hidden, hidden), 1 / np.sqrt(hidden)), False, False)
            y = ops.add(y, _const(rng, (hidden,)))
            y.set_friendly_name(f"layer{layer}_{name}")
            return y

        def split_heads(t):
            t = ops.reshape(t, ops.constant(np.array([1, seq, heads, head_dim], dtype=np.int64)), False)
            return ops.transpose(t, ops.constant(np.array([0, 2, 1, 3], dtype=np.int64)))

        q, k, v = (split_heads(proj(h, n)) for n in ("q", "k", "v"))
        scores = ops.matmul(q, k, False, True)
        scores = ops.multiply(scores, ops.constant(np.float32(1 / np.sqrt(head_dim))))
        probs = ops.softmax(scores, -1)
        ctx = ops.matmul(probs, v, False, False)
        ctx = ops.transpose(ctx, ops.constant(np.array([0, 2, 1, 3], dtype=np.int64)))
        ctx = ops.reshape(ctx, ops.constant(np.array([1, seq, hidden], dtype=np.int64)), False)
        attn = ops.add(h, proj(ctx, "out"))
        attn = ops.mvn(attn, ops.constant(np.array([-1], dtype=np.int64)), True, 1e-5, "inside_sqrt")
        mlp = ops.matmul(attn, _const(rng, (hidden, 4 * hidden), 1 / np.sqrt(hidden)), False, False)
        mlp = ops.gelu(mlp, "erf")
        mlp = ops.matmul(mlp, _const(rng, (4 * hidden, hidden), 1 / np.sqrt(4 * hidden)), False, False)
        h = ops.mvn(ops.add(attn, mlp), ops.constant(np.array([-1], dtype=np.int64)), True, 1e-5, "inside_sqrt")
    h.set_friendly_name("encoder_out")
    return ov.Model([h], [x], "attention_like")


def long_chain(num_blocks: int, width: int = 16) -> ov.Model:
    """A deep chain of small residual MLP blocks (5 compute ops and 3 constants per block).

    Used for scale tests: ``long_chain(2500)`` has just over 20,000 nodes.
    """
    rng = _rng()
    x = ops.parameter([1, width], np.float32, name="input")
    w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
    h = x
    for _ in range(num_blocks):
        y = ops.matmul(h, ops.constant(w), False, False)
        y = ops.add(y, ops.constant(np.zeros(width, np.float32)))
        y = ops.relu(y)
        h = ops.add(h, ops.multiply(y, ops.constant(np.float32(0.5))))
    return ov.Model([h], [x], "long_chain")


def shared_input(branches: int = 5, width: int = 16) -> ov.Model:
    """``x -> relu_k -> sigmoid_k`` for k < ``branches``, the sigmoids concatenated. With the relus on one device
    and the rest on the other, the relus are ``branches`` islands that HETERO compiles as one submodel: they
    share the Parameter ``x``, and HETERO's parts are joined through it."""
    x = ops.parameter([1, width], np.float32, name="x")
    tails = []
    for k in range(branches):
        head = ops.relu(x, name=f"relu{k}")
        tails.append(ops.sigmoid(head, name=f"sigmoid{k}"))
    out = ops.concat(tails, 1, name="concat")
    return ov.Model([out], [x], "shared_input")


def with_if() -> ov.Model:
    """A model whose middle is an If with two small bodies."""
    x = ops.parameter([2, 4], np.float32, name="x")
    cond = ops.parameter([], np.bool_, name="cond")
    then_p = ops.parameter([2, 4], np.float32)
    then_body = ov.Model([ops.relu(then_p)], [then_p], "then")
    else_p = ops.parameter([2, 4], np.float32)
    else_body = ov.Model([ops.negative(else_p)], [else_p], "else")
    pre = ops.multiply(x, ops.constant(np.float32(2.0)))
    if_op = ops.if_op(cond)
    if_op.set_then_body(then_body)
    if_op.set_else_body(else_body)
    if_op.set_input(pre.output(0), then_p, else_p)
    res = if_op.set_output(then_body.get_results()[0], else_body.get_results()[0])
    out = ops.add(res, ops.constant(np.float32(1.0)))
    return ov.Model([out], [x, cond], "with_if")


def with_loop(trips: int = 3) -> ov.Model:
    """A Loop that adds 1 to a tensor `trips` times."""
    x = ops.parameter([2, 2], np.float32, name="x")
    trip = ops.constant(np.int64(trips))
    exec_cond = ops.constant(np.bool_(True))
    body_in = ops.parameter([2, 2], np.float32)
    body_out = ops.add(body_in, ops.constant(np.float32(1.0)))
    body_cond = ops.constant(np.bool_(True))
    body = ov.Model([body_cond, body_out], [body_in], "body")
    loop = ops.loop(trip, exec_cond)
    loop.set_function(body)
    loop.set_special_body_ports([-1, 0])
    loop.set_merged_input(body_in, x.output(0), body_out.output(0))
    out = loop.get_iter_value(body_out.output(0), -1)
    res = ops.relu(out)
    return ov.Model([res], [x], "with_loop")


def bool_and_string() -> ov.Model:
    """Boolean tensors through compute; a string Parameter passed straight to a Result."""
    x = ops.parameter([4], np.float32, name="x")
    mask = ops.greater(x, ops.constant(np.float32(0.0)))
    picked = ops.select(mask, x, ops.constant(np.float32(0.0)))
    inv = ops.logical_not(mask)
    s = ops.parameter([2], ov.Type.string, name="text")
    return ov.Model([picked, inv, s], [x, s], "bool_and_string")


def dynamic_shapes() -> ov.Model:
    """A batch- and length-dynamic MatMul model."""
    x = ops.parameter(ov.PartialShape([-1, -1, 8]), np.float32, name="x")
    rng = _rng()
    y = ops.matmul(x, _const(rng, (8, 4)), False, False)
    y = ops.relu(y)
    return ov.Model([y], [x], "dynamic_shapes")


def param_to_result() -> ov.Model:
    """No compute at all: one Parameter wired straight to one Result."""
    x = ops.parameter([3], np.float32, name="x")
    return ov.Model([x], [x], "param_to_result")


def sdpa_block(seq: int = 8, heads: int = 2, head_dim: int = 8) -> ov.Model:
    """One ScaledDotProductAttention op, for FLOP counting."""
    q = ops.parameter([1, heads, seq, head_dim], np.float32, name="q")
    k = ops.parameter([1, heads, seq, head_dim], np.float32, name="k")
    v = ops.parameter([1, heads, seq, head_dim], np.float32, name="v")
    out = ops.scaled_dot_product_attention(q, k, v, causal=False)
    return ov.Model([out], [q, k, v], "sdpa_block")


def dynamic_attention(hidden: int = 32, heads: int = 4, layers: int = 2, max_seq: int | None = None) -> ov.Model:
    """BERT-like layers over ``[batch?, seq?, hidden]`` whose head split reads the shape at run time.

    ``ShapeOf -> Gather -> Concat -> Reshape`` (as exported transformers do) is
    folded to a Constant in a static clone but computed in the dynamic model,
    so the two graphs differ exactly where a placement must be carried over.
    ``max_seq`` bounds the sequence axis (``[1..max_seq]``).
    """
    rng = _rng()
    head_dim = hidden // heads
    seq_dim = ov.Dimension(1, max_seq) if max_seq else ov.Dimension(-1)
    x = ops.parameter(ov.PartialShape([ov.Dimension(-1), seq_dim, ov.Dimension(hidden)]), np.float32, name="x")
    h = x
    for layer in range(layers):
        batch_seq = ops.gather(ops.shape_of(h), ops.constant(np.array([0, 1], dtype=np.int64)),
                               ops.constant(np.int64(0)))
        heads_shape = ops.concat([batch_seq, ops.constant(np.array([heads, head_dim], dtype=np.int64))], 0)
        flat_shape = ops.concat([batch_seq, ops.constant(np.array([hidden], dtype=np.int64))], 0)

        def proj(inp, name):
            y = ops.matmul(inp, _const(rng, (hidden, hidden), 1 / np.sqrt(hidden)), False, False)
            y = ops.add(y, _const(rng, (hidden,)))
            y.set_friendly_name(f"layer{layer}_{name}")
            return y

        def split(t):
            return ops.transpose(ops.reshape(t, heads_shape, False),
                                 ops.constant(np.array([0, 2, 1, 3], dtype=np.int64)))

        q, k, v = (split(proj(h, n)) for n in ("q", "k", "v"))
        probs = ops.softmax(ops.multiply(ops.matmul(q, k, False, True),
                                         ops.constant(np.float32(1 / np.sqrt(head_dim)))), -1)
        ctx = ops.transpose(ops.matmul(probs, v, False, False), ops.constant(np.array([0, 2, 1, 3], dtype=np.int64)))
        ctx = ops.reshape(ctx, flat_shape, False)
        attn = ops.mvn(ops.add(h, proj(ctx, "out")), ops.constant(np.array([-1], dtype=np.int64)), True, 1e-5,
                       "inside_sqrt")
        mlp = ops.gelu(ops.matmul(attn, _const(rng, (hidden, 2 * hidden), 1 / np.sqrt(hidden)), False, False), "erf")
        mlp = ops.matmul(mlp, _const(rng, (2 * hidden, hidden), 1 / np.sqrt(2 * hidden)), False, False)
        h = ops.mvn(ops.add(attn, mlp), ops.constant(np.array([-1], dtype=np.int64)), True, 1e-5, "inside_sqrt")
        h.set_friendly_name(f"layer{layer}_output")
    return ov.Model([h], [x], "dynamic_attention")


# The graphs every property test iterates over (name -> builder), kept small.

def gather_model(seq: int = 64, hidden: int = 64) -> ov.Model:
    """MatMul -> Gather (rows of an activation, which the spec-sheet NPU list lacks) -> MatMul -> Relu."""
    rng = _rng()
    x = ops.parameter([1, seq, hidden], np.float32, name="x")
    y = ops.matmul(x, _const(rng, (hidden, hidden)), False, False)
    y = ops.gather(y, ops.constant(np.arange(0, seq, 2, dtype=np.int64)), ops.constant(np.int64(1)))
    y.set_friendly_name("gather")
    y = ops.relu(ops.matmul(y, _const(rng, (hidden, hidden)), False, False))
    return ov.Model([y], [x], "gather_model")


PLACEMENT_GRAPHS = {
    "branching": branching,
    "residual": residual,
    "attention_like": attention_like,
}

__all__ = [
    "PLACEMENT_GRAPHS",
    "attention_like",
    "bool_and_string",
    "branching",
    "dynamic_attention",
    "dynamic_shapes",
    "gather_model",
    "long_chain",
    "opset15",
    "param_to_result",
    "residual",
    "sdpa_block",
    "shape_value_layers",
    "shared_input",
    "with_if",
    "with_loop",
]



def shape_value_layers(layers: int = 3, hidden: int = 32) -> ov.Model:
    """A dynamic model without state, laid out as OPT in optimum-intel's legacy form: every layer's Reshape takes its
    target from one ``Concat(ShapeOf(ids), hidden)`` ("target"); layer k's nodes are named ``layer{k}/flat``,
    ``/mm``, ``/act``, ``/back`` (the Reshape) and ``/out`` (the residual Add), then a "head"."""
    rng = np.random.default_rng(0)
    ids = ops.parameter([-1, -1], np.int64, name="ids")
    h = ops.gather(ops.constant(rng.standard_normal((16, hidden)).astype(np.float32)), ids, ops.constant(np.int64(0)))
    target = ops.concat([ops.shape_of(ids), ops.constant(np.array([hidden], np.int64))], 0)
    target.set_friendly_name("target")
    for k in range(layers):
        flat = ops.reshape(h, ops.constant(np.array([-1, hidden], np.int64)), False)
        mm = ops.matmul(flat, ops.constant(rng.standard_normal((hidden, hidden)).astype(np.float32) / 8), False, False)
        act = ops.relu(mm)
        back = ops.reshape(act, target, False)
        h = ops.add(back, h)
        for node, name in ((flat, "flat"), (mm, "mm"), (act, "act"), (back, "back"), (h, "out")):
            node.set_friendly_name(f"layer{k}/{name}")
    head = ops.matmul(h, ops.constant(rng.standard_normal((hidden, 8)).astype(np.float32)), False, False)
    head.set_friendly_name("head")
    return ov.Model([head], [ids], "shape_value_layers")


def stateful_layers(layers: int = 2, hidden: int = 16, shared_init: bool = False, head: bool = False) -> ov.Model:
    """A decoder-like stateful graph: per layer a variable (ReadValue -> beam Gather -> Concat -> Assign) whose
    zero initializer is computed from ``ShapeOf(x)``, as optimum-intel exports a KV cache. Inputs ``x``
    ``[1, ?, hidden]`` and ``beam_idx`` ``[1]``; node names ``rv{l}``, ``reorder{l}``, ``proj{l}``, ``cat{l}``,
    ``assign{l}``, ``mean{l}``, ``act{l}``, ``init{l}``. ``shared_init``: one ``ShapeOf(x) -> Gather`` (named
    ``batch``) feeds every layer's initializer, as in optimum-intel's exports. ``head``: a MatMul ``head`` after the
    last layer, as a decoder's LM head."""
    from openvino.op.util import Variable, VariableInfo

    rng = _rng()
    x = ops.parameter([1, -1, hidden], np.float32, name="x")
    beam = ops.parameter([1], np.int32, name="beam_idx")
    h, sinks = x, []
    shared = ops.gather(ops.shape_of(x), ops.constant([0]), ops.constant(0)) if shared_init else None
    if shared is not None:
        shared.set_friendly_name("batch")
    for layer in range(layers):
        info = VariableInfo()
        info.data_shape, info.data_type, info.variable_id = ov.PartialShape([1, -1, hidden]), ov.Type.f32, f"past.{layer}"
        var = Variable(info)
        batch = shared if shared is not None else ops.gather(ops.shape_of(x), ops.constant([0]), ops.constant(0))
        init = ops.broadcast(ops.constant(np.float32(0)),
                             ops.concat([batch, ops.constant(np.array([0, hidden], np.int64))], 0))
        read = ops.read_value(init, var)
        reorder = ops.gather(read, beam, ops.constant(0))
        proj = ops.matmul(h, _const(rng, (hidden, hidden), 0.2), False, False)
        cat = ops.concat([reorder, proj], 1)
        assign = ops.assign(cat, var)
        mean = ops.reduce_mean(cat, ops.constant([1]), keep_dims=True)
        act = ops.tanh(ops.add(proj, mean))
        for node, name in ((init, "init"), (read, "rv"), (reorder, "reorder"), (proj, "proj"), (cat, "cat"),
                           (assign, "assign"), (mean, "mean"), (act, "act")):
            node.set_friendly_name(f"{name}{layer}")
        sinks.append(assign)
        h = act
    if head:
        h = ops.matmul(h, _const(rng, (hidden, hidden), 0.2), False, False, name="head")
    out = ops.result(h)
    out.set_friendly_name("out")
    return ov.Model([out], sinks, [x, beam], "stateful_layers")


def llm_like(vocab: int = 37, hidden: int = 8, positions: int | None = 64, layers: int = 1,
             convert_ids: bool = False) -> ov.Model:
    """The inputs and state of an optimum-intel decoder on a few ops: ``input_ids``, ``attention_mask``,
    ``position_ids`` (``[?, ?]`` i64), ``beam_idx`` (``[?]`` i32) and per layer a variable holding the past hidden
    states (``past``, ``past1``, ...); the mask multiplies past + new states, so a mask shorter or longer than the
    state is rejected as in a decoder. A position table of ``positions`` rows (None: none, positions unused but
    fed, as RoPE computed from the ids). ``convert_ids``: the embedding reads the ids through a ``Convert`` to i32,
    as optimum-intel's OPT and GPTBigCode exports do, and the initializer reads one ``ShapeOf(input_ids)``.
    Output ``logits`` ``[?, ?, vocab]``."""
    from openvino.op.util import Variable, VariableInfo

    rng = _rng()
    ids = ops.parameter([-1, -1], np.int64, name="input_ids")
    mask = ops.parameter([-1, -1], np.int64, name="attention_mask")
    pos = ops.parameter([-1, -1], np.int64, name="position_ids")
    beam = ops.parameter([-1], np.int32, name="beam_idx")
    h = ops.gather(_const(rng, (vocab, hidden)), ops.convert(ids, np.int32) if convert_ids else ids, ops.constant(0))
    if positions is not None:
        h = ops.add(h, ops.gather(_const(rng, (positions, hidden)), pos, ops.constant(0)))
    else:  # RoPE-like: the positions scale the states, no table
        h = ops.multiply(h, ops.unsqueeze(ops.cos(ops.convert(pos, np.float32)), ops.constant(-1)))
    ids_shape = ops.shape_of(ids)
    batch = ops.gather(ids_shape, ops.constant([0]), ops.constant(0))
    # the empty past's length as a computed 0: with a literal 0 the CPU plugin fixes the variable's dynamic batch
    # at 0..? and its length at 0, and rejects the first Assign of a dynamic-batch model ("Can not clone with new
    # dims"); optimum-intel's decoders escape it through the fused attention
    length_of = ids_shape if convert_ids else ops.shape_of(ids)  # one ShapeOf with convert_ids, as those exports
    empty = ops.multiply(ops.gather(length_of, ops.constant([1]), ops.constant(0)),
                         ops.constant(np.array([0], np.int64)))
    init = ops.broadcast(ops.constant(np.float32(0)),
                         ops.concat([batch, empty, ops.constant(np.array([hidden], np.int64))], 0))
    assigns = []
    for layer in range(layers):
        info = VariableInfo()
        info.data_shape, info.data_type = ov.PartialShape([-1, -1, hidden]), ov.Type.f32
        info.variable_id = "past" if layer == 0 else f"past{layer}"
        var = Variable(info)
        cat = ops.concat([ops.gather(ops.read_value(init, var), beam, ops.constant(0)), h], 1)
        assigns.append(ops.assign(cat, var))
        masked = ops.multiply(cat, ops.unsqueeze(ops.convert(mask, np.float32), ops.constant(-1)))
        context = ops.reduce_mean(masked, ops.constant([1]), keep_dims=True)
        h = ops.add(h, context) if layer == layers - 1 else ops.tanh(ops.matmul(
            ops.add(h, context), _const(rng, (hidden, hidden)), False, False))
    logits = ops.matmul(h, _const(rng, (hidden, vocab)), False, False)
    out = ops.result(logits)
    out.output(0).get_tensor().set_names({"logits"})
    logits.output(0).get_tensor().set_names({"logits"})
    return ov.Model([out], assigns, [ids, mask, pos, beam], "llm_like")


def random_elementwise_dag(seed: int, nodes: int, devices: tuple[str, ...] = ("CPU", "CPUF")) -> ov.Model:
    """``nodes`` Relu / Add nodes of ``[1, 4]`` reading earlier ones, the Parameter ``x`` or one of two shared
    Constants, each node (graph inputs and Results too) with a seeded random ``affinity`` of ``devices``: any
    DAG shape HETERO's split can meet, in a model that compiles in milliseconds. Node ``k`` is named ``n<k>``."""
    rng = np.random.default_rng(seed)
    x = ops.parameter([1, 4], np.float32, name="x")
    shared = [ops.constant(np.full([1, 4], k + 1.0, np.float32), name=f"c{k}") for k in range(2)]
    made: list = [x]
    for k in range(nodes):
        roll, a = rng.random(), made[rng.integers(len(made))]
        if roll < 0.25:
            node = ops.add(a, shared[rng.integers(2)])
        elif roll < 0.5 or len(made) < 2:
            node = ops.relu(a)
        else:
            first, second = rng.choice(len(made), 2, replace=False)
            node = ops.add(made[first], made[second])
        node.set_friendly_name(f"n{k}")
        made.append(node)
    read = {i.get_source_output().get_node().get_friendly_name() for node in made[1:] for i in node.inputs()}
    model = ov.Model([ops.result(node) for node in made[1:] if node.get_friendly_name() not in read], [x], "dag")
    for op in model.get_ordered_ops():
        op.get_rt_info()["affinity"] = devices[rng.integers(len(devices))]
    return model


def regnet_y_like(depths=(1, 3, 6, 6), widths=(16, 32, 64, 128), group_width=8, size=64, seed=0) -> ov.Model:
    """A RegNetY-400MF-shaped CNN (same stage depths; small widths and input): ~290 compute nodes.

    Each block: 1x1 conv, 3x3 group conv, squeeze-excitation, 1x1 conv, residual add (batch norms folded).
    """
    rng = np.random.default_rng(seed)

    def const(*shape, scale=0.1):
        return ops.constant((rng.standard_normal(shape) * scale).astype(np.float32))

    def conv(x, cin, cout, k=1, stride=1, groups=1):
        pad = k // 2
        if groups == 1:
            y = ops.convolution(x, const(cout, cin, k, k, scale=1 / np.sqrt(cin * k * k)), [stride] * 2, [pad] * 2,
                                [pad] * 2, [1, 1])
        else:
            w = const(groups, cout // groups, cin // groups, k, k, scale=1 / np.sqrt(cin // groups * k * k))
            y = ops.group_convolution(x, w, [stride] * 2, [pad] * 2, [pad] * 2, [1, 1])
        return ops.add(y, const(1, cout, 1, 1))

    x = ops.parameter([1, 3, size, size], np.float32, name="input")
    h, cin = ops.relu(conv(x, 3, widths[0], k=3, stride=2)), widths[0]
    for depth, width in zip(depths, widths):
        for b in range(depth):
            stride = 2 if b == 0 else 1
            y = ops.relu(conv(h, cin, width))
            y = ops.relu(conv(y, width, width, k=3, stride=stride, groups=width // group_width))
            s = ops.reduce_mean(y, ops.constant(np.array([2, 3], dtype=np.int64)), keep_dims=True)
            s = ops.sigmoid(conv(ops.relu(conv(s, width, max(1, cin // 4))), max(1, cin // 4), width))
            y = conv(ops.multiply(y, s), width, width)
            skip = h if (stride == 1 and cin == width) else conv(h, cin, width, stride=stride)
            h, cin = ops.relu(ops.add(y, skip)), width
    pooled = ops.reduce_mean(h, ops.constant(np.array([2, 3], dtype=np.int64)), keep_dims=False)
    out = ops.matmul(pooled, const(cin, 10), False, False)
    return ov.Model([out], [x], "regnet_y_like")


def forced_split(graph, num_on_second=16):
    """Everything on device 0 except ``num_on_second`` consecutive compute nodes in the middle on device 1."""
    compute = np.flatnonzero(graph.role == NodeRole.COMPUTE)
    middle = compute[len(compute) // 2: len(compute) // 2 + num_on_second]
    proposal = np.zeros(graph.num_nodes, dtype=np.int64)
    proposal[middle] = 1
    return proposal
