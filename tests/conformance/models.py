"""Small synthetic models built with OpenVINO opsets, each with the names and shapes its tests check."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset13 as ops

IMAGE_SHAPE = (1, 3, 32, 32)


def image(shape=IMAGE_SHAPE, seed: int = 42) -> np.ndarray:
    """A centred random image: half its values negative, so a Relu changes it."""
    return (np.random.default_rng(seed).random(shape) - 0.5).astype(np.float32)


def relu_scale_model(shape=IMAGE_SHAPE) -> ov.Model:
    """``data`` -> Relu -> x2 (``scaled``): two compute ops, so the split variant really splits."""
    data = ops.parameter(list(shape), np.float32, name="data")
    relu = ops.relu(data, name="relu")
    scaled = ops.multiply(relu, ops.constant(np.float32(2.0)), name="scaled")
    scaled.output(0).get_tensor().set_names({"scaled"})
    return ov.Model([scaled], [data], "test_model")


def relu_scale_reference(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0) * 2


def add_model(shape=(2, 2), element_type=ov.Type.f32) -> ov.Model:
    """``data1 + data2``, then Abs (two compute ops)."""
    a = ops.parameter(list(shape), element_type, name="data1")
    b = ops.parameter(list(shape), element_type, name="data2")
    return ov.Model([ops.abs(ops.add(a, b, name="sum"), name="abs")], [a, b], "add_model")


def concat_model(element_type: ov.Type, length: int = 5) -> ov.Model:
    """Two inputs of ``element_type`` concatenated (one compute op)."""
    params = [ops.parameter([length], element_type, name=f"in{i}") for i in range(2)]
    return ov.Model([ops.concat(params, 0)], params, "concat_model")


def concat_inputs(element_type: ov.Type, dtype) -> tuple[list, np.ndarray]:
    """``concat_model``'s two inputs, one a Tensor and one an array of ``dtype``, and the output they give."""
    tensor = ov.Tensor(element_type, [5])
    tensor.data[:] = np.array([6, 7, 8, 9, 0])
    array = np.array([1, 2, 3, 4, 5], dtype=dtype)
    return [tensor, array], np.concatenate((tensor.data, array))


def abs_model(element_type: ov.Type, shape=(1, 4)) -> ov.Model:
    param = ops.parameter(list(shape), element_type, name="data")
    return ov.Model([ops.abs(param, name="abs")], [param], "abs_model")


def many_inputs_model(count: int = 6) -> ov.Model:
    """``count`` u8 inputs of shape [1] concatenated and split back into ``count`` outputs."""
    params = [ops.parameter([1], ov.Type.u8, name=f"in{i}") for i in range(count)]
    split = ops.split(ops.concat(params, 0), 0, count)
    return ov.Model(split.outputs(), params, "many_inputs")


def split_outputs_model() -> ov.Model:
    """f64 [10] -> Split into 5 outputs, each x1 (so there is compute on both sides of the split)."""
    data = ops.parameter([10], ov.Type.f64, name="data")
    parts = ops.split(ops.relu(data), 0, 5)
    return ov.Model(parts.outputs(), [data], "split_outputs")


def scalar_model() -> ov.Model:
    data = ops.parameter([], np.float32, name="data")
    return ov.Model([ops.relu(ops.relu(data), name="relu")], [data], "scalar_model")


def dynamic_model() -> ov.Model:
    data = ops.parameter(ov.PartialShape([-1, -1]), np.float32, name="data")
    return ov.Model([ops.abs(ops.relu(data), name="abs")], [data], "dynamic_model")


def softmax_model() -> ov.Model:
    data = ops.parameter(list(IMAGE_SHAPE), np.float32, name="data")
    softmax = ops.softmax(ops.relu(data), 1, name="softmax")
    result = ops.result(softmax, name="res")
    result.output(0).get_tensor().set_names({"res"})
    return ov.Model([result], [data], "softmax_model")


def topk_model() -> ov.Model:
    """TopK with ``k`` an input: ``k`` larger than the data fails inside inference, not at compile."""
    data = ops.parameter([10], np.float32, name="data")
    k = ops.parameter([], np.int32, name="k")
    topk = ops.topk(ops.relu(data), k, axis=0, mode="max", sort="value")
    return ov.Model(topk.outputs(), [data, k], "topk_model")


def stateful_model(shape=(1, 4)) -> ov.Model:
    """``state += data``; the output is the new state (a ReadValue/Assign pair named ``acc``)."""
    data = ops.parameter(list(shape), np.float32, name="data")
    init = ops.constant(np.zeros(shape, np.float32))
    read = ops.read_value(init, "acc", np.float32, list(shape))
    add = ops.add(read, ops.relu(data), name="accumulate")
    assign = ops.assign(add, "acc")
    result = ops.result(add, name="res")
    return ov.Model(results=[result], sinks=[assign], parameters=[data], name="stateful_model")


def ir_files(model: ov.Model, folder) -> tuple[str, str]:
    """The model saved as an f32 IR in ``folder``: (xml path, bin path)."""
    xml, weights = str(folder / "model.xml"), str(folder / "model.bin")
    ov.save_model(model, xml, compress_to_fp16=False)
    return xml, weights
