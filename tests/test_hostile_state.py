"""Hostile or broken on-disk state (issue 23): every compile returns in bounded time with correct outputs,
touches nothing outside the cache root, and the next start heals.

Each risky compile runs in a daemon thread joined with a timeout, so a regression (a read that blocks on a
FIFO, a read of /dev/zero) fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ov_autoplace.cache.placement_cache import PlacementCache
from ov_autoplace.cache.root import clear_cache
from tests import synthetic_graphs as sg
from tests.damaged_files import HOSTILE_KINDS, make_hostile
from tests.hostile import BOUND_S, bounded, compile_checked, snapshot  # noqa: F401 - shared with the probe

NOBODY = 65534


@pytest.fixture()
def testbed(distinct_testbed):
    """These tests attack the cache, which the first start never touches on two identical devices."""
    return distinct_testbed


@pytest.fixture()
def outside(tmp_path):
    """A folder outside the cache root with a file in it, and its snapshot."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "precious.txt").write_text("keep me")
    (folder / "placement-x.json").write_text("{}")
    return folder


def _entry(root: Path) -> Path:
    (entry,) = PlacementCache(root).entries()
    return entry


def _heals(testbed, root: Path, caplog) -> None:
    """The next start warns about nothing and finds a regular, private entry."""
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        compile_checked(testbed, root)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    entry = _entry(root)
    assert stat.S_ISREG(os.lstat(entry).st_mode) and stat.S_IMODE(os.lstat(entry).st_mode) == 0o600


FILE_ATTACKS = ["fifo", "dev_zero", "etc_passwd", "outside_file", "outside_dir", "oversize"]


@pytest.mark.parametrize("target,hostile", [("entry", h) for h in FILE_ATTACKS + ["negative_index", "string_index"]]
                         + [("index", h) for h in FILE_ATTACKS])  # the index holds no node indices
def test_a_hostile_entry_is_refused_and_healed(testbed, tmp_path, outside, caplog, hostile, target):
    """``entry``: the placement-cache entry (read once the single-device index is gone); ``index``: that index."""
    root = tmp_path / "root"
    compile_checked(testbed, root)
    (index,) = (root / "placements").glob("single-*.json")
    if target == "entry":
        index.unlink()
        entry = _entry(root)
    else:
        entry = index
    if hostile in HOSTILE_KINDS:  # valid JSON past the caps for "oversize": 16 MiB of an entry, 1 MiB of the index
        make_hostile(entry, hostile, outside)
    else:
        data = json.loads(entry.read_text())
        data["payload"]["compute_by_index"] = [-1] if hostile == "negative_index" else ["3"]
        entry.write_text(json.dumps(data))
    before = snapshot(outside)
    passwd = os.stat("/etc/passwd")
    with caplog.at_level(logging.WARNING):
        compile_checked(testbed, root)
    assert "refused" in caplog.text or "corrupt" in caplog.text, caplog.text
    assert snapshot(outside) == before, "nothing outside the cache root is touched"
    assert os.stat("/etc/passwd").st_mtime_ns == passwd.st_mtime_ns
    _heals(testbed, root, caplog)


@pytest.mark.parametrize("where", ["other_entry_fifo", "other_entry_dev_zero"])
def test_a_hostile_file_under_another_entrys_name_does_not_hang_a_miss(testbed, tmp_path, caplog, where):
    """A miss reads other entries to explain itself: a FIFO or /dev/zero there is refused and removed."""
    root = tmp_path / "root"
    compile_checked(testbed, root)
    bad = root / "placements" / ("placement-" + "0" * 40 + ".json")
    os.mkfifo(bad) if where == "other_entry_fifo" else bad.symlink_to("/dev/zero")
    with caplog.at_level(logging.WARNING):
        compile_checked(testbed, root, sg.residual(blocks=2))  # another model: a miss
    assert not os.path.lexists(bad) and "refused" in caplog.text


def test_layout_folders_symlinked_out_of_the_root_are_replaced_not_followed(testbed, tmp_path, outside, caplog):
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    (root / "placements").symlink_to(outside)
    before = snapshot(outside)
    assert PlacementCache(root).entries() == [], "cache list does not follow it either"
    with caplog.at_level(logging.WARNING):
        compile_checked(testbed, root)
    assert snapshot(outside) == before
    assert (root / "placements").is_dir() and not (root / "placements").is_symlink()
    assert "symbolic link" in caplog.text
    _heals(testbed, root, caplog)


@pytest.mark.parametrize("how", ["other_owner", "group_writable", "world_writable"])
def test_a_root_that_is_not_private_is_refused_and_placement_goes_on(testbed, tmp_path, caplog, capsys, how):
    if os.geteuid() != 0 and how == "other_owner":
        pytest.skip("chown to another user needs root")
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    if how == "other_owner":
        os.chown(root, NOBODY, NOBODY)
    else:
        os.chmod(root, 0o770 if how == "group_writable" else 0o777)
    before = snapshot(root)
    with caplog.at_level(logging.WARNING):
        compile_checked(testbed, root, profile="background")
    assert snapshot(root) == before, "a refused root is neither read nor written"
    assert "refused" in caplog.text and ("owned by uid 65534" in caplog.text or "writable by group" in caplog.text)
    assert "falling back" not in caplog.text
    from ov_autoplace.cli.main import main

    assert main(["cache", "list", "--cache-dir", str(root)]) == 0
    assert "compile_model refuses this cache root" in capsys.readouterr().out


@pytest.mark.slow
def test_umask_000_leaves_nothing_writable_by_others(testbed, tmp_path):
    """Everything created under the root (placements, index, profiles, the worker's folder) is 0700 / 0600."""
    import time

    root = tmp_path / "root"
    old = os.umask(0)
    try:
        compile_checked(testbed, root, profile="now")
        compile_checked(testbed, root, cache_blobs=True)
        compile_checked(testbed, root, sg.residual(blocks=2), profile="background")  # the worker inherits umask 0
        for thread in threading.enumerate():
            if thread.name == "ov_autoplace-bg":
                thread.join(60)
        deadline = time.time() + 240
        while list(root.glob("workers/*/lock")) and time.time() < deadline:
            time.sleep(0.5)
    finally:
        os.umask(old)
    assert list(root.glob("workers/*/worker.log")), "the worker ran"
    modes = {str(p): stat.S_IMODE(os.lstat(p).st_mode) for p in [root, *root.rglob("*")]}
    assert list((root / "openvino").glob("*.blob")), "OpenVINO wrote its blob"
    assert all(m == (0o700 if os.path.isdir(p) else 0o600) for p, m in modes.items()), modes  # OpenVINO's blobs too


def test_cache_clear_tells_the_truth_about_links_and_fifos(tmp_path, outside, capsys):
    from ov_autoplace.cli.main import main

    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    (root / "placements").symlink_to(outside)
    (root / "profiles").mkdir(mode=0o700)
    os.mkfifo(root / "profiles" / "model-a.json")
    (root / "profiles" / "model-b.json").write_text("{}")
    (root / "profiles" / "escape").symlink_to(outside)
    before = snapshot(outside)
    assert bounded(lambda: main(["cache", "clear", "--cache-dir", str(root)])) == 0
    out = capsys.readouterr().out
    assert "removed 3 file(s)" in out and "placements: 0" in out and "profiles: 3" in out, out
    assert "symbolic link" in out and "followed nothing" in out, out
    assert snapshot(outside) == before
    assert sorted(p.name for p in root.iterdir()) == []


def test_cache_clear_leaves_another_users_root_alone(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    root = tmp_path / "root"
    (root / "placements").mkdir(parents=True)
    (root / "placements" / "placement-a.json").write_text("{}")
    os.chown(root, NOBODY, NOBODY)
    report = clear_cache(root)
    assert report.total == 0 and "not ours to clear" in report.summary()
    assert (root / "placements" / "placement-a.json").exists()


def _run_worker_cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ov_autoplace.decision.background_worker", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=Path(__file__).resolve().parents[1])


def test_a_foreign_worker_spec_names_no_paths(tmp_path, outside):
    """The issue's attack: a spec naming a file to measure, delete and write. The worker takes no such path."""
    victim = outside / "victim.xml"
    victim.write_text("<net/>")
    (outside / "victim.bin").write_text("weights")
    root = tmp_path / "root"
    digest = "0123456789abcdef0123456789abcdef"
    folder = root / "workers" / digest
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o700), os.chmod(root / "workers", 0o700)
    spec = {"format": 2, "key": {"kind": "placement", "devices": ["CPU"]}, "devices": ["CPU"], "setup": {},
            "model": str(victim), "lock": str(outside / "precious.txt"), "failed": str(outside / "precious.txt"),
            "cache_dir": str(outside), "max_submodels": 8, "seed": 0, "pins": []}
    (folder / "spec.json").write_text(json.dumps(spec))
    old_style = tmp_path / "spec.json"
    old_style.write_text(json.dumps(spec))
    before = snapshot(outside)
    assert _run_worker_cli(str(old_style)).returncode == 2, "a spec path is not accepted"
    done = _run_worker_cli(str(root), digest)
    assert done.returncode == 3 and "foreign spec" in done.stderr + done.stdout
    assert _run_worker_cli(str(root), "../../outside").returncode == 2, "a digest is 32 hex digits, not a path"
    assert snapshot(outside) == before, "the worker touched nothing outside its folder"
    failure = json.loads((folder / "failure.json").read_text())
    assert failure["failures"] == 1 and "foreign spec" in failure["reason"]
    assert not (folder / "spec.json").exists(), "it removes only its own folder's files"


def test_a_worker_folder_symlinked_elsewhere_is_not_entered(tmp_path, outside):
    root = tmp_path / "root"
    (root / "workers").mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o700)
    digest = "0123456789abcdef0123456789abcdef"
    (outside / "spec.json").write_text("{}")
    (root / "workers" / digest).symlink_to(outside)
    before = snapshot(outside)
    assert _run_worker_cli(str(root), digest).returncode == 2
    assert snapshot(outside) == before


@pytest.fixture()
def full_disk(tmp_path):
    mount = tmp_path / "full"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a 1 MiB tmpfs here (needs root)")
    os.chmod(mount, 0o700)
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_cache_blobs_on_a_full_disk_is_a_warning(testbed, full_disk, caplog):
    with caplog.at_level(logging.WARNING):
        compile_checked(testbed, full_disk, cache_blobs=True)
    assert "cache_blobs=True but the disk" in caplog.text and "MiB free" in caplog.text


@pytest.mark.parametrize("hostile", ["fifo", "dev_zero"])
def test_a_hostile_blob_in_our_blob_cache_is_removed_before_openvino_reads_it(testbed, tmp_path, caplog, hostile):
    """OpenVINO's own blob read blocks on a FIFO (measured: a plain core.compile_model with CACHE_DIR hung until
    killed); with cache_blobs=True the folder is ours, so it is swept first."""
    root = tmp_path / "root"
    compile_checked(testbed, root, cache_blobs=True)
    (blob,) = (root / "openvino").glob("*.blob")
    blob.unlink()
    os.mkfifo(blob) if hostile == "fifo" else blob.symlink_to("/dev/zero")
    with caplog.at_level(logging.WARNING):
        compile_checked(testbed, root, cache_blobs=True)
    assert "not a blob OpenVINO can read" in caplog.text
    assert all(stat.S_ISREG(os.lstat(p).st_mode) for p in (root / "openvino").iterdir())


@pytest.mark.slow
def test_hostile_files_in_a_worker_folder_are_never_followed(testbed, tmp_path, outside, caplog):
    """A FIFO as the log, links as the model copy, the lock and the failure record: the worker starts, measures,
    and nothing outside the root is read or written."""
    import time

    from ov_autoplace.call_request import build_request
    from ov_autoplace.decision import background_worker as background
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.model.prepare import prepare_model

    root = tmp_path / "root"
    model = sg.residual(blocks=2)
    graph = extract_graph(prepare_model(model))
    key = PlacementCache(root).key(testbed.core, graph, testbed.devices, strategy="test")
    digest = background.worker_digest(key)
    files = background.worker_files(root, digest)
    background.private_worker_dir(root, digest)
    os.mkfifo(files["log"])
    files["model"].symlink_to(outside / "precious.txt")
    files["weights"].symlink_to(outside / "placement-x.json")
    files["lock"].symlink_to(outside / "precious.txt")
    files["failed"].symlink_to("/dev/zero")
    before = snapshot(outside)
    req = build_request(model, testbed.hetero, core=testbed.core)  # the request compile_model would hand it
    with caplog.at_level(logging.WARNING):
        assert bounded(lambda: background.spawn_worker(req, root, key, graph))
        for thread in threading.enumerate():
            if thread.name == "ov_autoplace-bg":
                thread.join(60)
    deadline = time.time() + 240
    while os.path.lexists(files["lock"]) and time.time() < deadline:
        time.sleep(0.5)
    assert snapshot(outside) == before, "nothing outside the root was written through a link"
    assert "stored the" in files["log"].read_text(), files["log"].read_text()[-2000:]
    assert all(stat.S_ISREG(os.lstat(p).st_mode) for p in files["log"].parent.iterdir())


def test_a_hostile_entry_never_costs_the_users_pins(testbed, tmp_path, caplog):
    """The issue's case: an entry linked to /dev/zero made the placement path fail (MemoryError) and the fallback
    dropped the pins. Now the entry is refused unread and the pinned placement is made and stored again."""
    root = tmp_path / "root"
    pins = {"type:Convolution": testbed.devices[1]}
    compile_checked(testbed, root, pins=pins)
    entry = _entry(root)
    entry.unlink()
    entry.symlink_to("/dev/zero")
    with caplog.at_level(logging.WARNING):
        compile_checked(testbed, root, pins=pins)
    assert "refused" in caplog.text and "placement path failed" not in caplog.text
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.model.prepare import prepare_model

    graph = extract_graph(prepare_model(sg.residual()))
    devices = json.loads(_entry(root).read_text())["payload"]["device_by_index"]
    convolutions = [i for i, op in enumerate(graph.op_types) if op == "Convolution"]
    assert convolutions and all(devices[i] == testbed.devices[1] for i in convolutions), devices
