"""Background profiling: a detached worker measures and verifies for the next start; one per key; the app never
suffers; it works on the testbed (properties restored as values); a failure is told, with its reason."""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
import subprocess
import sys
import threading
import time

import openvino as ov
import pytest

import ov_autoplace as oa
from ov_autoplace.decision import background_worker as background
from ov_autoplace.decision.background_worker import (MAX_FAILURES, WORKER_PROPERTIES, acquire_lock, decode_property, device_setup,
                                     encode_property, read_failure, release_lock, restore_devices, run_worker,
                                     worker_digest, worker_files)
from ov_autoplace.cache.profile_store import device_properties
from tests import synthetic_graphs as sg
from ov_autoplace.devices.timing import random_inputs

DISTINCT = "HETERO:CPUS,CPU"


def _join_spawner(timeout: float = 60.0) -> None:
    for thread in threading.enumerate():
        if thread.name == "ov_autoplace-bg":
            thread.join(timeout)


def _source(caplog) -> str:
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("placement source: ")]
    return lines[-1].split(": ", 1)[1] if lines else ""


def _locks(root):
    return list((root / "workers").glob("*/lock"))


def _worker_pid(lock, timeout: float = 60.0) -> int:
    """The worker's pid once it wrote it into its lock (the app's pid is there until then)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        pid = int(lock.read_text() or 0)
        if pid and pid != os.getpid():
            return pid
        time.sleep(0.1)
    raise AssertionError("the worker never took its lock")


def _wait_for_workers(root, timeout: float = 300.0) -> None:
    deadline = time.time() + timeout
    while _locks(root) and time.time() < deadline:
        time.sleep(0.5)
    assert not _locks(root), "the worker should finish and release its lock"


def test_lock_is_exclusive_private_and_stale_locks_are_taken_over(tmp_path):
    lock = tmp_path / "lock"
    old = os.umask(0)
    try:
        assert acquire_lock(lock)
    finally:
        os.umask(old)
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert not acquire_lock(lock), "never two workers for one key"
    release_lock(lock)
    assert not lock.exists()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(str(dead.pid))  # a worker that died
    assert acquire_lock(lock) and lock.read_text() == str(os.getpid())


def test_device_properties_round_trip_as_values(testbed):
    """Issue 19 item 5: ov.Type by its name, enums by name; their str() is not a value and is refused."""
    for device in testbed.devices:
        for prop in WORKER_PROPERTIES:
            value = testbed.core.get_property(device, prop)
            stored = json.loads(json.dumps(encode_property(value)))
            assert decode_property(stored) == value and type(decode_property(stored)) is type(value)
    assert encode_property(ov.Type.bf16) == {"ov_type": "bf16"}
    for bad in ({"ov_type": "bitwidth"}, {"ov_enum": "os.system", "name": "x"}, {"str": "<Type: 'bfloat16'>"}):
        with pytest.raises(ValueError):
            decode_property(bad)


def test_a_fresh_core_gets_the_apps_device_properties_back(testbed):
    """The worker's setup on a fresh core reproduces the testbed's key properties (the str() form left the CPU
    plugin '<unsupported>' and CPUF in bf16, so the worker never measured)."""
    setup = json.loads(json.dumps(device_setup(testbed.core, testbed.devices)))
    fresh = ov.Core()
    restore_devices(fresh, setup)
    for device in testbed.devices:
        assert device_properties(fresh, device) == device_properties(testbed.core, device)
    assert "<unsupported>" not in json.dumps({d: device_properties(fresh, d) for d in testbed.devices})


def test_a_rejected_property_is_the_workers_failure_reason():
    setup = {"CPU": {"base": None, "properties": {"INFERENCE_NUM_THREADS": "many"}}}
    with pytest.raises(background.WorkerFailure, match="CPU rejected INFERENCE_NUM_THREADS='many'"):
        restore_devices(ov.Core(), setup)


@pytest.mark.slow
def test_worker_on_the_testbed_stores_a_placement_for_the_next_start(distinct_testbed, tmp_path, caplog):
    """Background profiling works on the testbed (it never did: the properties were restored as strings)."""
    testbed = distinct_testbed  # two identical devices start no worker
    model = sg.residual(blocks=2)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, testbed.hetero, core=testbed.core, cache_dir=tmp_path, profile="background")
    assert "background profiling started" in caplog.text
    assert compiled(random_inputs(compiled))[0].shape == (1, 10), "the app runs now"
    _join_spawner()
    _wait_for_workers(tmp_path)
    (log,) = (tmp_path / "workers").glob("*/worker.log")
    text = log.read_text()
    assert "stored the" in text and "not measuring" not in text and "<unsupported>" not in text, text[-3000:]
    # No failure. A verification that abstained (a machine too loaded or noisy to decide, as CI's under -n 2 on a
    # CPU with bf16, where the two devices differ) is recorded as a try, and the next start tries once more.
    records = [read_failure(p) for p in (tmp_path / "workers").glob("*/failure.json")]
    assert all(r.get("abstained") is True for r in records), records
    assert not list((tmp_path / "workers").glob("*/model.xml")), "the worker removes its model copy"
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        oa.compile_model(model, testbed.hetero, core=testbed.core, cache_dir=tmp_path, profile="background")
    assert _source(caplog).startswith("cache (profile")
    if not records:
        assert "background profiling started" not in caplog.text
    _join_spawner()
    _wait_for_workers(tmp_path)


@pytest.mark.slow
def test_the_worker_verifies_a_deviation_and_cache_list_shows_the_state(distinct_testbed, tmp_path, capsys):
    """On HETERO:CPUF,CPU the plain call runs CPUF (f32); all-CPU (bf16) deviates from it, so the worker measures
    before storing it (without bf16: CPUS, one thread, and CPU; the two f32 twins are never timed against each
    other). On a loaded machine the verification may abstain; the state says which happened."""
    import numpy as np

    from ov_autoplace.cache.placement_cache import PlacementCache
    from ov_autoplace.cli.main import main
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.placement.legalizer import legalize, query_support
    from ov_autoplace.model.prepare import prepare_model

    testbed = distinct_testbed
    devices = testbed.devices[::-1]
    model = sg.residual(blocks=2, channels=16, size=32)
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    support = query_support(testbed.core, prepared, graph, devices)
    candidate = legalize(graph, np.full(graph.num_nodes, 1, dtype=np.int64), devices, support, max_submodels=None,
                         strategy="hsdag:profile")
    key = PlacementCache(tmp_path).key(testbed.core, graph, devices, strategy="test")
    reason = background.store_verified(testbed.core, tmp_path, key, prepared, graph, model, candidate,
                                       device_name="HETERO:" + ",".join(devices))
    assert main(["cache", "list", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    stored = json.loads(PlacementCache(tmp_path).entries()[0].read_text())["payload"]
    assert stored["verification"]["rule"] and stored["verification"]["median_ms"], "the evidence is stored"
    if reason is None:  # a win on a loaded machine (CI's) is stored as provisional
        assert "state: verified (" in out or "state: provisional (" in out, out
    else:
        assert reason.startswith("verification abstained") and "state: pending (the last verification abstained" in out


def test_the_worker_verifies_a_runner_up_even_when_the_candidate_is_the_plain_call(f32_testbed, tmp_path):
    """The policy may place everything where the plain call does while HEFT on the same costs splits: the worker
    then measures the split (it used to store the plain placement unmeasured)."""
    import numpy as np

    from ov_autoplace.cache.placement_cache import PlacementCache
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.graph.arrays import NodeRole
    from ov_autoplace.placement.legalizer import legalize, query_support
    from ov_autoplace.model.prepare import prepare_model
    from ov_autoplace.decision.verification import plain_placement

    devices = f32_testbed.devices
    model = sg.residual(blocks=2)
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    support = query_support(f32_testbed.core, prepared, graph, devices)
    candidate = plain_placement(graph, devices, support, strategy="hsdag:profile")
    proposal = np.zeros(graph.num_nodes, dtype=np.int64)
    proposal[np.flatnonzero(graph.role == NodeRole.COMPUTE)[2:5]] = 1
    split = legalize(graph, proposal, devices, support, strategy="heft")
    key = PlacementCache(tmp_path).key(f32_testbed.core, graph, devices, strategy="test")
    reason = background.store_verified(f32_testbed.core, tmp_path, key, prepared, graph, model, candidate,
                                       device_name=f32_testbed.hetero, alternatives=[split], support=support)
    stored = json.loads(PlacementCache(tmp_path).entries()[0].read_text())["payload"]
    assert "alternative:heft" in stored["verification"]["median_ms"], stored["verification"]
    assert reason is None or reason.startswith("verification abstained")


def test_cache_list_says_pending_and_failed(thread_core, tmp_path, capsys):
    from ov_autoplace.cli.main import main

    import numpy as np

    from ov_autoplace.cache.placement_cache import PlacementCache
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.placement.legalizer import legalize

    graph = extract_graph(sg.residual())
    cache = PlacementCache(tmp_path)
    key = cache.key(thread_core, graph, ("CPUS", "CPU"), strategy="test")
    support = np.ones((graph.num_nodes, 2), dtype=bool)
    cache.put(key, legalize(graph, np.zeros(graph.num_nodes, dtype=np.int64), ("CPUS", "CPU"), support,
                            max_submodels=None, strategy="hsdag:prior"), graph)
    main(["cache", "list", "--cache-dir", str(tmp_path)])
    assert "state: prior (not measured" in capsys.readouterr().out
    files = worker_files(tmp_path, worker_digest(key))
    background.private_worker_dir(tmp_path, worker_digest(key))
    assert acquire_lock(files["lock"])
    main(["cache", "list", "--cache-dir", str(tmp_path)])
    assert f"state: pending (worker pid {os.getpid()} is measuring)" in capsys.readouterr().out
    release_lock(files["lock"])
    background.record_failure(files["failed"], "CPU rejected INFERENCE_PRECISION_HINT")
    main(["cache", "list", "--cache-dir", str(tmp_path)])
    assert "state: failed 1x (CPU rejected INFERENCE_PRECISION_HINT)" in capsys.readouterr().out


@pytest.mark.slow
def test_killed_worker_leaves_the_app_unaffected_and_is_restarted(thread_core, tmp_path, caplog):
    model = sg.residual(blocks=3)
    oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path, profile="background")
    _join_spawner()
    (lock,) = _locks(tmp_path)
    os.kill(_worker_pid(lock), signal.SIGKILL)
    time.sleep(0.5)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path, profile="background")
    assert "died without finishing" in caplog.text, "the next start says why the last worker stopped"
    assert "background profiling started" in caplog.text, "a dead worker's lock is stale: a new one starts"
    assert compiled(random_inputs(compiled))[0].shape == (1, 10)
    _join_spawner()
    (lock,) = _locks(tmp_path)
    os.kill(_worker_pid(lock), signal.SIGKILL)
    time.sleep(0.5)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):  # killed twice: no endless respawning
        compiled = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path, profile="background")
    assert "not retrying" in caplog.text and "background profiling started" not in caplog.text
    assert compiled(random_inputs(compiled))[0].shape == (1, 10)


def test_read_only_cache_means_no_worker_and_a_compiled_model(thread_core, tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a cache root under a regular file cannot be created, even as root
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(sg.residual(), DISTINCT, core=thread_core, cache_dir=blocker / "c",
                                    profile="background")
    assert isinstance(compiled, ov.CompiledModel)
    assert "background profiling not started" in caplog.text
    assert "falling back" not in caplog.text


class _Req:
    devices, max_submodels, seed, pins, spec, props = ("CPUS", "CPU"), 8, 0, [], None, {}

    def __init__(self, core):
        self.core, self.placement_model = core, sg.residual()


def test_a_failing_worker_records_why_and_the_next_start_warns_once(thread_core, tmp_path, caplog):
    key = {"kind": "placement", "devices": ["CPUS", "CPU"], "model_structure": "x"}
    digest = worker_digest(key)
    files = worker_files(tmp_path, digest)
    background.private_worker_dir(tmp_path, digest)
    assert acquire_lock(files["lock"])
    spec = {"format": background.SPEC_FORMAT, "key": key, "devices": ["CPUS", "CPU"], "setup": {}, "config": {},
            "device_name": DISTINCT, "max_submodels": 8, "seed": 0, "pins": []}
    files["spec"].write_text(json.dumps(spec))  # no model copy beside it
    assert run_worker(tmp_path, digest) == 3
    record = read_failure(files["failed"])
    assert record["failures"] == 1 and "model.xml" in record["reason"] and not files["lock"].exists()
    assert stat.S_IMODE(files["failed"].stat().st_mode) == 0o600
    req = _Req(thread_core)
    assert acquire_lock(files["lock"])  # a live worker holds it: no second one, but the failure is told
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        assert not background.spawn_worker(req, tmp_path, key, None)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "failed (1 of 2 tries)" in warnings[0] and "model.xml" in warnings[0]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        assert not background.spawn_worker(req, tmp_path, key, None)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING], "told once, not on every start"
    release_lock(files["lock"])
    background.record_failure(files["failed"], "second reason")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        assert not background.spawn_worker(req, tmp_path, key, None)
    assert "second reason" in caplog.text and f"failed ({MAX_FAILURES} of {MAX_FAILURES} tries)" in caplog.text
    assert "not retrying" in caplog.text


# --- what a spec may make the worker do (nothing outside its root) ---------------------------------------------


@pytest.fixture()
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "precious.txt").write_text("keep me")
    return folder


def _real_spec(core, devices, root, model):
    """A spec as the app writes it (key, setup, model copy) for ``model`` on ``devices``; returns (spec, digest)."""
    from ov_autoplace.cache.placement_cache import PlacementCache
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.model.prepare import prepare_model

    key = PlacementCache(root).key(core, extract_graph(prepare_model(model)), devices, strategy="test")
    digest = worker_digest(key)
    files = worker_files(root, digest)
    background.private_worker_dir(root, digest)
    ov.save_model(model, str(files["model"]), compress_to_fp16=False)
    spec = {"format": background.SPEC_FORMAT, "key": key, "devices": list(devices),
            "setup": json.loads(json.dumps(device_setup(core, devices))), "config": {}, "device_name": DISTINCT,
            "max_submodels": 8, "seed": 0, "pins": []}
    return spec, digest


def test_the_worker_sets_only_the_properties_the_app_hands_it(thread_core, tmp_path, outside):
    """A spec with a valid key and CACHE_DIR on a device made the worker compile with blobs written there: now
    only WORKER_PROPERTIES are set; anything else is the worker's failure, naming it and the allow-list."""
    from tests.hostile import FAST_S, bounded, outside_changes, surroundings

    root = tmp_path / "root"
    spec, digest = _real_spec(thread_core, ("CPUS", "CPU"), root, sg.residual())
    spec["setup"]["CPU"]["properties"]["CACHE_DIR"] = str(outside / "blobs")
    files = worker_files(root, digest)
    files["spec"].write_text(json.dumps(spec))
    before = surroundings(root, outside)
    assert bounded(lambda: run_worker(root, digest), FAST_S) == 3
    reason = read_failure(files["failed"])["reason"]
    assert "CACHE_DIR" in reason and all(p in reason for p in WORKER_PROPERTIES), reason
    assert outside_changes(before, surroundings(root, outside)) == [], "nothing written outside the root"
    assert not (outside / "blobs").exists()


@pytest.mark.parametrize("setup", [{"CPU": {"base": None, "properties": {"CACHE_DIR": "/tmp/elsewhere"}}},
                                   {"CPU": {"base": None, "properties": {"WEIGHTS_PATH": "/tmp/w.bin"}}},
                                   {"CPU": {"base": None, "properties": {"PERF_COUNT": True}}},
                                   {"CPU": {"base": None, "properties": ["CACHE_DIR"]}}])
def test_a_property_outside_the_allow_list_is_refused_before_any_device_is_touched(setup):
    core = ov.Core()
    with pytest.raises(background.WorkerFailure, match="not measuring"):
        restore_devices(core, setup)
    assert not core.get_property("CACHE_DIR"), "nothing was set"


def test_no_path_reaches_the_worker_through_the_config(tmp_path):
    assert background._encoded_config({"CACHE_DIR": "/x", "WEIGHTS_PATH": "/w", "PERFORMANCE_HINT": "LATENCY"}) \
        == {"PERFORMANCE_HINT": "LATENCY"}
    key = {"kind": "placement", "devices": ["CPU"]}
    digest = worker_digest(key)
    files = worker_files(tmp_path, digest)
    background.private_worker_dir(tmp_path, digest)
    files["spec"].write_text(json.dumps({"format": background.SPEC_FORMAT, "key": key, "devices": ["CPU"],
                                         "setup": {}, "config": {"CACHE_DIR": "/elsewhere"}, "max_submodels": 8,
                                         "seed": 0, "pins": []}))
    with pytest.raises(background.WorkerFailure, match="a config without a path"):
        background.read_spec(files["spec"], digest)


@pytest.mark.parametrize("generation, shapes, ok", [
    ([128, 64], {"input_ids": [1, 128], "beam_idx": [1]}, True),
    ([128, 0], {"input_ids": [1, 128]}, False),
    ([128, "64"], {"input_ids": [1, 128]}, False),
    ([128, 64], None, False),
    ([128, 64], {"input_ids": "[1, 128]"}, False),
], ids=["decoder", "no_new_token", "text", "no_shapes", "shape_text"])
def test_a_decoder_s_generation_reaches_the_worker_checked(tmp_path, generation, shapes, ok):
    """The app hands the worker a decoder's generation and placement shapes; anything else is refused."""
    key = {"kind": "placement", "devices": ["CPU"]}
    digest = worker_digest(key)
    files = worker_files(tmp_path, digest)
    background.private_worker_dir(tmp_path, digest)
    spec = {"format": background.SPEC_FORMAT, "key": key, "devices": ["CPU"], "setup": {}, "config": {},
            "max_submodels": 8, "seed": 0, "pins": [], "generation": generation, "shapes": shapes}
    files["spec"].write_text(json.dumps(spec))
    if ok:
        assert background.read_spec(files["spec"], digest)["generation"] == generation
    else:
        with pytest.raises(background.WorkerFailure, match="a generation of two positive ints"):
            background.read_spec(files["spec"], digest)


@pytest.mark.parametrize("link", ["hard_link", "foreign_owner"])
def test_the_worker_log_is_never_written_through_a_hard_link(thread_core, tmp_path, outside, caplog, link):
    """The log is the worker's stdout: opened through a hard link (O_NOFOLLOW does not see one), the worker's
    lines went into the file outside the root. Now a log with another name, or not ours, is replaced by a fresh
    private file first."""
    from tests.hostile import outside_changes, surroundings

    if link == "foreign_owner" and os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    root = tmp_path / "root"
    key = {"kind": "placement", "devices": ["CPUS", "CPU"], "model_structure": "x"}
    digest = worker_digest(key)
    files = worker_files(root, digest)
    background.private_worker_dir(root, digest)
    assert acquire_lock(files["lock"])
    if link == "hard_link":
        os.link(outside / "precious.txt", files["log"])
    else:
        files["log"].write_text("someone else's\n")
        os.chown(files["log"], 65534, 65534)
    foreign = {"format": background.SPEC_FORMAT, "key": {**key, "model_structure": "y"}, "devices": ["CPUS", "CPU"],
               "setup": {}, "config": {}, "max_submodels": 8, "seed": 0, "pins": []}  # fails fast: a foreign spec
    before = surroundings(root, outside)
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        background._write_and_start(sg.residual(), foreign, root, digest)
    deadline = time.time() + 60
    while files["lock"].exists() and time.time() < deadline:  # the worker releases the lock when it is done
        time.sleep(0.1)
    assert not files["lock"].exists(), "the worker finished"
    assert (outside / "precious.txt").read_text() == "keep me"
    assert outside_changes(before, surroundings(root, outside)) == []
    st = os.lstat(files["log"])
    assert stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and st.st_uid == os.geteuid()
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert "foreign spec" in files["log"].read_text()
    assert "starting a fresh one" in caplog.text


def test_the_apps_input_sample_reaches_the_worker(thread_core, tmp_path, monkeypatch):
    """``inputs=`` with profile="background": the app writes the sample beside the model copy (0600, no pickles),
    the spec says so, and the worker measures inside it, as the app would have."""
    import numpy as np

    from ov_autoplace.call_request import build_request
    from ov_autoplace.cache.placement_cache import PlacementCache
    from ov_autoplace.devices.timing import current_sample, input_sample
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.model.prepare import prepare_model

    model = sg.llm_like()
    sample = {"input_ids": np.full((1, 6), 5, np.int64), "beam_idx": np.zeros(1, np.int32)}
    req = build_request(model, DISTINCT, core=thread_core, shapes={"input_ids": [1, 6], "attention_mask": [1, 6],
                                                                  "position_ids": [1, 6], "beam_idx": [1]})
    key = PlacementCache(tmp_path).key(thread_core, extract_graph(prepare_model(req.placement_model)), req.devices,
                                       strategy="test")
    started = []
    monkeypatch.setattr(background.subprocess, "Popen", lambda *a, **k: started.append(a) or _Finished())
    with input_sample(sample):
        assert background.spawn_worker(req, tmp_path, key, None)
    _join_spawner()
    files = worker_files(tmp_path, worker_digest(key))
    assert started and json.loads(files["spec"].read_text())["sample"] is True
    assert stat.S_IMODE(files["sample"].stat().st_mode) == 0o600
    seen = {}

    def measure(spec, root, model_path):
        seen.update(current_sample())
        return None

    monkeypatch.setattr(background, "_measure_and_store", measure)
    assert run_worker(tmp_path, worker_digest(key)) == 0
    assert set(seen) == set(sample) and all(np.array_equal(seen[n], sample[n]) for n in sample)
    assert not files["sample"].exists(), "the worker removes the sample with the model copy"


@pytest.mark.parametrize("content", [b"not an npz", "object"], ids=["garbage", "pickled_object"])
def test_a_sample_the_worker_cannot_read_is_its_failure(tmp_path, content):
    import io

    import numpy as np

    path = tmp_path / "sample.npz"
    if content == "object":
        buffer = io.BytesIO()
        np.savez(buffer, input_ids=np.array([{"a": 1}], dtype=object))
        content = buffer.getvalue()
    path.write_bytes(content)
    with pytest.raises(background.WorkerFailure, match="input sample .* is unreadable"):
        background._read_sample(path)


def test_a_sample_that_does_not_fit_the_workers_model_is_its_failure(thread_core, tmp_path):
    import io

    import numpy as np

    spec, digest = _real_spec(thread_core, ("CPUS", "CPU"), tmp_path, sg.residual())
    files = worker_files(tmp_path, digest)
    files["spec"].write_text(json.dumps(spec | {"sample": True}))
    buffer = io.BytesIO()
    np.savez(buffer, token_ids=np.zeros((1, 8), np.int64))
    files["sample"].write_bytes(buffer.getvalue())
    assert run_worker(tmp_path, digest) == 3
    reason = read_failure(files["failed"])["reason"]
    assert "input sample does not fit the model" in reason and "token_ids" in reason, reason


class _Finished:
    """A started worker that has already finished (``subprocess.Popen``'s ``wait``)."""

    def wait(self):
        return 0
