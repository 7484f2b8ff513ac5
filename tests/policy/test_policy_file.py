"""The policy file: round trip, header, and clear errors for files it cannot read."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ov_autoplace.errors import OVAutoplaceError
from ov_autoplace.policy.policy_file import FORMAT, FORMAT_VERSION, PolicyFormatError, header_text, load_policy_file
from tests.damaged_files import POLICY_DAMAGES, damaged_policy

torch = pytest.importorskip("torch")

from ov_autoplace.policy.config import HSDAGConfig  # noqa: E402
from ov_autoplace_lab.policy_export import export_policy  # noqa: E402
from ov_autoplace.policy.features import NodeFeatureConfig  # noqa: E402
from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy  # noqa: E402


@pytest.fixture()
def exported(tmp_path):
    torch.manual_seed(0)
    config = HSDAGConfig(hidden=16, num_gcn_layers=3, max_pool_iterations=2, score_threshold=0.6,
                         feature_config=NodeFeatureConfig(use_structural=False))
    policy = HSDAGPolicy(config)
    return policy, export_policy(policy, tmp_path / "sub" / "p.npz", metadata={"episodes": 3})


def test_round_trip(exported):
    policy, path = exported
    loaded = load_policy_file(path)
    assert loaded.config == policy.config
    assert loaded.header["format"] == FORMAT and loaded.header["format_version"] == FORMAT_VERSION
    assert loaded.header["metadata"] == {"episodes": 3}
    assert loaded.header["config"]["vocab"][:3] == ["Parameter", "Constant", "Result"]
    assert len(loaded.header["feature_names"]["node"]) == policy.config.in_features
    state = policy.state_dict()
    assert set(loaded.weights) == set(state)
    for name, value in state.items():
        assert loaded.weights[name].dtype == np.float32
        assert np.array_equal(loaded.weights[name], value.numpy())


def _rewrite(path, tmp_path, **changes):
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    header = json.loads(header_text(arrays.pop("__header__")))
    drop = changes.pop("drop", None)
    header.update(changes)
    if drop:
        arrays.pop(drop)
    out = tmp_path / "changed.npz"
    np.savez(out, __header__=np.array(json.dumps(header)), **arrays)
    return out


def test_unreadable_files_name_the_problem(exported, tmp_path):
    _, path = exported
    with pytest.raises(FileNotFoundError, match="no policy file"):
        load_policy_file(tmp_path / "missing.npz")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(PolicyFormatError, match="not a readable"):
        load_policy_file(junk)
    with pytest.raises(PolicyFormatError, match="format version 99"):
        load_policy_file(_rewrite(path, tmp_path, format_version=99))
    with pytest.raises(PolicyFormatError, match="expected 'ov_autoplace.hsdag_policy'"):
        load_policy_file(_rewrite(path, tmp_path, format="something"))
    with pytest.raises(PolicyFormatError, match="other input features"):
        load_policy_file(_rewrite(path, tmp_path, feature_names={"node": ["x"], "device": [], "pair": []}))
    with pytest.raises(PolicyFormatError, match="shapes"):
        load_policy_file(_rewrite(path, tmp_path, drop="input_proj.bias"))
    assert issubclass(PolicyFormatError, OVAutoplaceError) and issubclass(PolicyFormatError, ValueError)


def test_the_header_is_utf8_and_an_older_unicode_header_still_reads(exported, tmp_path):
    _, path = exported
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    assert arrays["__header__"].dtype == np.uint8  # a quarter of numpy's four bytes a character
    older = _rewrite(path, tmp_path)  # the header as a numpy unicode string, as files before 2026-11-27 store it
    with np.load(older) as data:
        assert data["__header__"].dtype.kind == "U"
    assert load_policy_file(older).header == load_policy_file(path).header
    not_utf8 = tmp_path / "latin1.npz"
    np.savez(not_utf8, **{**arrays, "__header__": np.frombuffer("{\"é\": 1}".encode("latin-1"), np.uint8)})
    with pytest.raises(PolicyFormatError, match="not valid UTF-8 JSON"):
        load_policy_file(not_utf8)


@pytest.mark.parametrize("kind", POLICY_DAMAGES)
def test_every_damaged_policy_file_is_a_policy_format_error(tmp_path, kind):
    path = damaged_policy(tmp_path, kind)
    with pytest.raises(PolicyFormatError) as info:
        load_policy_file(path)
    assert str(path) in str(info.value)
