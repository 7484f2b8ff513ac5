import numpy as np
import pytest

import ov_autoplace as oa
from ov_autoplace._native_loader import load_native
from tests import synthetic_graphs as sg
from ov_autoplace.devices.timing import input_sample, measure_latency, random_inputs, round_order


def test_native_timer_returns_every_sample(testbed):
    compiled = testbed.core.compile_model(sg.residual(), "CPU")
    stats = measure_latency(compiled, warmup=1, iterations=15)
    assert stats.samples_ms.shape == (15,)
    assert (stats.samples_ms > 0).all()
    p25, p75 = stats.iqr_ms
    assert np.min(stats.samples_ms) <= p25 <= stats.median_ms <= p75
    assert "ms" in str(stats)


def test_timer_budget_stops_early(testbed):
    compiled = testbed.core.compile_model(sg.attention_like(), "CPU")
    samples = load_native().time_inference(compiled, random_inputs(compiled), 0, 100000, 0.05)
    assert 1 <= len(samples) < 100000


def test_timer_bad_arguments(testbed):
    compiled = testbed.core.compile_model(sg.residual(), "CPU")
    native = load_native()
    inputs = random_inputs(compiled)
    with pytest.raises(ValueError, match="iterations"):
        native.time_inference(compiled, inputs, 0, 0, 0.0)
    with pytest.raises(ValueError, match="1 inputs, got 2"):
        native.time_inference(compiled, inputs * 2, 0, 1, 0.0)
    with pytest.raises(TypeError, match="CompiledModel"):
        native.time_inference(sg.residual(), inputs, 0, 1, 0.0)
    with pytest.raises(TypeError, match="dtype"):
        native.time_inference(compiled, [np.array(["a"], dtype=object)], 0, 1, 0.0)
    with pytest.raises(RuntimeError):  # wrong shape: OpenVINO's own message, not a crash
        native.time_inference(compiled, [np.zeros((2, 2), np.float32)], 0, 1, 0.0)


def test_random_inputs_match_model(testbed):
    compiled = testbed.core.compile_model(sg.bool_and_string(), "CPU")
    with pytest.raises(ValueError, match="element type"):
        random_inputs(compiled)  # the string input cannot be generated
    dynamic = testbed.core.compile_model(sg.dynamic_shapes(), "CPU")
    with pytest.raises(ValueError, match="dynamic"):
        random_inputs(dynamic)
    arrays = random_inputs(testbed.core.compile_model(sg.with_if(), "CPU"))
    assert arrays[0].dtype == np.float32 and arrays[1].dtype == np.bool_


def _bf16_input_model():
    """A model whose input is bf16, as optimum-intel loads a non-stateful decoder's KV cache on a bf16 CPU."""
    import openvino as ov
    from openvino import opset13 as ops

    x = ops.parameter([2, 64], ov.Type.bf16, name="past")
    y = ops.matmul(ops.convert(x, ov.Type.f32), ops.constant(np.eye(64, dtype=np.float32)), False, False)
    return ov.Model([ops.result(ops.relu(y))], [x], "bf16_input")


def test_a_bf16_input_is_fed_as_bf16_numbers_to_both_timers_and_the_request(testbed, caplog):
    """numpy has no bf16: OpenVINO reads a numpy array into a bf16 input as f16 numbers (a uint16 array of bf16 bits
    became values near 1e31; an f16 array is refused by set_tensor), so the profiler fell back on such a model.
    random_inputs gives an ov.Tensor there; the native timer, fill_input and infer() take it."""
    import logging

    import openvino as ov

    from ov_autoplace.devices.timing import fill_input

    compiled = testbed.core.compile_model(_bf16_input_model(), "CPU")
    tensor = random_inputs(compiled)[0]
    assert isinstance(tensor, ov.Tensor) and tensor.element_type == ov.Type.bf16
    values = (tensor.data.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    assert 0.5 < values.std() < 2.0  # standard normal, truncated to bf16
    out = compiled([tensor])[0]
    assert np.allclose(out, np.maximum(values, 0))
    assert measure_latency(compiled, warmup=1, iterations=3).samples_ms.shape == (3,)  # the native timer
    request = compiled.create_infer_request()
    fill_input(request, 0, tensor)
    assert np.allclose(request.infer()[0], out)
    given = np.linspace(-3, 3, 128, dtype=np.float32).reshape(2, 64)  # an app's inputs= sample, bf16-exact values
    given = (given.view(np.uint32) & 0xFFFF0000).view(np.float32)
    with input_sample({"past": given.astype(np.float16)}):  # as model/input_sample.py keeps it (to_dtype: f16)
        sampled = random_inputs(compiled)[0]
    assert isinstance(sampled, ov.Tensor) and sampled.element_type == ov.Type.bf16
    assert np.allclose(compiled([sampled])[0], np.maximum(given, 0), atol=2e-2)
    with input_sample({"past": given}):
        assert measure_latency(compiled, warmup=0, iterations=2).samples_ms.shape == (2,)
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):  # a measuring strategy places it, no fallback
        oa.compile_model(_bf16_input_model(), testbed.hetero, core=testbed.core, strategy="heft", use_cache=False)
    assert not [r.getMessage() for r in caplog.records if "placement path failed" in r.getMessage()]


def test_round_order_rotates_so_each_contender_leads_once_per_cycle():
    labels = ["plain", "candidate", "single:CPU"]
    orders = [round_order(labels, r) for r in range(4)]
    assert orders[:3] == [labels, ["candidate", "single:CPU", "plain"], ["single:CPU", "plain", "candidate"]]
    assert orders[3] == labels and sorted(o[0] for o in orders[:3]) == sorted(labels)
    assert round_order(("only",), 7) == ["only"] and labels == ["plain", "candidate", "single:CPU"]
