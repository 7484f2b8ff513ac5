"""device_requests: OpenVINO's meaning of a device argument + config on a real core, before any compile."""

from __future__ import annotations

import logging

import numpy as np
import openvino as ov
import openvino.properties.device as device_props
import pytest

import ov_autoplace as oa
from ov_autoplace.devices.call_forms import (auto_candidates, check_property_values, openvino_auto_excludes,
                                          resolve_device_request)
from ov_autoplace.devices.device_strings import register_virtual_device
from tests import synthetic_graphs as sg


def test_no_device_places_over_autos_candidates(testbed):
    spec, props = resolve_device_request(testbed.core, None, {})
    assert spec.text == "AUTO" and spec.from_default  # the plain call it must not be slower than is AUTO
    assert spec.meta == "HETERO" and spec.devices == ("CPU", "CPUF") and spec.is_placement


def test_no_device_on_a_cpu_only_core_is_exactly_a_cpu_compile():
    core = ov.Core()
    if core.available_devices != ["CPU"]:
        pytest.skip(f"not a CPU-only machine ({core.available_devices}): the call places (test above)")
    spec, _ = resolve_device_request(core, None, {"PERFORMANCE_HINT": "THROUGHPUT"})
    assert spec.meta is None and spec.plain == "CPU" and not spec.is_placement
    model = sg.residual()
    ours = oa.compile_model(model, core=core)
    plain = core.compile_model(model, "CPU")
    for name in ("EXECUTION_DEVICES", "PERFORMANCE_HINT", "NUM_STREAMS", "INFERENCE_PRECISION_HINT",
                 "INFERENCE_NUM_THREADS", "OPTIMAL_NUMBER_OF_INFER_REQUESTS"):
        assert str(ours.get_property(name)) == str(plain.get_property(name)), name
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_array_equal(ours(x)[0], plain(x)[0])


@pytest.mark.parametrize("core_setting, config", [
    ({"CPU": {"PERFORMANCE_HINT": "THROUGHPUT"}}, {}),   # a device's hint: AUTO hands its own (LATENCY)
    ({"AUTO": {"PERFORMANCE_HINT": "THROUGHPUT"}}, {}),  # AUTO's own property
    ({}, {"NOT_A_PROPERTY": 1}),                          # a key no device knows: AUTO compiles it
])
def test_no_device_hands_the_config_auto_hands(core_setting, config):
    core = ov.Core()
    if core.available_devices != ["CPU"]:
        pytest.skip(f"not a CPU-only machine ({core.available_devices}): the call places")
    for device, properties in core_setting.items():
        core.set_property(device, properties)
    model = sg.residual()
    plain = core.compile_model(model, config=dict(config))
    ours = oa.compile_model(model, config=dict(config), core=core)
    for name in ("EXECUTION_DEVICES", "PERFORMANCE_HINT", "OPTIMAL_NUMBER_OF_INFER_REQUESTS"):
        assert str(ours.get_property(name)).split(".")[-1] == str(plain.get_property(name)).split(".")[-1], name


@pytest.mark.parametrize("config, kept", [({"ENABLE_STARTUP_FALLBACK": False}, "ENABLE_STARTUP_FALLBACK"),
                                          ({"PERFORMANCE_HINT": "CUMULATIVE_THROUGHPUT"}, "CUMULATIVE_THROUGHPUT"),
                                          ({"MULTI_DEVICE_PRIORITIES": "CPUF"}, "MULTI_DEVICE_PRIORITIES")])
def test_no_device_with_autos_own_properties_stays_on_auto(testbed, caplog, config, kept):
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        spec, props = resolve_device_request(testbed.core, None, dict(config))
    assert spec.meta == "AUTO" and spec.plain == "AUTO" and props == config
    assert kept in caplog.text and "compiled by AUTO" in caplog.text


@pytest.mark.parametrize("priorities", ["CPU,CPUF", device_props.priorities("CPU", "CPUF")[1]])
def test_hetero_with_priorities_in_config_is_hetero_with_a_list(testbed, priorities):
    spec, props = resolve_device_request(testbed.core, "HETERO", {"MULTI_DEVICE_PRIORITIES": priorities,
                                                                  "PERF_COUNT": False})
    assert spec.text == "HETERO:CPU,CPUF" and spec.devices == ("CPU", "CPUF") and spec.is_placement
    assert props == {"PERF_COUNT": False}  # the priorities moved into the device string
    assert spec.given == "HETERO"


def test_pipeline_parallel_is_handed_to_hetero_with_an_info_line(testbed, caplog):
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        spec, props = resolve_device_request(testbed.core, "HETERO:CPU,CPUF",
                                             {"MODEL_DISTRIBUTION_POLICY": "PIPELINE_PARALLEL"})
    assert not spec.is_placement and spec.passed_through == "PIPELINE_PARALLEL" and spec.plain == "HETERO:CPU,CPUF"
    assert props == {"MODEL_DISTRIBUTION_POLICY": "PIPELINE_PARALLEL"}
    assert "PIPELINE_PARALLEL" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_auto_exclusion_openvino_would_widen_becomes_an_explicit_list(testbed, caplog):
    assert openvino_auto_excludes("CPU", ("CPUF",)) and not openvino_auto_excludes("CPUF", ("CPU",))
    assert openvino_auto_excludes("GPU.1", ("GPU",)) and not openvino_auto_excludes("GPU.1", ("GPU.0",))
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        spec, _ = resolve_device_request(testbed.core, "AUTO:-CPUF", {})
    assert spec.plain == "AUTO:CPU" and spec.devices == ("CPU",) and "would also exclude CPU" in caplog.text
    untouched, _ = resolve_device_request(testbed.core, "AUTO:-CPU", {})
    assert untouched.plain == "AUTO:-CPU" and untouched.devices == ("CPUF",)


def test_auto_candidates_follow_autos_order():
    core = ov.Core()
    register_virtual_device(core, "XCPU")
    register_virtual_device(core, "CPUF")
    # AUTO: discrete GPU, integrated GPU, other devices, then CPU-type names (its pick here is XCPU)
    assert auto_candidates(core) == ("XCPU", "CPU", "CPUF")
    assert list(core.compile_model(sg.residual(), "AUTO").get_property("EXECUTION_DEVICES")) == ["XCPU"]


@pytest.mark.parametrize("device, config, fragment", [
    ("HETERO", {}, "'HETERO' needs its devices"),
    ("MULTI", {}, "'MULTI' needs its devices"),
    ("BATCH", {}, "'BATCH' needs its device"),
    ("AUTO:-CPU,-CPUF", {}, "excludes every device AUTO can choose"),
    ("HETERO:CPUF", {"MULTI_DEVICE_PRIORITIES": "CPU"}, "name different devices"),
    ("AUTO:GPU,CPU", {}, "GPU not available"),
    ("HETERO", {"MULTI_DEVICE_PRIORITIES": "CPU,,CPUF"}, "empty device name"),
])
def test_refusals_are_runtime_errors_naming_this_machines_devices(testbed, device, config, fragment):
    with pytest.raises(RuntimeError) as info:
        resolve_device_request(testbed.core, device, config)
    assert isinstance(info.value, oa.DeviceError)
    assert fragment in str(info.value) and "this machine has CPU, CPUF" in str(info.value)
    assert str(info.value).count("this machine has") == 1


@pytest.mark.parametrize("config", [{"PERFORMANCE_HINT": 3.5}, {"NUM_STREAMS": "x"}, {"PERFORMANCE_HINT": "FAST"}])
def test_bad_property_values_of_a_placement_are_typed_before_any_compile(testbed, monkeypatch, config):
    spec, props = resolve_device_request(testbed.core, "HETERO:CPU,CPUF", config)
    compiled = []
    monkeypatch.setattr(ov.Core, "compile_model", lambda *a, **k: compiled.append(a))
    with pytest.raises(oa.PropertyError) as info:
        check_property_values(testbed.core, spec, props)
    assert isinstance(info.value, RuntimeError) and list(config)[0] in str(info.value) and compiled == []


@pytest.mark.parametrize("device, config", [("CPU", {"PERFORMANCE_HINT": 3.5}), ("CPU", {"NOT_A_PROPERTY": 1}),
                                            ("HETERO:CPU", {"NUM_STREAMS": "x"})])
def test_a_config_a_plain_compile_rejects_is_a_property_error(testbed, device, config):
    with pytest.raises(oa.PropertyError) as info:
        oa.compile_model(sg.residual(), device, config, core=testbed.core)
    assert isinstance(info.value, RuntimeError) and list(config)[0] in str(info.value)


def test_other_plain_compile_errors_are_openvinos_own(testbed):
    """AUTO reads its config its own way: OpenVINO's RuntimeError, unchanged (docs/call-forms.md)."""
    with pytest.raises(RuntimeError, match="Invalid value for property PERFORMANCE_HINT") as info:
        oa.compile_model(sg.residual(), "AUTO", {"PERFORMANCE_HINT": 3.5}, core=testbed.core)
    assert not isinstance(info.value, oa.OVAutoplaceError)


def test_property_values_openvino_accepts_pass(testbed):
    for device, config in [("HETERO:CPU,CPUF", {"PERFORMANCE_HINT": "THROUGHPUT"}),
                           ("HETERO:CPU,CPUF", {"NOT_A_PROPERTY": 1})]:  # HETERO ignores keys no device knows
        spec, props = resolve_device_request(testbed.core, device, config)
        check_property_values(testbed.core, spec, props)


def test_exclude_devices_as_a_string_is_one_device(testbed, tmp_path):
    model = sg.residual()
    compiled = oa.compile_model(model, "HETERO:CPU,CPUF", core=testbed.core, exclude_devices="CPUF",
                                cache_dir=tmp_path)
    assert list(compiled.get_property("EXECUTION_DEVICES")) == ["CPU"]
    auto = oa.compile_model(model, "AUTO", core=testbed.core, exclude_devices="CPU", cache_dir=tmp_path)
    assert list(auto.get_property("EXECUTION_DEVICES")) == ["CPUF"]  # compiled as "AUTO:CPUF"
    with pytest.raises(RuntimeError, match="every device"):
        oa.compile_model(model, "AUTO:CPU,CPUF", core=testbed.core, exclude_devices="CPU,CPUF")
    with pytest.raises(oa.ExcludedDeviceError, match=r"names \['GPU'\]"):
        oa.compile_model(model, "HETERO:CPU,CPUF", core=testbed.core, exclude_devices="GPU", cache_dir=tmp_path)

