"""A seeded family of realistic random DAGs built from OpenVINO opsets, for (pre)training and zero-shot tests.

Three kinds, each with its size and shape drawn from one ``numpy`` generator
(so a seed always builds the same model):

* ``conv``: a CNN - a stem, stages of plain, residual, inception-like
  (2-4 parallel branches concatenated) or depthwise-separable blocks with
  stride-2 downsampling between stages, a global-pool + MatMul + Softmax head;
* ``transformer``: BERT-like encoder layers (Q/K/V MatMuls, softmax attention,
  output projection, residual + MVN LayerNorm, Gelu MLP), optionally fed by a
  Gather embedding of integer token ids;
* ``mlp``: MLPs of varied width and depth with Relu/Gelu/Sigmoid/Tanh, optional
  residual skips and optional split-and-concat branches.

Four more, built only when named (:data:`EXTRA_KINDS`):
``detection`` (feature pyramid + shared towers), ``decoder`` (causal decoder
layers, RMS norm, SwiGLU), ``multibranch`` (wide parallel-branch CNN stages),
``state_space`` (Mamba-like scan blocks or a GRU unrolled over time), at sizes
from tens to a few thousand nodes. Four more again (:data:`WIDER_KINDS`, ``graph_family_wider``): inverted-residual
CNNs with squeeze-excite, window/grid-attention hybrids, segmentation nets, encoder-decoder transformers.

:func:`family` lists ``(name, builder)`` pairs; :data:`HELD_OUT_SEEDS` are never
used for training (``split="held_out"``), so zero-shot tests place graphs the
policy has never seen. Weights are small random constants: only the topology,
shapes and FLOPs matter to placement.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import openvino as ov
from openvino import opset13 as ops

from ov_autoplace_lab.training.graph_family_wider import BUILDERS as _WIDER_BUILDERS, WIDER_KINDS
from ov_autoplace_lab.training.graph_ops import activation as _act, const as _const, conv as _conv, i64 as _i64

KINDS = ("conv", "transformer", "mlp")
#: Kinds built only when named (``build(seed, kind)``): ``build(seed)`` keeps cycling through :data:`KINDS`, so the
#: graphs of existing seeds (and the targets and tests built on them) do not change.
EXTRA_KINDS = ("detection", "decoder", "multibranch", "state_space")
#: The kinds of the families the shipped policy placed worst (``graph_family_wider``), appended so every earlier kind
#: keeps its index in :data:`ALL_KINDS` (its seeds' generators) and its graphs.
ALL_KINDS = KINDS + EXTRA_KINDS + WIDER_KINDS
#: Seeds of the training split and of the held-out split (disjoint).
TRAIN_SEEDS = tuple(range(0, 200))
HELD_OUT_SEEDS = tuple(range(1000, 1012))


# ---- CNNs ---------------------------------------------------------------------------------------------
def _conv_block(rng, x, c: int, kind: str):
    """One block at ``c`` channels; returns (output, channels)."""
    if kind == "plain":
        return _conv(rng, x, c, c, int(rng.choice([1, 3, 5]))), c
    if kind == "residual":
        y = _conv(rng, x, c, c, 3)
        y = _conv(rng, y, c, c, 3, act=None)
        return ops.relu(ops.add(x, y)), c
    if kind == "inception":
        branches, out_c = [], 0
        for _ in range(int(rng.integers(2, 5))):
            bc = int(rng.choice([c // 4, c // 2, c])) or 1
            style = rng.integers(0, 3)
            if style == 0:
                b = _conv(rng, x, c, bc, 1)
            elif style == 1:
                b = _conv(rng, _conv(rng, x, c, bc, 1), bc, bc, int(rng.choice([3, 5])))
            else:
                b = ops.max_pool(x, [1, 1], [1, 1], [1, 1], [1, 1], [3, 3]).output(0)
                b = _conv(rng, b, c, bc, 1)
            branches.append(b)
            out_c += bc
        y = ops.concat(branches, axis=1)
        if out_c > 2 * c:  # a 1x1 projection keeps stacked inception blocks from growing the width geometrically
            y, out_c = _conv(rng, y, out_c, 2 * c, 1), 2 * c
        return y, out_c
    # depthwise separable (MobileNet-like)
    y = _conv(rng, x, c, c, 3, groups=c, act=str(rng.choice(["relu", "swish"])))
    return _conv(rng, y, c, c, 1, act=None), c


def conv_net(rng: np.random.Generator, name: str = "conv") -> ov.Model:
    size = int(rng.choice([32, 56, 64, 112, 224]))
    c = int(rng.choice([16, 24, 32, 48, 64]))
    x = ops.parameter([1, 3, size, size], np.float32, name="image")
    h = _conv(rng, x, 3, c, 3, stride=2 if size >= 112 else 1)
    kinds = rng.choice(["plain", "residual", "inception", "depthwise"], size=int(rng.integers(1, 4)), replace=False)
    for stage in range(int(rng.integers(2, 6))):
        for _ in range(int(rng.integers(1, 5))):
            h, c = _conv_block(rng, h, c, str(rng.choice(kinds)))
        if stage < 4 and size > 8:
            nc = min(int(c * rng.choice([1.5, 2.0])), 384)
            h, c, size = _conv(rng, h, c, nc, 3, stride=2), nc, size // 2
    pooled = ops.reduce_mean(h, _i64([2, 3]), keep_dims=False)
    logits = ops.matmul(pooled, _const(rng, (c, int(rng.choice([10, 100, 1000])))), False, False)
    return ov.Model([ops.softmax(logits, 1)], [x], name)


# ---- transformers --------------------------------------------------------------------------------------
def transformer(rng: np.random.Generator, name: str = "transformer") -> ov.Model:
    seq = int(rng.choice([16, 32, 64, 128]))
    heads = int(rng.choice([2, 4, 8]))
    hidden = heads * int(rng.choice([16, 32, 48, 64]))
    head_dim = hidden // heads
    params = []
    if rng.random() < 0.5:
        ids = ops.parameter([1, seq], np.int64, name="input_ids")
        table = _const(rng, (int(rng.choice([1000, 8000])), hidden), 0.02)
        h = ops.gather(table, ids, _i64(0))
        h = ops.add(h, _const(rng, (1, seq, hidden), 0.02))
        params.append(ids)
    else:
        h = ops.parameter([1, seq, hidden], np.float32, name="hidden_states")
        params.append(h)

    def norm(t):
        t = ops.mvn(t, _i64([-1]), True, 1e-5, "inside_sqrt")
        return ops.add(ops.multiply(t, _const(rng, (hidden,), 0.1)), _const(rng, (hidden,), 0.1))

    def proj(t, cin, cout):
        return ops.add(ops.matmul(t, _const(rng, (cin, cout)), False, False), _const(rng, (cout,), 0.02))

    def heads_view(t):
        t = ops.reshape(t, _i64([1, seq, heads, head_dim]), False)
        return ops.transpose(t, _i64([0, 2, 1, 3]))

    ffn = int(rng.choice([2, 4]))
    for _ in range(int(rng.integers(1, 7))):
        q, k, v = (heads_view(proj(h, hidden, hidden)) for _ in range(3))
        scores = ops.multiply(ops.matmul(q, k, False, True), ops.constant(np.float32(1 / np.sqrt(head_dim))))
        ctx = ops.matmul(ops.softmax(scores, -1), v, False, False)
        ctx = ops.reshape(ops.transpose(ctx, _i64([0, 2, 1, 3])), _i64([1, seq, hidden]), False)
        h = norm(ops.add(h, proj(ctx, hidden, hidden)))
        mlp = _act(proj(h, hidden, ffn * hidden), str(rng.choice(["gelu", "relu", "swish"])))
        h = norm(ops.add(h, proj(mlp, ffn * hidden, hidden)))
    if rng.random() < 0.5:  # a pooled classification head, as BERT's
        first = ops.gather(h, _i64([0]), _i64(1))
        h = ops.softmax(proj(ops.tanh(proj(first, hidden, hidden)), hidden, int(rng.choice([2, 10]))), -1)
    return ov.Model([h], params, name)


# ---- MLPs ------------------------------------------------------------------------------------------------
def mlp(rng: np.random.Generator, name: str = "mlp") -> ov.Model:
    batch = int(rng.choice([1, 8, 32, 128]))
    width = int(rng.choice([64, 128, 256, 512, 1024]))
    x = ops.parameter([batch, width], np.float32, name="features")
    h, c = x, width
    act = str(rng.choice(["relu", "gelu", "sigmoid", "tanh"]))
    residual, branchy = rng.random() < 0.5, rng.random() < 0.3
    for _ in range(int(rng.integers(2, 11))):
        nc = int(rng.choice([64, 128, 256, 512, 1024, 2048]))
        if branchy and rng.random() < 0.5:
            parts = [_act(ops.add(ops.matmul(h, _const(rng, (c, nc // 2)), False, False),
                                  _const(rng, (nc // 2,), 0.02)), act) for _ in range(2)]
            y = ops.concat(parts, axis=1)
        else:
            y = _act(ops.add(ops.matmul(h, _const(rng, (c, nc)), False, False), _const(rng, (nc,), 0.02)), act)
        h = ops.add(h, y) if residual and nc == c else y
        c = nc
    out = ops.matmul(h, _const(rng, (c, int(rng.choice([1, 10, 100])))), False, False)
    return ov.Model([out], [x], name)


# ---- the extra kinds (EXTRA_KINDS): reached only through build(seed, kind) -------------------------------------
def detection_head(rng: np.random.Generator, name: str = "detection") -> ov.Model:
    """A small backbone, a top-down feature pyramid (Interpolate + Add) and an FCOS/RetinaNet-like head of shared
    classification and box towers on every level, flattened and concatenated."""
    size = int(rng.choice([128, 256, 320, 512]))
    c, levels, tower = int(rng.choice([32, 48, 64])), int(rng.integers(3, 6)), int(rng.integers(1, 5))
    width, classes = int(rng.choice([64, 96, 128, 256])), int(rng.choice([4, 20, 80]))
    x = ops.parameter([1, 3, size, size], np.float32, name="image")
    h, feats = _conv(rng, x, 3, c, 3, stride=2), []
    for level in range(levels + 2):  # strides 4 .. 2**(levels + 2)
        nc = min(2 * c, 512)
        h, c = _conv(rng, h, c, nc, 3, stride=2), nc
        if level >= 2:
            feats.append((h, c))
    laterals = [_conv(rng, f, fc, width, 1, act=None) for f, fc in feats]
    for i in range(len(laterals) - 2, -1, -1):  # top-down pathway
        target = list(laterals[i].get_output_shape(0))[2:]  # odd sizes do not double back exactly
        up = ops.interpolate(laterals[i + 1], _i64(target), "nearest", "sizes", axes=_i64([2, 3]))
        laterals[i] = ops.add(laterals[i], up)
    scores, boxes = [], []
    for p in laterals:
        cls, reg = p, p
        for _ in range(tower):
            cls, reg = _conv(rng, cls, width, width, 3), _conv(rng, reg, width, width, 3)
        cls = ops.sigmoid(_conv(rng, cls, width, classes, 3, act=None))
        reg = ops.exp(_conv(rng, reg, width, 4, 3, act=None))
        scores.append(ops.transpose(ops.reshape(cls, _i64([1, classes, -1]), False), _i64([0, 2, 1])))
        boxes.append(ops.transpose(ops.reshape(reg, _i64([1, 4, -1]), False), _i64([0, 2, 1])))
    return ov.Model([ops.concat(scores, 1), ops.concat(boxes, 1)], [x], name)


def decoder(rng: np.random.Generator, name: str = "decoder") -> ov.Model:
    """A GPT/Llama-like decoder: token embedding, causal self-attention (an additive mask), RMS norm from
    Power/ReduceMean/Sqrt/Divide, SwiGLU or Gelu MLP, a tied-size LM head; 1-24 layers (up to ~2k nodes)."""
    seq, heads = int(rng.choice([8, 32, 64, 128])), int(rng.choice([2, 4, 8, 12]))
    hidden = heads * int(rng.choice([16, 32, 64]))
    head_dim, layers = hidden // heads, int(rng.choice([1, 2, 4, 8, 16, 24]))
    vocab = int(rng.choice([1000, 8000, 32000]))
    ids = ops.parameter([1, seq], np.int64, name="input_ids")
    h = ops.gather(_const(rng, (vocab, hidden), 0.02), ids, _i64(0))
    mask = ops.constant(np.triu(np.full((seq, seq), -1e4, np.float32), 1)[None, None])

    def rms(t):
        var = ops.reduce_mean(ops.power(t, ops.constant(np.float32(2.0))), _i64([-1]), keep_dims=True)
        t = ops.divide(t, ops.sqrt(ops.add(var, ops.constant(np.float32(1e-6)))))
        return ops.multiply(t, _const(rng, (hidden,), 0.1))

    def heads_view(t):
        return ops.transpose(ops.reshape(t, _i64([1, seq, heads, head_dim]), False), _i64([0, 2, 1, 3]))

    swiglu = rng.random() < 0.5
    for _ in range(layers):
        n = rms(h)
        q, k, v = (heads_view(ops.matmul(n, _const(rng, (hidden, hidden)), False, False)) for _ in range(3))
        scores = ops.multiply(ops.matmul(q, k, False, True), ops.constant(np.float32(1 / np.sqrt(head_dim))))
        ctx = ops.matmul(ops.softmax(ops.add(scores, mask), -1), v, False, False)
        ctx = ops.reshape(ops.transpose(ctx, _i64([0, 2, 1, 3])), _i64([1, seq, hidden]), False)
        h = ops.add(h, ops.matmul(ctx, _const(rng, (hidden, hidden)), False, False))
        n, inner = rms(h), int(hidden * rng.choice([2, 4]))
        if swiglu:
            gate = ops.swish(ops.matmul(n, _const(rng, (hidden, inner)), False, False))
            mlp_out = ops.multiply(gate, ops.matmul(n, _const(rng, (hidden, inner)), False, False))
        else:
            mlp_out = ops.gelu(ops.matmul(n, _const(rng, (hidden, inner)), False, False), "tanh")
        h = ops.add(h, ops.matmul(mlp_out, _const(rng, (inner, hidden)), False, False))
    logits = ops.matmul(rms(h), _const(rng, (hidden, vocab), 0.02), False, False)
    return ov.Model([logits], [ids], name)


def multi_branch_cnn(rng: np.random.Generator, name: str = "multibranch") -> ov.Model:
    """A CNN whose stages run 3-8 parallel branches of different depth, kernel and width, merged by Concat (+ a
    1x1 projection) or by Add; up to ~1k nodes."""
    size, c = int(rng.choice([32, 64, 112, 224])), int(rng.choice([16, 32, 48]))
    x = ops.parameter([1, 3, size, size], np.float32, name="image")
    h = _conv(rng, x, 3, c, 3, stride=2 if size >= 112 else 1)
    for stage in range(int(rng.integers(2, 7))):
        for _ in range(int(rng.integers(1, 4))):
            concat = rng.random() < 0.5
            branches, out_c = [], 0
            for _ in range(int(rng.integers(3, 9))):
                bc = c if not concat else max(c // int(rng.choice([2, 4])), 4)
                b = _conv(rng, h, c, bc, 1, act=str(rng.choice(["relu", "swish"])))
                for _ in range(int(rng.integers(0, 4))):
                    k = int(rng.choice([3, 5, 7]))
                    b = _conv(rng, b, bc, bc, k, groups=bc if rng.random() < 0.3 else 1)
                branches.append(b)
                out_c += bc
            if concat:
                h = _conv(rng, ops.concat(branches, 1), out_c, c, 1)
            else:
                y = branches[0]
                for b in branches[1:]:
                    y = ops.add(y, b)
                h = ops.relu(ops.add(h, y))
        if size > 8 and stage < 4:
            nc = min(int(c * 2), 256)
            h, c, size = _conv(rng, h, c, nc, 3, stride=2), nc, size // 2
    pooled = ops.reduce_mean(h, _i64([2, 3]), keep_dims=False)
    return ov.Model([ops.softmax(ops.matmul(pooled, _const(rng, (c, 1000)), False, False), 1)], [x], name)


def state_space(rng: np.random.Generator, name: str = "state_space") -> ov.Model:
    """Recurrent-like blocks: a Mamba-like block (in-projection, causal depthwise Conv1d, Swish gate, a decayed
    CumSum scan, out-projection) stacked 1-6 times, or a GRU cell unrolled over 8-96 time steps (Split over
    time, Sigmoid/Tanh gates, the state carried step to step: long chains, up to ~2.5k nodes)."""
    hidden, steps = int(rng.choice([32, 64, 128, 256])), int(rng.choice([8, 16, 32, 64, 96]))
    x = ops.parameter([1, steps, hidden], np.float32, name="sequence")

    def dense(t, cin, cout):
        return ops.add(ops.matmul(t, _const(rng, (cin, cout)), False, False), _const(rng, (cout,), 0.02))

    if rng.random() < 0.5:  # Mamba-like
        h = x
        for _ in range(int(rng.integers(1, 7))):
            inner = 2 * hidden
            u, z = (dense(h, hidden, inner) for _ in range(2))
            u = ops.transpose(u, _i64([0, 2, 1]))  # [1, inner, steps]
            w = _const(rng, (inner, 1, 1, 4))
            u = ops.group_convolution(u, w, [1], [3], [0], [1])  # causal: pad 3 on the left only
            u = ops.swish(ops.transpose(u, _i64([0, 2, 1])))
            decay = ops.sigmoid(dense(u, inner, inner))
            scan = ops.cum_sum(ops.multiply(u, decay), _i64(1))
            y = ops.multiply(scan, ops.swish(z))
            h = ops.add(h, dense(y, inner, hidden))
        return ov.Model([h], [x], name)
    state = ops.constant(np.zeros((1, hidden), np.float32))
    parts = ops.split(x, _i64(1), steps)
    wz, wr, wh = (_const(rng, (2 * hidden, hidden)) for _ in range(3))
    outs = []
    for t in range(steps):  # a GRU cell per step, weights shared
        xt = ops.reshape(parts.output(t), _i64([1, hidden]), False)
        both = ops.concat([xt, state], 1)
        zt = ops.sigmoid(ops.matmul(both, wz, False, False))
        rt = ops.sigmoid(ops.matmul(both, wr, False, False))
        cand = ops.tanh(ops.matmul(ops.concat([xt, ops.multiply(rt, state)], 1), wh, False, False))
        state = ops.add(ops.multiply(zt, state), ops.multiply(ops.subtract(ops.constant(np.float32(1.0)), zt), cand))
        outs.append(ops.unsqueeze(state, _i64(1)))
    return ov.Model([ops.concat(outs, 1)], [x], name)


BUILDERS: dict[str, Callable[[np.random.Generator, str], ov.Model]] = {
    "conv": conv_net, "transformer": transformer, "mlp": mlp, "detection": detection_head, "decoder": decoder,
    "multibranch": multi_branch_cnn, "state_space": state_space, **_WIDER_BUILDERS}


def build(seed: int, kind: str | None = None) -> ov.Model:
    """The family member of ``seed`` (its kind cycles through :data:`KINDS` unless given)."""
    kind = kind or KINDS[seed % len(KINDS)]
    if kind not in BUILDERS:
        raise ValueError(f"unknown graph kind {kind!r}; expected one of {ALL_KINDS}")
    return BUILDERS[kind](np.random.default_rng([seed, ALL_KINDS.index(kind)]), f"{kind}_{seed}")


def family(split: str = "train", count: int | None = None) -> list[tuple[str, Callable[[], ov.Model]]]:
    """``(name, builder)`` of the ``split`` ("train" or "held_out") members, the first ``count`` of them."""
    seeds = {"train": TRAIN_SEEDS, "held_out": HELD_OUT_SEEDS}.get(split)
    if seeds is None:
        raise ValueError(f"split must be 'train' or 'held_out', got {split!r}")
    seeds = seeds[:count] if count is not None else seeds
    return [(f"{KINDS[s % len(KINDS)]}_{s}", (lambda s=s: build(s))) for s in seeds]


__all__ = ["ALL_KINDS", "BUILDERS", "EXTRA_KINDS", "HELD_OUT_SEEDS", "KINDS", "TRAIN_SEEDS", "WIDER_KINDS", "build",
           "conv_net", "decoder", "detection_head", "family", "mlp", "multi_branch_cnn", "state_space", "transformer"]
