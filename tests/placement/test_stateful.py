"""Stateful graphs (ReadValue / Assign, an LLM's KV cache) placed across devices: every legal placement compiles
and runs as the plain compile does, and a pin that would split a variable is a PinError (placement/stateful.py)."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.errors import PinError
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.legalizer import legalize, query_support
from ov_autoplace.placement.pins import Pin
from ov_autoplace.placement.stateful import keep_state_together, state_groups
from tests import synthetic_graphs as sg
from tests.synthetic_graphs import stateful_layers

DEVICES = ("CPU", "CPUF")


def _generate(compiled, steps: int = 3) -> list[np.ndarray]:
    """A prefill of 4 positions then single-position steps, state reset first (as a generation loop does)."""
    request = compiled.create_infer_request()
    request.reset_state()
    rng = np.random.default_rng(1)
    outs = []
    for step in range(steps):
        x = rng.standard_normal((1, 4 if step == 0 else 1, 16)).astype(np.float32)
        outs.append(request.infer({"x": x, "beam_idx": np.zeros(1, np.int32)})[compiled.outputs[0]].copy())
    return outs


@pytest.fixture(scope="module")
def placed(f32_testbed):
    # both devices f32: a split's outputs are held to 1e-5 of the plain compile's (a bf16 CPU differs by ~1e-2)
    testbed = f32_testbed
    model = stateful_layers()
    graph = extract_graph(model)
    support = query_support(testbed.core, model, graph, DEVICES)
    reference = _generate(testbed.core.compile_model(model, "CPU"))

    def place(on_second: set[str], pins=()):
        proposal = np.array([1 if name in on_second else 0 for name in graph.names])
        return legalize(graph, proposal, DEVICES, support, pins=pins)

    def run(placement):
        clone = model.clone()
        placement.apply(clone)
        return _generate(testbed.core.compile_model(clone, "HETERO:CPU,CPUF"))
    return graph, place, run, reference


def test_graph_pairs_each_readvalue_with_its_assign(placed):
    graph = placed[0]
    pairs = {(graph.names[r], graph.names[a]) for r, a in graph.variables}
    assert pairs == {("rv0", "assign0"), ("rv1", "assign1")}
    groups = {g.label: {graph.names[i] for i in g.members} for g in state_groups(graph)}
    assert {"rv1", "reorder1", "cat1", "assign1", "init1"} <= groups["ReadValue 'rv1' / Assign 'assign1'"]


@pytest.mark.parametrize("on_second", [
    {"rv1", "reorder1", "proj1", "cat1", "assign1", "mean1", "act1"},  # a layer split, its initializer left behind
    {"cat0"},  # the node between a ReadValue and its Assign (HETERO: unordered_map::at)
    {"proj1"},  # the new state's producer: a cycle cuts rv1 from assign1 (doesn't have sibling output)
    {"rv0", "reorder0", "proj0", "cat0", "assign0", "mean0", "act0"},
], ids=["layer1", "between", "producer", "layer0"])
def test_legal_placements_of_a_stateful_graph_compile_and_run_as_the_plain_compile(placed, on_second):
    graph, place, run, reference = placed
    placement = place(on_second)
    again = place({n for n, d in placement.assignment.items() if d == "CPUF"})  # legal stays as it is
    assert again.assignment == placement.assignment
    outs = run(placement)
    for got, want in zip(outs, reference):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_layer_split_stays_split(placed):
    graph, place, run, reference = placed
    placement = place({"rv1", "reorder1", "proj1", "cat1", "assign1", "mean1", "act1", "init1"})
    assert placement.counts_per_device()["CPUF"] > 0 and placement.num_submodels >= 2
    assert placement.assignment["rv1"] == placement.assignment["assign1"] == placement.assignment["init1"] == "CPUF"


def test_a_pin_splitting_a_variable_is_a_pin_error_naming_the_rule_and_nodes(placed):
    graph, place, run, reference = placed
    with pytest.raises(PinError, match=r"(?s)ReadValue 'rv0' / Assign 'assign0'.*rv0.*CPU.*cat0.*CPUF"):
        place(set(), pins=[Pin("CPU", name="rv0"), Pin("CPUF", name="cat0")])


def _layer_1_on_the_second_device(testbed):
    """``(model, placement)``: two stateful layers sharing one initializer, layer 1 legalised onto CPUF."""
    model = stateful_layers(shared_init=True)
    graph = extract_graph(model)
    support = query_support(testbed.core, model, graph, DEVICES)
    layer1 = {"rv1", "reorder1", "proj1", "cat1", "assign1", "mean1", "act1", "init1"}
    return model, legalize(graph, np.array([1 if n in layer1 else 0 for n in graph.names]), DEVICES, support)


def test_an_initializer_every_layer_shares_is_copied_per_device(f32_testbed):
    """One ShapeOf(x) -> Gather feeds both layers' initializers (optimum-intel's layout): with layer 1 on the second
    device, a shape value would cross a device (rule 3: the variable's shape "has to extend" the initializer's);
    Placement.apply gives the second device its own copy, and the split runs as the plain compile."""
    testbed = f32_testbed  # like for like: the split is held to 1e-5 of the plain compile
    model, placement = _layer_1_on_the_second_device(testbed)
    assert placement.assignment["batch"] == "CPU" and placement.assignment["rv1"] == "CPUF"
    clone = model.clone()
    placement.apply(clone)
    copies = [op for op in clone.get_ops() if op.get_friendly_name().startswith("batch/on_")]
    assert [op.get_rt_info()["affinity"].astype(str) for op in copies] == ["CPUF"]
    got = _generate(testbed.core.compile_model(clone, "HETERO:CPU,CPUF"))
    want = _generate(testbed.core.compile_model(model, "CPU"))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_a_copy_of_the_initializer_reads_the_parameters_whatever_device_its_inputs_are_on(f32_testbed):
    """The shared initializer's ShapeOf on the second device and its Gather (``batch``) on the first: the second
    device's copy of the Gather would read that ShapeOf, outside the nodes copied, and the cut made of them referenced
    ``x`` undeclared (``Placement.apply`` raised ``Model references undeclared parameters``). A device's copy takes
    the chain from the Parameters, and the split runs as the plain compile."""
    import dataclasses

    model, placement = _layer_1_on_the_second_device(f32_testbed)
    graph = extract_graph(model)
    shape_of = [graph.names[i] for i in graph.predecessors(graph.names.index("batch")).tolist()
                if graph.op_types[i] == "ShapeOf"]
    assert len(shape_of) == 1 and placement.assignment[shape_of[0]] == "CPU"
    moved = dataclasses.replace(placement, assignment={**placement.assignment, shape_of[0]: "CPUF"})
    clone = model.clone()
    moved.apply(clone)
    got = _generate(f32_testbed.core.compile_model(clone, "HETERO:CPU,CPUF"))
    want = _generate(f32_testbed.core.compile_model(model, "CPU"))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_the_applied_placement_is_the_same_model_whatever_the_process_built_before(f32_testbed, tmp_path):
    """OpenVINO's blob cache (CACHE_DIR) keys a compile on the serialized model. The initializer's copies were
    cloned from a cut whose Results named their tensors from a process-wide counter, so an app's second start
    compiled a model that differed from its first in those names and missed the blob (the third hit the second's):
    the copies' tensors carry no names now, and the model applied twice, with other models built between, is the
    same serialized model."""
    import openvino as ov

    model, placement = _layer_1_on_the_second_device(f32_testbed)

    def applied(name: str) -> bytes:
        clone = model.clone()
        placement.apply(clone)
        ov.save_model(clone, tmp_path / f"{name}.xml", compress_to_fp16=False)
        return (tmp_path / f"{name}.xml").read_bytes()

    first = applied("first")
    for _ in range(3):  # other work of the same process advances the counter
        stateful_layers(shared_init=True)
    assert b"Result_" not in first and applied("second") == first


def test_pins_that_make_hetero_cut_a_variable_apart_are_a_pin_error(placed):
    """proj1 on the second device and the state it feeds pinned to the first: a cycle through the second device cuts
    the first device's part in two, rv1 (fed from ShapeOf(x), upstream) in one, assign1 in the other. HETERO fails
    on that at the first request (doesn't have sibling output); the legalizer says so before any compile."""
    graph, place, run, reference = placed
    with pytest.raises(PinError, match=r"stateful rule 2.*ReadValue 'rv1' / Assign 'assign1'"):
        place(set(), pins=[Pin("CPUF", name="proj1"), Pin("CPU", name="cat1")])


def test_a_fallback_on_a_stateful_model_names_the_llm_rule(testbed, monkeypatch, caplog, tmp_path):
    """Should our machinery still hand HETERO a placement that breaks a stateful rule, the WARNING of the fallback
    names the rule HETERO's message points at (the placement path is made to fail as HETERO fails then)."""
    import logging

    import ov_autoplace
    import ov_autoplace.api as api

    def hetero_rejects(*args, **kwargs):
        raise RuntimeError("Exception from src/inference/src/cpp/infer_request.cpp:224:\n"
                           "ReadValue node with name 'rv1'  doesn't have sibling output")
    monkeypatch.setattr(api, "compile_with_strategy", hetero_rejects)
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        compiled = ov_autoplace.compile_model(stateful_layers(), testbed.hetero, core=testbed.core,
                                              strategy="heft", cache_dir=tmp_path)
    assert compiled is not None
    warning = next(r.getMessage() for r in caplog.records if "falling back" in r.getMessage())
    assert "2 state variable(s)" in warning and "stateful rule 1/2" in warning


def _tiny_prefill():
    """The tiny lab decoder (optimum-intel's layout), its prefill's static clone prepared, and the dynamic model."""
    from ov_autoplace.model.prepare import prepare_model
    from ov_autoplace.model.shapes import static_clone
    from ov_autoplace_lab.models.decoder_models import TINY, build_decoder

    model = build_decoder(TINY)
    clone = static_clone(model, {"input_ids": [1, 16], "attention_mask": [1, 16], "position_ids": [1, 16],
                                 "beam_idx": [1]})
    return model, prepare_model(clone)


def test_rule_2_is_judged_on_the_dynamic_model_a_static_clone_was_made_from():
    """An LLM is placed on its prefill's static clone, which folds the shape subgraphs (``ShapeOf(input_ids)``, the
    mask's ``Range``) through which the model's Parameters reach every variable's initializer and every layer. The
    first layer's input norm on the second device keeps each variable in one submodel on the clone, and cuts them
    apart on the dynamic model HETERO compiles (an optimum-intel export so split does not compile:
    tests/models/test_llm.py). With the dynamic graph that placement_graph carries, what the legalizer returns
    keeps rule 2 there too; a split of the last layer's MLP and the head stays a split. (Legalised on the clone
    alone, rule 4 undoes this split too: the norm sits on a path out of and back into the device holding layer 0's
    state.)"""
    from ov_autoplace.graph.arrays import NodeRole
    from ov_autoplace.model.prepare import placement_graph
    from ov_autoplace.placement.legalizer import constant_subgraph_mask
    from ov_autoplace.placement.merge_to_bound import follow_consumers
    from ov_autoplace.placement.stateful import split_variables

    model, prepared = _tiny_prefill()
    bare, graph = extract_graph(prepared), placement_graph(prepared, model)
    assert bare.dynamic is None and graph.dynamic is not None and graph.dynamic.num_nodes > graph.num_nodes
    assert placement_graph(prepared, None).dynamic is None
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    support = np.ones((graph.num_nodes, 2), bool)

    def legal(g, proposal):
        placement = legalize(g, proposal, DEVICES, support, max_submodels=None)
        return np.array([DEVICES.index(placement.assignment[n]) for n in g.names]), placement

    norm = np.zeros(graph.num_nodes, np.int64)  # layer 0's RMSNorm up to its weight: Power ... Divide
    norm[graph.op_types.index("Power"):graph.successors(graph.names.index("model.layers.0.input_layernorm.weight"))[0]] = 1
    split = follow_consumers(bare, np.where(active, norm, -1), active, np.zeros_like(active))
    assert len(set(split[active].tolist())) == 2 and not split_variables(bare, split, active)
    assert len(split_variables(graph, split, active)) == len(graph.variables) == 4
    on_dynamic, placement = legal(graph, norm)
    assert not split_variables(graph, on_dynamic, active)
    assert any("rule 2" in note or "comes back" in note for note in placement.notes)  # rule 4 may come first
    tail = np.zeros(graph.num_nodes, np.int64)
    tail[graph.names.index("model.layers.1.mlp.gate_proj.weight"):] = 1  # the last MLP, the final norm, the head
    on_dynamic, _ = legal(graph, tail)
    assert len(set(on_dynamic[active].tolist())) == 2 and not split_variables(graph, on_dynamic, active)


def test_the_embedding_and_the_head_on_the_second_device_stay_a_split_that_compiles(f32_testbed):
    """The split that relieves a capped device most cheaply: the embedding and the LM head elsewhere. On the dynamic
    model ``input_ids`` is read by the embedding and by shape nodes that reach every layer's initializer, so the
    legalizer gives it the shape nodes' device, and its part there has a way out (the embedding) and back (the
    first layer): judged so, rule 2 failed and the split went back to one device at compile time (the lab's table
    priced it: docs/llm.md, "Under memory caps"). ``Placement.apply`` moves ``input_ids`` off that cycle, to the
    embedding's device, and rule 2 is now judged as applied: HETERO compiles 3 submodels, logits as the plain
    compile's."""
    import ov_autoplace
    from ov_autoplace.graph.arrays import NodeRole
    from ov_autoplace.model.prepare import placement_graph
    from ov_autoplace.placement.legalizer import constant_subgraph_mask
    from tests.llm_models import generate

    testbed = f32_testbed
    model, prepared = _tiny_prefill()
    graph = placement_graph(prepared, model)
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    ids = graph.names.index("input_ids")
    embedding = [j for j in graph.successors(ids).tolist() if graph.op_types[j] == "Gather"]
    head = [int(p) for j in np.flatnonzero(graph.role == NodeRole.RESULT) for p in graph.predecessors(j)]  # logits
    proposal = np.zeros(graph.num_nodes, np.int64)
    proposal[embedding + head] = 1
    placement = legalize(graph, proposal, testbed.devices, np.ones((graph.num_nodes, 2), bool), max_submodels=None)
    assert placement.counts_per_device()[testbed.devices[1]] == 2 and not placement.notes
    split = ov_autoplace.compile_placement(model, placement, core=testbed.core)
    assert split.get_property("HETERO_NUMBER_OF_SUBMODELS") == 3
    vocabulary = int(model.output("logits").get_partial_shape()[2].get_length())
    prompt = np.random.default_rng(0).integers(0, vocabulary, 16).tolist()
    tokens, want = generate(testbed.core.compile_model(model, testbed.devices[0]), prompt, 6)
    _, got = generate(split, prompt, 6, teacher=tokens)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * float(np.abs(b).max()))


def test_a_request_for_a_dynamic_decoder_places_on_a_graph_that_carries_the_dynamic_one(f32_testbed):
    """``PlacementRequest.placement_graph``: every decision path's graph; the dynamic graph is extracted once."""
    from ov_autoplace.call_request import build_request
    from ov_autoplace.model.prepare import prepare_model

    model, _ = _tiny_prefill()
    req = build_request(model, f32_testbed.hetero, core=f32_testbed.core)
    prepared = prepare_model(req.placement_model)
    first, second = req.placement_graph(prepared), req.placement_graph(prepared)
    assert first.dynamic is not None and first.dynamic is second.dynamic and first.variables
    static = build_request(sg.residual(), f32_testbed.hetero, core=f32_testbed.core)  # placed as it is
    assert static.placement_model is static.model
    assert static.placement_graph(prepare_model(static.placement_model)).dynamic is None


def _three_layers(f32_testbed, on_second: set[str], pins=()):
    """``stateful_layers(3, head=True)`` with ``on_second`` proposed on CPUF, legalised."""
    model = stateful_layers(layers=3, head=True)
    graph = extract_graph(model)
    support = query_support(f32_testbed.core, model, graph, DEVICES)
    proposal = np.array([1 if name in on_second else 0 for name in graph.names])
    return model, legalize(graph, proposal, DEVICES, support, pins=pins)


def _layer(k: int) -> set[str]:
    return {f"{name}{k}" for name in ("init", "rv", "reorder", "proj", "cat", "assign", "mean", "act")}


def test_a_device_left_and_reentered_only_through_the_other_is_a_chain_that_runs(f32_testbed):
    """The last layer on CPUF and the head back on CPU: a path leaves CPU, which holds the first layers' variables,
    and comes back, but CPU reaches the head only through CPUF: three submodels in a chain, which HETERO compiles
    and which generates as the plain compile. Rule 4 leaves it."""
    model, placement = _three_layers(f32_testbed, _layer(2))
    assert placement.assignment["head"] == "CPU" and placement.assignment["rv1"] == "CPU"
    assert {placement.assignment[n] for n in _layer(2)} == {"CPUF"}
    assert not any("comes back" in note for note in placement.notes)
    clone = model.clone()
    placement.apply(clone)
    got = _generate(f32_testbed.core.compile_model(clone, "HETERO:CPU,CPUF"))
    for a, b in zip(got, _generate(f32_testbed.core.compile_model(model, "CPU"))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_a_node_on_the_way_out_and_back_returns_to_the_device_holding_state(f32_testbed):
    """mean1 alone on CPUF: a path from layer 1's state (CPU) through it back to CPU. Rule 2 holds (layer 1's
    ReadValue and Assign are both upstream of it); rule 4 brings the one node back rather than move the rest."""
    _, placement = _three_layers(f32_testbed, {"mean1"})
    assert set(placement.assignment.values()) == {"CPU"}
    assert any("comes back" in note for note in placement.notes)


def test_pins_that_reenter_a_device_holding_state_are_left_to_the_compile(f32_testbed):
    """Rule 4 is sufficient, not necessary (HETERO compiles most re-entries): pinned nodes never move for it and no
    PinError is raised; where pins make the re-entry the placement keeps them."""
    pins = [Pin("CPUF", name=name) for name in sorted(_layer(2))] + [Pin("CPU", name="head")]
    _, placement = _three_layers(f32_testbed, set(), pins=pins)
    assert placement.assignment["head"] == "CPU" and placement.assignment["proj2"] == "CPUF"


def test_a_shared_initializer_on_the_second_device_is_no_reentry_once_copied(f32_testbed):
    """Layer 1 and the initializer both layers share (``batch``, where the compile's carry-over puts it when most
    of its readers are there) on CPUF: the graph's edge from ``batch`` to layer 0's initializer makes a way out of
    CPUF through layer 0 and back, but ``Placement.apply`` gives CPU its own copy of ``batch``, so HETERO meets no
    such path. Rule 4 is judged on the edges HETERO meets (as rule 2 is) and keeps the split, which generates as the
    plain compile (on the graph's own edges it moved layer 0's state, and a BLOOM export then went to one device)."""
    model = stateful_layers(shared_init=True)
    graph = extract_graph(model)
    support = query_support(f32_testbed.core, model, graph, DEVICES)
    on_second = {"rv1", "reorder1", "proj1", "cat1", "assign1", "mean1", "act1", "init1", "batch"}
    placement = legalize(graph, np.array([1 if n in on_second else 0 for n in graph.names]), DEVICES, support)
    assert not any("comes back" in note for note in placement.notes), placement.notes
    assert {placement.assignment[n] for n in on_second} == {"CPUF"} and placement.assignment["rv0"] == "CPU"
    clone = model.clone()
    placement.apply(clone)
    got = _generate(f32_testbed.core.compile_model(clone, "HETERO:CPU,CPUF"))
    for a, b in zip(got, _generate(f32_testbed.core.compile_model(model, "CPU"))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_a_layers_attention_joins_its_kv_variables_in_one_group():
    """Rule 5: each layer's ScaledDotProductAttention reads its K and V caches; it joins their groups, which become
    one per layer, on the clone and on the dynamic model (where the mask's shape paths from every cache reach every
    layer's attention, and are not followed)."""
    from ov_autoplace.model.prepare import prepare_model

    model, clone = _tiny_prefill()
    for graph in (extract_graph(clone), extract_graph(prepare_model(model))):
        groups = state_groups(graph)
        attention = [i for i, op in enumerate(graph.op_types) if op == "ScaledDotProductAttention"]
        assert len(groups) == len(attention) == len(graph.variables) // 2
        for group, sdpa in zip(groups, attention):
            members = set(group.members.tolist())
            assert sdpa in members and len(members & set(attention)) == 1
            assert sum(graph.op_types[i] == "ReadValue" for i in members) == 2
            assert group.label.count(" / Assign ") == 2


def test_an_attention_alone_on_another_device_comes_back_to_its_cache():
    """The last layer's attention proposed alone on the second device would read both caches across devices at
    every token (HETERO runs that, but copies the whole cache each time); rule 5 keeps it with them."""
    from ov_autoplace.model.prepare import placement_graph

    model, clone = _tiny_prefill()
    graph = placement_graph(clone, model)
    sdpa = [i for i, op in enumerate(graph.op_types) if op == "ScaledDotProductAttention"][-1]
    proposal = np.zeros(graph.num_nodes, np.int64)
    proposal[sdpa] = 1
    placement = legalize(graph, proposal, DEVICES, np.ones((graph.num_nodes, 2), bool))
    assert set(placement.assignment.values()) == {"CPU"}


def test_a_device_reentered_only_through_the_other_is_not_a_reentry():
    """Rule 4 looks only at re-entries the device also reaches directly: a device that runs something before its
    own layers (an embedding; here layer 0's projection) and then the last layer with its state and the head, or
    the first and last layers around a middle one elsewhere, is a chain of submodels and stays as it is. Layer 1's
    projection reaches its Add both directly and through mean1 on the other device: a re-entry."""
    from ov_autoplace.graph.arrays import NodeRole
    from ov_autoplace.placement.legalizer import constant_subgraph_mask
    from ov_autoplace.placement.stateful import keep_state_devices_whole

    graph = extract_graph(stateful_layers(layers=3, head=True))
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    support, locked = np.ones((graph.num_nodes, 2), bool), np.zeros(graph.num_nodes, bool)

    def moved(on_second: set[str]) -> int:
        device = np.where(active, [1 if n in on_second else 0 for n in graph.names], -1).astype(np.int64)
        keep_state_together(graph, device, active, support, locked, DEVICES, [])
        return keep_state_devices_whole(graph, device, active, support, locked)[0]

    add2 = {graph.names[i] for i in graph.predecessors(graph.names.index("act2")).tolist()}  # the layer's unnamed Add
    assert moved({"proj0", "head"} | _layer(2) | add2) == 0
    assert moved(_layer(1)) == 0  # layers 0 and 2 reach each other only through layer 1: a chain
    assert moved({"mean1"}) == 1  # layer 1's projection reaches its Add directly, and through mean1


def _initializer_placed_on_1(shape_of_on_0: bool):
    """llm_like with the ids read through a Convert: its graph, and a placement with the initializer every variable
    shares on device 1 (its ``ShapeOf(input_ids)`` on device 0 with ``shape_of_on_0``), everything else on 0."""
    from ov_autoplace.graph.arrays import NodeRole
    from ov_autoplace.model.prepare import prepare_model
    from ov_autoplace.placement.stateful import _reach

    graph = extract_graph(prepare_model(sg.llm_like(layers=2, convert_ids=True)))
    reads = [r for r, _ in graph.variables]
    init = _reach(graph, reads, False) & (graph.role == NodeRole.COMPUTE)
    init[reads] = False
    full = init.astype(np.int64)
    if shape_of_on_0:
        full[[i for i in np.flatnonzero(init) if graph.op_types[i] == "ShapeOf"]] = 0
    return graph, full, reads


@pytest.mark.parametrize("shape_of_on_0", [False, True])
def test_rule_2_sees_each_devices_copy_of_the_shared_initializer(shape_of_on_0):
    """``Placement.apply`` gives device 0 its own copy of the initializer on device 1: the ReadValues on 0 read that
    copy, which reads the ids (the whole chain is copied, the ShapeOf too when it is already on 0), so HETERO's
    parts join them as the graph without copies does not show."""
    from ov_autoplace.placement.stateful import with_initializer_copies

    graph, full, reads = _initializer_placed_on_1(shape_of_on_0)
    copied = with_initializer_copies(graph, full)
    edges = set(zip(copied.edge_src.tolist(), copied.edge_dst.tolist()))
    ids = graph.names.index("input_ids")
    assert all((ids, r) in edges for r in reads)
    assert not any(full[s] != full[d] for s, d in edges if s in set(np.flatnonzero(full == 1)))
    assert np.all(np.diff(copied.edge_dst) >= 0)  # still listed by destination, as extracted
    assert with_initializer_copies(graph, np.zeros(graph.num_nodes, np.int64)) is graph


def test_a_parameter_read_on_both_devices_goes_where_hetero_cuts_the_fewest_parts(f32_testbed):
    """``x`` feeds layer 0's projection on the second device and, on the CPU, the ShapeOf every initializer reads,
    which leads to the layer the projection returns to. HETERO joins a Parameter with its readers on its own device,
    and cuts the cycle through it node by node: with ``x`` on the CPU, 8 submodels (its variables from their
    Assigns). ``Placement.apply`` moves ``x`` to the second device, where nothing comes back to it, and HETERO
    compiles two submodels, running as the plain compile."""
    from ov_autoplace.placement.assignment import Placement

    model = stateful_layers(layers=3, head=True)
    names = [op.get_friendly_name() for op in model.get_ops()]
    placement = Placement({n: "CPUF" if n == "proj0" else "CPU" for n in names}, DEVICES, "test", frozenset(), 2)

    def compiled(x_on: str | None):
        clone = model.clone()
        placement.apply(clone)
        x = next(p for p in clone.get_parameters() if p.get_friendly_name() == "x")
        assert x.get_rt_info()["affinity"].astype(str) == "CPUF"
        if x_on:
            x.get_rt_info()["affinity"] = x_on
        return f32_testbed.core.compile_model(clone, "HETERO:CPU,CPUF")

    assert compiled("CPU").get_property("HETERO_NUMBER_OF_SUBMODELS") == 8  # the fact the rule keeps away from
    split = compiled(None)
    assert split.get_property("HETERO_NUMBER_OF_SUBMODELS") == 2
    for got, want in zip(_generate(split), _generate(f32_testbed.core.compile_model(model, "CPU"))):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_parameter_read_on_two_devices_goes_where_hetero_cuts_the_fewest_parts_and_stays_on_a_tie(f32_testbed):
    """``p`` is read by ``a`` on device 0 and ``b`` on device 1, and both lead to ``z`` on device 0: with ``p`` on 0,
    ``b`` returns into the part ``p`` joins there, and HETERO cuts three parts; on 1 it cuts two, and ``p`` goes
    there. With ``w = a * b`` on device 1 as well, either device gives three: ``p`` stays. The counts are HETERO's
    own, compiled."""
    import openvino as ov
    from openvino import opset13 as ops
    from ov_autoplace.placement.submodels import move_parameters_to_fewest_parts

    def graph_and_devices(both_ways: bool):
        p = ops.parameter([2, 4], np.float32, name="p")
        a, b = ops.relu(p), ops.tanh(p)
        z, w = ops.add(a, b), ops.multiply(a, b)
        for node, name in ((a, "a"), (b, "b"), (z, "z"), (w, "w")):
            node.set_friendly_name(name)
        model = ov.Model([z, w] if both_ways else [z], [p])
        graph = extract_graph(model)
        return model, graph, np.array([int(n in ("b", "w")) for n in graph.names])

    def hetero_parts(model, graph, device) -> int:
        for op in model.get_ops():
            op.get_rt_info()["affinity"] = DEVICES[int(device[graph.names.index(op.get_friendly_name())])]
        return f32_testbed.core.compile_model(model, "HETERO:CPU,CPUF").get_property("HETERO_NUMBER_OF_SUBMODELS")

    model, graph, device = graph_and_devices(False)
    before = hetero_parts(model, graph, device)
    assert move_parameters_to_fewest_parts(graph, device) == 1 and device[graph.names.index("p")] == 1
    assert (before, hetero_parts(model, graph, device)) == (3, 2)
    model, graph, device = graph_and_devices(True)
    assert move_parameters_to_fewest_parts(graph, device) == 0 and device[graph.names.index("p")] == 0
    device[graph.names.index("p")] = 1
    assert hetero_parts(model, graph, device) == 3  # the tie: as many parts on the other device


def _shape_value_split(testbed, on_second: set[str], *, dynamic: bool = True, max_submodels: int | None = None):
    """``shape_value_layers`` placed on its static clone (graph carrying the dynamic one, as every decision path's
    does) with ``on_second`` proposed on CPUF, legalised."""
    from ov_autoplace.model.prepare import placement_graph, prepare_model
    from ov_autoplace.model.shapes import resolve_shapes, static_clone

    model = sg.shape_value_layers()
    clone = prepare_model(static_clone(model, resolve_shapes(model, None)))
    graph = placement_graph(clone, model if dynamic else None)
    support = query_support(testbed.core, clone, graph, DEVICES)
    proposal = np.array([1 if name in on_second else 0 for name in graph.names])
    return model, graph, legalize(graph, proposal, DEVICES, support, max_submodels=max_submodels)


#: Layer 1 on CPUF, then layer 2's Reshape back on CPU and its residual Add and the head on CPUF: CPU computes the
#: shared Reshape target before the way out and reads it again after it.
_REENTERED = {f"layer1/{n}" for n in ("flat", "mm", "act", "back", "out")} | {"layer2/out", "head"}


def test_a_shape_value_read_after_a_way_out_of_its_device_and_back_is_a_split_that_runs(f32_testbed):
    """Without state rule 4 did not apply, so CPU held two submodels and the target crossed between them as a
    Parameter of unknown value: layer 2's Reshape turned ``[?,?,?]``, HETERO made the tensor it hands on with that
    empty shape and the next submodel's ``[?,?,32]`` input refused it (optimum-intel's legacy OPT export: 33 of 119
    random splits). Judged on the dynamic graph, the split runs as the plain compile at two shapes: the way out
    comes back to CPU, or what follows it goes out to CPUF, a chain either way."""
    import ov_autoplace
    from ov_autoplace.errors import DynamicSplitError

    model, graph, placement = _shape_value_split(f32_testbed, _REENTERED)
    assert graph.dynamic is not None
    assert any("shape value" in note for note in placement.notes), placement.notes
    assert placement.num_submodels == 2 and placement.assignment["head"] == "CPUF"  # a chain: CPU, then CPUF
    compiled = ov_autoplace.compile_placement(model, placement, core=f32_testbed.core)
    plain = f32_testbed.core.compile_model(model, "CPU")
    for shape in ((1, 5), (2, 3)):
        ids = np.random.default_rng(1).integers(0, 16, shape)
        np.testing.assert_allclose(compiled(ids)[0], plain(ids)[0], rtol=1e-5, atol=1e-5)
    _, _, blind = _shape_value_split(f32_testbed, _REENTERED, dynamic=False)  # the clone alone: the rule unseen
    assert blind.assignment["layer1/mm"] == "CPUF"
    with pytest.raises(DynamicSplitError, match="Can't set the input tensor"):
        ov_autoplace.compile_placement(model, blind, core=f32_testbed.core)


def test_the_shape_value_rule_leaves_a_chain_and_keeps_the_bound(f32_testbed):
    """The last layer and the head on CPUF is a chain (CPU is not entered again): nothing moves. A proposal that
    alternates every layer is brought within the bound of 2 however the rule's moves leave the parts."""
    _, _, chain = _shape_value_split(f32_testbed, {f"layer2/{n}" for n in ("flat", "mm", "act", "back", "out")}
                                     | {"head"})
    assert not any("shape value" in note for note in chain.notes) and chain.num_submodels == 2
    alternating = {f"layer{k}/{n}" for k in (0, 2) for n in ("mm", "act")} | {"layer1/out"}
    _, graph, bounded = _shape_value_split(f32_testbed, alternating, max_submodels=2)
    assert bounded.num_submodels <= 2


def test_a_one_device_placement_is_not_judged_under_rule_4(f32_testbed, monkeypatch):
    """No path leaves a device that holds everything: the legalizer does not walk rule 4 for such a placement (the
    walk doubled a one-device legalize of a dynamic model's clone), while a split is still judged."""
    from ov_autoplace.placement import legalizer

    judged = []
    monkeypatch.setattr(legalizer, "keep_shape_values_whole", lambda *a: judged.append("shape") or 0)
    monkeypatch.setattr(legalizer, "keep_state_devices_whole", lambda *a: judged.append("state") or (0, True))
    _, graph, one = _shape_value_split(f32_testbed, set())
    assert graph.dynamic is not None and one.num_submodels == 1 and not judged
    _shape_value_split(f32_testbed, _REENTERED)
    assert judged == ["shape"]
    model = stateful_layers()
    graph = extract_graph(model)
    support = query_support(f32_testbed.core, model, graph, DEVICES)
    legalize(graph, np.zeros(graph.num_nodes, np.int64), DEVICES, support)
    assert judged == ["shape"]
    legalize(graph, np.arange(graph.num_nodes) * 2 // graph.num_nodes, DEVICES, support)
    assert judged == ["shape", "state"]


def test_a_request_for_a_dynamic_model_that_computes_shapes_carries_its_dynamic_graph(f32_testbed, monkeypatch):
    """Whether the request judges on its dynamic graph (a walk over the model's ops) is decided, and that graph
    extracted, once per request, however often a path asks for it."""
    from ov_autoplace.call_request import build_request
    from ov_autoplace.decision import request
    from ov_autoplace.model.prepare import prepare_model

    asked = []
    monkeypatch.setattr(request, "computes_shapes", lambda model: asked.append(model) or True)
    req = build_request(sg.shape_value_layers(), f32_testbed.hetero, core=f32_testbed.core)
    assert req.placement_model is not req.model
    graph = req.placement_graph(prepare_model(req.placement_model))
    assert graph.dynamic is not None and not graph.variables
    again = req.placement_graph(prepare_model(req.placement_model))
    assert again.dynamic is graph.dynamic and len(asked) == 1
