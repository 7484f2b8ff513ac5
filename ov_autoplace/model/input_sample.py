"""A user's input sample (``inputs=``): what the measuring paths feed the model where a convention cannot guess.

The rest of this overview: docs/architecture.md, "Module notes".
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import openvino as ov

from ov_autoplace.errors import ShapeError
from ov_autoplace.model.shapes import input_name


def sample_shapes(model: ov.Model, sample: Mapping[str, np.ndarray]) -> dict[str, list[int]]:
    """The placement shapes a checked sample implies: its arrays' shapes, and for an LLM input it leaves out
    (dynamic in the model) the shape the conventions give it beside the sample's ``input_ids`` ``[batch, n]``:
    ``attention_mask`` and ``position_ids`` ``[batch, n]`` (a prefill), ``beam_idx`` ``[batch]``."""
    shapes = {name: list(array.shape) for name, array in sample.items()}
    ids = shapes.get("input_ids")
    if ids is not None and len(ids) == 2:
        implied = {"attention_mask": list(ids), "position_ids": list(ids), "beam_idx": [ids[0]]}
        for port in model.inputs:
            name = input_name(port)
            if name in implied and name not in shapes and port.get_partial_shape().is_dynamic:
                shapes[name] = implied[name]
    return shapes


def _vocabulary(model: ov.Model) -> int | None:
    for port in model.outputs:
        if "logits" in port.get_names():
            shape = port.get_partial_shape()
            if shape.rank.is_static and shape[-1].is_static:
                return int(shape[-1].get_length())
    return None


def check_input_sample(model: ov.Model, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The sample as arrays of the model's dtypes, keyed by input name; ShapeError for anything the model rejects."""
    if not isinstance(inputs, Mapping) or not all(isinstance(k, str) for k in inputs):
        raise ShapeError(f"inputs= must map input names to arrays (e.g. {{'input_ids': ids}}), got "
                         f"{type(inputs).__name__}")
    ports = {input_name(p): p for p in model.inputs}
    by_alias = {n: input_name(p) for p in model.inputs for n in p.get_names()}
    sample: dict[str, np.ndarray] = {}
    for name, value in inputs.items():
        if name not in by_alias:
            raise ShapeError(f"inputs= names {name!r}, which is not an input of the model; its inputs are "
                             f"{sorted(ports)}")
        port = ports[by_alias[name]]
        array = np.asarray(value)
        dtype = port.get_element_type().to_dtype()
        if array.dtype != dtype and not np.can_cast(array.dtype, dtype, casting="same_kind"):
            raise ShapeError(f"inputs= gives {name!r} as {array.dtype}; the model takes {dtype} "
                             f"({port.get_element_type().get_type_name()}): pass an array of that type")
        if not port.get_partial_shape().compatible(ov.PartialShape(list(array.shape))):
            raise ShapeError(f"inputs= gives {name!r} the shape {list(array.shape)}; the model takes "
                             f"{port.get_partial_shape()}")
        sample[by_alias[name]] = np.ascontiguousarray(array.astype(dtype, copy=False))
    _check_llm_rules(model, sample)
    return sample


def _check_llm_rules(model: ov.Model, sample: Mapping[str, np.ndarray]) -> None:
    """The values a stateful decoder rejects at run time, caught before the compile (docs/llm.md)."""
    beam = sample.get("beam_idx")
    batch = next((int(sample[n].shape[0]) for n in ("input_ids", "attention_mask") if n in sample
                  and sample[n].ndim), None)
    if beam is not None and batch is not None and beam.size and (beam.min() < 0 or beam.max() >= batch):
        raise ShapeError(f"inputs= gives beam_idx values {beam.tolist()[:8]}; the LLM rule: beam_idx picks rows "
                         f"of the batch, each in [0, {batch}) (a prefill feeds np.arange({batch}))")
    ids, vocabulary = sample.get("input_ids"), _vocabulary(model)
    if ids is not None and vocabulary is not None and ids.size and (ids.min() < 0 or ids.max() >= vocabulary):
        raise ShapeError(f"inputs= gives input_ids from {int(ids.min())} to {int(ids.max())}; the LLM rule: token "
                         f"ids lie within the vocabulary, [0, {vocabulary}) (the logits' last dimension)")
    mask, positions = sample.get("attention_mask"), sample.get("position_ids")
    if ids is not None and mask is not None and mask.ndim == 2 and ids.ndim == 2 and mask.shape[1] < ids.shape[1]:
        raise ShapeError(f"inputs= gives attention_mask {list(mask.shape)} for input_ids {list(ids.shape)}; the LLM "
                         "rule: the mask covers the past and the new tokens, so it is at least as long as input_ids")
    if positions is not None and ids is not None and positions.shape[-1:] != ids.shape[-1:]:
        raise ShapeError(f"inputs= gives position_ids {list(positions.shape)} for input_ids {list(ids.shape)}; the "
                         "LLM rule: one position per new token")


__all__ = ["check_input_sample", "sample_shapes"]
