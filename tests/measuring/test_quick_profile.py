"""The quick profile: one compile and a few PERF_COUNT runs per distinct device, stored like a full profile."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from ov_autoplace.cache.profile_store import ProfileStore
from ov_autoplace.measuring.quick_profile import quick_model_profile, stored_or_prior_links
from tests import synthetic_graphs as sg


def test_distinct_devices_are_each_measured_and_scaled_to_their_latency(thread_core, tmp_path):
    profile = quick_model_profile(sg.residual(), thread_core, ("CPUS", "CPU"), store=ProfileStore(tmp_path))
    cost = profile.cost_model
    assert [r.device for r in profile.reports] == ["CPUS", "CPU"]
    assert all(r.isolated_nodes == 0 for r in profile.reports), "no fused op compiled alone"
    for d, report in enumerate(profile.reports):
        assert report.e2e_ms > 0 and report.named_nodes > 0
        # per-op times are scaled so a single-device prediction is the measured latency minus the submodel cost
        expected = max(report.e2e_ms - cost.submodel_overhead_ms[d], 0.5 * report.e2e_ms)
        assert cost.compute_ms[:, d].sum() == pytest.approx(expected, rel=1e-6)
    assert cost.simulated and "prior (simulated) links" in cost.source, "links from the prior are labelled"


def _set_loaded(path, loaded: bool) -> None:
    """Mark the stored profile at ``path`` as taken on a loaded (or quiet) machine, as the profiler would."""
    data = json.loads(path.read_text())
    data["payload"]["cost_model"]["loaded"] = loaded
    for report in data["payload"]["reports"]:
        report["loaded"] = loaded
    path.write_text(json.dumps(data))


def test_stored_and_reused_unless_taken_on_a_loaded_machine(thread_core, tmp_path, caplog):
    store = ProfileStore(tmp_path)
    first = quick_model_profile(sg.attention_like(), thread_core, ("CPUS", "CPU"), store=store)
    [path] = tmp_path.glob("model-*.json")
    _set_loaded(path, False)  # this test shares the machine: whether it was loaded is the machine's call
    again = quick_model_profile(sg.attention_like(), thread_core, ("CPUS", "CPU"), store=store)
    assert again.profiler_seconds == first.profiler_seconds, "loaded from the store, not measured again"
    np.testing.assert_array_equal(again.cost_model.compute_ms, first.cost_model.compute_ms)
    np.testing.assert_array_equal(again.cost_model.compute_spread_ms, first.cost_model.compute_spread_ms)
    _set_loaded(path, True)
    with caplog.at_level(logging.INFO, logger="ov_autoplace.measuring.quick_profile"):
        third = quick_model_profile(sg.attention_like(), thread_core, ("CPUS", "CPU"), store=store)
    # a profile taken on a loaded machine is measured again when the machine is quiet now; while it is still
    # busy (this shared machine, often) it is reused: measured again it would be as loaded (test_noise.py holds
    # the busy case with a CPU hog)
    reused = "reused" in caplog.text
    assert reused != ("measuring it again" in caplog.text)
    assert (third.profiler_seconds == first.profiler_seconds) == reused


def test_devices_reporting_the_same_facts_are_measured_once(testbed, tmp_path):
    profile = quick_model_profile(sg.residual(), testbed.core, testbed.devices, store=None)
    cpu, cpuf = profile.cost_model.compute_ms.T
    if testbed.bf16:
        assert profile.reports[0].e2e_ms != profile.reports[1].e2e_ms or not np.array_equal(cpu, cpuf)
    else:  # the same f32 device under two names
        np.testing.assert_array_equal(cpu, cpuf)
        assert profile.reports[1].device == "CPUF" and profile.reports[1].e2e_ms == profile.reports[0].e2e_ms


def test_prior_links_for_host_memory_devices(thread_core):
    links = stored_or_prior_links(thread_core, ("CPUS", "CPU"), None)
    assert links.pairs == () and (links.link_latency_ms >= 0).all() and (links.submodel_overhead_ms > 0).all()


def test_bad_arguments(thread_core):
    with pytest.raises(ValueError, match="iterations"):
        quick_model_profile(sg.residual(), thread_core, ("CPU",), iterations=0)
    with pytest.raises(Exception, match="not present"):
        quick_model_profile(sg.residual(), thread_core, ("NOPE",))


def test_a_slow_model_stops_at_the_time_budget_after_the_minimum_runs(thread_core):
    from ov_autoplace.measuring.quick_profile import MIN_PROFILED_RUNS, _runs

    compiled = thread_core.compile_model(sg.residual(), "CPU", {"PERF_COUNT": True})
    for running_average in (False, True):
        node_ms, walls = _runs(compiled, 1, 6, running_average, budget_ms=0.0)
        assert len(walls) == MIN_PROFILED_RUNS and node_ms and all(v >= 0 for v in node_ms.values())
        assert len(_runs(compiled, 1, 6, running_average, budget_ms=None)[1]) == 6, "no budget: exactly iterations"
        assert len(_runs(compiled, 1, 6, running_average, budget_ms=1e9)[1]) == 6, "iterations cap the window"
        assert len(_runs(compiled, 1, 2, running_average, budget_ms=0.0)[1]) == 2, "never more than asked"
