"""The placement sources on devices the prior can tell apart: prior, cache, stored profile, pins, blind devices."""

from __future__ import annotations

import dataclasses
import json
import logging

import numpy as np
import openvino as ov

import ov_autoplace as oa
from ov_autoplace.decision import placement_sources, verification
from ov_autoplace.cache.placement_cache import PlacementCache
from ov_autoplace.cache.profile_store import ProfileStore
from ov_autoplace.costmodel.prior_costs import DeviceFacts
from ov_autoplace.measuring.quick_profile import quick_model_profile
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg
from tests.testbeds import stated_load
from ov_autoplace.devices.timing import random_inputs

DISTINCT = "HETERO:CPUS,CPU"
#: The same devices with the one the prior prefers first: the prior agrees with the plain call.
PLAIN_FIRST = "HETERO:CPU,CPUS"


def _source(caplog) -> str:
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("placement source: ")]
    assert lines, f"no 'placement source' INFO line in {caplog.text!r}"
    return lines[-1].split(": ", 1)[1]


def test_prior_agreeing_with_the_plain_call_then_cache(thread_core, tmp_path, caplog):
    """The prior prefers the all-cores CPU; listed first it is the plain call's device: no verification needed."""
    model = sg.residual()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, PLAIN_FIRST, core=thread_core, cache_dir=tmp_path)
    assert _source(caplog).startswith("prior -> CPU")
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPU"]
    assert not (tmp_path / "profiles").exists() and not (tmp_path / "workers").exists(), "nothing was measured"
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        oa.compile_model(sg.residual(seed=5), PLAIN_FIRST, core=thread_core, cache_dir=tmp_path)
    assert _source(caplog).startswith("cache (prior) -> CPU")


def test_prior_deviation_runs_the_plain_call_until_verified(thread_core, tmp_path, caplog, monkeypatch):
    """CPUS listed first: the prior's CPU is a deviation from the plain call, unverified on uncalibrated devices.

    The first start runs the plain call's placement (CPUS, what core.compile_model would run) and hands the
    proposal to the background worker; until a verdict exists, later starts keep the plain call.
    """
    from ov_autoplace.decision import background_worker as background

    spawned = []
    monkeypatch.setattr(background, "spawn_worker", lambda req, root, key, graph: spawned.append(key) or True)
    model = sg.residual()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path)
    source = _source(caplog)
    assert source.startswith("prior -> CPUS") and "not yet verified" in source
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPUS"] and len(spawned) == 1
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path)
    assert _source(caplog).startswith("cache (prior+pending) -> CPUS") and len(spawned) == 2
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPUS"]


def test_stored_profile_is_used_and_logged(thread_core, tmp_path, caplog):
    model = sg.attention_like()
    store = ProfileStore(tmp_path / "profiles")
    profile = quick_model_profile(model, thread_core, ("CPUS", "CPU"), store=store)
    assert profile.reports[0].isolated_nodes == 0
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path)
    assert _source(caplog).startswith("profile -> ")
    assert compiled(random_inputs(compiled))[0].shape[0] == 1


def test_profile_now_measures_and_verifies(thread_core, tmp_path, caplog):
    """profile="now": the profile proposes the all-cores CPU; the deviation from CPUS is verified now, by timing."""
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(sg.residual(blocks=2, channels=32, size=64), DISTINCT, core=thread_core,
                                    cache_dir=tmp_path, profile="now")
    source = _source(caplog)
    assert source.startswith("profile -> ") and list((tmp_path / "profiles").glob("model-*.json"))
    # A profile taken under load proposes nothing, nor does one whose all-cores gain is within the spread it
    # measured (a busy but unflagged machine; local_search._plain_if_proven): the plain call, unverified.
    if "loaded machine" in source or "stopped: unproven" in source:
        assert source.startswith("profile -> CPUS") and "verification (" not in source
        assert compiled.get_property("EXECUTION_DEVICES") == ["CPUS"]
        return
    assert "verification (" in source and "paired rounds" in source
    (entry,) = PlacementCache(tmp_path).entries()
    stored = json.loads(entry.read_text())["payload"]
    assert stored["verification"]["decision"] in ("kept", "plain", "abstained", "provisional") and stored["verification"]["digest"]
    if stored["verification"]["decision"] == "abstained":  # the machine was too noisy to decide: the plain call
        assert stored["verification"]["chosen"] == "plain" and "-> plain" in source
    device = compiled.get_property("EXECUTION_DEVICES")
    assert device == (["CPU"] if stored["verification"]["chosen"] == "single:CPU" else ["CPUS"])


def test_prior_placed_entry_yields_to_a_later_profile(thread_core, tmp_path, caplog):
    model = sg.residual(blocks=4)
    oa.compile_model(model, PLAIN_FIRST, core=thread_core, cache_dir=tmp_path)
    quick_model_profile(model, thread_core, ("CPU", "CPUS"), store=ProfileStore(tmp_path / "profiles"))
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        oa.compile_model(model, PLAIN_FIRST, core=thread_core, cache_dir=tmp_path)
    assert _source(caplog).startswith("profile -> ")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        oa.compile_model(model, PLAIN_FIRST, core=thread_core, cache_dir=tmp_path)
    assert _source(caplog).startswith("cache (profile")  # "profile" or "profile+guard"


def test_device_reporting_no_properties_warns_and_uses_the_first(thread_core, tmp_path, caplog, monkeypatch):
    """A plugin that reports none of the facts (simulated here: no such plugin is installed)."""
    real = placement_sources.read_device_facts

    def blind(core, device):
        facts = real(core, device)
        if device != "CPUS":
            return facts
        return DeviceFacts(device, None, None, None, None, (), (), None, None, None)

    monkeypatch.setattr(placement_sources, "read_device_facts", blind)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(sg.residual(), DISTINCT, core=thread_core, cache_dir=tmp_path)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("CPUS" in w and "report none of the properties" in w for w in warnings), warnings
    assert _source(caplog).startswith("prior -> CPUS")
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPUS"]


def test_pins_are_honoured_on_the_default_path(thread_core, tmp_path):
    model = sg.residual()
    compiled = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path,
                                pins={"type:Convolution": "CPUS"})
    (entry,) = PlacementCache(tmp_path).entries()
    assignment = json.loads(entry.read_text())["payload"]["assignment"]
    graph = extract_graph(prepare_model(model))
    convs = [n for n, t in zip(graph.names, graph.op_types) if t == "Convolution"]
    assert convs and all(assignment[n] == "CPUS" for n in convs)
    assert compiled(random_inputs(compiled))[0].shape == (1, 10)
    notes = oa.place(model, DISTINCT, core=thread_core, pins={"type:Convolution": "CPUS"}).notes
    assert all(notes) and any(n.startswith("pinned: ") for n in notes), "the prior says the pins decided, no empty note"


def test_outputs_equal_plain_compile(thread_core, tmp_path):
    model = sg.residual()
    inputs = random_inputs(thread_core.compile_model(model, "CPU"), seed=1)
    ours = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path)
    plain = thread_core.compile_model(model, "CPU")
    np.testing.assert_array_equal(ours(inputs)[0], plain(inputs)[0])


def test_one_device_placement_built_directly_equals_the_legalized_one():
    from ov_autoplace.placement.legalizer import legalize

    graph = extract_graph(prepare_model(sg.attention_like()))
    devices = ("CPUS", "CPU")
    direct = placement_sources._single_placement(graph, devices, "CPU", "hsdag:prior")
    legal = legalize(graph, np.full(graph.num_nodes, 1), devices, np.ones((graph.num_nodes, 2), dtype=bool),
                     strategy="hsdag:prior")
    assert direct.assignment == legal.assignment and direct.compute_nodes == legal.compute_nodes
    assert direct.num_submodels == legal.num_submodels


def test_place_without_a_strategy_uses_the_default_sources_and_measures_nothing(thread_core, tmp_path, monkeypatch,
                                                                                caplog):
    monkeypatch.setenv("OV_AUTOPLACE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("OV_AUTOPLACE_PROFILE_DIR", raising=False)
    model = sg.attention_like()
    compiles = []
    real_compile = ov.Core.compile_model
    monkeypatch.setattr(ov.Core, "compile_model", lambda *a, **k: compiles.append(a) or real_compile(*a, **k))
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        placement = oa.place(model, DISTINCT, core=thread_core)
    device = _source(caplog).split(" -> ", 1)[1].split(";")[0]
    assert _source(caplog).startswith("prior -> ") and placement.strategy == "hsdag:prior"
    assert set(placement.assignment.values()) == {device} and compiles == [], "nothing compiled, nothing run"
    assert not (tmp_path / "profiles").exists()
    monkeypatch.setattr(ov.Core, "compile_model", real_compile)
    quick_model_profile(model, thread_core, ("CPUS", "CPU"), store=ProfileStore(tmp_path / "profiles"))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        placement = oa.place(model, DISTINCT, core=thread_core)
    assert _source(caplog).startswith("profile -> ") and placement.strategy.startswith("hsdag:profile")
    refined = [n for n in placement.notes if "local search: " in n]
    assert len(refined) == 1 and "placements priced on the cost model" in refined[0], placement.notes


def _fixture_cost(graph, devices, per_node_ms, link_ms=0.0):
    from ov_autoplace.costmodel.cost_model import CostModel
    from ov_autoplace.graph.arrays import NodeRole

    n, d = graph.num_nodes, len(devices)
    compute = np.where((graph.role == NodeRole.COMPUTE)[:, None], np.asarray(per_node_ms, float), 0.0)
    return CostModel(devices=devices, node_names=graph.names, compute_ms=compute, unfused_ms=compute.copy(),
                     fused_into=np.full(n, -1), link_latency_ms=np.full((d, d), link_ms) * (1 - np.eye(d)),
                     link_ms_per_byte=np.zeros((d, d)), submodel_overhead_ms=np.zeros(d),
                     node_memory_bytes=np.zeros(n, dtype=np.int64), device_memory_bytes=np.full(d, np.inf),
                     simulated=True, source="test fixture")


def test_prior_outcome_is_pure_and_keeps_only_splits_beyond_the_margin(thread_core):
    from ov_autoplace.placement.legalizer import query_support

    devices = ("CPUS", "CPU")
    model = prepare_model(sg.residual())
    graph = extract_graph(model)
    support = query_support(thread_core, model, graph, devices)
    asked = []

    def support_fn():
        asked.append(1)
        return support

    # CPU twice as fast on every node: one device, decided without the policy's split or the support matrix
    cost = _fixture_cost(graph, devices, [2.0, 1.0])
    single, placement, reason = placement_sources.prior_outcome(cost, graph, devices, support_fn,
                                                                lambda c: np.zeros(graph.num_nodes, np.int64))
    assert (single, placement, asked) == ("CPU", None, []) and "margin" in reason
    # 10 % faster only: inside the margin, HETERO's first device stays
    single, _, _ = placement_sources.prior_outcome(_fixture_cost(graph, devices, [1.1, 1.0]), graph, devices,
                                                   support_fn, lambda c: np.zeros(graph.num_nodes, np.int64))
    assert single == "CPUS"
    # 20 % faster: inside the default 25 %, outside the 10 % of a prior that recognized both devices
    for margin, expected in ((None, "CPUS"), (0.10, "CPU")):
        single, _, reason = placement_sources.prior_outcome(
            _fixture_cost(graph, devices, [1.25, 1.0]), graph, devices, support_fn,
            lambda c: np.zeros(graph.num_nodes, np.int64), margin=margin)
        assert single == expected and f"{margin or 0.25:.0%} margin" in reason
    # Convolutions 10x faster on CPUS, the rest 10x faster on CPU, free links: the policy's split is kept
    conv = np.array([t == "Convolution" for t in graph.op_types])
    per_node = np.where(conv[:, None], [0.1, 1.0], [1.0, 0.1])
    split = np.where(conv, 0, 1).astype(np.int64)
    single, placement, _ = placement_sources.prior_outcome(_fixture_cost(graph, devices, per_node), graph, devices,
                                                           support_fn, lambda c: split, max_submodels=None)
    assert single is None and set(placement.assignment.values()) == {"CPUS", "CPU"} and asked


def _request(core, devices, model):
    """What compile_model's default path hands the sources."""
    from ov_autoplace.call_request import build_request

    return build_request(model, "HETERO:" + ",".join(devices), core=core)


def test_settle_leaves_the_runner_ups_to_the_worker_when_the_candidate_is_measured_there(thread_core, monkeypatch):
    """A first start that hands a deviation to the worker does not place HEFT's runner-up on the app's thread: the
    worker places its own (``background_worker``). ``profile="now"`` and a candidate that is the plain call's
    placement still need them (to measure now; to know whether anything needs measuring)."""

    placed = []  # calls of runner_ups (each would place HEFT on the model)
    monkeypatch.setattr(verification, "runner_ups", lambda *a, **k: placed.append(1) or [])
    model = sg.residual()
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    req = _request(thread_core, ("CPUS", "CPU"), model)
    deviates = placement_sources.Decision("prior", single_device="CPU", runner_up_cost=object())
    assert placement_sources.settle(req, deviates, prepared, graph, verify_now=False).pending and placed == []
    plain_with_runner_up = placement_sources.Decision("prior", single_device="CPUS", runner_up_cost=None)
    assert placement_sources.settle(req, plain_with_runner_up, prepared, graph, verify_now=False) \
        is plain_with_runner_up and placed == []  # HETERO's first device, no runner-up: nothing to place


def test_settle_lets_only_a_calibrated_prior_deviate_before_verification(thread_core):
    model = sg.residual()
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    req = _request(thread_core, ("CPUS", "CPU"), model)
    proposal = placement_sources.Decision("prior", single_device="CPU", reason="prior predicts CPU")
    plain = placement_sources.settle(req, proposal, prepared, graph, verify_now=False)
    assert plain.single_device == "CPUS" and plain.pending and plain.stored_as.strategy == "hsdag:prior+pending"
    calibrated = dataclasses.replace(proposal, calibrated=True)
    live = placement_sources.settle(req, calibrated, prepared, graph, verify_now=False)
    assert live.single_device == "CPU" and live.pending and live.stored_as.strategy == "hsdag:prior+live"
    agrees = placement_sources.Decision("prior", single_device="CPUS")
    assert placement_sources.settle(req, agrees, prepared, graph, verify_now=False) is agrees  # the plain call
    # cached: the live entry keeps running (pending), a deviation without evidence is demoted to the plain call
    hit = placement_sources.decision_from_cache(req, live.stored_as, prepared, graph)
    assert hit.single_device == "CPU" and hit.pending and hit.source == "cache (prior+live)"
    bare = dataclasses.replace(live.stored_as, strategy="hsdag:profile")
    demoted = placement_sources.decision_from_cache(req, bare, prepared, graph)
    assert demoted.single_device == "CPUS" and demoted.pending and demoted.stored_as is not None


def test_a_provisional_win_is_reused_while_loaded_and_demoted_without_a_warning_once_quiet(thread_core, monkeypatch,
                                                                                          caplog):
    """A win sealed under load runs while the machine stays loaded; once it is quiet the plain call runs and the
    win is verified again, said at INFO with that reason (an LLM test read "verification evidence missing or
    edited" on a CI-like machine whose load had made the worker's win provisional). Edited evidence: WARNING."""
    from ov_autoplace.decision.verification import decide, seal
    from tests.decision.test_verification import _rounds

    model = sg.residual()
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    req = _request(thread_core, ("CPUS", "CPU"), model)
    proposal = placement_sources.Decision("prior", single_device="CPU", calibrated=True)
    won = placement_sources.settle(req, proposal, prepared, graph, verify_now=False).stored_as
    won.strategy = "hsdag:profile"
    won.verification = seal(decide(_rounds(np.random.default_rng(3), 10.0, 6.0, 0.01), other_cores=1.2), won)
    monkeypatch.setattr(placement_sources, "busy_now", lambda: True)
    loaded = placement_sources.decision_from_cache(req, won, prepared, graph)
    assert loaded.single_device == "CPU" and loaded.provisional
    monkeypatch.setattr(placement_sources, "busy_now", lambda: False)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        quiet = placement_sources.decision_from_cache(req, won, prepared, graph)
    assert quiet.single_device == "CPUS" and quiet.pending and quiet.reason == "won on a loaded machine, now quiet"
    assert [r.levelno for r in caplog.records if "verifying again" in r.getMessage()] == [logging.INFO]
    caplog.clear()
    won.verification = dict(won.verification, ratio={"candidate": 0.1})  # edited
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        edited = placement_sources.decision_from_cache(req, won, prepared, graph)
    assert edited.single_device == "CPUS" and edited.reason == "verification evidence missing or edited"
    assert [r.levelno for r in caplog.records if "verifying again" in r.getMessage()] == [logging.WARNING]


def test_only_a_gain_beyond_the_priors_error_may_run_before_verification():
    """A calibrated prior's deviation runs at once only when it wins in every draw of the prior's own error."""
    graph = extract_graph(prepare_model(sg.residual()))
    devices = ("CPUS", "CPU")
    support = np.ones((graph.num_nodes, 2), dtype=bool)
    plain, other = np.zeros(graph.num_nodes, np.int64), np.ones(graph.num_nodes, np.int64)
    clear = _fixture_cost(graph, devices, [3.0, 1.0])  # CPU predicted 3x faster: beyond a 46 % per-category error
    assert placement_sources.survives_prior_error(clear, graph, support, other, plain) == 1.0
    close = _fixture_cost(graph, devices, [1.02, 1.0])  # 2 % faster: the error decides it either way
    share = placement_sources.survives_prior_error(close, graph, support, other, plain)
    assert 0.0 < share < 1.0
    assert placement_sources.survives_prior_error(close, graph, support, other, plain, sigma=1e-6) == 1.0


def test_the_prior_costs_a_decoder_s_whole_generation(thread_core, caplog):
    """The prior's prediction for a stateful decoder is its generation's (prefill + decode steps): a longer
    generation predicts more, and the decision still places it (the policy reads the prefill)."""
    import re

    from ov_autoplace.call_request import build_request

    def predicted(generation):
        req = build_request(sg.llm_like(layers=3, positions=None), PLAIN_FIRST, core=thread_core,
                            generation=generation)
        prepared = prepare_model(req.placement_model)
        decision = placement_sources.place_from_prior(req, prepared, extract_graph(prepared),
                                                      oa.api.pretrained_policy_path())
        return decision, float(re.search(r"CPU ([0-9.]+) ms", decision.reason).group(1))

    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        short, short_ms = predicted((16, 2))
        long, long_ms = predicted((16, 64))
    assert "cannot cost the decode steps" not in caplog.text  # no fallback to the prefill's costs
    assert long_ms > 5 * short_ms and short.single_device == long.single_device == "CPU"


def test_a_decoder_on_the_default_path_logs_no_warning(thread_core, tmp_path, caplog):
    """A stateful decoder's prefill clone keeps its state's declared dynamic shapes, which the prior prices as a
    launch each: a modelling note (INFO), not a WARNING on every LLM an app compiles (a WARNING means a fallback)."""
    from ov_autoplace_lab.models.decoder_models import TINY, build_decoder

    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        oa.compile_model(build_decoder(TINY), DISTINCT, core=thread_core, cache_dir=tmp_path)
    assert "have dynamic shapes" in caplog.text  # the prior did price the prefill clone
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def _spawned(monkeypatch) -> list:
    from ov_autoplace.decision import background_worker

    spawned = []
    monkeypatch.setattr(background_worker, "spawn_worker", lambda req, root, key, graph: spawned.append(key) or True)
    return spawned


def _verifications(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("verification (")]


def test_a_decoder_the_prior_would_move_is_timed_at_the_first_start(thread_core, tmp_path, caplog, monkeypatch):
    """The prior would move a decoder off the plain call's device (CPUS): the first start times each device alone
    against two compiles of the plain call on a short generation, runs what that verdict chose, and the background
    worker still verifies the declared generation for the next start, which runs the same until it has."""
    spawned = _spawned(monkeypatch)
    model = sg.llm_like(layers=3, positions=None)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path, generation=(64, 8))
    (check,) = _verifications(caplog)
    assert "single:CPU" in check and "plain'" in check and "a generation of 32 + 8 tokens" in check, check
    won = "-> single:CPU" in check
    source = _source(caplog)
    assert "first-start check on a generation of 32 + 8 tokens" in source, source
    assert compiled.get_property("EXECUTION_DEVICES") == (["CPU"] if won else ["CPUS"]), (check, source)
    assert len(spawned) == 1
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        again = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path, generation=(64, 8))
    assert _verifications(caplog) == [], "a next start runs the stored decision; it does not check again"
    assert _source(caplog).startswith("cache (prior+checked+live) -> CPU" if won else "cache (prior+pending) -> CPUS")
    assert again.get_property("EXECUTION_DEVICES") == compiled.get_property("EXECUTION_DEVICES")
    assert len(spawned) == 2, "pending: the worker verifies the declared generation"


def _fixed_rounds(per_generation_ms: dict[str, float], asked: list | None = None):
    """A stopwatch for ``verification.time_rounds`` that reads ``per_generation_ms`` (the compiles stay real);
    ``asked`` gets the keyword arguments of each call."""
    def time_rounds(contenders, inputs, *, rounds, **kwargs):
        (asked if asked is not None else []).append(dict(kwargs, rounds=rounds))
        return {c: [per_generation_ms[c.split(":")[0] if c.startswith("plain") else c] * (1 + 0.001 * r)
                    for r in range(rounds)] for c in contenders}
    return time_rounds


def test_the_first_start_check_runs_a_device_measured_faster_compiled_anew(thread_core, tmp_path, caplog,
                                                                           monkeypatch):
    """The check's verdict decides: CPU timed at half the plain call's generation runs, and the stored placement is
    live (used, verified again), not a verdict. What is returned is a new compile of CPU, not the one the check
    timed (a decoder compile that ran the check's generations ran ~6 % slower per token after: docs/default-path.md,
    "What a verified decision returns"). The plain call's compile ahead is the check's first compile of it: the check
    compiles it once more, not twice."""

    spawned, plain_compiles, timed = _spawned(monkeypatch), [], []
    compile_plain_call, compile_on_one_device = verification.compile_plain_call, verification.compile_on_one_device
    monkeypatch.setattr(verification, "compile_plain_call",
                        lambda *a, **k: plain_compiles.append(a[2]) or compile_plain_call(*a, **k))
    monkeypatch.setattr(verification, "compile_on_one_device",
                        lambda *a, **k: timed.append(compile_on_one_device(*a, **k)) or timed[-1])
    monkeypatch.setattr(verification, "time_rounds", _fixed_rounds({"plain": 10.0, "plain'": 10.0,
                                                                    "single:CPU": 5.0}))
    model = sg.llm_like(layers=3, positions=None)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, DISTINCT, core=thread_core, cache_dir=tmp_path, generation=(16, 4))
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPU"]
    assert len(timed) == 1 and all(compiled is not c for c in timed), "the check's timed compile is not returned"
    assert "the verification measured" not in caplog.text
    assert "it runs now and the background worker verifies Generation(prompt_tokens=16, new_tokens=4)" in _source(caplog)
    (entry,) = [json.loads(p.read_text()) for p in (tmp_path / "placements").glob("placement-*.json")]
    assert json.dumps(entry).count("hsdag:prior+checked+live") >= 1 and len(spawned) == 1
    assert plain_compiles == [DISTINCT], "the second compile of the plain call; the first is the compile ahead"


def test_the_first_start_check_keeps_the_plain_call_on_a_loss_and_when_it_fails(thread_core, tmp_path, caplog,
                                                                                  monkeypatch):
    """No device faster beyond the rule: the plain call runs, with the check's verdict in its reason. A check that
    cannot run (our machinery) is a WARNING and the plain call; the worker measures in both cases."""

    spawned = _spawned(monkeypatch)
    monkeypatch.setattr(verification, "time_rounds", _fixed_rounds({"plain": 10.0, "plain'": 10.0,
                                                                    "single:CPU": 9.9}))
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(sg.llm_like(layers=3, positions=None), DISTINCT, core=thread_core,
                                    cache_dir=tmp_path / "loss", generation=(16, 4))
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPUS"]
    assert "not yet verified by measurement" in _source(caplog) and "-> plain" in _source(caplog)

    def fails(*args, **kwargs):
        raise RuntimeError("the stopwatch broke")

    monkeypatch.setattr(placement_sources, "verify_placement", fails)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(sg.llm_like(layers=3, positions=None), DISTINCT, core=thread_core,
                                    cache_dir=tmp_path / "fails", generation=(16, 4))
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPUS"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["the first-start check of the decoder's devices failed (RuntimeError: the stopwatch broke); "
                        "the plain call's placement runs and the background worker times them"], warnings
    assert len(spawned) == 2


def test_a_decoder_the_prior_keeps_on_the_plain_call_s_device_is_not_timed_at_the_first_start(thread_core, tmp_path,
                                                                                               caplog, monkeypatch):
    """The prior agrees with the plain call: the first start compiles it and measures nothing (the worker times the
    other device for the next start)."""
    spawned = _spawned(monkeypatch)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(sg.llm_like(layers=3, positions=None), PLAIN_FIRST, core=thread_core,
                                    cache_dir=tmp_path, generation=(16, 4))
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPU"] and _verifications(caplog) == []
    assert "the background worker times CPUS against CPU on the generation" in _source(caplog) and len(spawned) == 1


def test_the_devices_the_prior_cannot_tell_from_the_plain_call_s_are_those_within_its_margin(thread_core):
    """``_alike`` mirrors the switch rule: a device predicted slower than the plain call's by less than the margin
    (or faster by less) is alike; one predicted slower by more is not; nor is one that cannot run the model."""
    graph = extract_graph(prepare_model(sg.residual()))
    devices = ("CPU", "CPUS")
    for per_node, alike in (([1.0, 1.0], ("CPUS",)), ([1.0, 1.3], ("CPUS",)), ([1.0, 0.8], ("CPUS",)),
                            ([1.0, 1.4], ()), ([1.0, np.inf], ())):
        cost = _fixture_cost(graph, devices, per_node)
        assert placement_sources._alike(cost, devices, 0.25) == alike, per_node
    assert placement_sources._alike(_fixture_cost(graph, devices, [1.0, 1.2]), devices, 0.10) == ()


def _prior_predicting_both_devices_alike(monkeypatch):
    """The prior as it is, but with the second device's costs made the first's: the machine fact the next test
    asserts on (a prior that cannot tell the devices apart, as on a CPU with bf16 but no AMX, where it models the
    testbed's CPU as f32 like CPUF), stated instead of read off the host."""
    real = placement_sources.prior_cost_model

    def alike(graph, facts, **kwargs):
        prior = real(graph, facts, **kwargs)
        compute, unfused = np.array(prior.cost.compute_ms), np.array(prior.cost.unfused_ms)
        overhead = np.array(prior.cost.submodel_overhead_ms)
        compute[:, 1], unfused[:, 1], overhead[1] = compute[:, 0], unfused[:, 0], overhead[0]
        return dataclasses.replace(prior, cost=dataclasses.replace(prior.cost, compute_ms=compute, unfused_ms=unfused,
                                                                   submodel_overhead_ms=overhead))

    monkeypatch.setattr(placement_sources, "prior_cost_model", alike)


def test_a_decoder_whose_devices_the_prior_cannot_tell_apart_is_timed_at_the_first_start(thread_core, tmp_path,
                                                                                         caplog, monkeypatch):
    """The prior keeps the plain call's CPU but predicts CPUS alike: the first start times CPUS against the plain
    call (real compiles, a stated stopwatch) and runs CPUS where it was measured faster, stored live; where it was
    not, the plain call runs with the check's verdict in its reason. The worker verifies the declared generation in
    both cases."""

    _prior_predicting_both_devices_alike(monkeypatch)
    stated_load(monkeypatch, 0.0)
    spawned = _spawned(monkeypatch)
    model = sg.llm_like(layers=3, positions=None)
    asked = []
    for label, cpus_ms, runs in (("won", 5.0, "CPUS"), ("lost", 9.9, "CPU")):
        monkeypatch.setattr(verification, "time_rounds", _fixed_rounds({"plain": 10.0, "plain'": 10.0,
                                                                        "single:CPUS": cpus_ms}, asked))
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ov_autoplace"):
            compiled = oa.compile_model(model, PLAIN_FIRST, core=thread_core, cache_dir=tmp_path / label,
                                        generation=(16, 4))
        (check,) = _verifications(caplog)
        assert "single:CPUS" in check and "first-start check on a generation of 16 + 4 tokens" in _source(caplog)
        assert compiled.get_property("EXECUTION_DEVICES") == [runs], (label, _source(caplog))
        (entry,) = [json.loads(p.read_text()) for p in (tmp_path / label / "placements").glob("placement-*.json")]
        stored = "hsdag:prior+checked+live" if runs == "CPUS" else "hsdag:prior+pending"
        assert json.dumps(entry).count(stored) >= 1, (label, entry)
        if runs == "CPU":
            assert "the next start runs the faster; first-start check on a generation of 16 + 4" in _source(caplog)
    assert len(spawned) == 2
    # 4 rounds, more where its first round shows the budget holds them (planned blind to the results)
    assert {(a["rounds"], a["max_rounds"], a["budget_s"]) for a in asked} == {
        (placement_sources.CHECK_ROUNDS, placement_sources.CHECK_MAX_ROUNDS, placement_sources.CHECK_BUDGET_S)}


def test_on_a_loaded_machine_the_first_start_check_may_take_more_rounds(thread_core, tmp_path, monkeypatch):
    """Under load the verification's rule asks a win beyond what two compiles of the plain call read apart, a margin
    that shrinks with rounds: where other processes keep more than ``LOADED_OTHER_CORES`` of the cores busy over the
    compiles, the check may take ``verification.LOADED_SCALE`` times the rounds and the time (docs/llm.md)."""

    _prior_predicting_both_devices_alike(monkeypatch)
    _spawned(monkeypatch)
    asked = []
    monkeypatch.setattr(verification, "time_rounds", _fixed_rounds({"plain": 10.0, "plain'": 10.0,
                                                                    "single:CPUS": 9.9}, asked))
    from ov_autoplace.measuring.noise import LOADED_OTHER_CORES

    for label, load in (("quiet", 0.0), ("edge", LOADED_OTHER_CORES),
                        ("unknown", float("nan")), ("loaded", 0.96)):
        stated_load(monkeypatch, load)
        oa.compile_model(sg.llm_like(layers=3, positions=None), PLAIN_FIRST, core=thread_core,
                         cache_dir=tmp_path / label, generation=(16, 4))
    scale = verification.LOADED_SCALE
    assert scale > 1
    assert [(a["rounds"], a["max_rounds"], a["budget_s"]) for a in asked] == 3 * [
        (placement_sources.CHECK_ROUNDS, placement_sources.CHECK_MAX_ROUNDS, placement_sources.CHECK_BUDGET_S)] + [
        (placement_sources.CHECK_ROUNDS, scale * placement_sources.CHECK_MAX_ROUNDS,
         scale * placement_sources.CHECK_BUDGET_S)]


def test_no_first_start_check_where_the_plain_call_compiles_slowly(thread_core, tmp_path, caplog, monkeypatch):
    """The check would compile each device once more: where the plain call's compile took longer than
    ``CHECK_MAX_COMPILE_S`` the first start times nothing and the worker measures after it. With a compile ahead its
    time is read; without one (a deviation noted last time) the plain call is compiled and timed here, and that
    compile is the one returned (not compiled twice)."""
    from ov_autoplace.decision import plain_compile_ahead

    spawned = _spawned(monkeypatch)
    monkeypatch.setattr(placement_sources, "CHECK_MAX_COMPILE_S", 0.0)
    for label, ahead in (("ahead", True), ("here", False)):
        if not ahead:
            monkeypatch.setattr(plain_compile_ahead, "start", lambda req, props, noted: None)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ov_autoplace"):
            compiled = oa.compile_model(sg.llm_like(layers=3, positions=None), DISTINCT, core=thread_core,
                                        cache_dir=tmp_path / label, generation=(16, 4))
        assert compiled.get_property("EXECUTION_DEVICES") == ["CPUS"] and _verifications(caplog) == []
        assert "no first-start check: the plain call compiled in " in _source(caplog), _source(caplog)
        assert ("returning the plain compile the verification measured" in caplog.text) is not ahead
    assert len(spawned) == 2
