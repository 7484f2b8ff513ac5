"""The model's runtime options (rt_info ``runtime_options``, as optimum-intel writes them) reach each device of what
ov_autoplace compiles through HETERO, which drops them; the call's and the core's own settings win over them."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

import ov_autoplace as oa
from ov_autoplace.devices.properties import _plugin_default, model_runtime_options, with_runtime_options
from ov_autoplace.devices.testbed import make_testbed
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.placement.legalizer import legalize, query_support

OPTIONS = {"KV_CACHE_PRECISION": "f16", "ACTIVATIONS_SCALE_FACTOR": "8.0"}  # what optimum-intel 2.2 writes


def _mlp(options: dict[str, str] | None = OPTIONS) -> ov.Model:
    rng = np.random.default_rng(0)
    x = ops.parameter([1, 16], np.float32, name="x")
    h = x
    for i in range(4):
        h = ops.relu(ops.matmul(h, ops.constant(rng.standard_normal((16, 16)).astype(np.float32)), False, False,
                                name=f"mm{i}"), name=f"relu{i}")
    model = ov.Model([ops.result(h, name="y")], [x], "mlp")
    for key, value in (options or {}).items():
        model.set_rt_info(value, ["runtime_options", key])
    return model


def _kv(compiled: ov.CompiledModel, device: str) -> str:
    return str(compiled.get_property("DEVICE_PROPERTIES")[device]["KV_CACHE_PRECISION"])


@pytest.fixture(scope="module")
def bed():
    """A testbed core of its own: a test sets a core-level property on it."""
    return make_testbed(like_for_like=True)


def test_reads_the_models_section_and_nothing_without_one():
    assert model_runtime_options(_mlp()) == OPTIONS
    assert model_runtime_options(_mlp(None)) == {}
    assert with_runtime_options(ov.Core(), _mlp(None), ("CPU",), {"PERF_COUNT": False}) == {"PERF_COUNT": False}


def test_each_device_gets_the_options_it_supports(bed):
    props = with_runtime_options(bed.core, _mlp(), bed.devices, {"PERF_COUNT": False})
    # the CPU plugin reads KV_CACHE_PRECISION from a model's rt_info; it has no ACTIVATIONS_SCALE_FACTOR (a GPU
    # property), so giving it would make the compile fail, as giving it by hand does
    assert props == {"PERF_COUNT": False,
                     "DEVICE_PROPERTIES": {d: {"KV_CACHE_PRECISION": "f16"} for d in bed.devices}}


def test_the_calls_own_setting_wins(bed):
    top = with_runtime_options(bed.core, _mlp(), bed.devices, {"KV_CACHE_PRECISION": "u8"})
    assert top == {"KV_CACHE_PRECISION": "u8"}
    first, second = bed.devices
    given = {"DEVICE_PROPERTIES": {first: {ov.properties.hint.kv_cache_precision: "u8"}}}
    props = with_runtime_options(bed.core, _mlp(), bed.devices, given)
    assert props["DEVICE_PROPERTIES"] == {first: {"KV_CACHE_PRECISION": "u8"}, second: {"KV_CACHE_PRECISION": "f16"}}
    assert given == {"DEVICE_PROPERTIES": {first: {ov.properties.hint.kv_cache_precision: "u8"}}}  # not changed


def test_a_value_set_on_the_core_wins_as_the_plugin_keeps_it():
    bed = make_testbed(like_for_like=True)  # its own core: the property set here stays on it
    _, second = bed.devices
    for mine in ("f32", "bf16"):  # a value other than the plugin's default on whatever CPU this is
        bed.core.set_property(second, {"KV_CACHE_PRECISION": mine})
        if str(bed.core.get_property(second, "KV_CACHE_PRECISION")) != _plugin_default(second, "KV_CACHE_PRECISION"):
            break
    props = with_runtime_options(bed.core, _mlp(), bed.devices, {})
    assert second not in props["DEVICE_PROPERTIES"] and bed.devices[0] in props["DEVICE_PROPERTIES"]


@pytest.mark.parametrize("strategy", [None, "heft"])
def test_compile_model_gives_them_where_plain_hetero_drops_them(bed, tmp_path, strategy):
    model = _mlp()
    plain = bed.core.compile_model(model, bed.hetero)
    default = _plugin_default(bed.devices[0], "KV_CACHE_PRECISION")
    assert {str(v["KV_CACHE_PRECISION"]) for v in plain.get_property("DEVICE_PROPERTIES").values()} == {default}
    compiled = oa.compile_model(model, bed.hetero, core=bed.core, cache_dir=tmp_path, strategy=strategy)
    for device in compiled.get_property("EXECUTION_DEVICES"):
        assert "float16" in _kv(compiled, device)
    x = np.random.default_rng(1).standard_normal((1, 16)).astype(np.float32)
    np.testing.assert_allclose(compiled({"x": x})[0], plain({"x": x})[0], rtol=1e-5, atol=1e-6)


def test_a_split_gives_them_to_both_devices(bed):
    model = _mlp()
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    support = query_support(bed.core, prepared, graph, bed.devices)
    split = np.array([0 if name in ("mm0", "relu0", "mm1", "relu1") else 1 for name in graph.names], dtype=np.int64)
    placement = legalize(graph, split, bed.devices, support)
    assert len(set(placement.assignment.values())) == 2
    compiled = oa.compile_placement(model, placement, core=bed.core)
    assert sorted(compiled.get_property("EXECUTION_DEVICES")) == sorted(bed.devices)
    assert all("float16" in _kv(compiled, d) for d in bed.devices)


def test_a_profiles_one_device_compile_gets_them_too(bed):
    """The profiler times each device through HETERO beside its PERF_COUNT compile; that timing scales the per-op
    times, so it must run what the device's own compile runs (a decoder: the model's KV cache precision)."""
    from ov_autoplace.measuring.profiler import _single_device_compile

    for device in bed.devices:
        compiled = _single_device_compile(bed.core, prepare_model(_mlp()), device)
        assert "float16" in _kv(compiled, device)
        plain = _single_device_compile(bed.core, prepare_model(_mlp(None)), device)
        assert _kv(plain, device) == _kv(bed.core.compile_model(_mlp(None), f"HETERO:{device}"), device)
