"""Dynamic models: placed on a static clone, compiled dynamic, outputs equal a plain compile at every shape."""

from __future__ import annotations

import json
import logging

import numpy as np
import openvino as ov
import pytest

import ov_autoplace as oa
from ov_autoplace.placement.dynamic_model import transfer_placement
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg

#: (batch, seq) at which every dynamic compile is checked; none of them is the placement shape.
SHAPES = [(1, 5), (4, 7), (2, 300)]


def _check_outputs(compiled: ov.CompiledModel, reference: ov.CompiledModel) -> None:
    rng = np.random.default_rng(0)
    for batch, seq in SHAPES:
        x = rng.standard_normal((batch, seq, 32)).astype(np.float32)
        got, want = compiled(x)[0], reference(x)[0]
        assert got.shape == (batch, seq, 32)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-3 * float(np.abs(want).max()))


def test_split_placement_carried_over_and_model_stays_dynamic(f32_testbed, caplog):
    model = sg.dynamic_attention()
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        compiled = oa.compile_model(model, f32_testbed.hetero, core=f32_testbed.core, strategy="random", seed=3,
                                    use_cache=False)
    assert "falling back" not in caplog.text
    assert compiled.inputs[0].get_partial_shape().is_dynamic
    _check_outputs(compiled, f32_testbed.core.compile_model(model, "CPU"))


def test_place_on_static_clone_then_compile_placement(f32_testbed):
    model = sg.dynamic_attention()
    placement = oa.place(model, f32_testbed.hetero, core=f32_testbed.core, strategy="random", seed=3,
                         shapes={"x": [2, 16, 32]})
    assert set(placement.counts_per_device().values()) != {0} and min(placement.counts_per_device().values()) > 0
    compiled = oa.compile_placement(model, placement, core=f32_testbed.core)
    assert compiled.inputs[0].get_partial_shape().is_dynamic
    _check_outputs(compiled, f32_testbed.core.compile_model(model, "CPU"))


def test_transfer_keeps_named_nodes_and_places_shape_nodes_with_their_consumers(f32_testbed):
    model = sg.dynamic_attention()
    static = oa.place(model, f32_testbed.hetero, core=f32_testbed.core, strategy="random", seed=3)
    dynamic_prepared = prepare_model(model)
    moved = transfer_placement(static, dynamic_prepared, f32_testbed.core)
    only_dynamic = [op for op in dynamic_prepared.get_ordered_ops() if op.get_friendly_name() not in static.assignment]
    assert any(op.get_type_name() == "ShapeOf" for op in only_dynamic)  # the clone folded these away
    assert set(moved.assignment) == {op.get_friendly_name() for op in dynamic_prepared.get_ops()}
    shared = [n for n in static.compute_nodes if n in moved.assignment]
    same = sum(static.assignment[n] == moved.assignment[n] for n in shared)
    assert same >= 0.9 * len(shared)  # only the legalizer's anchor rules may move a few
    for op in only_dynamic:
        if op.get_type_name() == "ShapeOf":  # a shape computation sits with a consumer
            consumers = {t.get_node().get_friendly_name() for t in op.output(0).get_target_inputs()}
            assert moved.assignment[op.get_friendly_name()] in {moved.assignment[c] for c in consumers}


def test_cache_key_holds_placement_shapes(f32_testbed, tmp_path):
    model = sg.dynamic_attention()
    for shapes in ({"x": [1, 16, 32]}, {"x": [1, 16, 32]}, {"x": [2, 8, 32]}):
        oa.compile_model(model, f32_testbed.hetero, core=f32_testbed.core, strategy="heavy_ops", shapes=shapes,
                         cache_dir=tmp_path)
    entries = sorted((tmp_path / "placements").glob("placement-*.json"))
    assert len(entries) == 2  # the repeat was a hit
    keys = [json.loads(p.read_text())["key"]["placement_shapes"] for p in entries]
    assert sorted(k["x"] for k in keys) == [[1, 16, 32], [2, 8, 32]]


def test_static_model_keys_have_no_shapes_field(f32_testbed, tmp_path):
    oa.compile_model(sg.residual(), f32_testbed.hetero, core=f32_testbed.core, strategy="heavy_ops",
                     shapes=[1, 3, 16, 16], cache_dir=tmp_path)
    (entry,) = (tmp_path / "placements").glob("placement-*.json")
    assert "placement_shapes" not in json.loads(entry.read_text())["key"]


def test_default_strategy_places_dynamic_model_without_fallback(f32_testbed, caplog):
    model = sg.dynamic_attention()
    # profile="now": measure and place by the policy (identical f32 devices would otherwise take the
    # one-device fast path without placing anything).
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, f32_testbed.hetero, core=f32_testbed.core, use_cache=False, profile="now")
    assert "falling back" not in caplog.text and "placement source: profile" in caplog.text
    _check_outputs(compiled, f32_testbed.core.compile_model(model, "CPU"))


def test_device_refusing_dynamic_nodes_is_named_and_they_move(f32_testbed, caplog):
    """What a device without dynamic-shape support would report (query_model leaving ops out): named, moved."""
    from ov_autoplace.placement.dynamic_model import _warn_dynamic_unsupported
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.placement.legalizer import legalize, query_support

    prepared = prepare_model(sg.dynamic_attention())
    graph = extract_graph(prepared)
    support = query_support(f32_testbed.core, prepared, graph, f32_testbed.devices).copy()
    refused = [i for i, t in enumerate(graph.op_types) if t in ("ShapeOf", "Gather")]
    support[refused, 1] = False  # as if CPUF ran static shapes only
    proposal = np.ones(graph.num_nodes, dtype=np.int64)
    placement = legalize(graph, proposal, f32_testbed.devices, support)
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        _warn_dynamic_unsupported(graph, proposal, support, f32_testbed.devices, placement)
    assert f"CPUF cannot run {len(refused)} node(s) with dynamic shapes" in caplog.text
    assert "they run on {'CPU': %d} instead" % len(refused) in caplog.text
    assert all(placement.assignment[graph.names[i]] == "CPU" for i in refused)

