"""A decoder's decode steps profiled for the measured paths (measuring/generation_profile.py): the decode clone with
its past fed as inputs runs the very step the stateful model runs, and its measured per-node costs join the
prefill's at the objective's weights, stored for the next start."""

from __future__ import annotations

import dataclasses

import numpy as np
import openvino as ov
import pytest

from ov_autoplace.cache.profile_store import ProfileStore
from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.measuring.generation_profile import DecodeNotProfiled, generation_profile, profile_links_of
from ov_autoplace.measuring.quick_profile import quick_model_profile
from ov_autoplace.model.generation import Generation, decode_weights, measurable_decode_clone
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.shapes import static_clone
from tests.synthetic_graphs import llm_like

LAYERS, HIDDEN, PROMPT = 3, 8, 6


def _feed(tokens, past):
    return {"input_ids": np.array([tokens], np.int64), "attention_mask": np.ones((1, past + len(tokens)), np.int64),
            "position_ids": np.arange(past, past + len(tokens))[None], "beam_idx": np.zeros(1, np.int32)}


def test_the_measurable_decode_clone_runs_the_decode_step_of_the_stateful_model():
    """Fed the state a prefill left (each variable's value under its ReadValue's name), the stateless clone gives
    the stateful model's logits for the next token, and each former Assign's Result is the new state."""
    core = ov.Core()
    # f32 stated: on a CPU with bf16 the plugin computes, and keeps the state, in bf16 by default (~3e-3 apart)
    f32 = {"INFERENCE_PRECISION_HINT": "f32"}
    model = llm_like(layers=LAYERS, hidden=HIDDEN, positions=None)
    request = core.compile_model(model, "CPU", f32).create_infer_request()
    request.reset_state()
    request.infer(_feed([3, 1, 4, 1, 5, 9], 0))
    past = {s.name: np.array(s.state.data) for s in request.query_state()}
    want = request.infer(_feed([2], PROMPT))["logits"]
    new_state = {s.name: np.array(s.state.data) for s in request.query_state()}

    clone = measurable_decode_clone(model, PROMPT)
    assert not clone.get_variables() and not clone.get_sinks(), "stateless: nothing for the plugin to keep"
    readers = {op.get_friendly_name(): op for op in model.get_ops() if op.get_type_name() == "ReadValue"}
    assigns = {op.get_friendly_name(): op.get_variable_id() for op in model.get_ops() if op.get_type_name() == "Assign"}
    compiled = core.compile_model(clone, "CPU", f32)
    feed = _feed([2], PROMPT)
    for port in compiled.inputs:
        name = port.get_node().get_friendly_name()
        if name in readers:  # the state parameter, named as the ReadValue it replaces
            feed[port] = past[readers[name].get_variable_id()]
    result = compiled.create_infer_request().infer({k: v for k, v in feed.items()})
    np.testing.assert_allclose(result["logits"], want, rtol=1e-5, atol=1e-6)
    by_name = {out.get_node().get_friendly_name(): result[out] for out in compiled.outputs}
    assert set(assigns) <= set(by_name), "every Assign's Result keeps the Assign's name"
    for name, variable in assigns.items():
        np.testing.assert_allclose(by_name[name], new_state[variable], rtol=1e-6)


@pytest.fixture(scope="module")
def decoder():
    model = llm_like(layers=LAYERS, hidden=HIDDEN, positions=None)
    prefill = prepare_model(static_clone(model, {"input_ids": [1, 16], "attention_mask": [1, 16],
                                                 "position_ids": [1, 16], "beam_idx": [1]}))
    return model, prefill, extract_graph(prefill)


def test_the_decode_steps_are_measured_and_weighted_into_the_prefills_profile(decoder, thread_core, tmp_path):
    """The measured generation's costs name the prefill's nodes, exceed the prefill's by the decode steps' measured
    time at the objective's weights, and are stored: the next start reads them without measuring."""
    model, prefill, graph = decoder
    devices, store, gen = ("CPU", "CPUS"), ProfileStore(tmp_path), Generation(16, 40)
    cost = quick_model_profile(prefill, thread_core, devices, store=store).cost_model
    links = profile_links_of(cost)
    with pytest.raises(DecodeNotProfiled):  # a stored-only read before any decode step was measured
        generation_profile(model, graph, cost, gen, thread_core, store=store, links=links, measure=False)
    placing_graph, measured = generation_profile(model, graph, cost, gen, thread_core, store=store, links=links)
    assert measured.node_names == cost.node_names and placing_graph.names == graph.names
    assert measured.devices == devices and measured.simulated == cost.simulated  # the prefill's links, as labelled
    for d in range(len(devices)):
        alone = np.full(graph.num_nodes, d)
        prefill_ms = CostTerms(cost, graph).latency_ms(alone)
        whole_ms = CostTerms(measured, placing_graph).latency_ms(alone)
        # 39 decode steps, each at least the submodel overhead and some measured compute
        assert whole_ms > prefill_ms + 0.5 * decode_weights(gen).sum() * cost.submodel_overhead_ms[d]
        assert np.all(measured.compute_ms[:, d] >= cost.compute_ms[:, d])
    _, again = generation_profile(model, graph, cost, gen, thread_core, store=store, links=links, measure=False)
    np.testing.assert_allclose(again.compute_ms, measured.compute_ms)


def test_a_decode_step_measured_on_a_loaded_machine_marks_the_generation_loaded(decoder, thread_core, tmp_path):
    """The combined costs are loaded (gains unproven) when the prefill's or any decode step's profile was."""
    model, prefill, graph = decoder
    cost = quick_model_profile(prefill, thread_core, ("CPU", "CPUS"), store=ProfileStore(tmp_path)).cost_model
    _, measured = generation_profile(model, graph, dataclasses.replace(cost, loaded=True), Generation(16, 8),
                                     thread_core, store=ProfileStore(tmp_path), links=profile_links_of(cost))
    assert measured.loaded


def test_the_measured_cost_provider_of_the_strategies_costs_a_decoders_generation(decoder, thread_core, tmp_path):
    """``strategy="heft"``/``"hsdag"`` place on MeasuredCostProvider: with the context's generation and dynamic
    model it returns the whole generation's costs for the prefill's nodes (the prefill's full profile, each decode
    point's quick profile); without them, the prefill's profile as before."""
    from ov_autoplace.measuring.providers import MeasuredCostProvider
    from ov_autoplace.placement.context import PlacementContext

    model, prefill, graph = decoder
    devices = ("CPU", "CPUS")
    support = np.ones((graph.num_nodes, len(devices)), bool)
    plain = PlacementContext(graph=graph, devices=devices, support=support, core=thread_core, model=prefill,
                             profile_dir=tmp_path)
    prefill_cost = MeasuredCostProvider(iterations=4, warmup=1)(plain)
    whole = MeasuredCostProvider(iterations=4, warmup=1)(dataclasses.replace(
        plain, generation=Generation(16, 12), dynamic_model=model))
    assert "Generation(prompt_tokens=16, new_tokens=12)" in whole.source
    assert whole.node_names == prefill_cost.node_names
    np.testing.assert_array_less(prefill_cost.compute_ms.sum(axis=0), whole.compute_ms.sum(axis=0))
    # and the generation's crossing bytes (HEFT prices them on the prefill's graph: CostModel.bytes_on)
    assert prefill_cost.edge_bytes is None and whole.edge_bytes.sum() > 1.5 * np.maximum(graph.edge_bytes, 0).sum()
