"""Background profiling: a detached worker measures for the next start; one per key; the app never suffers."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time

import openvino as ov
import pytest

import ov_autoplace as oa
from ov_autoplace import background
from ov_autoplace.background import MAX_FAILURES, acquire_lock, release_lock, run_worker, worker_files
from tests import synthetic_graphs as sg

DISTINCT = "HETERO:CPUS,CPU"


def _join_spawner(timeout: float = 60.0) -> None:
    for thread in threading.enumerate():
        if thread.name == "ov_autoplace-bg":
            thread.join(timeout)


def _source(caplog) -> str:
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("placement source: ")]
    return lines[-1].split(": ", 1)[1] if lines else ""


def _lock_files(root):
    return list((root / "workers").glob("*.lock"))


def test_lock_is_exclusive_and_stale_locks_are_taken_over(tmp_path):
    lock = tmp_path / "k.lock"
    assert acquire_lock(lock)
    assert not acquire_lock(lock), "never two workers for one key"
    release_lock(lock)
    assert not lock.exists()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(str(dead.pid))  # a worker that died
    assert acquire_lock(lock) and lock.read_text() == str(os.getpid())


@pytest.mark.slow
def test_worker_stores_a_profiled_placement_for_the_next_start(thread_core, tmp_path, caplog):
    model = sg.residual(blocks=2)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path, profile="background")
    assert _source(caplog).startswith("prior")
    assert "background profiling started" in caplog.text
    assert compiled(oa.random_inputs(compiled))[0].shape == (1, 10), "the app runs now, on the prior's placement"
    _join_spawner()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):  # a second start while it runs: no second worker
        oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path, profile="background")
    if _lock_files(tmp_path):
        assert "already measuring" in caplog.text
    deadline = time.time() + 240
    while _lock_files(tmp_path) and time.time() < deadline:
        time.sleep(0.5)
    assert not _lock_files(tmp_path), "the worker should finish and release its lock"
    logs = list((tmp_path / "workers").glob("*.log"))
    assert logs and "stored the profiled placement" in logs[0].read_text(), logs[0].read_text()[-2000:]
    assert not list((tmp_path / "workers").glob("*.xml")), "the worker removes the model it was handed"
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path, profile="background")
    assert _source(caplog).startswith("cache (profile")  # "profile" or "profile+guard"
    assert "background profiling started" not in caplog.text


@pytest.mark.slow
def test_killed_worker_leaves_the_app_unaffected_and_is_restarted(thread_core, tmp_path, caplog):
    model = sg.residual(blocks=3)
    oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path, profile="background")
    _join_spawner()
    (lock,) = _lock_files(tmp_path)
    os.kill(int(lock.read_text()), signal.SIGKILL)
    time.sleep(0.5)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path, profile="background")
    assert _source(caplog).startswith("cache (prior)"), "the app's own entry survived the worker's death"
    assert "background profiling started" in caplog.text, "a dead worker's lock is stale: a new one starts"
    assert compiled(oa.random_inputs(compiled))[0].shape == (1, 10)
    _join_spawner()
    (lock,) = _lock_files(tmp_path)
    os.kill(int(lock.read_text()), signal.SIGKILL)
    time.sleep(0.5)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):  # killed twice: no endless respawning
        compiled = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path, profile="background")
    assert "not retrying" in caplog.text and "background profiling started" not in caplog.text
    assert compiled(oa.random_inputs(compiled))[0].shape == (1, 10)


def test_read_only_cache_means_no_worker_and_a_compiled_model(thread_core, tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a cache root under a regular file cannot be created, even as root
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(sg.residual(), DISTINCT, core=thread_core, cache_dir=blocker / "c",
                                    profile="background")
    assert isinstance(compiled, ov.CompiledModel)
    assert "background profiling not started" in caplog.text
    assert "falling back" not in caplog.text


def test_failing_worker_counts_failures_and_stops_being_started(thread_core, tmp_path, caplog):
    key = {"kind": "placement", "devices": ["CPUS", "CPU"], "model_structure": "x"}
    files = worker_files(tmp_path, key)
    files["lock"].parent.mkdir(parents=True)
    assert acquire_lock(files["lock"])
    spec = {"key": key, "devices": ["CPUS", "CPU"], "setup": {}, "model": str(files["model"]),  # no model written
            "cache_dir": str(tmp_path), "max_submodels": 8, "seed": 0, "lock": str(files["lock"]),
            "failed": str(files["failed"]), "pins": []}
    files["spec"].write_text(json.dumps(spec))
    with pytest.raises(Exception):
        run_worker(files["spec"])
    assert background.failures(files["failed"]) == 1 and not files["lock"].exists()
    files["failed"].write_text(str(MAX_FAILURES))

    class Req:
        devices, core, model, max_submodels, seed, pins = ("CPUS", "CPU"), thread_core, sg.residual(), 8, 0, []

    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        assert not background.spawn_worker(Req, tmp_path, key, None)
    assert "not retrying" in caplog.text
