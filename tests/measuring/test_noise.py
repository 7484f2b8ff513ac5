"""Profile noise: per-op and end-to-end spreads, and loaded-machine detection (real compiles on the testbed)."""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import sys
import time

import numpy as np
import pytest

from ov_autoplace.measuring import noise
from ov_autoplace.measuring.noise import LoadProbe, assess_load, iqr, per_run_node_ms
from ov_autoplace.cache.profile_store import ProfileStore
from ov_autoplace.measuring.profiler import ModelProfile
from ov_autoplace.measuring.quick_profile import quick_model_profile
from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg

#: The CPU hog never outlives this, whatever happens to the test.
HOG_SECONDS = 90


@contextlib.contextmanager
def cpu_hog(processes: int = 1):
    """Busy-looping processes (one core each), stopped on exit and after ``HOG_SECONDS`` anyway."""
    code = f"import time\nend = time.time() + {HOG_SECONDS}\nwhile time.time() < end: pass"
    hogs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(processes)]
    try:
        time.sleep(0.3)  # let the scheduler see them
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait(timeout=10)


def test_iqr_and_per_run_times_from_running_averages():
    assert iqr(np.array([1.0, 2.0, 3.0, 4.0, 5.0])) == pytest.approx(2.0)
    assert iqr(np.array([[1.0, 10.0]])).tolist() == [0.0, 0.0], "one run: no spread"
    # a running-average plugin reports, after run k, each node's mean over runs 1..k in whole microseconds
    true = {"a": [0.5, 0.7, 0.4, 0.6], "b": [2.0, 2.2, 1.9, 2.1]}
    snapshots = [{n: np.floor(1e3 * np.mean(v[:k])) / 1e3 for n, v in true.items()} for k in range(1, 5)]
    runs = per_run_node_ms(snapshots[0], snapshots[1:], 1, running_average=True)
    for j, run in enumerate(runs):  # runs 2..4, within k microseconds of the truth
        for n in true:
            assert run[n] == pytest.approx(true[n][j + 1], abs=(j + 2) * 1e-3)
    assert per_run_node_ms({}, snapshots, 0, running_average=False) == snapshots


def test_assess_load():
    quiet = assess_load([10.0, 10.1, 9.9, 10.05, 10.0], other_cores=0.1)
    assert not quiet.loaded and quiet.reason == "" and quiet.e2e_ms == pytest.approx(10.0)
    busy = assess_load([10.0, 10.1, 9.9, 10.05, 10.0], other_cores=1.0)
    assert busy.loaded and "other processes kept 1.00" in busy.reason
    bursty = assess_load([10.0, 19.0, 10.0, 21.0, 10.5, 20.0], other_cores=float("nan"))
    assert bursty.loaded and "IQR" in bursty.reason
    assert not assess_load([10.0, 10.1], other_cores=float("nan")).loaded, "unknown CPU use alone proves nothing"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_the_load_probe_sees_a_busy_core():
    with cpu_hog():
        other = LoadProbe().start().other_cores()  # waits MIN_LOAD_WINDOW_S
    assert other > noise.LOADED_OTHER_CORES


def test_a_quick_profile_has_a_non_negative_spread_per_op_and_device(testbed):
    profile = quick_model_profile(sg.attention_like(seq=64, hidden=64), testbed.core, testbed.devices)
    cost = profile.cost_model
    graph = extract_graph(prepare_model(sg.attention_like(seq=64, hidden=64)))
    assert cost.compute_spread_ms.shape == cost.compute_ms.shape and cost.e2e_spread_ms.shape == (2,)
    assert (cost.compute_spread_ms >= 0).all() and (cost.e2e_spread_ms >= 0).all()
    compute = graph.role == NodeRole.COMPUTE
    assert (cost.compute_spread_ms[~compute] == 0).all(), "only ops that run have a spread"
    assert cost.compute_spread_ms[compute].sum() > 0, "per-run times vary"
    for report, spread in zip(profile.reports, cost.e2e_spread_ms):
        assert report.e2e_spread_ms == spread and report.e2e_ms > 0
        if sys.platform.startswith("linux"):
            assert np.isfinite(report.other_cores) and report.other_cores >= 0
        assert report.loaded == bool(report.load_reason)
    assert cost.loaded == any(r.loaded for r in profile.reports)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_a_profile_taken_while_another_core_is_busy_is_remeasured_then_marked_loaded(testbed, caplog):
    model = sg.attention_like(seq=64, hidden=64)
    with cpu_hog(), caplog.at_level(logging.INFO, logger="ov_autoplace.measuring.noise"):
        profile = quick_model_profile(model, testbed.core, ("CPU",))
    [report] = profile.reports
    assert report.remeasured and report.loaded and "other processes kept" in report.load_reason
    assert profile.cost_model.loaded and "loaded machine" in profile.cost_model.label
    assert "measuring it once more" in caplog.text
    assert any(r.levelno == logging.WARNING and "loaded machine" in r.getMessage() for r in caplog.records)


def test_the_speed_drift_between_windows_is_symmetric_and_logged(caplog):
    with caplog.at_level(logging.INFO, logger="ov_autoplace.measuring.noise"):
        assert noise.speed_drift("A", 2.0, [2.1, 2.2, 2.15, 1.9]) == pytest.approx(0.0625), "the median"
        assert noise.speed_drift("A", 2.0, [4.0, 4.2, 3.9]) == pytest.approx(1.0)
        assert noise.speed_drift("A", 2.0, [1.0, 0.9, 1.1]) == pytest.approx(1.0), "faster counts as much as slower"
    assert "A ran 4.000 ms after the last device's window against 2.000 ms" in caplog.text
    assert all(r.levelno == logging.INFO for r in caplog.records), "not a failure: the spread carries it"
    assert noise.speed_drift("A", 0.0, [1.0]) == 0.0 and noise.speed_drift("A", 1.0, [0.0]) == 0.0, "unknown"


class _HogsAfter(logging.Handler):
    """Starts four busy-looping processes (two per core of the testbed's two) once a log message starts with
    ``prefix``: the machine slows after that point, between two measurements the load probe does not bracket."""

    def __init__(self, prefix):
        super().__init__()
        self.prefix, self.hogs, self._stack = prefix, [], contextlib.ExitStack()

    def emit(self, record):
        if not self.hogs and record.getMessage().startswith(self.prefix):
            self.hogs = self._stack.enter_context(cpu_hog(processes=4))

    def close(self):
        self._stack.close()
        super().close()


@pytest.mark.timed  # alone under xdist: its premise is that every window is quiet until the hogs start
@pytest.mark.parametrize("profiler", ["quick", "full"])
def test_a_machine_that_slows_after_the_last_window_widens_every_spread(distinct_testbed, profiler):
    """Every window quiet, then the machine slows (four busy loops: a few times the model's latency). The first
    device timed again after the last window says so, and every op's spread on every device carries it: a move
    must gain more than the speed the machine lost or gained between two devices' windows."""
    from ov_autoplace.measuring.profiler import measure_model_profile
    from ov_autoplace.measuring.quick_profile import stored_or_prior_links

    model, devices = sg.attention_like(seq=128, hidden=256), distinct_testbed.devices
    name, prefix = {"quick": ("quick_profile", f"quick profile of {devices[-1]}:"),
                    "full": ("profiler", f"profiled {devices[-1]}:")}[profiler]
    logger = logging.getLogger(f"ov_autoplace.measuring.{name}")
    hogs, level = _HogsAfter(prefix), logger.level
    logger.addHandler(hogs)
    logger.setLevel(logging.INFO)
    try:
        profile = (quick_model_profile(model, distinct_testbed.core, devices) if profiler == "quick" else
                   measure_model_profile(model, distinct_testbed.core, devices, iterations=8,
                                         links=stored_or_prior_links(distinct_testbed.core, devices, None)))
    finally:
        logger.removeHandler(hogs)
        logger.setLevel(level)
        hogs.close()
    assert hogs.hogs, "the last device's window was logged"
    cost, compute = profile.cost_model, extract_graph(prepare_model(model)).role == NodeRole.COMPUTE
    ran = compute[:, None] & (cost.compute_ms > 0)
    # the slow-down came after every window, so only the first device's second timing saw it; both devices carry it.
    # Four hogs on quiet windows drift it past 1; beside another worker's compiles (a window already at 0.78 busy
    # cores) they drifted it only 0.23, hence `timed`
    drift, relative = profile.reports[0].speed_drift, cost.compute_spread_ms[ran] / cost.compute_ms[ran]
    assert drift > noise.LOADED_RELATIVE_SPREAD and (relative >= 0.999 * drift).all(), (drift, relative)
    assert [r.speed_drift for r in profile.reports[1:]] == [0.0], "recorded once, on the device timed twice"


def test_a_stored_profile_without_spreads_gets_the_assumed_one(testbed, tmp_path):
    model = sg.residual()
    store = ProfileStore(tmp_path)
    profile = quick_model_profile(model, testbed.core, testbed.devices, store=store)
    [path] = tmp_path.glob("model-*.json")
    data = json.loads(path.read_text())
    for field in ("compute_spread_ms", "e2e_spread_ms", "loaded"):
        del data["payload"]["cost_model"][field]  # as written before spreads existed
    for report in data["payload"]["reports"]:
        for field in ("e2e_spread_ms", "other_cores", "loaded", "load_reason", "remeasured"):
            del report[field]
    old = ModelProfile.from_dict(data["payload"], extract_graph(prepare_model(model)))
    cost = old.cost_model
    np.testing.assert_allclose(cost.compute_spread_ms, noise.UNKNOWN_RELATIVE_SPREAD * profile.cost_model.compute_ms)
    np.testing.assert_allclose(cost.e2e_spread_ms,
                               [noise.UNKNOWN_RELATIVE_SPREAD * r.e2e_ms for r in profile.reports])
    assert not cost.loaded and "spread unknown, assumed 5%" in cost.source


@pytest.mark.timed  # alone under xdist: the other worker's compiles are load that shifts one device's window
def test_two_identical_devices_measured_separately_keep_one_device(f32_testbed):
    """Both testbed devices in f32: the full profiler measures each (no twin shortcut), so their per-op times
    differ only by noise; under the noise rule the local search keeps HETERO's first device.

    What keeps it there depends on how the profile was taken. Quiet: the spreads (a move must gain more than
    the spread of what it moves). Loaded: the flag alone - load that changes between two devices' windows
    shifts every op of one device at once, which no within-window spread sees (a CI run at 1.1 busy cores
    moved two MatMuls for a predicted 0.042 ms against a spread of 0.038 ms), so a loaded profile proves no
    gain at all."""
    from ov_autoplace.search.local_search import LocalSearchRefiner
    from ov_autoplace.measuring.profiler import measure_model_profile
    from ov_autoplace.measuring.quick_profile import stored_or_prior_links
    from ov_autoplace.placement.legalizer import query_support

    model = prepare_model(sg.attention_like(seq=64, hidden=64))
    graph = extract_graph(model)
    links = stored_or_prior_links(f32_testbed.core, f32_testbed.devices, None)
    cost = measure_model_profile(model, f32_testbed.core, f32_testbed.devices, iterations=8, links=links).cost_model
    assert not np.array_equal(cost.compute_ms[:, 0], cost.compute_ms[:, 1]), "measured twice: the noise differs"
    support = query_support(f32_testbed.core, model, graph, f32_testbed.devices)
    compute = graph.role == NodeRole.COMPUTE
    result = LocalSearchRefiner(cost, graph, support).refine(np.zeros(graph.num_nodes, np.int64))
    assert (result.proposal[compute] == 0).all(), result.note(cost.label)
    if cost.loaded:
        assert result.stopped == "loaded", result.note(cost.label)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_a_stored_loaded_profile_is_reused_while_the_machine_is_still_loaded(testbed, tmp_path, caplog):
    """Measured again on a machine that is still busy it would be as loaded: a busy machine re-profiled the same
    model on every `place` (46 s, 16 s, 12 s). The stored one is reused; it stays marked loaded."""
    model = sg.residual()
    store = ProfileStore(tmp_path)
    first = quick_model_profile(model, testbed.core, ("CPU",), store=store)
    [path] = tmp_path.glob("model-*.json")
    data = json.loads(path.read_text())
    data["payload"]["cost_model"]["loaded"] = True  # as stored on a loaded machine
    path.write_text(json.dumps(data))
    with cpu_hog(), caplog.at_level(logging.INFO, logger="ov_autoplace.measuring.quick_profile"):
        assert noise.busy_now()
        again = quick_model_profile(model, testbed.core, ("CPU",), store=store)
    assert again.profiler_seconds == first.profiler_seconds and again.cost_model.loaded  # read, not measured
    assert "reused" in caplog.text
