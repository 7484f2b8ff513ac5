"""Placement shapes: benchmark_app's syntax, the documented default, and clear errors for shapes that do not fit."""

from __future__ import annotations

import logging

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

import ov_autoplace as oa
from ov_autoplace.model.shapes import DEFAULT_BATCH, DEFAULT_DIM, format_shapes, resolve_shapes, static_clone
from tests import synthetic_graphs as sg


def _two_inputs() -> ov.Model:
    ids = ops.parameter(ov.PartialShape([-1, -1]), np.int64, name="input_ids")
    mask = ops.parameter(ov.PartialShape([-1, -1]), np.int64, name="attention_mask")
    return ov.Model([ops.add(ids, mask)], [ids, mask], "two_inputs")


def test_static_model_needs_no_shapes():
    model = sg.residual()
    assert resolve_shapes(model, None) is None
    assert resolve_shapes(model, [1, 3, 16, 16]) == {"input": [1, 3, 16, 16]}


def test_default_batch_one_and_other_axes_clamped_into_bounds():
    assert resolve_shapes(sg.dynamic_attention(), None) == {"x": [DEFAULT_BATCH, DEFAULT_DIM, 32]}
    assert resolve_shapes(sg.dynamic_attention(max_seq=8), None) == {"x": [DEFAULT_BATCH, 8, 32]}
    assert resolve_shapes(_two_inputs(), None) == {"input_ids": [1, DEFAULT_DIM], "attention_mask": [1, DEFAULT_DIM]}


@pytest.mark.parametrize("given", [
    "input_ids[2,16],attention_mask[2,16]",
    " input_ids [2, 16] , attention_mask[2,16] ",
    {"input_ids": [2, 16], "attention_mask": (2, 16)},
])
def test_benchmark_app_string_and_mapping_agree(given):
    resolved = resolve_shapes(_two_inputs(), given)
    assert resolved == {"input_ids": [2, 16], "attention_mask": [2, 16]}
    assert format_shapes(resolved) == "input_ids[2,16],attention_mask[2,16]"


def test_one_unnamed_shape_for_a_one_input_model():
    assert resolve_shapes(sg.dynamic_attention(), "[4,10,32]") == {"x": [4, 10, 32]}
    assert resolve_shapes(sg.dynamic_attention(), [4, 10, 32]) == {"x": [4, 10, 32]}


@pytest.mark.parametrize("model, shapes, match", [
    (sg.dynamic_attention, {"y": [1, 8, 32]}, r"input 'y', which the model does not have; its inputs are \['x'\]"),
    (sg.dynamic_attention, {"x": [1, 8]}, r"\[1, 8\] for input 'x' has rank 2, but the input is \[\?,\?,32\]"),
    (sg.dynamic_attention, {"x": [1, 8, 16]}, r"axis 2 is 16, but the input is \[\?,\?,32\] \(axis 2 accepts 32\)"),
    (lambda: sg.dynamic_attention(max_seq=8), "x[1,9,32]", r"axis 1 is 9.*accepts 1\.\.8"),
    (sg.dynamic_attention, {"x": [0, 8, 32]}, r"dimension < 1"),
    (sg.dynamic_attention, {"x": [1, "8", 32]}, r"must be a list of ints, got \[1, '8', 32\]"),
    (sg.dynamic_attention, "x[1,a,32]", r"non-integer dimension"),
    (sg.dynamic_attention, "x(1,8,32)", r"cannot parse shapes 'x\(1,8,32\)'"),
    (_two_inputs, {"input_ids": [1, 8]}, r"no shape for the dynamic input\(s\) \['attention_mask'\]"),
    (_two_inputs, [1, 8], r"one shape but the model has 2 inputs"),
    (sg.residual, [1, 3, 32, 32], r"axis 2 is 32, but the input is \[1,3,16,16\]"),
])
def test_shapes_that_do_not_fit_raise_shape_error_naming_the_value(model, shapes, match):
    with pytest.raises(oa.ShapeError, match=match) as err:
        resolve_shapes(model(), shapes)
    assert isinstance(err.value, oa.PlacementError) and isinstance(err.value, ValueError)


def test_dynamic_rank_needs_explicit_shapes():
    x = ops.parameter(ov.PartialShape.dynamic(), np.float32, name="blob")
    model = ov.Model([ops.relu(x)], [x], "dynamic_rank")
    with pytest.raises(oa.ShapeError, match=r"input 'blob' has a dynamic rank.*shapes=\{'blob'"):
        resolve_shapes(model, None)
    assert resolve_shapes(model, {"blob": [2, 3]}) == {"blob": [2, 3]}


def test_shape_inference_failure_is_a_shape_error():
    # Each axis fits the input on its own, but the model's own Reshape cannot take it (3 * 5 != 4 * 4).
    x = ops.parameter(ov.PartialShape([-1, -1]), np.float32, name="x")
    model = ov.Model([ops.reshape(x, ops.constant(np.array([4, 4], dtype=np.int64)), False)], [x], "fixed_numel")
    with pytest.raises(oa.ShapeError, match=r"cannot be reshaped to the placement shapes x\[3,5\]"):
        static_clone(model, resolve_shapes(model, [3, 5]))


def test_static_clone_leaves_the_model_dynamic():
    model = sg.dynamic_attention()
    clone = static_clone(model, {"x": [2, 8, 32]})
    assert clone.inputs[0].get_partial_shape() == ov.PartialShape([2, 8, 32])
    assert model.inputs[0].get_partial_shape().is_dynamic


def test_compile_model_raises_bad_shapes_without_fallback(f32_testbed, caplog):
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        with pytest.raises(oa.ShapeError, match="axis 2 is 16"):
            oa.compile_model(sg.dynamic_attention(), f32_testbed.hetero, core=f32_testbed.core,
                             strategy="heavy_ops", shapes={"x": [1, 8, 16]}, use_cache=False)
        with pytest.raises(oa.ShapeError, match="cannot be reshaped"):
            oa.place(_fixed_numel(), f32_testbed.hetero, core=f32_testbed.core, shapes=[3, 5])
    assert "falling back" not in caplog.text


def _fixed_numel() -> ov.Model:
    x = ops.parameter(ov.PartialShape([-1, -1]), np.float32, name="x")
    return ov.Model([ops.relu(ops.reshape(x, ops.constant(np.array([4, 4], dtype=np.int64)), False))], [x], "fixed")


def _position_table(rows: int) -> ov.Model:
    """A dynamic model whose axis 1 must broadcast against a ``rows``-long table (a short position table)."""
    x = ops.parameter([-1, -1, 8], ov.Type.f32, name="x")
    return ov.Model([ops.multiply(ops.add(x, ops.constant(np.ones((1, rows, 8), np.float32))), x)], [x], "table")


def _multiple_of_three() -> ov.Model:
    """A dynamic model that takes axis 1 only in multiples of 3: none of the halved defaults (128, 64, ..., 1)."""
    x = ops.parameter([-1, -1, 8], ov.Type.f32, name="x")
    return ov.Model([ops.reshape(x, ops.constant(np.array([-1, 24], np.int64)), False)], [x], "threes")


def test_a_model_that_rejects_the_default_is_placed_at_a_halved_one():
    from ov_autoplace.model.shapes import default_static_clone

    shapes, clone = default_static_clone(_position_table(32))
    assert shapes == {"x": [DEFAULT_BATCH, 32, 8]} and clone.inputs[0].partial_shape.is_static
    with pytest.raises(oa.ShapeError, match=r"tried \d+ default shapes, down to x\[1,1,8\]"):
        default_static_clone(_multiple_of_three())


def test_placement_clone_is_the_one_choice_of_what_is_placed():
    """``placement_clone``: what compile_model, place, save_model and the CLI's profile each place (one function, so
    a profile is keyed by the shapes the next start places at): a static model as it is; the caller's shapes (a
    model that rejects them raises); else the halved default the model accepts; none: unplaced, with the reason."""
    from ov_autoplace.model.shapes import placement_clone

    static = ov.Model([ops.relu(x := ops.parameter([1, 8], ov.Type.f32, name="x"))], [x], "static")
    assert placement_clone(static, None) == (None, static, "")
    table = _position_table(32)
    shapes, clone, why = placement_clone(table, None, prompt_tokens=64)
    assert shapes == {"x": [DEFAULT_BATCH, 32, 8]} and clone.inputs[0].partial_shape.is_static and not why
    assert placement_clone(table, {"x": [2, 32, 8]})[0] == {"x": [2, 32, 8]}
    with pytest.raises(oa.ShapeError):
        placement_clone(table, {"x": [1, 64, 8]})  # the caller's shapes: a model that rejects them is their mistake
    free = ov.Model([ops.relu(y := ops.parameter([-1, -1, 8], ov.Type.f32, name="y"))], [y], "free")
    assert placement_clone(free, None, prompt_tokens=8)[0] == {"y": [DEFAULT_BATCH, 8, 8]}  # a decoder's prefill
    assert placement_clone(free, None)[0] == {"y": [DEFAULT_BATCH, DEFAULT_DIM, 8]}
    threes = _multiple_of_three()
    shapes, model, why = placement_clone(threes, None)
    assert shapes is None and model is threes and "no default placement shape fits" in why and "shapes=" in why


def test_no_default_fitting_compiles_unplaced_with_a_warning_and_place_asks_for_shapes(f32_testbed, caplog):
    """The default placement shapes are ov_autoplace's guess: a model that takes none of them is not the caller's
    mistake, so compile_model compiles it as OpenVINO would (WARNING naming shapes=); place() needs shapes."""
    model = _multiple_of_three()
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        compiled = oa.compile_model(model, f32_testbed.hetero, core=f32_testbed.core)
    assert "no default placement shape fits" in caplog.text and "shapes=" in caplog.text
    x = np.ones((2, 3, 8), np.float32)
    np.testing.assert_array_equal(compiled({"x": x})[0], x.reshape(-1, 24))
    with pytest.raises(oa.ShapeError, match="no default placement shape fits"):
        oa.place(model, f32_testbed.hetero, core=f32_testbed.core)
    placed = oa.place(model, f32_testbed.hetero, core=f32_testbed.core, shapes={"x": [1, 3, 8]})
    assert set(placed.assignment.values()) <= set(f32_testbed.devices)


def test_one_device_compiles_a_dynamic_model_without_a_static_clone(f32_testbed, caplog):
    """Not a placement: OpenVINO compiles the caller's model itself, whatever default shapes would have been."""
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        compiled = oa.compile_model(_multiple_of_three(), "CPU", core=f32_testbed.core)
    assert not caplog.records and compiled.inputs[0].partial_shape.is_dynamic
