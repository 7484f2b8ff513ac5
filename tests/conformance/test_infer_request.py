"""InferRequest, synchronous: input forms, tensors and their sharing, element types, dynamic shapes, profiling,
and the errors bad inputs raise."""

from __future__ import annotations

from copy import deepcopy

import numpy as np
import openvino as ov
import openvino.properties as props
import pytest

from tests.conformance import models

pytestmark = pytest.mark.slow

#: Element types and the numpy dtype a caller passes for them (bf16 takes f16 data, as OpenVINO's tests do).
ELEMENT_TYPES = [(ov.Type.f32, np.float32), (ov.Type.f16, np.float16), (ov.Type.bf16, np.float16),
                 (ov.Type.f64, np.float64), (ov.Type.i8, np.int8), (ov.Type.u8, np.uint8),
                 (ov.Type.i32, np.int32), (ov.Type.u32, np.uint32), (ov.Type.i64, np.int64),
                 (ov.Type.boolean, bool)]


@pytest.fixture
def image_request(via):
    compiled = via.compile(models.relu_scale_model())
    return compiled, compiled.create_infer_request()


@pytest.fixture
def add_request(via):
    compiled = via.compile(models.add_model())
    a = np.array([[1, -2], [3, -4]], dtype=np.float32)
    b = np.array([[3, 4], [-1, -2]], dtype=np.float32)
    return compiled.create_infer_request(), a, b


@pytest.mark.parametrize("share_inputs", [True, False])
@pytest.mark.parametrize("keys", ["names", "indices", "compiled_ports", "request_ports", "list", "tuple", "mixed"])
def test_input_forms(add_request, keys, share_inputs):
    request, a, b = add_request
    if keys == "names":
        inputs = {"data1": a, "data2": b}
    elif keys == "indices":
        inputs = {0: a, 1: b}
    elif keys == "compiled_ports":
        compiled = request.get_compiled_model()
        inputs = {compiled.inputs[0]: ov.Tensor(a), compiled.inputs[1]: ov.Tensor(b)}
    elif keys == "request_ports":
        inputs = {request.model_inputs[0]: a, request.model_inputs[1]: b}
    elif keys == "list":
        inputs = [a, b]
    elif keys == "tuple":
        inputs = (a, b)
    else:
        inputs = {0: a, "data2": ov.Tensor(b)}
    before = deepcopy(inputs) if keys not in ("compiled_ports", "request_ports", "mixed") else None
    result = request.infer(inputs, share_inputs=share_inputs)
    np.testing.assert_array_equal(result[request.model_outputs[0]], np.abs(a + b))
    if before is not None:  # the caller's container is not replaced
        np.testing.assert_equal(inputs, before)


def test_results_and_tensors_agree(via):
    compiled = via.compile(models.split_outputs_model())
    request = compiled.create_infer_request()
    x = np.random.default_rng(3).normal(size=10)
    results = request.infer([x])
    for output in compiled.outputs:
        np.testing.assert_array_equal(results[output], request.results[output])
    for got, tensor in zip(results.values(), request.output_tensors):
        np.testing.assert_array_equal(got, tensor.data)
    np.testing.assert_allclose(np.concatenate(list(results.values())), np.maximum(x, 0), rtol=1e-6)  # f64 runs as f32


def test_input_and_output_tensors_of_many_ports(via):
    compiled = via.compile(models.many_inputs_model(6))
    request = compiled.create_infer_request()
    data = [np.atleast_1d(np.uint8(i)) for i in range(6)]
    results = list(request.infer(data).values())
    assert len(request.input_tensors) == 6 and len(request.output_tensors) == 6
    for given, tensor, result in zip(data, request.input_tensors, results):
        np.testing.assert_array_equal(tensor.data, given)
        np.testing.assert_array_equal(result, given)
        assert list(tensor.get_shape()) == [1]


def test_set_and_get_tensors_by_name_port_and_index(via):
    compiled = via.compile(models.softmax_model())
    request = compiled.create_infer_request()
    x, ones, zeros = models.image(), np.ones(models.IMAGE_SHAPE, np.float32), np.zeros(models.IMAGE_SHAPE, np.float32)
    request.set_tensors({"data": ov.Tensor(x), "res": ov.Tensor(ones)})
    np.testing.assert_array_equal(request.get_tensor("data").data, x)
    np.testing.assert_array_equal(request.get_tensor("res").data, ones)
    request.set_input_tensor(ov.Tensor(ones))
    np.testing.assert_array_equal(request.get_tensor(compiled.inputs[0]).data, ones)
    request.set_input_tensor(0, ov.Tensor(x))
    request.set_output_tensor(0, ov.Tensor(zeros))
    np.testing.assert_array_equal(request.get_tensor(request.model_outputs[0]).data, zeros)
    request.set_input_tensors({0: ov.Tensor(x)})
    request.set_output_tensors({0: ov.Tensor(zeros)})
    request.infer()
    expected = np.exp(np.maximum(x, 0)) / np.exp(np.maximum(x, 0)).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(request.get_output_tensor().data, expected, rtol=1e-5)


def test_user_tensors_share_memory(image_request):
    """A tensor made with ``shared_memory=True`` is the request's input: writing the array changes what runs."""
    compiled, request = image_request
    x = np.ascontiguousarray(models.image())
    request.set_tensor("data", ov.Tensor(x, shared_memory=True))
    out = request.get_output_tensor().data
    for value in (1.0, -1.0, 3.0):
        x[:] = value
        request.infer()
        np.testing.assert_allclose(out, models.relu_scale_reference(x), rtol=1e-6)


@pytest.mark.parametrize("share_inputs", [True, False])
@pytest.mark.parametrize("share_outputs", [True, False])
def test_infer_shares_inputs_and_outputs_only_when_asked(via, share_inputs, share_outputs):
    compiled = via.compile(models.abs_model(ov.Type.f32))
    request = compiled.create_infer_request()
    x = np.array([[-1, 2, 5, -3]], dtype=np.float32)
    results = request.infer(x, share_inputs=share_inputs, share_outputs=share_outputs)
    np.testing.assert_array_equal(results[0], np.abs(x))
    assert np.shares_memory(request.get_input_tensor(0).data, x) is share_inputs
    assert np.shares_memory(request.get_output_tensor(0).data, results[0]) is share_outputs
    assert results[0].flags["OWNDATA"] is (not share_outputs)


@pytest.mark.parametrize("share_inputs", [True, False])
def test_read_only_inputs_are_copied(via, share_inputs):
    compiled = via.compile(models.abs_model(ov.Type.u8, shape=(4,)))
    data = np.frombuffer(b"\x01\x02\x03\x04", np.uint8)
    request = compiled.create_infer_request()
    np.testing.assert_array_equal(request.infer({0: data}, share_inputs=share_inputs)[0], data)
    assert not np.shares_memory(data, request.get_input_tensor(0).data)


@pytest.mark.parametrize("share_inputs", [True, False])
@pytest.mark.parametrize("value", [np.array(1.5, dtype=np.float32), np.float32(-2.0), 3.0, 1],
                         ids=["array", "numpy_scalar", "float", "int"])
def test_scalar_inputs(via, value, share_inputs):
    compiled = via.compile(models.scalar_model())
    request = compiled.create_infer_request()
    result = request.infer(value, share_inputs=share_inputs)
    assert result[request.model_outputs[0]] == np.maximum(np.float32(value), 0)
    shared = np.shares_memory(value, request.get_input_tensor().data)
    assert shared is (share_inputs and isinstance(value, np.ndarray))


@pytest.mark.parametrize(("element_type", "dtype"), ELEMENT_TYPES, ids=[str(t) for t, _ in ELEMENT_TYPES])
def test_element_types(via, element_type, dtype):
    """A Tensor and an array of each element type, concatenated exactly (plain and routed compile the same op)."""
    compiled = via.compile(models.concat_model(element_type))
    request = compiled.create_infer_request()
    inputs, expected = models.concat_inputs(element_type, dtype)
    request.infer(inputs)
    np.testing.assert_array_equal(request.output_tensors[0].data, expected)


@pytest.mark.parametrize(("element_type", "dtype"), [(ov.Type.f32, np.float32), (ov.Type.i32, np.int32),
                                                     (ov.Type.i64, np.int64), (ov.Type.f16, np.float16)])
def test_single_input_as_array_and_tensor(via, element_type, dtype):
    compiled = via.compile(models.abs_model(element_type))
    request = compiled.create_infer_request()
    array = np.array([[-1, 2, 5, -3]]).astype(dtype)
    request.infer(array)
    np.testing.assert_array_equal(request.get_output_tensor().data, np.abs(array))
    tensor = ov.Tensor(element_type, [1, 4])
    tensor.data[:] = np.array([6, -7, -8, 9])
    request.infer(tensor)
    np.testing.assert_array_equal(request.get_output_tensor().data, np.abs(tensor.data))


def test_array_like_inputs(via):
    class ArrayLike:  # as a torch or tf tensor: numpy reads it through __array__
        def __init__(self, values):
            self.values = values

        def __array__(self, dtype=None, copy=None):
            return np.array(self.values, dtype=np.float32)

    compiled = via.compile(models.abs_model(ov.Type.f32))
    request = compiled.create_infer_request()
    values = [[-1.0, 2.0, 5.0, -3.0]]
    for inputs in (ArrayLike(values), [ArrayLike(values)], {0: ArrayLike(values)}):
        np.testing.assert_array_equal(request.infer(inputs)[0], np.abs(values))


def test_dynamic_shapes(via):
    compiled = via.compile(models.dynamic_model())
    assert compiled.input().partial_shape.is_dynamic
    request = compiled.create_infer_request()
    for shape in ([1, 28], [2, 32], [1, 40]):
        x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
        result = request.infer([x])
        assert request.get_input_tensor().shape == ov.Shape(shape)
        np.testing.assert_allclose(result[0], np.maximum(x, 0), rtol=1e-6)


def test_request_knows_its_compiled_model(image_request):
    compiled, request = image_request
    again = request.get_compiled_model()
    assert isinstance(again, ov.CompiledModel)
    x = models.image()
    np.testing.assert_array_equal(request.infer({0: x})[0], again.create_infer_request().infer({0: x})[0])


def test_output_of_one_model_feeds_another(via):
    first = via.compile(models.relu_scale_model())
    second = via.compile(models.abs_model(ov.Type.f32, shape=models.IMAGE_SHAPE))
    result = second(first(models.image(), share_inputs=False), share_inputs=False)
    np.testing.assert_allclose(result[0], models.relu_scale_reference(models.image()), rtol=1e-6)


def test_profiling_info_with_perf_count(via):
    compiled = via.compile(models.softmax_model(), {props.enable_profiling: True})
    request = compiled.create_infer_request()
    request.infer({"data": models.image()})
    assert request.latency > 0
    info = request.get_profiling_info()
    softmax = next(node for node in info if node.node_type == "Softmax")
    assert softmax.status == ov.ProfilingInfo.Status.EXECUTED
    assert softmax.real_time.total_seconds() >= 0 and isinstance(softmax.exec_type, str)


def test_results_cannot_be_deep_copied(add_request):
    request, a, b = add_request
    with pytest.raises(TypeError, match="deepcopy"):
        deepcopy(request.infer([a, b]))


def test_bad_inputs_raise_openvinos_exceptions(add_request):
    request, a, b = add_request

    class NotAnInput:
        pass

    with pytest.raises(TypeError, match="Incompatible inputs"):
        request.infer(NotAnInput())
    with pytest.raises(RuntimeError):
        request.infer({"not_an_input": a, "data2": b})
    with pytest.raises(RuntimeError):
        request.set_tensor("data1", ov.Tensor(np.zeros((3, 3), np.float32)))  # wrong shape
    with pytest.raises(RuntimeError):
        request.set_tensor("data1", ov.Tensor(np.zeros((2, 2), np.int32)))  # wrong element type
    with pytest.raises(RuntimeError):
        request.get_tensor("not_a_tensor")
    with pytest.raises((RuntimeError, IndexError)):
        request.get_input_tensor(7)
