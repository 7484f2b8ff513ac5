"""``memory_caps=`` through compile_model and place on a small stateful graph (the testbed, both devices f32): caps
that no single device meets force a real split that compiles and generates as the plain compile does, a device
that cannot hold the model holds no more than its cap, the split is chosen within the caps (never the plain call
kept on a device that cannot hold it), and caps no split can meet are typed errors before anything is compiled.

The model: 4 layers of ``stateful_layers(hidden=64)``, each a 16 KB weight and a KV cache of 64 KB at the default
256-token context (f32): about 330 KB in all, 360 KB resident on one device with its largest activation."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import ov_autoplace
from ov_autoplace.call_request import build_request
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.decision.memory_path import capped_cost
from ov_autoplace.errors import MemoryCapError, PropertyError
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from tests.synthetic_graphs import attention_like, stateful_layers

HIDDEN = 64


@pytest.fixture(scope="module")
def model():
    return stateful_layers(4, HIDDEN)


def _resident(core, model, hetero, caps, placement):
    """Bytes each device holds under ``placement`` as the capped cost model charges them, and the caps."""
    req = build_request(model, hetero, core=core, memory_caps=caps)
    graph = extract_graph(prepare_model(req.placement_model))
    cost = capped_cost(req, graph, None)
    row = placement.device_indices(graph.names, req.devices)
    return dict(zip(req.devices, Simulator(cost, graph).resident_bytes(row[None])[0])), dict(
        zip(req.devices, cost.device_memory_bytes))


def _generate(compiled, steps=4):
    request = compiled.create_infer_request()
    request.reset_state()
    rng = np.random.default_rng(3)
    outs = []
    for step in range(steps):
        x = rng.standard_normal((1, 5 if step == 0 else 1, HIDDEN)).astype(np.float32)
        outs.append(request.infer({"x": x, "beam_idx": np.zeros(1, np.int32)})[compiled.outputs[0]].copy())
    return outs


@pytest.mark.parametrize("caps", [{"CPU": "200 KB", "CPUF": "200 KB"}, {"CPU": "150 KB", "CPUF": "300 KB"}])
def test_caps_no_single_device_meets_force_a_split_within_them(model, f32_testbed, stated_host_cpu, caps, tmp_path,
                                                               caplog):
    core, hetero = f32_testbed.core, f32_testbed.hetero
    placement = ov_autoplace.place(model, hetero, core=core, memory_caps=caps)
    counts = placement.counts_per_device()
    assert all(counts[d] > 0 for d in f32_testbed.devices), counts  # a real split
    resident, capacity = _resident(core, model, hetero, caps, placement)
    assert all(resident[d] <= capacity[d] for d in resident), (resident, capacity)

    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        compiled = ov_autoplace.compile_model(model, hetero, core=core, memory_caps=caps, cache_dir=tmp_path)
    assert not [r for r in caplog.records if "fall" in r.getMessage()]
    assert sorted(compiled.get_property("EXECUTION_DEVICES")) == sorted(f32_testbed.devices)  # runs split
    for got, want in zip(_generate(compiled), _generate(core.compile_model(model, "CPU"))):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("strategy", ["priority", "heavy_ops"])
def test_an_explicit_strategy_is_held_to_the_caps(model, f32_testbed, stated_host_cpu, strategy, tmp_path):
    """"priority" puts everything on CPU; with caps no device meets alone, the pipeline fits it into a split."""
    core, hetero, caps = f32_testbed.core, f32_testbed.hetero, {"CPU": "200 KB", "CPUF": "200 KB"}
    placement = ov_autoplace.place(model, hetero, core=core, strategy=strategy, memory_caps=caps)
    resident, capacity = _resident(core, model, hetero, caps, placement)
    assert all(resident[d] <= capacity[d] for d in resident), (resident, capacity)
    compiled = ov_autoplace.compile_model(model, hetero, core=core, strategy=strategy, memory_caps=caps,
                                          cache_dir=tmp_path)
    assert sorted(compiled.get_property("EXECUTION_DEVICES")) == sorted(f32_testbed.devices)


def test_a_device_that_cannot_hold_the_model_holds_no_more_than_its_cap(model, f32_testbed, stated_host_cpu):
    core, hetero = f32_testbed.core, f32_testbed.hetero
    caps = {"CPU": "100 KB"}  # HETERO's first device: the plain call would put all 360 KB there
    placement = ov_autoplace.place(model, hetero, core=core, memory_caps=caps)
    resident, capacity = _resident(core, model, hetero, caps, placement)
    assert resident["CPU"] <= capacity["CPU"] == 100_000
    assert placement.counts_per_device()["CPUF"] > 0


def test_the_cache_keys_on_the_caps(model, f32_testbed, stated_host_cpu, tmp_path, caplog):
    core, hetero = f32_testbed.core, f32_testbed.hetero
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        ov_autoplace.compile_model(model, hetero, core=core, memory_caps={"CPU": "200 KB", "CPUF": "200 KB"},
                                   cache_dir=tmp_path)
        caplog.clear()
        ov_autoplace.compile_model(model, hetero, core=core, memory_caps={"CPU": "200 KB", "CPUF": "200 KB"},
                                   cache_dir=tmp_path)
        assert any("placement source: cache" in r.getMessage() for r in caplog.records)
        caplog.clear()
        ov_autoplace.compile_model(model, hetero, core=core, memory_caps={"CPU": "150 KB", "CPUF": "300 KB"},
                                   cache_dir=tmp_path)
        assert not any("placement source: cache" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("caps, error, match", [
    ({"GPU": "1 GB"}, PropertyError, r"memory_caps names device 'GPU'.*\['CPU', 'CPUF'\]"),
    ({"CPU": "2 GX"}, PropertyError, r"'2 GX' is not a size"),
    ({"CPU": "10 KB", "CPUF": "10 KB"}, MemoryCapError, r"node 'rv\d' alone needs 65.5 KB .*KV cache at 256 tokens.*CPU 10 KB"),
    ({"CPU": "150 KB", "CPUF": "150 KB"}, MemoryCapError, r"needs at least 328 KB .*: 27.7 KB \(27744 B\) missing"),
])
def test_caps_no_split_can_meet_are_typed_errors_before_any_compile(model, f32_testbed, caps, error, match,
                                                                    monkeypatch, tmp_path):
    core = f32_testbed.core

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled before the caps were checked")

    monkeypatch.setattr(core, "compile_model", no_compile)
    for call in (ov_autoplace.place, ov_autoplace.compile_model):
        with pytest.raises(error, match=match):
            call(model, f32_testbed.hetero, core=core, memory_caps=caps,
                 **({"cache_dir": tmp_path} if call is ov_autoplace.compile_model else {}))


def test_a_cap_below_the_largest_weight_on_every_device_names_the_weight(f32_testbed):
    model = attention_like(hidden=32)  # the largest weight: an MLP matrix of 32 x 128 f32, 16 KB
    with pytest.raises(MemoryCapError, match=r"node '.*' alone needs 16.4 KB \(16384 B\) \(the weights it reads\).*"
                                             r"CPU 3 KB \(3000 B\), CPUF 3 KB"):
        ov_autoplace.place(model, f32_testbed.hetero, core=f32_testbed.core,
                           memory_caps={"CPU": "3 KB", "CPUF": "3000"})


def test_pins_that_overflow_a_cap_are_refused(model, f32_testbed, stated_host_cpu):
    pins = {f"*{k}": "CPU" for k in range(4)}  # every layer pinned to CPU, which may hold 200 KB of the 360 KB
    with pytest.raises(MemoryCapError, match="CPU holds .* of 200 KB.*unpin"):
        ov_autoplace.place(model, f32_testbed.hetero, core=f32_testbed.core, pins=pins,
                           memory_caps={"CPU": "200 KB", "CPUF": "200 KB"})


def test_one_device_with_a_cap_it_cannot_meet_is_refused(model, f32_testbed):
    with pytest.raises(MemoryCapError, match="missing"):
        ov_autoplace.compile_model(model, "CPU", core=f32_testbed.core, memory_caps={"CPU": "100 KB"})


@pytest.mark.slow
def test_a_background_profile_under_caps_is_placed_within_them_on_the_next_start(model, f32_testbed, tmp_path,
                                                                                 caplog):
    """profile="background" with caps: the worker only profiles (it would place without the caps), and the next
    start, finding the profile beside the prior's capped placement, places within the caps on the measured costs."""
    import time

    core, hetero, caps = f32_testbed.core, f32_testbed.hetero, {"CPU": "200 KB", "CPUF": "200 KB"}
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        ov_autoplace.compile_model(model, hetero, core=core, memory_caps=caps, cache_dir=tmp_path,
                                   profile="background")
        assert any("background profiling started" in r.getMessage() for r in caplog.records)
        deadline, text = time.time() + 600, ""
        while time.time() < deadline and "stored the profile" not in text:
            time.sleep(1)
            text = "".join(p.read_text() for p in tmp_path.glob("workers/*/worker.log"))
        assert "stored the profile" in text and "failed" not in text, text[-2000:]
        caplog.clear()
        compiled = ov_autoplace.compile_model(model, hetero, core=core, memory_caps=caps, cache_dir=tmp_path)
    sources = [r.getMessage() for r in caplog.records if r.getMessage().startswith("placement source:")]
    assert sources and sources[-1].startswith("placement source: profile"), sources
    assert "memory caps:" in sources[-1], sources[-1]  # placed within them
    assert sorted(compiled.get_property("EXECUTION_DEVICES")) == sorted(f32_testbed.devices)  # no device holds it
    for got, want in zip(_generate(compiled), _generate(core.compile_model(model, "CPU"))):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_decoder_under_caps_is_placed_on_its_whole_generation_not_the_prefill(f32_testbed, stated_host_cpu,
                                                                               monkeypatch):
    from ov_autoplace.costmodel.prior_costs import prior_cost_model
    from ov_autoplace.decision import placement_sources
    from ov_autoplace.devices.facts import read_device_facts
    from tests.synthetic_graphs import llm_like

    seen = {}
    real = placement_sources.place_on_measured_costs

    def spy(req, prepared, graph, policy_path, cost, strategy, **kwargs):
        seen.update(req=req, graph=graph, cost=cost)
        return real(req, prepared, graph, policy_path, cost, strategy, **kwargs)

    monkeypatch.setattr(placement_sources, "place_on_measured_costs", spy)
    model = llm_like(layers=2, hidden=16, positions=None)
    core, hetero = f32_testbed.core, f32_testbed.hetero
    ov_autoplace.place(model, hetero, core=core, memory_caps={"CPU": "1 GB"}, generation=(16, 8))
    req, graph = seen["req"], seen["graph"]
    assert req.generation is not None and seen["cost"].source.endswith("memory caps")
    prior = prior_cost_model(graph, [read_device_facts(core, d) for d in req.devices])
    whole = capped_cost(req, graph, placement_sources._generation_prior(req, graph, prior)[1])
    prefill = capped_cost(req, graph, None)
    np.testing.assert_allclose(seen["cost"].compute_ms, whole.compute_ms)  # the prefill and every decode step
    assert np.asarray(seen["cost"].compute_ms).sum() > np.asarray(prefill.compute_ms).sum()


def _reports(monkeypatch, sizes):
    """The plugins report ``sizes`` (device -> bytes; the others nothing) as GPU_DEVICE_TOTAL_MEM_SIZE would be
    read: the testbed's CPU plugin reports no memory, so the report is what this test states."""
    from ov_autoplace.decision import memory_path

    monkeypatch.setattr(memory_path, "device_memory_bytes", lambda core, device: float(sizes.get(device, np.inf)))


@pytest.mark.parametrize("reports", [{"CPU": 200_000, "CPUF": 200_000}, {"CPU": 100_000}])
def test_a_plugin_reporting_less_memory_than_the_model_needs_switches_the_memory_path_on(
        model, f32_testbed, stated_host_cpu, reports, monkeypatch, tmp_path, caplog):
    """No memory_caps=, but HETERO's first device reports less than the 360 KB the plain call would put there: the
    placement is made within the reports, as with caps, and generates as the plain compile does."""
    core, hetero = f32_testbed.core, f32_testbed.hetero
    _reports(monkeypatch, reports)
    req = build_request(model, hetero, core=core)
    assert dict(req.memory_caps) == {"CPU": reports["CPU"]} and req.reported_caps == ("CPU",)
    placement = ov_autoplace.place(model, hetero, core=core)
    resident, capacity = _resident(core, model, hetero, {}, placement)
    assert all(resident[d] <= reports.get(d, np.inf) for d in resident), (resident, reports)
    assert capacity["CPU"] == reports["CPU"]
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = ov_autoplace.compile_model(model, hetero, core=core, cache_dir=tmp_path)
    assert any("CPU reports 200 KB" in r.getMessage() or "CPU reports 100 KB" in r.getMessage()
               for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == "ov_autoplace"]
    assert "CPUF" in compiled.get_property("EXECUTION_DEVICES")  # the plain call would run CPU alone
    for got, want in zip(_generate(compiled), _generate(core.compile_model(model, "CPU"))):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_report_the_model_fits_changes_nothing(model, f32_testbed, monkeypatch):
    _reports(monkeypatch, {"CPU": 10_000_000, "CPUF": 100_000})  # CPUF is not where the plain call puts anything
    req = build_request(model, f32_testbed.hetero, core=f32_testbed.core)
    assert not req.memory_caps and not req.reported_caps


def test_reports_no_split_fits_warn_and_compile_the_plain_call(model, f32_testbed, monkeypatch, tmp_path, caplog):
    """The caller asked for no caps: where the reports cannot hold the model in any split, OpenVINO's own call is
    compiled, with a WARNING naming the report and what is missing (never a silent overflow, never an error)."""
    core = f32_testbed.core
    _reports(monkeypatch, {"CPU": 150_000, "CPUF": 150_000})
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        compiled = ov_autoplace.compile_model(model, f32_testbed.hetero, core=core, cache_dir=tmp_path)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("CPU reports 150 KB" in w and "missing" in w for w in warned), warned
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPU"]
    with pytest.raises(MemoryCapError, match="missing"):  # beside the caller's own cap it is the caller's to fix
        build_request(model, f32_testbed.hetero, core=core, memory_caps={"CPUF": "150 KB"})


def _cpu_runs_layers_0_1_only(monkeypatch):
    """The first device (CPU) cannot run layers 2-3's named nodes, as a GPU or NPU may lack an op: the plain call,
    HETERO's split, puts them on CPUF. Stated for the door's check only (the testbed's plugins run every op)."""
    from ov_autoplace.decision import memory_path
    from ov_autoplace.placement.legalizer import query_support

    def stated(core, model, graph, devices):
        support = query_support(core, model, graph, devices)
        support[[i for i, n in enumerate(graph.names) if n[-1:] in "23" and n[:-1] in _LAYER_NODES], 0] = False
        return support

    monkeypatch.setattr(memory_path, "query_support", stated)


_LAYER_NODES = ("init", "rv", "reorder", "proj", "cat", "assign", "mean", "act")


def test_a_later_device_the_plain_call_reaches_is_held_to_its_report(model, f32_testbed, stated_host_cpu,
                                                                   monkeypatch, caplog):
    """CPUF, HETERO's second device, gets layers 2-3 from the plain call (two 16 KB weights and two 64 KB caches:
    164 KB) and reports 100 KB: it is capped at its report, and the placement keeps it within."""
    core, hetero = f32_testbed.core, f32_testbed.hetero
    _reports(monkeypatch, {"CPUF": 100_000})
    _cpu_runs_layers_0_1_only(monkeypatch)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        req = build_request(model, hetero, core=core)
    assert dict(req.memory_caps) == {"CPUF": 100_000} and req.reported_caps == ("CPUF",)
    assert any("CPUF reports 100 KB (100000 B) of memory and the plain call puts 164 KB (163872 B) there"
               in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
    resident, capacity = _resident(core, model, hetero, {}, ov_autoplace.place(model, hetero, core=core))
    assert resident["CPUF"] <= 100_000 and capacity["CPUF"] == 100_000, resident


def test_a_first_device_is_held_to_its_report_on_what_the_plain_call_puts_there(model, f32_testbed, monkeypatch):
    """CPU reports 250 KB, less than the whole model (328 KB) but more than the 164 KB of layers 0-1 that the plain
    call gives it when it cannot run layers 2-3: nothing is capped, the plain call fits."""
    _reports(monkeypatch, {"CPU": 250_000})
    _cpu_runs_layers_0_1_only(monkeypatch)
    req = build_request(model, f32_testbed.hetero, core=f32_testbed.core)
    assert not req.memory_caps and not req.reported_caps


@pytest.mark.parametrize("stored, option, config, switched", [
    ("u8", None, None, False), ("f16", None, None, True), ("f32", None, None, True),
    ("u8", "f16", None, True),  # the model's runtime option, which the compile gives the device (placed_compile)
    ("f16", None, "u8", False), ("u8", "f16", "u8", False)])  # the call's own precision wins over both
def test_a_decoder_s_kv_cache_counts_as_the_first_device_will_store_it(f32_testbed, monkeypatch, stored, option,
                                                                      config, switched):
    """Whether the report is exceeded is judged on the KV cache in the precision the device's compile will store it
    (``KV_CACHE_PRECISION``: the call's, else the model's ``runtime_options``, else the plugin's, stated here): the
    decoder's weights (~6 KB) and its KV cache (16 KB declared f32 at 128 tokens: 9.9 KB in all in u8, 14 KB in
    f16) exceed a 12 KB report unless the cache is kept in u8."""
    import openvino as ov

    from tests.synthetic_graphs import llm_like

    core = f32_testbed.core
    _reports(monkeypatch, {"CPU": 12_000})
    real = core.get_property
    monkeypatch.setattr(core, "get_property", lambda device, name, *rest: getattr(ov.Type, stored)
                        if name == "KV_CACHE_PRECISION" else real(device, name, *rest))
    model = llm_like(layers=2, hidden=16, positions=None)
    if option:
        model.set_rt_info(option, ["runtime_options", "KV_CACHE_PRECISION"])
    req = build_request(model, f32_testbed.hetero, config={"KV_CACHE_PRECISION": config} if config else None,
                        core=core, generation=(64, 64))
    assert (req.reported_caps == ("CPU",)) == switched, (stored, option, config, dict(req.memory_caps))


def test_a_split_that_cannot_be_fitted_under_reports_alone_compiles_the_plain_call(model, f32_testbed, monkeypatch,
                                                                                 tmp_path, caplog):
    """The door found the reports able to hold the model in total, but no split fits them (an activation, a
    variable's layer): the caller asked for no caps, so the plain call is compiled with a WARNING; under the
    caller's own caps the same is their MemoryCapError."""
    from ov_autoplace.decision import first_start

    def no_fit(*args, **kwargs):
        raise MemoryCapError("no split of this model that HETERO can run fits the memory caps (stated by the test)")

    _reports(monkeypatch, {"CPU": 200_000, "CPUF": 200_000})
    monkeypatch.setattr(first_start, "place_within_caps", no_fit)
    core = f32_testbed.core
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        compiled = ov_autoplace.compile_model(model, f32_testbed.hetero, core=core, cache_dir=tmp_path)
    assert any("stated by the test" in r.getMessage() and "plugins' reports" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPU"]
    with pytest.raises(MemoryCapError, match="stated by the test"):
        ov_autoplace.compile_model(model, f32_testbed.hetero, core=core, cache_dir=tmp_path / "capped",
                                   memory_caps={"CPUF": "200 KB"})


def test_a_failure_reading_the_need_leaves_the_call_as_openvino_s(model, f32_testbed, monkeypatch, caplog):
    """The report is read at the door, outside the placement path's fallback: a failure of our machinery there is
    a WARNING and the request unchanged, never an error for a caller who asked for no caps."""
    from ov_autoplace.decision import memory_path

    def broken(graph, *args, **kwargs):
        raise RuntimeError("stated by the test")

    _reports(monkeypatch, {"CPU": 100_000})
    monkeypatch.setattr(memory_path, "memory_need", broken)
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        req = build_request(model, f32_testbed.hetero, core=f32_testbed.core)
    assert not req.memory_caps and not req.reported_caps
    assert any("CPU: memory report not applied" in r.getMessage() and "stated by the test" in r.getMessage()
               for r in caplog.records)


def test_a_carry_over_that_moves_weights_beyond_a_cap_is_refused_before_the_compile(model, f32_testbed,
                                                                                    stated_host_cpu, monkeypatch,
                                                                                    tmp_path):
    """The compile legalizes the clone's fitted placement again on the dynamic model (``transfer_placement``),
    which may move nodes; the caps are checked again on what would be compiled. No such move is known on the
    decoders tried, so one is made here: the carry-over puts every node on CPU."""
    import dataclasses

    from ov_autoplace.compile import placed_compile
    from ov_autoplace.decision.memory_path import check_carried_within_caps
    from ov_autoplace.placement.dynamic_model import transfer_placement

    core, hetero, caps = f32_testbed.core, f32_testbed.hetero, {"CPU": "200 KB", "CPUF": "200 KB"}
    placement = ov_autoplace.place(model, hetero, core=core, memory_caps=caps)
    req = build_request(model, hetero, core=core, memory_caps=caps)
    dynamic = prepare_model(model)
    carried = transfer_placement(placement, dynamic, core)
    check_carried_within_caps(req, placement, carried, dynamic)  # the real carry-over keeps the fit

    def onto_cpu(given, prepared, core, **kwargs):
        moved = transfer_placement(given, prepared, core, **kwargs)
        return dataclasses.replace(moved, assignment={name: "CPU" for name in moved.assignment})

    with pytest.raises(MemoryCapError, match=r"onto CPU .* which would hold .* of its cap 200"):
        check_carried_within_caps(req, placement, onto_cpu(placement, dynamic, core), dynamic)
    monkeypatch.setattr(placed_compile, "transfer_placement", onto_cpu)
    with pytest.raises(MemoryCapError, match="carried over to the dynamic model"):
        ov_autoplace.compile_model(model, hetero, core=core, memory_caps=caps, cache_dir=tmp_path)
