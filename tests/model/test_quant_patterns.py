"""Quantization patterns: int8 weights survive preparation, FakeQuantize stays with the op it feeds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ov_autoplace as oa
from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.placement.legalizer import Pin, constant_subgraph_mask, legalize, query_support
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.quant_patterns import quantization_groups, quantized_weights_hidden
from tests.quantized_graphs import conv_precisions, int8_convnet

INT8 = {"u8", "i8"}


@pytest.fixture(scope="module")
def int8(f32_testbed):
    model = int8_convnet()
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    support = query_support(f32_testbed.core, prepared, graph, f32_testbed.devices)
    return model, prepared, graph, support


def test_each_fake_quantize_is_grouped_with_its_convolution(int8):
    _, _, graph, _ = int8
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    groups = [{graph.names[i] for i in g} for g in quantization_groups(graph, active)]
    for b in range(4):
        assert any({f"fq{b}", f"conv{b}"} <= g for g in groups), groups


def test_preparation_keeps_int8_weights(f32_testbed, int8):
    model, prepared, _, _ = int8
    types = {op.get_type_name() for op in prepared.get_ops()}
    assert {"Convert", "Subtract", "Multiply"} <= types  # the dequantization subgraph was not folded to f32
    assert len(prepared.get_parameters()) == len(model.get_parameters())  # placeholders were removed again
    precisions = conv_precisions(f32_testbed.core.compile_model(prepared, "CPU"))
    assert len(precisions) == 4 and set(precisions.values()) <= INT8, precisions


def test_hidden_weights_are_restored_even_on_error(int8):
    _, prepared, _, _ = int8
    model = prepared.clone()
    before = sorted(op.get_friendly_name() for op in model.get_ops())
    with pytest.raises(RuntimeError, match="boom"):
        with quantized_weights_hidden(model) as count:
            assert count == 4
            raise RuntimeError("boom")
    assert sorted(op.get_friendly_name() for op in model.get_ops()) == before


def _split_fake_quantize_from_its_conv(graph):
    """The worst split: every FakeQuantize on device 0, everything else on device 1."""
    return np.array([0 if t == "FakeQuantize" else 1 for t in graph.op_types], dtype=np.int64)


def test_forced_split_keeps_int8_after_legalization(f32_testbed, int8):
    model, _, graph, support = int8
    legal = legalize(graph, _split_fake_quantize_from_its_conv(graph), f32_testbed.devices, support)
    assert any("quantization patterns" in note for note in legal.notes)
    for b in range(4):
        assert legal.assignment[f"fq{b}"] == legal.assignment[f"conv{b}"]
    compiled = oa.compile_placement(model, legal, core=f32_testbed.core)
    precisions = conv_precisions(compiled)
    assert len(precisions) == 4 and set(precisions.values()) <= INT8, precisions
    # Control: the same split with each FakeQuantize moved away again loses int8 (so the check above can fail).
    raw = dict(legal.assignment)
    raw.update({n: "CPU" for n, t in zip(graph.names, graph.op_types) if t == "FakeQuantize"})
    split = prepare_model(model)
    dataclasses.replace(legal, assignment=raw).apply(split)
    lost = conv_precisions(f32_testbed.core.compile_model(split, f32_testbed.hetero))
    assert "f32" in lost.values(), lost


def test_random_placements_keep_int8(f32_testbed, int8):
    model, _, graph, support = int8
    rng = np.random.default_rng(1)
    for _ in range(6):
        legal = legalize(graph, rng.integers(0, 2, graph.num_nodes), f32_testbed.devices, support)
        precisions = conv_precisions(oa.compile_placement(model, legal, core=f32_testbed.core))
        assert set(precisions.values()) <= INT8, (legal.counts_per_device(), precisions)


def test_pin_wins_over_the_group(f32_testbed, int8):
    _, _, graph, support = int8
    proposal = np.zeros(graph.num_nodes, dtype=np.int64)
    legal = legalize(graph, proposal, f32_testbed.devices, support, pins=[Pin("CPUF", name="fq1")])
    assert legal.assignment["fq1"] == legal.assignment["conv1"] == "CPUF"
