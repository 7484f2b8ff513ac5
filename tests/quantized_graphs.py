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


def quantize_convolutions(model: ov.Model, inputs: list[np.ndarray]) -> ov.Model:
    """An int8 copy of ``model``: min/max-calibrated FakeQuantize on every Convolution input, i8 weights.

    Calibration runs the f32 model once on ``inputs`` (like NNCF's min-max
    preset on one sample); weights are quantized symmetrically per output
    channel and dequantized by Convert -> Subtract -> Multiply.
    """
    from ov_autoplace.model.prepare import prepare_model  # folds f16 weight decompression into f32 Constants

    quantized = prepare_model(model)
    convs = [op for op in quantized.get_ordered_ops() if op.get_type_name() == "Convolution"
             and op.input_value(1).get_node().get_type_name() == "Constant"]
    probe = quantized.clone()
    probe_convs = {op.get_friendly_name(): op for op in probe.get_ordered_ops()}
    sources: dict[tuple[str, int], int] = {}  # one probe per tensor (a tensor may feed several convolutions)
    for c in convs:
        src = probe_convs[c.get_friendly_name()].input_value(0)
        sources.setdefault((src.get_node().get_friendly_name(), src.get_index()), len(sources))
    probe.add_outputs([probe_convs[name].output(i) for name, i in sources])
    results = ov.Core().compile_model(probe, "CPU")(inputs)
    first = len(probe.outputs) - len(sources)
    ranges = []
    for c in convs:
        src = c.input_value(0)
        ranges.append(np.asarray(results[first + sources[(src.get_node().get_friendly_name(), src.get_index())]]))
    for conv, seen in zip(convs, ranges):
        low, high = float(seen.min()), float(seen.max())
        if high - low < 1e-6:
            high = low + 1e-3
        lo, hi = ops.constant(np.array(low, np.float32)), ops.constant(np.array(high, np.float32))
        conv.input(0).replace_source_output(ops.fake_quantize(conv.input_value(0), lo, hi, lo, hi, 256).output(0))
        w = conv.input_value(1).get_node().get_data().astype(np.float32)
        per_channel = np.maximum(np.abs(w).reshape(w.shape[0], -1).max(axis=1), 1e-8)
        scale = per_channel.reshape((-1,) + (1,) * (w.ndim - 1)) / 127
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        deq = ops.multiply(ops.subtract(ops.convert(ops.constant(q), np.float32),
                                        ops.constant(np.zeros_like(scale, dtype=np.float32))),
                           ops.constant(scale.astype(np.float32)))
        conv.input(1).replace_source_output(deq.output(0))
    quantized.validate_nodes_and_infer_types()
    return quantized



def conv_precisions(compiled) -> dict[str, str]:
    """runtimePrecision of every Convolution of a compiled model (HETERO merges its submodels' runtime graphs)."""
    out = {}
    for op in compiled.get_runtime_model().get_ops():
        rt = op.get_rt_info()
        if rt["layerType"].astype(str) == "Convolution":
            out[op.get_friendly_name()] = rt["runtimePrecision"].astype(str)
    return out


__all__ = ["conv_precisions", "int8_convnet", "quantize_convolutions"]
