"""The compile calls themselves: argument forms, no device, ``openvino.compile_model``, configs, core properties,
query_model, and the errors a bad call raises."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.properties as props
import openvino.properties.hint as hints
import pytest

import ov_autoplace as oa
from ov_autoplace.devices.testbed import make_testbed
from tests.conformance import models

pytestmark = pytest.mark.slow


def _check_outputs(compiled: ov.CompiledModel) -> None:
    x = models.image()
    np.testing.assert_allclose(compiled(x)[0], models.relu_scale_reference(x), rtol=1e-6)


@pytest.mark.parametrize("form", ["positional", "keywords", "str_path", "pathlib_path", "bytes_path",
                                  "path_and_weights"])
def test_argument_forms(via, form, tmp_path):
    model = models.relu_scale_model()
    xml, weights = models.ir_files(model, tmp_path)
    with via.routing(model):
        if form == "positional":
            compiled = via.core.compile_model(model, via.device, {})
        elif form == "keywords":
            compiled = via.core.compile_model(model=model, device_name=via.device, config={})
        elif form == "str_path":
            compiled = via.core.compile_model(xml, via.device)
        elif form == "pathlib_path":
            compiled = via.core.compile_model(Path(xml), via.device)
        elif form == "bytes_path":
            compiled = via.core.compile_model(xml.encode(), via.device)
        else:
            compiled = via.core.compile_model(via.core.read_model(xml, weights), via.device)
    assert isinstance(compiled, ov.CompiledModel)
    _check_outputs(compiled)


@pytest.mark.parametrize("config", [None, {hints.performance_mode: hints.PerformanceMode.THROUGHPUT},
                                    {hints.execution_mode: hints.ExecutionMode.PERFORMANCE},
                                    {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 2}],
                         ids=["none", "throughput", "execution_mode", "latency_two_streams"])
def test_config_reaches_the_compiled_model(via, config):
    model = models.relu_scale_model()
    plain = via.core.compile_model(model, via.device, config)
    compiled = via.compile(model, config)
    requests = compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")
    if len(compiled.get_property("EXECUTION_DEVICES")) > len(plain.get_property("EXECUTION_DEVICES")):
        assert requests == 1  # HETERO's own answer for any split (a pipeline), whatever the config says
    else:
        assert requests == plain.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")
    _check_outputs(compiled)


def test_no_device(via_cpu):
    via = via_cpu
    model = models.relu_scale_model()
    with via.routing(model):
        compiled = via.core.compile_model(model)
    assert isinstance(compiled, ov.CompiledModel)
    assert set(compiled.get_property("EXECUTION_DEVICES")) <= {"CPU", "CPUF"}
    _check_outputs(compiled)


@pytest.mark.parametrize("model_as", ["model", "path"])
@pytest.mark.parametrize("config", [None, {hints.performance_mode: hints.PerformanceMode.THROUGHPUT}],
                         ids=["none", "throughput"])
@pytest.mark.parametrize("with_device", [True, False], ids=["device", "no_device"])
def test_openvino_compile_model(via_cpu, model_as, config, with_device, tmp_path):
    """``openvino.compile_model`` compiles on a new Core of its own, so only devices every Core has."""
    via = via_cpu
    model = models.relu_scale_model()
    argument = model if model_as == "model" else Path(models.ir_files(model, tmp_path)[0])
    with via.routing(model):
        if with_device:
            compiled = ov.compile_model(model=argument, device_name=via.device, config=config)
        else:
            compiled = ov.compile_model(model=argument, config=config)
    assert isinstance(compiled, ov.CompiledModel)
    _check_outputs(compiled)


def test_openvino_compile_model_rejects_an_object_that_is_not_a_path(via):
    class NotAPath:
        def __str__(self):
            return "not a path"

    with via.routing(models.relu_scale_model()), pytest.raises(RuntimeError, match="does not exist"):
        ov.compile_model(NotAPath())


def test_compile_model_rejects_a_missing_file(via, tmp_path):
    with via.routing(models.relu_scale_model()), pytest.raises(RuntimeError):
        via.core.compile_model(str(tmp_path / "missing.xml"), via.device)


def test_compile_model_rejects_a_model_of_the_wrong_type(via):
    with via.routing(models.relu_scale_model()), pytest.raises((TypeError, RuntimeError)):
        via.core.compile_model(3, via.device)


def test_compile_model_rejects_a_device_this_core_does_not_have(via):
    # a HETERO list naming a missing device is stricter routed (docs/call-forms.md): OpenVINO's HETERO loads only
    # the devices it assigns nodes to, so "HETERO:CPU,NOT_A_DEVICE" compiles on CPU plain
    with via.routing(models.relu_scale_model()), pytest.raises(RuntimeError):
        via.core.compile_model(models.relu_scale_model(), "NOT_A_DEVICE")


def test_compile_model_rejects_a_bad_property_value(via):
    with via.routing(models.relu_scale_model()), pytest.raises(RuntimeError):
        via.core.compile_model(models.relu_scale_model(), via.device, {"PERFORMANCE_HINT": "FAST"})


def test_properties_set_on_the_core_are_seen(via):
    """``core.set_property`` on the app's core (profiling on ``CPU``, HETERO's first device) reaches the compile."""
    testbed = make_testbed(like_for_like=True)  # a core of its own: the setting must not leak into other tests
    testbed.core.set_property("CPU", {props.enable_profiling: True})
    testbed.core.set_property("CPUF", {props.enable_profiling: True})
    compiled = via.compile(models.softmax_model(), core=testbed.core)
    request = compiled.create_infer_request()
    request.infer({"data": models.image()})
    executed = [info for info in request.get_profiling_info() if info.status == ov.ProfilingInfo.Status.EXECUTED]
    assert any(info.node_type == "Softmax" for info in executed)


def test_query_model_is_openvinos(via):
    model = models.relu_scale_model()
    plain = via.core.query_model(model, via.device)
    with via.routing(model):
        routed = via.core.query_model(model, via.device)
    assert routed == plain
    names = {op.friendly_name for op in model.get_ordered_ops()}
    assert set(plain) <= names and set(plain.values()) <= {"CPU", "CPUF"}


def test_route_is_off_after_the_block(via):
    with via.routing(models.relu_scale_model()):
        assert oa.routing.is_routed() is via.routed
    assert not oa.routing.is_routed()
