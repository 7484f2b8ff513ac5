import openvino as ov
import pytest

from ov_autoplace import DeviceError, PropertyError
from ov_autoplace.devices import (
    check_devices_present,
    check_properties,
    devices_present,
    parse_device_string,
    plugin_library,
    register_virtual_device,
)


@pytest.mark.parametrize(
    "text, meta, devices",
    [
        ("CPU", None, ("CPU",)),
        ("GPU.1", None, ("GPU.1",)),
        ("HETERO:GPU,CPU", "HETERO", ("GPU", "CPU")),
        ("HETERO: GPU , CPU ", "HETERO", ("GPU", "CPU")),
        ("AUTO:GPU,CPU", "AUTO", ("GPU", "CPU")),
        ("HETERO:CPU", "HETERO", ("CPU",)),
    ],
)
def test_parse_valid(text, meta, devices):
    spec = parse_device_string(text)
    assert spec.meta == meta and spec.devices == devices
    assert spec.is_placement == (meta == "HETERO" and len(devices) > 1)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty"),
        ("HETERO", "needs a device list"),
        ("HETERO:", "lists no devices"),
        ("HETERO:CPU,,GPU", "empty device name"),
        ("HETERO:CPU,CPU", "more than once"),
        ("hetero:CPU", "upper case"),
        ("cpu", "did you mean 'CPU'"),
        ("FOO:CPU", "unknown meta device"),
        ("HETERO:CPU:GPU", "more than one ':'"),
        ("HETERO:C-PU", "malformed"),
        (42, "must be a str"),
        (None, "must be a str"),
    ],
)
def test_parse_malformed(text, fragment):
    with pytest.raises(DeviceError, match=None) as info:
        parse_device_string(text)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)  # callers' `except ValueError` still works


def test_missing_device_names_available_ones():
    core = ov.Core()
    with pytest.raises(DeviceError) as info:
        check_devices_present(core, ["GPU", "CPU"])
    message = str(info.value)
    assert "GPU" in message and "CPU" in message and "this machine has" in message


def test_present_device_passes():
    check_devices_present(ov.Core(), ["CPU"])


@pytest.mark.parametrize("config", [[("A", 1)], "PERFORMANCE_HINT=LATENCY", {1: "x"}, {"": 1}, {"NUM_STREAMS": None}])
def test_malformed_properties(config):
    with pytest.raises(PropertyError):
        check_properties(config)


def test_virtual_device_registers_and_is_idempotent():
    core = ov.Core()
    register_virtual_device(core, "CPUX", properties={"INFERENCE_NUM_THREADS": 1})
    register_virtual_device(core, "CPUX", properties={"INFERENCE_NUM_THREADS": 2})
    assert "CPUX" in core.available_devices
    assert core.get_property("CPUX", "INFERENCE_NUM_THREADS") == 2
    assert core.get_property("CPU", "INFERENCE_NUM_THREADS") == 0  # the real CPU is untouched


@pytest.mark.parametrize("name", ["CPU.F", "cpuf", "HETERO", "CPU", "", 3])
def test_virtual_device_bad_names(name):
    with pytest.raises(DeviceError):
        register_virtual_device(ov.Core(), name)


def test_virtual_device_bad_property():
    with pytest.raises(PropertyError):
        register_virtual_device(ov.Core(), "CPUY", properties={"NOT_A_PROPERTY": 1})


def test_plugin_library():
    assert plugin_library("CPU").is_file()
    with pytest.raises(DeviceError):
        plugin_library("TPU")


def test_devices_present(testbed):
    assert devices_present(testbed.core, testbed.devices)
    assert not devices_present(testbed.core, ("CPU", "GPU"))
    assert not devices_present(None, ("CPU",))
