"""One cache root; the user's OpenVINO CACHE_DIR respected; ``cache clear`` removes all ov_autoplace wrote."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import openvino as ov
import pytest

import ov_autoplace as oa
from ov_autoplace.cache.root import (CACHE_DIR_ENV, PROFILE_DIR_ENV, blob_cache_props, cache_root, clear_cache,
                                     profile_dir, user_blob_cache_dir)
from ov_autoplace.cache.profile_store import ProfileStore
from tests import synthetic_graphs as sg
from ov_autoplace.devices.timing import random_inputs


@pytest.fixture()
def clean_env(monkeypatch):
    for name in (CACHE_DIR_ENV, PROFILE_DIR_ENV, "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_root_honours_argument_env_and_xdg(clean_env, tmp_path):
    assert cache_root() == Path("~/.cache/ov_autoplace").expanduser()
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "ov_autoplace"
    assert profile_dir() == tmp_path / "xdg" / "ov_autoplace" / "profiles"
    assert ProfileStore().directory == tmp_path / "xdg" / "ov_autoplace" / "profiles"
    clean_env.setenv(CACHE_DIR_ENV, str(tmp_path / "env"))
    assert cache_root() == tmp_path / "env" and profile_dir() == tmp_path / "env" / "profiles"
    assert cache_root(tmp_path / "arg") == tmp_path / "arg"
    assert profile_dir(tmp_path / "arg") == tmp_path / "arg" / "profiles"
    clean_env.setenv(PROFILE_DIR_ENV, str(tmp_path / "profiles_env"))
    assert profile_dir() == tmp_path / "profiles_env"
    assert profile_dir(tmp_path / "arg") == tmp_path / "arg" / "profiles", "cache_dir= moves everything"


def test_blob_cache_is_the_users(tmp_path):
    core = ov.Core()
    assert user_blob_cache_dir(core, {}) is None
    assert "CACHE_DIR" not in blob_cache_props(core, {}, tmp_path, cache_blobs=False), "enable none when the user did not"
    assert blob_cache_props(core, {}, tmp_path, cache_blobs=True)["CACHE_DIR"] == str(tmp_path / "openvino")
    mine = str(tmp_path / "mine")
    assert blob_cache_props(core, {"CACHE_DIR": mine}, tmp_path, cache_blobs=True)["CACHE_DIR"] == mine
    core.set_property({"CACHE_DIR": mine})
    assert user_blob_cache_dir(core, {}) == mine
    assert "CACHE_DIR" not in blob_cache_props(core, {}, tmp_path, cache_blobs=True), "the core's own applies"


def _blobs(folder) -> list:
    return sorted(p.name for p in folder.rglob("*.blob")) if folder.is_dir() else []


def test_compile_uses_the_cores_cache_dir_and_the_plain_blob(testbed, tmp_path):
    """A placement on HETERO's first device compiles the call it replaces: the same blob, no second one."""
    user_dir = tmp_path / "user_blobs"
    core = testbed.core
    core.set_property({"CACHE_DIR": str(user_dir)})
    try:
        model = sg.residual()
        core.compile_model(model, testbed.hetero)
        plain = _blobs(user_dir)
        assert len(plain) == 1
        compiled = oa.compile_model(model, testbed.hetero, core=core, cache_dir=tmp_path / "root")
        assert _blobs(user_dir) == plain, "ov_autoplace's compile must hit plain OpenVINO's blob"
        assert not (tmp_path / "root" / "openvino").exists()
        assert compiled(random_inputs(compiled))[0].shape == (1, 10)
    finally:
        core.set_property({"CACHE_DIR": ""})


def test_no_cache_dir_anywhere_enables_none(testbed, tmp_path):
    oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, cache_dir=tmp_path)
    assert not (tmp_path / "openvino").exists()
    assert testbed.core.get_property("CACHE_DIR") == ""


def test_cache_blobs_opt_in_and_config_cache_dir(testbed, tmp_path):
    oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, cache_dir=tmp_path, cache_blobs=True)
    assert len(_blobs(tmp_path / "openvino")) == 1
    config_dir = tmp_path / "config_blobs"
    oa.compile_model(sg.residual(blocks=2), testbed.hetero, {"CACHE_DIR": str(config_dir)}, core=testbed.core,
                     cache_dir=tmp_path)
    assert len(_blobs(config_dir)) == 1 and len(_blobs(tmp_path / "openvino")) == 1


def test_clear_removes_everything_ov_autoplace_wrote(clean_env, tmp_path, caplog):
    root = tmp_path / "root"
    for sub, name in (("placements", "placement-x.json"), ("profiles", "model-x.json"), ("openvino", "a.blob"),
                      ("workers", "k.lock")):
        (root / sub).mkdir(parents=True)
        (root / sub / name).write_text("{}")
    (root / "someone_elses.txt").write_text("keep")
    user_blobs = tmp_path / "user_blobs"
    user_blobs.mkdir()
    (user_blobs / "b.blob").write_text("keep")
    other_profiles = tmp_path / "profiles_env"
    other_profiles.mkdir()
    (other_profiles / "model-y.json").write_text("{}")
    (other_profiles / "notes.txt").write_text("keep")
    clean_env.setenv(PROFILE_DIR_ENV, str(other_profiles))
    report = clear_cache(root)  # cache_dir= given: the env profile dir is not this root's
    assert report.removed == {"placements": 1, "profiles": 1, "support": 0, "openvino": 1, "workers": 1}
    assert report.left == [(str(root / "someone_elses.txt"), "not written by ov_autoplace")], "says what it left"
    assert sorted(p.name for p in root.iterdir()) == ["someone_elses.txt"]
    assert (user_blobs / "b.blob").exists() and (other_profiles / "model-y.json").exists()
    clean_env.setenv(CACHE_DIR_ENV, str(root))
    report = clear_cache()
    assert report.removed["profiles (OV_AUTOPLACE_PROFILE_DIR)"] == 1
    assert sorted(p.name for p in other_profiles.iterdir()) == ["notes.txt"]


def test_cli_cache_clear(tmp_path, capsys):
    from ov_autoplace.cli.main import main

    (tmp_path / "placements").mkdir()
    (tmp_path / "placements" / "placement-a.json").write_text("{}")
    (tmp_path / "openvino").mkdir()
    (tmp_path / "openvino" / "x.blob").write_text("")
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "placements: 1" in out and "openvino: 1" in out
    assert not (tmp_path / "placements").exists() and not (tmp_path / "openvino").exists()


def test_unwritable_root_still_compiles(testbed, tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with caplog.at_level(logging.WARNING):
        compiled = oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, cache_dir=blocker / "c",
                                    cache_blobs=True)
    assert isinstance(compiled, ov.CompiledModel)
    assert "blob cache" in caplog.text


def test_folders_of_ours_inside_a_private_root_are_tightened(tmp_path):
    """A 0775 folder an older version made under umask 002: only we can reach it through our 0700 root."""
    from ov_autoplace.cache.root import private_subdir

    os.chmod(tmp_path, 0o700)
    (tmp_path / "placements").mkdir()
    os.chmod(tmp_path / "placements", 0o775)
    assert private_subdir(tmp_path, "placements") == tmp_path / "placements"
    assert (tmp_path / "placements").stat().st_mode & 0o777 == 0o700


# --- one root for every writer: profiles of explicit strategies, an empty cache_dir, blob modes -----------------


@pytest.fixture()
def isolated_home(clean_env, tmp_path):
    """HOME in tmp_path and none of the cache variables set: the default root is ``<home>/.cache/ov_autoplace``,
    so a write that ignores ``cache_dir=`` shows up in :func:`tests.hostile.surroundings`."""
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    clean_env.setenv("HOME", str(home))
    return home


@pytest.mark.parametrize("how", [{"strategy": "heft"},
                                 pytest.param({"strategy": "hsdag"}, marks=pytest.mark.slow),
                                 pytest.param({"search_budget": 2}, marks=pytest.mark.slow)],
                         ids=["heft", "hsdag", "search_budget"])
def test_explicit_strategies_store_their_profiles_under_the_calls_cache_dir(testbed, isolated_home, tmp_path, how):
    """``strategy="heft"`` (and ``"hsdag"``, ``search_budget``) measured the model and stored the profile and the
    link profile under ``$HOME/.cache/ov_autoplace/profiles``, whatever ``cache_dir=`` said, and ``cache clear``
    of that root left them."""
    from ov_autoplace.cli.main import main
    from tests.hostile import outside_changes, surroundings

    if "search_budget" in how:
        pytest.importorskip("torch")
    root = tmp_path / "root"
    before = surroundings(root)
    oa.compile_model(sg.residual(blocks=1), testbed.hetero, core=testbed.core, cache_dir=root, **how)
    assert outside_changes(before, surroundings(root)) == [], "nothing outside the root"
    assert not (isolated_home / ".cache" / "ov_autoplace").exists()
    stored = sorted(p.name.split("-")[0] for p in (root / "profiles").iterdir())
    assert stored == ["links", "model"], stored
    assert main(["cache", "clear", "--cache-dir", str(root)]) == 0
    assert not (root / "profiles").exists()


@pytest.mark.parametrize("cache_dir", ["", "   ", "a\0b", 5, b"bytes"])
def test_a_cache_dir_that_names_no_directory_is_a_typed_error(testbed, isolated_home, tmp_path, monkeypatch,
                                                             cache_dir):
    """``cache_dir=""`` wrote ``placements/`` into the current directory without a word (``Path("")`` is ``.``)."""
    from ov_autoplace.cache.placement_cache import PlacementCache
    from tests.hostile import FAST_S, bounded, outside_changes, surroundings

    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    before = surroundings(workdir / "no_root_here")
    with pytest.raises(oa.PropertyError, match="cache_dir") as info:
        bounded(lambda: oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, cache_dir=cache_dir),
                FAST_S)
    assert isinstance(info.value, (ValueError, RuntimeError)), "OpenVINO's family for a bad argument"
    if isinstance(cache_dir, str):
        assert "names no directory" in str(info.value) and "~/.cache/ov_autoplace" in str(info.value)
    for writer in (cache_root, profile_dir, PlacementCache, clear_cache):  # one resolution every writer uses
        with pytest.raises(oa.PropertyError):
            writer(cache_dir)
    assert outside_changes(before, surroundings(workdir / "no_root_here")) == []
    assert list(workdir.iterdir()) == []


def test_openvinos_blobs_are_private_whatever_the_umask(testbed, tmp_path):
    """OpenVINO writes its blobs 0440 under umask 077 (it sets the mode itself): ours are tightened to 0600."""
    root = tmp_path / "root"
    old = os.umask(0o077)
    try:
        oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, cache_dir=root, cache_blobs=True)
        oa.compile_model(sg.residual(blocks=2), "HETERO:CPUF,CPU", core=testbed.core, cache_dir=root,
                         cache_blobs=True)
    finally:
        os.umask(old)
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in (root / "openvino").iterdir()}
    assert modes and set(modes.values()) == {"0o600"}, modes


def test_a_hard_linked_blob_loses_its_name_and_the_file_behind_it_keeps_its_mode(testbed, tmp_path, caplog):
    """Found by the hostile probe: making a hard-linked blob 0600 changed the mode of its other name, outside the
    root. A blob name with another link is removed before the compile, like a FIFO there."""
    root = tmp_path / "root"
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    os.chmod(outside, 0o644)
    oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, cache_dir=root, cache_blobs=True)
    (blob,) = (root / "openvino").glob("*.blob")
    blob.unlink()
    os.link(outside, blob)
    with caplog.at_level(logging.WARNING):
        oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, cache_dir=root, cache_blobs=True)
    assert "hard links" in caplog.text
    assert outside.read_text() == "keep me" and outside.stat().st_mode & 0o777 == 0o644
    assert all(p.stat().st_nlink == 1 and p.stat().st_mode & 0o777 == 0o600 for p in (root / "openvino").iterdir())
