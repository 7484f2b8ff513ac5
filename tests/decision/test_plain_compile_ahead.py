"""The plain call's compile made while the default path decides: used when the decision keeps it, else discarded."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import ov_autoplace as oa
from ov_autoplace.decision import placement_sources
from ov_autoplace.decision import plain_compile_ahead
from ov_autoplace.cache.placement_cache import PlacementCache
from ov_autoplace.costmodel.device_names import may_all_be_recognized, recognition_patterns
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.devices.timing import random_inputs
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg

DISTINCT = "HETERO:CPUS,CPU"  # the prior prefers CPU (all cores): a deviation from the plain call's CPUS
PLAIN_FIRST = "HETERO:CPU,CPUS"  # the prior agrees with the plain call


def _lines(caplog, prefix: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(prefix)]


def _source(caplog) -> str:
    (line,) = _lines(caplog, "placement source: ")[-1:]
    return line.split(": ", 1)[1]


def _start(model, device_name, core, tmp_path, caplog):
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="ov_autoplace"):
        compiled = oa.compile_model(model, device_name, core=core, cache_dir=tmp_path)
    return compiled, _source(caplog), _lines(caplog, "plain compile ahead")


def test_first_start_returns_the_plain_compile_made_ahead(thread_core, tmp_path, caplog):
    model = sg.residual()
    compiled, source, ahead = _start(model, PLAIN_FIRST, thread_core, tmp_path, caplog)
    assert source.startswith("prior -> CPU") and len(ahead) == 1 and ahead[0].startswith("plain compile ahead on CPU used")
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPU"]
    inputs = random_inputs(compiled, seed=3)
    np.testing.assert_array_equal(compiled(inputs)[0], thread_core.compile_model(model, "CPU")(inputs)[0])
    _, source, ahead = _start(model, PLAIN_FIRST, thread_core, tmp_path, caplog)
    assert source.startswith("cache (prior) -> CPU") and ahead == [], "a warm one-device start compiles once"


def test_a_deviation_awaiting_verification_runs_the_plain_compile_made_ahead(thread_core, tmp_path, caplog,
                                                                               monkeypatch):
    from ov_autoplace.decision import background_worker as background

    monkeypatch.setattr(background, "spawn_worker", lambda req, root, key, graph: True)  # no worker process here
    compiled, source, ahead = _start(sg.residual(), DISTINCT, thread_core, tmp_path, caplog)
    assert source.startswith("prior -> CPUS") and "not yet verified" in source
    assert ahead and ahead[0].startswith("plain compile ahead on CPUS used")
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPUS"]


def _cache_entry(core, model, tmp_path, decision):
    """Store ``decision`` in the placement cache under the default path's own key for ``model`` on DISTINCT."""
    from ov_autoplace.call_request import build_request
    from ov_autoplace.decision.first_start import POLICY_FILE, _policy_digest

    req = build_request(model, DISTINCT, core=core)
    prepared = prepare_model(req.placement_model)
    graph = extract_graph(prepared)
    decision = placement_sources.settle(req, decision, prepared, graph, verify_now=False)
    cache = PlacementCache(tmp_path)
    cache.put(placement_sources.cache_key(req, cache, graph, _policy_digest(POLICY_FILE)),
              placement_sources.decision_to_placement(decision, graph, req.devices), graph)


def test_a_cached_deviation_discards_it_once_then_is_not_compiled_ahead(thread_core, tmp_path, caplog, monkeypatch):
    """A live deviation (calibrated prior) runs CPU, not the plain call's CPUS: the compile ahead is discarded once,
    the decision is noted, and later starts skip it until the decision is the plain call's again."""
    from ov_autoplace.decision import background_worker as background

    monkeypatch.setattr(background, "spawn_worker", lambda req, root, key, graph: True)
    model = sg.residual(blocks=2)
    _cache_entry(thread_core, model, tmp_path, placement_sources.Decision("prior", single_device="CPU",
                                                                          calibrated=True))
    compiled, source, ahead = _start(model, DISTINCT, thread_core, tmp_path, caplog)
    assert source.startswith("cache (prior+live) -> CPU")
    assert len(ahead) == 1 and ahead[0].startswith("plain compile ahead on CPUS discarded (the decision is CPU")
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPU"], "the decision is compiled, not what ran ahead"
    assert len(list((tmp_path / "placements").glob("deviates-*.json"))) == 1
    compiled, source, ahead = _start(model, DISTINCT, thread_core, tmp_path, caplog)
    assert source.startswith("cache (prior+live) -> CPU") and ahead == []
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPU"]
    # verified back to the plain call (what the worker stores when the deviation loses): the note goes
    _cache_entry(thread_core, model, tmp_path, placement_sources.Decision("prior", single_device="CPUS"))
    compiled, source, ahead = _start(model, DISTINCT, thread_core, tmp_path, caplog)
    assert source.startswith("cache (prior) -> CPUS") and ahead == []
    assert list((tmp_path / "placements").glob("deviates-*.json")) == []
    _, source, ahead = _start(model, DISTINCT, thread_core, tmp_path, caplog)
    assert source.startswith("cache (prior) -> CPUS") and ahead == []  # the single-device index


def test_a_failed_compile_ahead_is_not_returned(thread_core):
    ahead = plain_compile_ahead.PlainCompileAhead(thread_core, sg.residual(), "CPU",
                                                  {"INFERENCE_NUM_THREADS": "not a number"})
    assert ahead.take("CPU") is None and ahead.error is not None
    assert not ahead._thread.is_alive()
    ok = plain_compile_ahead.PlainCompileAhead(thread_core, sg.residual(), "CPU", {})
    assert ok.take("CPUS") is None and not ok._thread.is_alive(), "another device: joined and discarded"
    ok.discard()  # nothing left to do
    again = plain_compile_ahead.PlainCompileAhead(thread_core, sg.residual(), "CPU", {})
    assert again.take("CPU") is not None and again.take("CPU") is None, "handed out once"


def test_devices_that_may_be_calibrated_are_not_compiled_ahead(thread_core):
    assert recognition_patterns() and may_all_be_recognized(["12th Gen Intel(R) Core(TM) i9-12900K",
                                                              "Intel(R) Data Center GPU Flex 170 (dGPU)"])
    assert not may_all_be_recognized(["12th Gen Intel(R) Core(TM) i9-12900K", None])
    assert not may_all_be_recognized(["Some Future CPU 9000", "Intel(R) Data Center GPU Flex 170 (dGPU)"])
    from ov_autoplace.costmodel.prior_costs import recognize_devices
    from ov_autoplace.devices.facts import read_device_facts

    facts = [read_device_facts(thread_core, d) for d in ("CPUS", "CPU")]
    if may_all_be_recognized(f.full_name for f in facts):
        pytest.skip(f"this machine's CPU ({facts[0].full_name}) may be a calibrated one")
    assert recognize_devices(facts) == [None, None], "the weak check says no only where the prior says no"


@pytest.mark.parametrize("deviates", [True, False])
def test_the_note_follows_the_decision(tmp_path, deviates):
    key = {"structure": "abc", "devices": ["CPUS", "CPU"]}
    plain_compile_ahead.note_decision(tmp_path, key, deviates=deviates, noted=False)
    assert plain_compile_ahead.deviation_noted(tmp_path, key) is deviates
    plain_compile_ahead.note_decision(tmp_path, key, deviates=False, noted=deviates)
    assert not plain_compile_ahead.deviation_noted(tmp_path, key)
    assert not plain_compile_ahead.deviation_noted(tmp_path, None)
