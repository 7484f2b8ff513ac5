"""Fuzzing the API's inputs: device strings, property dicts and cache files.

Whatever is thrown at compile_model / place, the outcome is either a compiled
model or one of the library's documented errors, never another exception and
never a crash of the process.
"""

from __future__ import annotations

import json
import logging

import openvino as ov
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ov_autoplace as oa
from ov_autoplace.cache.placement_cache import PlacementCache
from ov_autoplace.devices.device_strings import parse_device_string
from tests import synthetic_graphs as sg

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
device_tokens = st.sampled_from(["CPU", "CPUF", "GPU", "NPU", "cpu", "GPU.0", "CPU.1", "", " ", "HETERO", "AUTO",
                                 "MULTI", "BATCH", "X-Y", "CPU F", "\u00e9", "-CPUF", "CPU(2)"])
device_strings = st.one_of(
    st.text(max_size=30),
    st.builds(lambda meta, devs, sep: f"{meta}:{sep.join(devs)}",
              st.sampled_from(["HETERO", "AUTO", "MULTI", "BATCH", "hetero", ""]),
              st.lists(device_tokens, max_size=4), st.sampled_from([",", ", ", ",,", ";", ":"])),
)
property_values = st.one_of(st.none(), st.integers(-3, 1 << 40), st.text(max_size=12), st.floats(allow_nan=True),
                            st.booleans(), st.lists(st.integers(), max_size=2))
property_dicts = st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(["PERFORMANCE_HINT", "NUM_STREAMS", "INFERENCE_PRECISION_HINT",
                                               "NOT_A_PROPERTY", ""]), st.integers(), st.text(max_size=8)),
                    property_values, max_size=3),
    st.lists(st.text(max_size=5), max_size=2), st.text(max_size=10), st.integers(),
)


@FUZZ
@given(text=device_strings)
def test_device_strings_parse_or_raise_device_error(text):
    try:
        spec = parse_device_string(text)
    except oa.DeviceError:
        return
    assert (spec.devices or spec.meta is not None) and all(spec.devices)  # bare "AUTO": AUTO's own candidates


@pytest.fixture(scope="module")
def small_model():
    return sg.residual(blocks=1, channels=4, size=8)


@FUZZ
@given(text=device_strings)
def test_compile_model_with_fuzzed_devices(testbed, small_model, text, tmp_path_factory):
    cache_dir = tmp_path_factory.mktemp("fuzz_devices")
    try:
        compiled = oa.compile_model(small_model, text, core=testbed.core, cache_dir=cache_dir)
    except (oa.DeviceError, oa.PropertyError):
        return
    except RuntimeError as exc:  # OpenVINO itself refused a device string we passed through unchanged
        assert parse_device_string(text).meta in ("AUTO", "MULTI", "BATCH"), exc
        return
    assert isinstance(compiled, ov.CompiledModel)


@FUZZ
@given(config=property_dicts)
def test_compile_model_with_fuzzed_properties(testbed, small_model, config, tmp_path_factory):
    cache_dir = tmp_path_factory.mktemp("fuzz_props")
    try:
        compiled = oa.compile_model(small_model, testbed.hetero, config, core=testbed.core, cache_dir=cache_dir)
    except oa.PropertyError:
        return
    except (RuntimeError, TypeError) as exc:
        # OpenVINO rejected a property (unknown name or bad value): plain core.compile_model fails the same way.
        with pytest.raises(type(exc)):
            testbed.core.compile_model(small_model, testbed.hetero, config)
        return
    assert isinstance(compiled, ov.CompiledModel)


@FUZZ
@given(junk=st.one_of(st.binary(max_size=200).map(lambda b: b.decode("latin-1")), st.text(max_size=200),
                      st.recursive(st.one_of(st.none(), st.integers(), st.text(max_size=5)),
                                   lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                           st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                                   max_leaves=8).map(json.dumps)))
def test_cache_files_of_any_content_are_survived(testbed, small_model, junk, tmp_path_factory, caplog):
    cache_dir = tmp_path_factory.mktemp("fuzz_cache")
    # a cached strategy (the default needs no entry when the testbed's devices are identical)
    oa.compile_model(small_model, testbed.hetero, core=testbed.core, cache_dir=cache_dir, strategy="heavy_ops")
    (entry,) = PlacementCache(cache_dir).entries()
    entry.write_text(junk)
    with caplog.at_level(logging.WARNING):
        compiled = oa.compile_model(small_model, testbed.hetero, core=testbed.core, cache_dir=cache_dir,
                                    strategy="heavy_ops")
    assert isinstance(compiled, ov.CompiledModel)
    assert json.loads(entry.read_text())["payload"]["device_by_index"], "the damaged entry is rewritten"
