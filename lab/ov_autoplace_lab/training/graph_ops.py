"""The opset blocks the seeded graph families are built from (``graph_family``, ``graph_family_wider``).

Every weight is a small random constant drawn from the caller's generator, in a fixed order, so a seed always
builds the same graph: only topology, shapes and FLOPs matter to placement. ``const``, ``i64``, ``conv`` and
``activation`` draw exactly what the first families drew (their graphs do not change); the blocks below them are the
wider families' (squeeze-excite, a LayerNorm, multi-head attention).
"""

from __future__ import annotations

import numpy as np
import openvino as ov
from openvino import opset13 as ops


def const(rng: np.random.Generator, shape, scale: float | None = None):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
    s = scale if scale is not None else 1.0 / np.sqrt(max(fan_in, 1))
    return ops.constant((rng.standard_normal(shape) * s).astype(np.float32))


def i64(values) -> ov.Node:
    return ops.constant(np.array(values, dtype=np.int64))


def conv(rng, x, cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1, act: str | None = "relu",
         dilation: int = 1):
    """Convolution (grouped where ``groups`` > 1) + bias + activation, padded to keep the size at stride 1."""
    pad = dilation * (k // 2)
    strides, pads, dilations = [stride, stride], [pad, pad], [dilation, dilation]
    if groups == 1:
        y = ops.convolution(x, const(rng, (cout, cin, k, k)), strides, pads, pads, dilations)
    else:
        w = const(rng, (groups, cout // groups, cin // groups, k, k))
        y = ops.group_convolution(x, w, strides, pads, pads, dilations)
    y = ops.add(y, const(rng, (1, cout, 1, 1), 0.1))
    return activation(y, act)


def activation(y, act: str | None):
    if act is None:
        return y
    return {"relu": ops.relu, "sigmoid": ops.sigmoid, "tanh": ops.tanh,
            "gelu": lambda t: ops.gelu(t, "erf"), "swish": ops.swish, "hswish": ops.hswish,
            "hsigmoid": ops.hsigmoid}[act](y)



def squeeze_excite(rng, x, c: int, reduced: int, act: str = "relu", gate: str = "sigmoid"):
    """Squeeze-and-excite: a global mean, a 1x1 bottleneck and a gate that scales every channel of ``x``."""
    s = ops.reduce_mean(x, i64([2, 3]), keep_dims=True)
    s = conv(rng, s, c, max(reduced, 1), 1, act=act)
    s = conv(rng, s, max(reduced, 1), c, 1, act=gate)
    return ops.multiply(x, s)


def layer_norm(rng, t, width: int, rms: bool = False):
    """LayerNorm over the last axis (MVN, as OpenVINO's frontends emit it) or RMS norm (Power/ReduceMean/Sqrt)."""
    if rms:
        var = ops.reduce_mean(ops.power(t, ops.constant(np.float32(2.0))), i64([-1]), keep_dims=True)
        t = ops.divide(t, ops.sqrt(ops.add(var, ops.constant(np.float32(1e-6)))))
        return ops.multiply(t, const(rng, (width,), 0.1))
    t = ops.mvn(t, i64([-1]), True, 1e-5, "inside_sqrt")
    return ops.add(ops.multiply(t, const(rng, (width,), 0.1)), const(rng, (width,), 0.1))


def dense(rng, t, cin: int, cout: int, bias: bool = True):
    y = ops.matmul(t, const(rng, (cin, cout)), False, False)
    return ops.add(y, const(rng, (cout,), 0.02)) if bias else y


def attention(rng, q_in, kv_in, batch: int, q_len: int, kv_len: int, hidden: int, heads: int, bias=None, mask=None):
    """Multi-head attention of ``q_in`` [batch, q_len, hidden] over ``kv_in`` [batch, kv_len, hidden]: Q/K/V
    projections, scaled scores (+ ``bias`` / ``mask`` constants broadcast over the batch), softmax, the output
    projection. Self-attention where ``kv_in`` is ``q_in``, cross-attention otherwise."""
    head_dim = hidden // heads

    def split_heads(t, length):
        return ops.transpose(ops.reshape(t, i64([batch, length, heads, head_dim]), False), i64([0, 2, 1, 3]))

    q = split_heads(dense(rng, q_in, hidden, hidden), q_len)
    k = split_heads(dense(rng, kv_in, hidden, hidden), kv_len)
    v = split_heads(dense(rng, kv_in, hidden, hidden), kv_len)
    scores = ops.multiply(ops.matmul(q, k, False, True), ops.constant(np.float32(1 / np.sqrt(head_dim))))
    for extra in (bias, mask):
        if extra is not None:
            scores = ops.add(scores, extra)
    ctx = ops.matmul(ops.softmax(scores, -1), v, False, False)
    ctx = ops.reshape(ops.transpose(ctx, i64([0, 2, 1, 3])), i64([batch, q_len, hidden]), False)
    return dense(rng, ctx, hidden, hidden)


__all__ = ["activation", "attention", "const", "conv", "dense", "i64", "layer_norm", "squeeze_excite"]
