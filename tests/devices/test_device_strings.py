import openvino as ov
import pytest

import openvino.properties as props
import openvino.properties.hint as hints

from ov_autoplace import DeviceError, PropertyError
from ov_autoplace.devices.device_strings import (
    check_devices_present,
    check_properties,
    normalized_exclusions,
    parse_device_string,
    plugin_library,
    register_virtual_device,
)


@pytest.mark.parametrize(
    "text, meta, devices, excluded",
    [
        ("CPU", None, ("CPU",), ()),
        ("GPU.1", None, ("GPU.1",), ()),
        ("HETERO:GPU,CPU", "HETERO", ("GPU", "CPU"), ()),
        ("HETERO:GPU, CPU ", "HETERO", ("GPU", "CPU"), ()),  # OpenVINO trims a HETERO list's later entries
        ("AUTO:GPU,CPU", "AUTO", ("GPU", "CPU"), ()),
        ("HETERO:CPU", "HETERO", ("CPU",), ()),
        ("AUTO", "AUTO", (), ()),  # AUTO's own candidates: resolved against a core (device_requests)
        ("HETERO", "HETERO", (), ()),  # devices from MULTI_DEVICE_PRIORITIES
        ("AUTO:-CPUF", "AUTO", (), ("CPUF",)),
        ("AUTO:GPU,-NPU", "AUTO", ("GPU",), ("NPU",)),
        ("MULTI:CPU(2),CPUF(3)", "MULTI", ("CPU", "CPUF"), ()),
        ("BATCH:CPU(4)", "BATCH", ("CPU",), ()),
        ("BATCH:AUTO", "BATCH", ("AUTO",), ()),
    ],
)
def test_parse_valid(text, meta, devices, excluded):
    spec = parse_device_string(text)
    assert spec.meta == meta and spec.devices == devices and spec.excluded == excluded
    assert spec.is_placement == (meta == "HETERO" and len(devices) > 1)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty"),
        ("  ", "omit it for OpenVINO's default"),
        ("HETERO:", "lists no devices"),
        ("AUTO:", "write 'AUTO' alone"),
        ("HETERO:CPU,,GPU", "empty device name"),
        ("HETERO:CPU,CPU", "more than once"),
        ("MULTI:CPU(2),CPU", "more than once"),
        ("AUTO:-CPU,-CPU", "excludes CPU more than once"),
        ("AUTO:CPU,-CPU", "both lists and excludes CPU"),
        ("HETERO:-CPU,CPUF", "only AUTO takes exclusions"),
        ("HETERO:CPU(2),CPUF", "HETERO takes no '(count)'"),
        ("BATCH:CPU(0)", "positive integer"),
        ("BATCH:CPU(x)", "positive integer"),
        ("BATCH:CPU,CPUF", "exactly one device"),
        ("hetero:CPU", "upper case"),
        ("auto", "upper case"),
        ("cpu", "did you mean 'CPU'"),
        ("FOO:CPU", "unknown meta device"),
        ("HETERO:CPU:GPU", "more than one ':'"),
        ("HETERO:C-PU", "malformed"),
        # OpenVINO looks these names up as written (core.compile_model: 'Device with " GPU " name is not registered')
        ("HETERO: GPU , CPU ", "white space"),
        ("HETERO:GPU ,CPU", "white space"),
        (" HETERO:GPU,CPU", "white space"),
        ("CPU ", "white space"),
        (42, "must be a str"),
        (None, "must be a str"),
    ],
)
def test_parse_malformed(text, fragment):
    with pytest.raises(DeviceError) as info:
        parse_device_string(text)
    assert fragment in str(info.value)
    # callers' `except ValueError` still works, and so does the `except RuntimeError` around core.compile_model
    assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)


def test_missing_device_names_available_ones():
    core = ov.Core()
    with pytest.raises(RuntimeError) as info:  # OpenVINO's own error for a missing device is a RuntimeError
        check_devices_present(core, ["GPU", "CPU"])
    message = str(info.value)
    assert isinstance(info.value, DeviceError)
    assert "GPU" in message and "CPU" in message and "this machine has" in message


def test_an_index_the_plugin_does_not_report_is_missing():
    """OpenVINO: 'CPU plugin supports only '' as device id' for "CPU.0"."""
    with pytest.raises(DeviceError, match="CPU.0 not available"):
        check_devices_present(ov.Core(), ["CPU.0"])


def test_present_device_passes():
    check_devices_present(ov.Core(), ["CPU"])


@pytest.mark.parametrize("config", [[("A", 1)], "PERFORMANCE_HINT=LATENCY", {1: "x"}, {"": 1}, {"NUM_STREAMS": None}])
def test_malformed_properties(config):
    with pytest.raises(PropertyError) as info:
        check_properties(config)
    assert isinstance(info.value, RuntimeError)


def test_openvino_properties_keys_are_their_names():
    """``{hints.performance_mode: ...}`` and ``dict([hints.performance_mode(...)])`` are configs OpenVINO takes."""
    config = {hints.performance_mode: hints.PerformanceMode.LATENCY, **dict([props.enable_profiling(True)])}
    assert list(check_properties(config)) == ["PERFORMANCE_HINT", "PERF_COUNT"]


@pytest.mark.parametrize("value, expected", [
    (None, None), ("CPUF", ("CPUF",)), ("GPU, NPU", ("GPU", "NPU")), (["CPUF"], ("CPUF",)),
    (("CPU", "CPUF"), ("CPU", "CPUF")),
])
def test_exclusions_as_given(value, expected):
    assert normalized_exclusions(value) == expected


@pytest.mark.parametrize("value, fragment", [
    ("CPU,,CPUF", "holds ''"), (["CPUF", 3], "holds 3"), (["CPUF", "CPUF"], "more than once"), (5, "got int"),
])
def test_malformed_exclusions(value, fragment):
    with pytest.raises(DeviceError, match=fragment):
        normalized_exclusions(value)


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


@pytest.mark.parametrize("base", ["CPU", "CPUF", "GPU", "NPU", "XPU", "HETERO", "AUTO", "MULTI", "BATCH"])
def test_one_plugin_lists_what_openvino_lists_for_it(testbed, base):
    """The presence check asks only the named plugins; it must agree with OpenVINO's whole list, name by name."""
    from ov_autoplace.devices.device_strings import _listed_by_plugin

    assert _listed_by_plugin(testbed.core, base) == [n for n in testbed.core.available_devices
                                                     if n.split(".")[0] == base]

