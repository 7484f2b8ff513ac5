"""Small int8 models built from opsets, as NNCF would quantize them.

Activations are quantized by FakeQuantize (256 levels, u8 range); weights are
stored as i8 Constants with a dequantization subgraph Convert -> Subtract
(zero point) -> Multiply (per-channel scale). OpenVINO's low-precision
transformations turn each FakeQuantize -> Convolution pair into a u8/i8
kernel on the CPU plugin.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
from openvino import opset13 as ops


def _fake_quantize(x, low: float, high: float):
    lo = ops.constant(np.array(low, dtype=np.float32))
    hi = ops.constant(np.array(high, dtype=np.float32))
    return ops.fake_quantize(x, lo, hi, lo, hi, 256)


def _int8_weights(rng, cout: int, cin: int, k: int):
    q = rng.integers(-127, 128, size=(cout, cin, k, k)).astype(np.int8)
    w = ops.convert(ops.constant(q), np.float32)
    w = ops.subtract(w, ops.constant(np.zeros((cout, 1, 1, 1), dtype=np.float32)))
    scale = (rng.uniform(0.5, 1.5, size=(cout, 1, 1, 1)) / (127.0 * np.sqrt(cin * k * k))).astype(np.float32)
    return ops.multiply(w, ops.constant(scale))


def int8_convnet(blocks: int = 4, channels: int = 16, size: int = 16, seed: int = 3) -> ov.Model:
    """``blocks`` x (FakeQuantize -> Convolution(int8 weights) -> bias -> ReLU), then a pooled head."""
    rng = np.random.default_rng(seed)
    x = ops.parameter([1, 3, size, size], np.float32, name="input")
    h, cin = ops.relu(x), 3
    for b in range(blocks):
        q = _fake_quantize(h, 0.0, 4.0)
        q.set_friendly_name(f"fq{b}")
        conv = ops.convolution(q, _int8_weights(rng, channels, cin, 3), [1, 1], [1, 1], [1, 1], [1, 1])
        conv.set_friendly_name(f"conv{b}")
        h = ops.relu(ops.add(conv, ops.constant(rng.standard_normal((1, channels, 1, 1)).astype(np.float32) * 0.1)))
        cin = channels
    pooled = ops.reduce_mean(h, ops.constant(np.array([2, 3], dtype=np.int64)), keep_dims=False)
    out = ops.matmul(pooled, ops.constant(rng.standard_normal((channels, 10)).astype(np.float32) * 0.1), False, False)
    out.set_friendly_name("logits")
    return ov.Model([out], [x], "int8_convnet")


__all__ = ["int8_convnet"]
