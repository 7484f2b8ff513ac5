"""compile_model / place: drop-in behaviour, validation before compile, and fallback."""

from __future__ import annotations

import logging

import numpy as np
import openvino as ov
import pytest

import ov_autoplace as oa
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.strategies import PlacementStrategy
from tests import synthetic_graphs as sg
from tests.hostile import NOT_A_REGULAR_FILE
from ov_autoplace.api import DEFAULT_MAX_SUBMODELS
from ov_autoplace.devices.timing import random_inputs


def test_single_device_is_plain_compile(testbed):
    model = sg.residual()
    compiled = oa.compile_model(model, "CPU", core=testbed.core)
    assert isinstance(compiled, ov.CompiledModel)
    plain = testbed.core.compile_model(model, "CPU")
    inputs = random_inputs(plain)
    np.testing.assert_array_equal(compiled(inputs)[0], plain(inputs)[0])


def test_hetero_returns_compiled_model_and_leaves_model_untouched(testbed):
    model = sg.branching()
    compiled = oa.compile_model(model, testbed.hetero, core=testbed.core)
    assert isinstance(compiled, ov.CompiledModel)
    assert all("affinity" not in op.get_rt_info() for op in model.get_ops())
    assert compiled(random_inputs(compiled))[0].shape == (1, 10)


def test_place_returns_summary(testbed):
    placement = oa.place(sg.attention_like(), testbed.hetero, core=testbed.core, strategy="heavy_ops")
    counts = placement.counts_per_device()
    assert set(counts) == set(testbed.devices) and sum(counts.values()) == len(placement.compute_nodes)
    assert placement.num_submodels <= DEFAULT_MAX_SUBMODELS
    text = str(placement)
    assert "CPUF" in text and "submodels" in text


def test_place_from_ir_path(testbed, tmp_path):
    path = tmp_path / "m.xml"
    ov.save_model(sg.residual(), path)
    placement = oa.place(str(path), testbed.hetero, core=testbed.core)
    assert set(placement.assignment) == {op.get_friendly_name() for op in prepare_model(ov.Core().read_model(path)).get_ops()}


def test_missing_device_raises_before_compile(testbed, monkeypatch):
    calls = []
    monkeypatch.setattr(ov.Core, "compile_model", lambda *a, **k: calls.append(a))
    with pytest.raises(oa.DeviceError, match="this machine has"):
        oa.compile_model(sg.residual(), "HETERO:GPU,CPU")
    with pytest.raises(oa.DeviceError, match="GPU"):
        oa.compile_model(sg.residual(), "GPU")
    assert calls == []


@pytest.mark.parametrize("device", ["HETERO:", "hetero:CPU,CPUF", "HETERO:CPU,,CPUF", 5])
def test_malformed_device_string(testbed, device):
    with pytest.raises(oa.DeviceError):
        oa.compile_model(sg.residual(), device, core=testbed.core)


def test_bad_properties(testbed):
    with pytest.raises(oa.PropertyError):
        oa.compile_model(sg.residual(), testbed.hetero, ["PERF_COUNT"], core=testbed.core)
    with pytest.raises(Exception, match="NOT_A_PROPERTY"):
        oa.compile_model(sg.residual(), "CPU", {"NOT_A_PROPERTY": 1}, core=testbed.core)


def test_missing_and_corrupt_model_files(tmp_path, testbed):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        oa.compile_model(tmp_path / "nope.xml", "CPU", core=testbed.core)
    bad = tmp_path / "bad.xml"
    bad.write_text("<net><layers>not an IR")
    with pytest.raises(oa.ModelLoadError, match="cannot read"):
        oa.compile_model(bad, testbed.hetero, core=testbed.core)
    with pytest.raises(oa.ModelLoadError, match="openvino.Model"):
        oa.compile_model(12, "CPU", core=testbed.core)


def test_model_path_as_bytes_and_an_object_that_is_no_path(tmp_path, testbed):
    """As core.compile_model: a bytes path is read; any other object is refused in OpenVINO's own words."""
    ov.save_model(sg.residual(), tmp_path / "model.xml")
    compiled = oa.compile_model(str(tmp_path / "model.xml").encode(), "CPU", core=testbed.core)
    assert isinstance(compiled, ov.CompiledModel)

    class NotAPath:
        def __str__(self):
            return "not a path"

    with pytest.raises(RuntimeError, match="Path: 'not a path' does not exist. Please provide valid model's path"):
        oa.compile_model(NotAPath(), "CPU", core=testbed.core)


def test_unknown_strategy(testbed):
    with pytest.raises(oa.PlacementError, match="unknown strategy"):
        oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, strategy="magic")


class _Broken(PlacementStrategy):
    name = "broken"

    def propose(self, context):
        raise RuntimeError("policy exploded")


def test_failure_in_placement_path_falls_back(testbed, caplog):
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        compiled = oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, strategy=_Broken())
    assert isinstance(compiled, ov.CompiledModel)
    assert "falling back" in caplog.text and "policy exploded" in caplog.text


def test_exclude_all_devices(testbed):
    with pytest.raises(oa.DeviceError, match="excluded"):
        oa.place(sg.residual(), testbed.hetero, core=testbed.core, exclude_devices=list(testbed.devices))


def test_exclude_one_device(testbed):
    placement = oa.place(sg.residual(), testbed.hetero, core=testbed.core, exclude_devices=["CPU"])
    assert set(placement.assignment.values()) == {"CPUF"}


@pytest.mark.parametrize(
    "builder", [sg.with_if, sg.with_loop, sg.bool_and_string, sg.dynamic_shapes, sg.param_to_result]
)
def test_awkward_models_compile_or_fail_clearly(testbed, builder):
    """Control flow, bool/string tensors, dynamic shapes, no compute: always a compiled model."""
    compiled = oa.compile_model(builder(), testbed.hetero, core=testbed.core)
    assert isinstance(compiled, ov.CompiledModel)


def test_place_with_pass_through_meta_device_is_an_error(testbed):
    with pytest.raises(oa.DeviceError, match="HETERO"):
        oa.place(sg.residual(), "AUTO:CPU", core=testbed.core)


@pytest.mark.parametrize("kind", ["truncated", "empty", "header_not_json", "header_nested"])
def test_damaged_shipped_policy_falls_back_with_a_warning(f32_testbed, tmp_path, monkeypatch, caplog, kind):
    """A damaged policy file is our machinery failing: compile_model still compiles (WARNING); place() raises."""
    from ov_autoplace.errors import PolicyFormatError
    from tests.damaged_files import damaged_policy

    monkeypatch.setattr("ov_autoplace.policy.pretrained.PRETRAINED_POLICY", damaged_policy(tmp_path, kind))
    model = sg.residual()
    with caplog.at_level(logging.WARNING):
        compiled = oa.compile_model(model, f32_testbed.hetero, core=f32_testbed.core, cache_dir=tmp_path,
                                    strategy="hsdag")
    assert isinstance(compiled, ov.CompiledModel) and "policy cannot be loaded" in caplog.text
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(compiled(x)[0], f32_testbed.core.compile_model(model, "CPU")(x)[0], atol=1e-5)
    with pytest.raises(PolicyFormatError):
        oa.place(model, f32_testbed.hetero, core=f32_testbed.core, strategy="hsdag")


def test_damaged_shipped_policy_keeps_the_users_pins(f32_testbed, tmp_path, monkeypatch, caplog):
    """The fallback for a damaged policy never drops pins: HETERO's own affinity plus the pins is compiled."""
    from tests.damaged_files import damaged_policy

    monkeypatch.setattr("ov_autoplace.policy.pretrained.PRETRAINED_POLICY", damaged_policy(tmp_path, "truncated"))
    model = sg.residual()
    with caplog.at_level(logging.WARNING):
        compiled = oa.compile_model(model, f32_testbed.hetero, core=f32_testbed.core, cache_dir=tmp_path,
                                    strategy="hsdag", pins={"type:Convolution": "CPUF"})
    assert "policy cannot be loaded" in caplog.text and "with your pins" in caplog.text
    assert sorted(compiled.get_property("EXECUTION_DEVICES")) == ["CPU", "CPUF"]  # the pinned convolutions
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(compiled(x)[0], f32_testbed.core.compile_model(model, "CPU")(x)[0], atol=1e-5)


def test_place_takes_a_single_excluded_device_as_a_string(testbed):
    placement = oa.place(sg.residual(), testbed.hetero, core=testbed.core, strategy="priority",
                         exclude_devices="CPUF")
    assert set(placement.assignment.values()) == {"CPU"}


# --- bad input refused before anything is compiled or opened (a typed error within a second) -------------------


@pytest.mark.parametrize("kind", NOT_A_REGULAR_FILE)
@pytest.mark.parametrize("entry", ["compile_model", "place"])
def test_a_model_path_that_is_not_a_regular_file_is_refused_before_openvino_opens_it(testbed, tmp_path, kind,
                                                                                     entry):
    """A FIFO or /dev/zero as the model hung compile_model in OpenVINO's read (killed at 50-60 s)."""
    from tests.hostile import FAST_S, bounded, outside_changes, plant_model_path, surroundings

    ir = tmp_path / "model.xml"
    ov.save_model(sg.residual(), ir)
    model = plant_model_path(kind, tmp_path, ir)
    call = getattr(oa, entry)
    root = tmp_path / "root"
    before = surroundings(root)
    kw = {"cache_dir": root} if entry == "compile_model" else {}
    with pytest.raises(oa.ModelLoadError) as info:
        bounded(lambda: call(str(model), testbed.hetero, core=testbed.core, **kw), FAST_S)
    assert isinstance(info.value, RuntimeError), "OpenVINO raises RuntimeError for a file it cannot read"
    assert ("not a regular file" in str(info.value)) or ("is a directory" in str(info.value)), info.value
    assert outside_changes(before, surroundings(root)) == [] and not root.exists()


def test_a_saved_model_directory_and_an_ir_still_reach_openvino(testbed, tmp_path):
    """The check lets through what OpenVINO reads: an IR with its weights, a SavedModel directory (this fake one
    then fails in OpenVINO's own reader, not in the check)."""
    ir = tmp_path / "m.xml"
    ov.save_model(sg.residual(), ir)
    assert isinstance(oa.place(str(ir), testbed.hetero, core=testbed.core), oa.Placement)
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "saved_model.pb").write_bytes(b"not a protobuf")
    with pytest.raises(oa.ModelLoadError, match="cannot read"):
        oa.place(str(saved), testbed.hetero, core=testbed.core)


@pytest.mark.parametrize("budget", [1e9, 10**9, 10_001, 86_400.5, 0, -1.0, float("nan"), True, "10"])
def test_search_budget_out_of_bounds_is_refused_at_once(testbed, tmp_path, budget):
    """search_budget=1e9 was taken as 1e9 seconds (still running at 60 s) while the CLI refused it."""
    from tests.hostile import FAST_S, bounded

    with pytest.raises(oa.PlacementError, match="search_budget must be"):
        bounded(lambda: oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, cache_dir=tmp_path,
                                         search_budget=budget), FAST_S)
    assert not any(tmp_path.iterdir()), "refused before anything was written"


@pytest.mark.parametrize("seed", ["x", True, 1.5, None, [0]])
def test_a_seed_that_is_not_an_int_is_a_typed_error(testbed, tmp_path, seed):
    from tests.hostile import FAST_S, bounded

    for call in (lambda: oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, cache_dir=tmp_path,
                                          seed=seed),
                 lambda: oa.place(sg.residual(), testbed.hetero, core=testbed.core, seed=seed)):
        with pytest.raises(oa.PlacementError, match="seed must be an int"):
            bounded(call, FAST_S)
    assert oa.place(sg.residual(), testbed.hetero, core=testbed.core, seed=np.int64(3)).devices


@pytest.mark.parametrize("device", ["HETERO: CPU , CPUF", "HETERO:CPU ,CPUF", "HETERO: CPU,CPUF", " HETERO:CPU,CPUF",
                                    "HETERO :CPU,CPUF", "HETERO:CPU ", "CPU ", " CPU", "HETERO:CPU, CPUF",
                                    "HETERO:CPU,CPUF ", "HETERO:CPU,  CPUF"])
def test_white_space_in_a_device_string_as_openvino_reads_it(testbed, device):
    """``"HETERO: CPU , CPUF"`` compiled where OpenVINO raises: OpenVINO looks up a single device, the meta
    device and the first device of a HETERO list as written, and trims the later entries. The plain call on
    this machine decides what is expected."""
    model = sg.residual()
    try:
        testbed.core.compile_model(model, device)
        openvino_raises = False
    except RuntimeError:
        openvino_raises = True
    if openvino_raises:
        with pytest.raises(oa.DeviceError) as info:
            oa.compile_model(model, device, core=testbed.core)
        assert isinstance(info.value, RuntimeError) and "white space" in str(info.value)
    else:
        assert isinstance(oa.compile_model(model, device, core=testbed.core), ov.CompiledModel)


@pytest.mark.parametrize("argument", [{"core": "core"}, {"pins": 5}, {"pins": "type:MatMul=CPU"}])
def test_a_core_or_pins_of_the_wrong_type_is_a_typed_error(testbed, argument):
    """Found by the hostile probe: core="core" raised a bare TypeError, pins=5 one from inside the pin parser."""
    from tests.hostile import FAST_S, bounded

    kw = {"core": testbed.core, **argument}
    for call in (oa.compile_model, oa.place):
        with pytest.raises(oa.PlacementError, match="core must be|pins must be"):
            bounded(lambda: call(sg.residual(), testbed.hetero, **kw), FAST_S)
