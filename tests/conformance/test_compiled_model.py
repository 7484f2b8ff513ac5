"""CompiledModel: properties, inputs and outputs, direct calls, export/import, the runtime model, memory release."""

from __future__ import annotations

import base64
import io

import numpy as np
import openvino as ov
import openvino.properties as props
import pytest

from tests.conformance import models

pytestmark = pytest.mark.slow


@pytest.fixture
def compiled(via):
    return via.compile(models.relu_scale_model())


def test_model_name_and_runtime_model(compiled):
    assert compiled.get_property(props.model_name) == "test_model"
    assert isinstance(compiled.get_runtime_model(), ov.Model)


def test_properties_answer_as_the_plain_call(via, compiled):
    """Every supported property reads, with the plain call's type; a HETERO string answers HETERO's own."""
    plain = via.core.compile_model(models.relu_scale_model(), via.device)
    names = {str(p) for p in plain.get_property(props.supported_properties)}
    assert {str(p) for p in compiled.get_property(props.supported_properties)} == names
    for name in names:
        assert type(compiled.get_property(name)) is type(plain.get_property(name)), name
    for name in {"PERFORMANCE_HINT", "OPTIMAL_NUMBER_OF_INFER_REQUESTS", "NETWORK_NAME"} & names:
        assert str(compiled.get_property(name)) == str(plain.get_property(name)), name
    if via.device.startswith("HETERO"):
        assert compiled.get_property("MULTI_DEVICE_PRIORITIES") == plain.get_property("MULTI_DEVICE_PRIORITIES")
    devices = set(compiled.get_property("EXECUTION_DEVICES"))
    assert devices == ({"CPU", "CPUF"} if via.how == "split" else {"CPU"})  # the split variant really splits


def test_unknown_property_raises_runtime_error(compiled):
    with pytest.raises(RuntimeError):
        compiled.get_property("NOT_A_PROPERTY")


@pytest.mark.parametrize("arguments", [[0], ["data"], []], ids=["index", "name", "none"])
def test_input_lookup(compiled, arguments):
    port = compiled.input(*arguments)
    assert isinstance(port, ov.ConstOutput)
    assert port.get_node().friendly_name == "data" and port.get_index() == 0
    assert port.get_element_type() == ov.Type.f32 and list(port.get_shape()) == list(models.IMAGE_SHAPE)


@pytest.mark.parametrize("arguments", [[0], ["scaled"], []], ids=["index", "name", "none"])
def test_output_lookup(compiled, arguments):
    port = compiled.output(*arguments)
    assert isinstance(port, ov.ConstOutput)
    assert port.get_element_type().get_type_name() == "f32"
    assert str(port.get_shape()) == str(ov.Shape(list(models.IMAGE_SHAPE)))


def test_inputs_and_outputs_lists(compiled):
    assert isinstance(compiled.inputs, list) and len(compiled.inputs) == 1
    assert isinstance(compiled.outputs, list) and len(compiled.outputs) == 1
    assert all(isinstance(port, ov.ConstOutput) for port in compiled.inputs + compiled.outputs)
    assert compiled.inputs[0].any_name == "data" and "scaled" in compiled.outputs[0].names


def test_port_lookup_errors(compiled):
    with pytest.raises(RuntimeError):
        compiled.input("not_an_input")
    with pytest.raises(RuntimeError):
        compiled.output(5)


def test_friendly_name_of_an_input_node_can_be_set(compiled):
    node = compiled.input("data").get_node()
    node.set_friendly_name("input_1")
    assert node.friendly_name == "input_1"


@pytest.mark.parametrize("data_as", ["array", "tensor", "shared_tensor"])
def test_infer_new_request(compiled, data_as):
    x = models.image()
    data = {"array": x, "tensor": ov.Tensor(x), "shared_tensor": ov.Tensor(x, shared_memory=True)}[data_as]
    result = compiled.infer_new_request({"data": data})
    out = result[compiled.outputs[0]]
    assert isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == models.IMAGE_SHAPE
    np.testing.assert_allclose(out, models.relu_scale_reference(x), rtol=1e-6)


def test_infer_new_request_rejects_a_wrong_name_and_a_wrong_key_type(compiled):
    x = models.image()
    with pytest.raises(RuntimeError, match="Check"):
        compiled.infer_new_request({"_data_": ov.Tensor(x)})
    with pytest.raises(TypeError, match="Incompatible key type"):
        compiled.infer_new_request({0.0: ov.Tensor(x)})


@pytest.mark.parametrize("share_inputs", [True, False])
def test_direct_call_equals_a_new_request(compiled, share_inputs):
    x = models.image()
    direct = compiled({"data": ov.Tensor(x)}, share_inputs=share_inputs)
    again = compiled.infer_new_request({"data": ov.Tensor(x)})
    np.testing.assert_array_equal(direct[compiled.outputs[0]], again[compiled.outputs[0]])


@pytest.mark.parametrize("share_outputs", [True, False])
def test_direct_call_shares_outputs_only_when_asked(compiled, share_outputs):
    out = compiled(models.image(), share_outputs=share_outputs)[0]
    assert out.flags["OWNDATA"] is (not share_outputs)


@pytest.mark.parametrize("into", ["bytes", "stream", "file"])
def test_export_imports_with_the_same_device_string(via, compiled, into, tmp_path):
    if props.device.Capability.EXPORT_IMPORT not in via.core.get_property("CPU", props.device.capabilities):
        pytest.skip("the CPU plugin cannot export here")
    if into == "bytes":
        blob = compiled.export_model()
    else:
        stream = io.BytesIO()
        compiled.export_model(stream)
        blob = stream
        if into == "file":
            (tmp_path / "model.blob").write_bytes(stream.getbuffer())
            blob = (tmp_path / "model.blob").read_bytes()
    imported = via.core.import_model(blob, via.device)
    x = models.image()
    np.testing.assert_allclose(imported.infer_new_request({"data": x})[imported.outputs[0]],
                               models.relu_scale_reference(x), rtol=1e-6)


def test_export_import_with_encryption_callbacks(via):
    # the callbacks take the blob (bytes in OpenVINO 2026.4) and give bytes back: an encoding both ways
    config = {"CACHE_ENCRYPTION_CALLBACKS": [base64.b64encode, base64.b64decode]}
    compiled = via.compile(models.relu_scale_model(), config)
    imported = via.core.import_model(compiled.export_model(), via.device, config)
    x = models.image()
    np.testing.assert_allclose(imported(x)[0], models.relu_scale_reference(x), rtol=1e-6)


def test_import_on_a_device_string_the_blob_is_not_for_raises(via, compiled):
    if via.device.startswith("HETERO"):
        with pytest.raises(RuntimeError):
            via.core.import_model(compiled.export_model(), "CPU")


def test_compiled_model_outlives_its_core_and_model(via):
    from ov_autoplace.devices.testbed import make_testbed

    testbed = make_testbed(like_for_like=True)  # a core of its own, dropped below
    core, model = testbed.core, models.relu_scale_model()
    compiled = via.compile(model, core=core)
    del core, model, testbed
    x = models.image()
    np.testing.assert_allclose(compiled(x)[0], models.relu_scale_reference(x), rtol=1e-6)


def test_compile_from_xml_text_and_weights_in_memory(via, tmp_path):
    xml, weights = models.ir_files(models.relu_scale_model(), tmp_path)
    with via.routing(models.relu_scale_model()):
        compiled = via.core.compile_model(model=open(xml).read(), weights=open(weights, "rb").read(),
                                          device_name=via.device)
    assert isinstance(compiled.outputs[0], ov.ConstOutput)
    x = models.image()
    np.testing.assert_allclose(compiled(x)[0], models.relu_scale_reference(x), rtol=1e-6)


def test_release_memory_then_infer_again(via):
    compiled = via.compile(models.concat_model(ov.Type.f32))
    request = compiled.create_infer_request()
    a = np.arange(5, dtype=np.float32)
    first = request.infer({0: a, 1: -a})[0].copy()
    compiled.release_memory()
    np.testing.assert_array_equal(request.infer({0: a, 1: -a})[0], first)
