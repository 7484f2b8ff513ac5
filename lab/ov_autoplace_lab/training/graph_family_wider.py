"""Four seeded graph kinds for the architecture families the shipped policy placed worst (docs/heldout.md):
inverted-residual CNNs with squeeze-excite, hybrid conv-attention with window and grid attention, segmentation
nets with atrous and pooled heads, encoder-decoder transformers with cross-attention.

Built like ``graph_family``'s kinds (OpenVINO opset13, one ``numpy`` generator per seed, small random weights) and
reached the same way, ``graph_family.build(seed, kind)`` with a kind of :data:`WIDER_KINDS`. They are families of
blocks, not copies of any held-out architecture: sizes, depths, widths and head types are drawn, so the frozen
held-out graphs' fingerprints never match one (``training.targets.load_graph`` checks every graph it builds).
"""

from __future__ import annotations

import numpy as np
import openvino as ov
from openvino import opset13 as ops

from ov_autoplace_lab.training.graph_ops import attention, const, conv, dense, i64, layer_norm, squeeze_excite

WIDER_KINDS = ("mbconv_se", "window_attention", "segmentation", "encoder_decoder")


def _round8(c: float) -> int:
    return max(8, int(round(c / 8)) * 8)


def _mbconv(rng, h, cin: int, cout: int, stride: int, expand: int, k: int, se: bool, fused: bool, act: str,
            gate: str = "sigmoid"):
    """An inverted-residual block: 1x1 expand, k x k depthwise, squeeze-excite, 1x1 project (MBConv); ``fused``: a
    3x3 full convolution in place of expand + depthwise (EfficientNetV2's Fused-MBConv). Residual where shapes
    match."""
    wide = cin * expand
    if fused:
        y = conv(rng, h, cin, wide if expand > 1 else cout, 3, stride, act=act)
        y = squeeze_excite(rng, y, wide if expand > 1 else cout, cin // 4, act, gate) if se else y
        y = conv(rng, y, wide, cout, 1, act=None) if expand > 1 else y
    else:
        y = conv(rng, h, cin, wide, 1, act=act) if expand > 1 else h
        y = conv(rng, y, wide, wide, k, stride, groups=wide, act=act)
        y = squeeze_excite(rng, y, wide, cin // 4, act, gate) if se else y
        y = conv(rng, y, wide, cout, 1, act=None)
    return ops.add(h, y) if stride == 1 and cin == cout else y


def mbconv_se(rng: np.random.Generator, name: str = "mbconv_se") -> ov.Model:
    """EfficientNet / MobileNetV3 / MnasNet-like: a stride-2 stem, 4-7 stages of MBConv blocks (expand 1-6, 3x3
    or 5x5 depthwise, squeeze-excite on none, some or all, Fused-MBConv in the first stages of some), Swish,
    HSwish or Relu; a 1x1 head, global pool, classifier. ~100 to ~1.2k nodes."""
    size = int(rng.choice([96, 128, 160, 192, 224, 256]))
    act = str(rng.choice(["swish", "hswish", "relu"]))
    gate = "hsigmoid" if act == "hswish" else "sigmoid"
    se_share, fused_stages = float(rng.choice([0.0, 0.5, 1.0])), int(rng.integers(0, 4))
    c = int(rng.choice([16, 24, 32]))
    x = ops.parameter([1, 3, size, size], np.float32, name="image")
    h, size = conv(rng, x, 3, c, 3, stride=2, act=act), size // 2
    for stage in range(int(rng.integers(4, 8))):
        nc = min(_round8(c * float(rng.choice([1.0, 1.5, 2.0]))), 384)
        stride = 2 if size > 7 and rng.random() < 0.7 else 1
        expand, k = int(rng.choice([1, 3, 4, 6])), int(rng.choice([3, 5]))
        for block in range(int(rng.integers(1, 5))):
            h = _mbconv(rng, h, c, nc, stride if block == 0 else 1, expand, k, rng.random() < se_share,
                        stage < fused_stages, act, gate)
            c = nc
        size = size // stride
    head = int(rng.choice([640, 960, 1280]))
    h = conv(rng, h, c, head, 1, act=act)
    pooled = ops.reduce_mean(h, i64([2, 3]), keep_dims=False)
    if rng.random() < 0.5:  # MobileNetV3's hidden classifier layer
        pooled, head = ops.hswish(dense(rng, pooled, head, 1280)), 1280
    return ov.Model([dense(rng, pooled, head, 1000)], [x], name)


def _partition(t, c: int, r: int, p: int, grid: bool):
    """[1, C, r, r] -> [(r/p)^2, p*p, C] tokens: p x p windows of neighbours, or (``grid``) p x p tokens r/p apart
    (MaxViT's block and grid attention)."""
    n = r // p
    if grid:
        t = ops.transpose(ops.reshape(t, i64([1, c, p, n, p, n]), False), i64([0, 3, 5, 2, 4, 1]))
    else:
        t = ops.transpose(ops.reshape(t, i64([1, c, n, p, n, p]), False), i64([0, 2, 4, 3, 5, 1]))
    return ops.reshape(t, i64([n * n, p * p, c]), False)


def _unpartition(t, c: int, r: int, p: int, grid: bool):
    n = r // p
    t = ops.reshape(t, i64([1, n, n, p, p, c]), False)
    t = ops.transpose(t, i64([0, 5, 3, 1, 4, 2] if grid else [0, 5, 1, 3, 2, 4]))
    return ops.reshape(t, i64([1, c, r, r]), False)


def window_attention(rng: np.random.Generator, name: str = "window_attention") -> ov.Model:
    """A MaxViT / Swin-like hybrid: a stride-4 stem, 2-4 stages of an MBConv (squeeze-excite, stride 2 between
    stages) followed by window attention and, in most, grid attention over p x p tokens (p 4, 7 or 8) with a
    relative position bias, pre-norm, Gelu MLP; a pooled LayerNorm classifier. ~200 to ~1.5k nodes."""
    p, stages, m = int(rng.choice([4, 7, 8])), int(rng.integers(2, 5)), int(rng.choice([1, 2]))
    r = p * 2 ** (stages - 1) * m
    if 4 * r > 256:
        r //= m
    c, head_dim = int(rng.choice([32, 64])), 32
    grid_share, mlp_ratio = float(rng.choice([0.0, 1.0, 1.0])), int(rng.choice([2, 4]))
    x = ops.parameter([1, 3, 4 * r, 4 * r], np.float32, name="image")
    h = conv(rng, conv(rng, x, 3, c, 3, stride=2, act="gelu"), c, c, 3, stride=2, act="gelu")
    for stage in range(stages):
        nc = min(c * 2, 512) if stage else c
        for block in range(int(rng.integers(1, 3))):
            stride = 2 if stage and not block else 1
            h, c, r = _mbconv(rng, h, c, nc, stride, 4, 3, True, False, "gelu"), nc, r // stride
            heads = c // head_dim
            for grid in (False, True):
                if grid and rng.random() >= grid_share:
                    continue
                tokens = _partition(h, c, r, p, grid)
                batch, length = (r // p) ** 2, p * p
                bias = const(rng, (1, heads, length, length), 0.02)
                normed = layer_norm(rng, tokens, c)
                tokens = ops.add(tokens, attention(rng, normed, normed, batch, length, length, c, heads, bias=bias))
                mlp = ops.gelu(dense(rng, layer_norm(rng, tokens, c), c, mlp_ratio * c), "erf")
                tokens = ops.add(tokens, dense(rng, mlp, mlp_ratio * c, c))
                h = _unpartition(tokens, c, r, p, grid)
    pooled = layer_norm(rng, ops.reduce_mean(h, i64([2, 3]), keep_dims=False), c)
    return ov.Model([dense(rng, pooled, c, 1000)], [x], name)


def _resize(t, size: int, mode: str = "linear"):
    return ops.interpolate(t, i64([size, size]), mode, "sizes", axes=i64([2, 3]))


def segmentation(rng: np.random.Generator, name: str = "segmentation") -> ov.Model:
    """A segmentation net: a residual or inverted-residual backbone to output stride 8 or 16, dilated blocks after
    it, then an ASPP head (1x1, three atrous 3x3 and an image-pooling branch; DeepLabV3+'s low-level decoder in
    some), a Lite R-ASPP head (a pooled sigmoid gate and a low-level classifier) or an FCN head; the logits
    resized to the input. ~80 to ~600 nodes."""
    size, classes = int(rng.choice([128, 256, 320, 512])), int(rng.choice([2, 8, 21]))
    output_stride, inverted = int(rng.choice([8, 16])), rng.random() < 0.5
    c = int(rng.choice([16, 24, 32]))
    x = ops.parameter([1, 3, size, size], np.float32, name="image")
    h, res = conv(rng, x, 3, c, 3, stride=2, act="relu"), size // 2
    low, low_c = h, c  # the stride-4 feature the decoders fuse (every output stride passes through it)
    while res > size // output_stride:
        nc = min(c * 2, 320)
        for block in range(int(rng.integers(1, 4))):
            stride = 2 if block == 0 else 1
            if inverted:
                h = _mbconv(rng, h, c, nc, stride, int(rng.choice([3, 6])), 3, rng.random() < 0.5, False, "hswish",
                            "hsigmoid")
            else:
                y = conv(rng, conv(rng, h, c, nc, 3, stride), nc, nc, 3, act=None)
                h = ops.relu(ops.add(conv(rng, h, c, nc, 1, stride, act=None) if stride > 1 else h, y))
            c = nc
        res //= 2
        if res == size // 4:
            low, low_c = h, c
    for dilation in (2, 2, 4)[:int(rng.integers(1, 4))]:  # keep the resolution, grow the receptive field
        y = conv(rng, conv(rng, h, c, c, 3, dilation=dilation), c, c, 3, act=None, dilation=dilation)
        h = ops.relu(ops.add(h, y))
    head = str(rng.choice(["aspp", "lraspp", "fcn"]))
    width = int(rng.choice([64, 128, 256]))
    if head == "aspp":
        rates = [(6, 12, 18), (3, 6, 9), (2, 4, 6)][int(rng.integers(3))]
        branches = [conv(rng, h, c, width, 1)] + [conv(rng, h, c, width, 3, dilation=d) for d in rates]
        pooled = conv(rng, ops.reduce_mean(h, i64([2, 3]), keep_dims=True), c, width, 1)
        branches.append(_resize(pooled, res, "nearest"))
        y = conv(rng, conv(rng, ops.concat(branches, 1), 5 * width, width, 1), width, width, 3)
        if rng.random() < 0.5:  # DeepLabV3+: fuse the stride-4 feature
            y = ops.concat([_resize(y, size // 4), conv(rng, low, low_c, 48, 1)], 1)
            y = conv(rng, conv(rng, y, width + 48, width, 3), width, width, 3)
        logits = conv(rng, y, width, classes, 1, act=None)
    elif head == "lraspp":
        gate = conv(rng, ops.reduce_mean(h, i64([2, 3]), keep_dims=True), c, width, 1, act="sigmoid")
        y = ops.multiply(conv(rng, h, c, width, 1), gate)
        y = conv(rng, _resize(y, size // 4), width, classes, 1, act=None)
        logits = ops.add(y, conv(rng, low, low_c, classes, 1, act=None))
    else:
        logits = conv(rng, conv(rng, h, c, width, 3), width, classes, 1, act=None)
    return ov.Model([_resize(logits, size)], [x], name)


def encoder_decoder(rng: np.random.Generator, name: str = "encoder_decoder") -> ov.Model:
    """A T5 / BART / Marian-like encoder-decoder in one static pass: a shared token embedding, 1-6 pre-norm encoder
    layers (self-attention, a relative position bias or learned positions), 1-6 decoder layers (causal
    self-attention, cross-attention over the encoder's output, Relu, Gelu or gated-Gelu MLP), an LM head tied to the
    embedding. RMS norm or LayerNorm. ~150 to ~2k nodes."""
    src, tgt = int(rng.choice([32, 64, 128])), int(rng.choice([8, 16, 32]))
    heads = int(rng.choice([4, 8]))
    hidden = heads * int(rng.choice([32, 64]))
    inner, vocab = hidden * int(rng.choice([2, 4])), int(rng.choice([1000, 8000, 32000]))
    rms, relative, mlp = rng.random() < 0.5, rng.random() < 0.5, str(rng.choice(["relu", "gelu", "gated"]))
    ids = ops.parameter([1, src], np.int64, name="input_ids")
    dec_ids = ops.parameter([1, tgt], np.int64, name="decoder_input_ids")
    table = const(rng, (vocab, hidden), 0.02)

    def embed(t, length):
        e = ops.gather(table, t, i64(0))
        return e if relative else ops.add(e, const(rng, (1, length, hidden), 0.02))

    def ffn(t):
        n = layer_norm(rng, t, hidden, rms)
        if mlp == "gated":
            y = ops.multiply(ops.gelu(dense(rng, n, hidden, inner, False), "tanh"), dense(rng, n, hidden, inner, False))
        else:
            y = dense(rng, n, hidden, inner)
            y = ops.relu(y) if mlp == "relu" else ops.gelu(y, "erf")
        return ops.add(t, dense(rng, y, inner, hidden))

    h = embed(ids, src)
    enc_bias = const(rng, (1, heads, src, src), 0.02) if relative else None
    for _ in range(int(rng.integers(1, 7))):
        n = layer_norm(rng, h, hidden, rms)
        h = ffn(ops.add(h, attention(rng, n, n, 1, src, src, hidden, heads, bias=enc_bias)))
    memory = layer_norm(rng, h, hidden, rms)
    h = embed(dec_ids, tgt)
    mask = ops.constant(np.triu(np.full((tgt, tgt), -1e4, np.float32), 1)[None, None])
    dec_bias = const(rng, (1, heads, tgt, tgt), 0.02) if relative else None
    for _ in range(int(rng.integers(1, 7))):
        n = layer_norm(rng, h, hidden, rms)
        h = ops.add(h, attention(rng, n, n, 1, tgt, tgt, hidden, heads, bias=dec_bias, mask=mask))
        n = layer_norm(rng, h, hidden, rms)
        h = ffn(ops.add(h, attention(rng, n, memory, 1, tgt, src, hidden, heads)))
    logits = ops.matmul(layer_norm(rng, h, hidden, rms), table, False, True)
    return ov.Model([logits], [ids, dec_ids], name)


BUILDERS = {"mbconv_se": mbconv_se, "window_attention": window_attention, "segmentation": segmentation,
            "encoder_decoder": encoder_decoder}

__all__ = ["BUILDERS", "WIDER_KINDS", "encoder_decoder", "mbconv_se", "segmentation", "window_attention"]
