"""ProfileStore: keys, invalidation, corruption, atomic writes; structural_hash."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from ov_autoplace.cache.profile_store import (
    PROFILE_DIR_ENV,
    ProfileStore,
    profile_key,
    structural_hash,
)
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from tests.damaged_files import JSON_DAMAGES, damage_json

REPO = Path(__file__).resolve().parents[2]


def conv_net(seed: int, size: int = 8, channels: int = 4) -> ov.Model:
    """Conv -> Add -> Relu -> MatMul; ``seed`` only changes the weights (and the auto-generated names)."""
    rng = np.random.default_rng(seed)
    x = ops.parameter([1, 3, size, size], np.float32, name="x")
    w = ops.constant(rng.standard_normal((channels, 3, 3, 3)).astype(np.float32))
    y = ops.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1])
    y = ops.relu(ops.add(y, ops.constant(rng.standard_normal((1, channels, 1, 1)).astype(np.float32))))
    y = ops.reshape(y, ops.constant(np.array([1, -1], dtype=np.int64)), False)
    y = ops.matmul(y, ops.constant(rng.standard_normal((channels * size * size, 5)).astype(np.float32)), False, False)
    return ov.Model([y], [x], "conv_net")


def graph_of(model: ov.Model):
    return extract_graph(prepare_model(model))


# --- structural hash -------------------------------------------------------------------------------

def test_structural_hash_ignores_weights_and_names():
    a, b = graph_of(conv_net(0)), graph_of(conv_net(1))
    assert a.names != b.names  # auto-generated friendly names differ between builds
    assert structural_hash(a) == structural_hash(b)


def test_structural_hash_changes_with_shape_and_wiring():
    base = structural_hash(graph_of(conv_net(0)))
    assert structural_hash(graph_of(conv_net(0, size=9))) != base
    assert structural_hash(graph_of(conv_net(0, channels=5))) != base
    # Same ops and shapes, other wiring: Add(x, Relu(x)) vs Add(Relu(x), x).
    x1 = ops.parameter([2, 3], np.float32)
    m1 = ov.Model([ops.add(x1, ops.relu(x1))], [x1])
    x2 = ops.parameter([2, 3], np.float32)
    m2 = ov.Model([ops.add(ops.relu(x2), x2)], [x2])
    assert structural_hash(graph_of(m1)) != structural_hash(graph_of(m2))


def test_structural_hash_is_deterministic_across_processes():
    code = (f"import sys; sys.path.insert(0, {str(REPO)!r}); "
            "from tests.cache.test_profile_store import conv_net, graph_of; "
            "from ov_autoplace.cache.profile_store import structural_hash; "
            "print(structural_hash(graph_of(conv_net(3))))")
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip() for seed in ("1", "2")}
    assert outputs == {structural_hash(graph_of(conv_net(3)))}


# --- store -----------------------------------------------------------------------------------------

def parse_payload(payload: dict) -> np.ndarray:
    values = np.asarray(payload["values"], dtype=np.float64)
    if values.shape != (3,):
        raise ValueError(f"values must have shape (3,), got {values.shape}")
    return values


@pytest.fixture()
def key(testbed):
    return profile_key(testbed.core, testbed.devices, kind="model", graph=graph_of(conv_net(0)))


def test_default_directory_and_env_override(tmp_path, monkeypatch):
    for name in (PROFILE_DIR_ENV, "OV_AUTOPLACE_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    assert ProfileStore().directory == Path("~/.cache/ov_autoplace/profiles").expanduser()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ProfileStore().directory == tmp_path / "xdg" / "ov_autoplace" / "profiles"
    monkeypatch.setenv(PROFILE_DIR_ENV, str(tmp_path / "elsewhere"))
    assert ProfileStore().directory == tmp_path / "elsewhere"


def test_round_trip_and_key_components_in_clear(tmp_path, key, testbed):
    store = ProfileStore(tmp_path)
    path = store.save(key, {"values": [1.0, 2.5, float("inf")]})
    loaded = store.load(key, parse_payload)
    np.testing.assert_array_equal(loaded, [1.0, 2.5, float("inf")])
    stored = json.loads(path.read_text())["key"]
    assert stored["openvino_version"] == ov.get_version()
    assert stored["devices"] == list(testbed.devices)
    assert set(stored["device_properties"][testbed.devices[0]]) >= {"INFERENCE_PRECISION_HINT",
                                                                    "INFERENCE_NUM_THREADS", "FULL_DEVICE_NAME"}
    assert stored["model_structure"] == structural_hash(graph_of(conv_net(0)))


@pytest.mark.parametrize("component, edit, named", [
    ("openvino_version", lambda k: k.__setitem__("openvino_version", "2099.1.0-other"), "openvino_version"),
    ("device_properties", lambda k: k["device_properties"]["CPU"].__setitem__("INFERENCE_NUM_THREADS", "7"),
     "CPU.INFERENCE_NUM_THREADS"),
    ("model_structure", lambda k: k.__setitem__("model_structure", "0" * 64), "model_structure"),
])
def test_stored_key_mismatch_is_detected_and_named(tmp_path, key, caplog, component, edit, named):
    store = ProfileStore(tmp_path)
    path = store.save(key, {"values": [1.0, 2.0, 3.0]})
    data = json.loads(path.read_text())
    edit(data["key"])  # as if measured under another OpenVINO / other properties / another model
    path.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger="ov_autoplace.cache.profile_store"):
        assert store.load(key, parse_payload) is None
    assert named in caplog.text and "re-measuring" in caplog.text


def test_miss_after_openvino_upgrade_names_the_difference(tmp_path, key, caplog):
    store = ProfileStore(tmp_path)
    store.save(key, {"values": [1.0, 2.0, 3.0]})
    upgraded = dict(key, openvino_version="2099.1.0-other")
    with caplog.at_level(logging.WARNING, logger="ov_autoplace.cache.profile_store"):
        assert store.load(upgraded, parse_payload) is None
    assert "openvino_version" in caplog.text and "2099.1.0-other" in caplog.text


@pytest.mark.parametrize("text", [
    "{not json",
    json.dumps({"payload": {"values": [1, 2, 3]}}),  # no key
    None,  # correct key, payload of the wrong shape (filled in below)
    "",
])
def test_corrupt_file_gives_warning_and_none(tmp_path, key, caplog, text):
    store = ProfileStore(tmp_path)
    path = store.save(key, {"values": [1.0, 2.0, 3.0]})
    if text is None:
        text = json.dumps({"key": key, "payload": {"values": [[1.0, 2.0]]}})
    path.write_text(text)
    with caplog.at_level(logging.WARNING, logger="ov_autoplace.cache.profile_store"):
        assert store.load(key, parse_payload) is None
    assert "corrupt" in caplog.text


def test_failed_write_leaves_old_file_and_no_temp_files(tmp_path, key):
    store = ProfileStore(tmp_path)
    path = store.save(key, {"values": [1.0, 2.0, 3.0]})
    before = path.read_text()
    with pytest.raises(TypeError):
        # Serialisation streams into the temp file and fails half-way, at the object.
        store.save(key, {"values": list(range(10_000)) + [object()]})
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    store.save(key, {"values": [4.0, 5.0, 6.0]})  # a later good write replaces it whole
    np.testing.assert_array_equal(store.load(key, parse_payload), [4.0, 5.0, 6.0])
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


# --- every damage: warning, removal, rewrite ----------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(JSON_DAMAGES) + ["directory"])
def test_every_damaged_file_is_a_warning_then_rewritten(tmp_path, key, caplog, kind):
    store = ProfileStore(tmp_path)
    path = store.save(key, {"values": [1.0, 2.0, 3.0]})
    damage_json(path, kind)
    with caplog.at_level(logging.WARNING, logger="ov_autoplace.cache.profile_store"):
        assert store.load(key, parse_payload) is None  # never raises, whatever the damage
    # a directory is refused unread (not a regular file), JSON damage is corrupt; both are removed
    assert ("refused" if kind == "directory" else "corrupt") in caplog.text and "removed it" in caplog.text
    assert store.save(key, {"values": [4.0, 5.0, 6.0]}) == path  # the next measurement rewrites it
    np.testing.assert_array_equal(store.load(key, parse_payload), [4.0, 5.0, 6.0])


def test_link_profile_of_the_wrong_shape_is_remeasured_not_raised(tmp_path, testbed, caplog):
    from ov_autoplace.measuring.link_calibration import LinkProfile

    store = ProfileStore(tmp_path)
    key = profile_key(testbed.core, testbed.devices, kind="links", extra={"format": 1})
    store.save(key, {"devices": ["CPU"], "link_latency_ms": [[0.0]], "link_ms_per_byte": "x",
                     "submodel_overhead_ms": [0.0], "pairs": [], "seconds": 1.0})
    with caplog.at_level(logging.WARNING):
        assert store.load(key, LinkProfile.from_dict) is None
    assert "corrupt" in caplog.text


def test_directory_that_is_a_file_means_no_caching_not_an_error(tmp_path, key, caplog):
    blocker = tmp_path / "my_profiles"  # a directory the user named (a layout folder of a root heals instead)
    blocker.write_text("I am a file")
    store = ProfileStore(blocker)
    with caplog.at_level(logging.WARNING):
        assert store.save(key, {"values": [1.0, 2.0, 3.0]}) is None
    assert "not writable" in caplog.text
    assert store.load(key, parse_payload) is None


@pytest.mark.slow
def test_compile_model_places_when_the_profile_dir_is_a_file(f32_testbed, tmp_path, caplog):
    """The measured HSDAG path with an unusable profile directory still places (profiles just are not cached)."""
    import ov_autoplace as oa
    from ov_autoplace.measuring.providers import MeasuredCostProvider
    from ov_autoplace.policy.pretrained import PRETRAINED_POLICY
    from ov_autoplace.strategies.hsdag import HSDAGStrategy

    blocker = tmp_path / "my_profiles"
    blocker.write_text("I am a file")
    strategy = HSDAGStrategy(PRETRAINED_POLICY, MeasuredCostProvider(store=ProfileStore(blocker), iterations=3))
    with caplog.at_level(logging.WARNING):
        compiled = oa.compile_model(conv_net(0), f32_testbed.hetero, core=f32_testbed.core,
                                    cache_dir=tmp_path / "cache", strategy=strategy)
    assert isinstance(compiled, ov.CompiledModel)
    assert "falling back" not in caplog.text and "not writable" in caplog.text
    assert strategy.last_cost is not None and not strategy.last_cost.simulated


def test_a_layout_folder_that_is_a_file_or_a_link_is_healed(tmp_path, key, caplog):
    """Inside a private root, <root>/profiles is ov_autoplace's name: a file or a symlink there is replaced."""
    (tmp_path / "profiles").write_text("I am a file")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep")
    with caplog.at_level(logging.WARNING):
        assert ProfileStore(tmp_path / "profiles").save(key, {"values": [1.0]}) is not None
        (tmp_path / "support").symlink_to(elsewhere)
        assert ProfileStore(tmp_path / "support").save(key, {"values": [1.0]}) is not None
    assert "is a regular file" in caplog.text and "is a symbolic link to" in caplog.text
    assert (tmp_path / "support").is_dir() and not (tmp_path / "support").is_symlink()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.txt"], "the link's target is never touched"
    for folder in ("profiles", "support"):
        assert (tmp_path / folder).stat().st_mode & 0o777 == 0o700
        assert all(p.stat().st_mode & 0o777 == 0o600 for p in (tmp_path / folder).iterdir())
