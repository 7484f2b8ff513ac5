"""Placement shapes for models with dynamic dimensions.

How and why, in full: docs/dynamic-shapes.md, "Module notes", ov_autoplace/model/shapes.py.
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence, Union

import openvino as ov

from ov_autoplace.errors import ShapeError
from ov_autoplace.model.prepare import name_new_constants

#: A dynamic axis 0 (the batch in almost every model) is placed at this size.
DEFAULT_BATCH = 1
#: Any other dynamic axis (sequence length, image side, ...) is placed at this size, clamped into its bounds.
DEFAULT_DIM = 128

ShapesLike = Union[Mapping[str, Sequence[int]], Sequence[int], str, None]
#: The resolved placement shapes: input name -> static dims, for every input of the model.
PlacementShapes = dict[str, list[int]]

_ENTRY = re.compile(r"\s*([^\[\],]*?)\s*\[([^\]]*)\]\s*(?:,|$)")


def is_dynamic(model: ov.Model) -> bool:
    """Whether any input of ``model`` has a dynamic dimension or rank."""
    return any(port.get_partial_shape().is_dynamic for port in model.inputs)


def input_name(port: ov.Output) -> str:
    """The name ``shapes=`` uses for an input: its first tensor name, else its Parameter's friendly name."""
    names = port.get_names()
    return port.get_any_name() if names else port.get_node().get_friendly_name()


def _parse_text(text: str) -> dict[str, list[int]] | list[int]:
    """``"a[1,3],b[2]"`` -> {a: [1,3], b: [2]}; ``"[1,3]"`` -> [1, 3] (benchmark_app's syntax)."""
    entries, pos = {}, 0
    unnamed: list[int] | None = None
    while pos < len(text):
        match = _ENTRY.match(text, pos)
        if match is None or match.end() == pos:
            raise ShapeError(f"cannot parse shapes {text!r}: expected 'name[d0,d1,...],...' or '[d0,d1,...]' "
                             f"(benchmark_app's -shape syntax), e.g. 'input_ids[1,128],attention_mask[1,128]'")
        name, dims_text = match.group(1), match.group(2)
        try:
            dims = [int(d) for d in dims_text.replace(" ", "").split(",") if d != ""]
        except ValueError:
            raise ShapeError(f"shape [{dims_text}] in {text!r} has a non-integer dimension; "
                             "placement shapes are static, e.g. [1,128]") from None
        if name:
            entries[name] = dims
        else:
            unnamed = dims
        pos = match.end()
    if unnamed is not None:
        if entries:
            raise ShapeError(f"shapes {text!r} mixes named and unnamed shapes; name every input or give one shape")
        return unnamed
    return entries


def _as_mapping(shapes: ShapesLike, ports: Sequence[ov.Output]) -> dict[str, list[int]]:
    if isinstance(shapes, str):
        shapes = _parse_text(shapes)
    if isinstance(shapes, Mapping):
        return {str(k): v for k, v in shapes.items()}
    if isinstance(shapes, Sequence) and all(isinstance(d, int) for d in shapes):
        if len(ports) != 1:
            raise ShapeError(f"shapes={list(shapes)} is one shape but the model has {len(ports)} inputs "
                             f"{[input_name(p) for p in ports]}; give a mapping input name -> shape")
        return {input_name(ports[0]): list(shapes)}
    raise ShapeError(f"shapes must map input names to static shapes (e.g. {{'x': [1, 3, 224, 224]}}), be one "
                     f"shape for a one-input model, or a benchmark_app string 'x[1,3,224,224]'; got {shapes!r}")


def _port_for(name: str, ports: Sequence[ov.Output]) -> ov.Output | None:
    for port in ports:
        if name in port.get_names() or name == port.get_node().get_friendly_name():
            return port
    return None


def _check_fits(name: str, dims: object, pshape: ov.PartialShape) -> list[int]:
    if not isinstance(dims, Sequence) or isinstance(dims, str) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise ShapeError(f"shape for input {name!r} must be a list of ints, got {dims!r}")
    dims = list(dims)
    if pshape.rank.is_static and len(dims) != pshape.rank.get_length():
        raise ShapeError(f"shape {dims} for input {name!r} has rank {len(dims)}, but the input is {pshape} "
                         f"(rank {pshape.rank.get_length()})")
    if any(d < 1 for d in dims):
        raise ShapeError(f"shape {dims} for input {name!r} has a dimension < 1; placement shapes are static "
                         f"and positive (the input is {pshape})")
    if pshape.rank.is_static:
        for axis, (dim, value) in enumerate(zip(pshape, dims)):
            if not dim.compatible(ov.Dimension(value)):
                raise ShapeError(f"shape {dims} for input {name!r} does not fit the model: axis {axis} is {value}, "
                                 f"but the input is {pshape} (axis {axis} accepts {dim})")
    return dims


def default_dims(pshape: ov.PartialShape, name: str, dim_default: int = DEFAULT_DIM) -> list[int]:
    """The documented default for one input: :data:`DEFAULT_BATCH` / ``dim_default``, clamped into bounds."""
    if pshape.rank.is_dynamic:
        raise ShapeError(f"input {name!r} has a dynamic rank ({pshape}); pass shapes={{{name!r}: [...]}} "
                         f"(or --shape '{name}[...]') to say which shape to place for")
    dims = []
    for axis, dim in enumerate(pshape):
        if dim.is_static:
            dims.append(dim.get_length())
            continue
        wanted = DEFAULT_BATCH if axis == 0 else dim_default
        low = max(1, dim.get_min_length())
        high = dim.get_max_length()  # -1 when unbounded
        dims.append(max(low, wanted if high < 0 else min(wanted, high)))
    return dims


def resolve_shapes(model: ov.Model, shapes: ShapesLike) -> PlacementShapes | None:
    """The placement shape of every input, or None for a static model given no ``shapes``.

    Raises ShapeError if ``shapes`` names an input the model does not have,
    misses a dynamic input, or gives a shape the input cannot take.
    """
    ports = list(model.inputs)
    if shapes is None:
        if not is_dynamic(model):
            return None
        return {input_name(p): default_dims(p.get_partial_shape(), input_name(p)) for p in ports}
    given = _as_mapping(shapes, ports)
    resolved: PlacementShapes = {}
    for name, dims in given.items():
        port = _port_for(name, ports)
        if port is None:
            raise ShapeError(f"shapes names input {name!r}, which the model does not have; its inputs are "
                             f"{[input_name(p) for p in ports]}")
        resolved[input_name(port)] = _check_fits(name, dims, port.get_partial_shape())
    missing = [input_name(p) for p in ports if input_name(p) not in resolved and p.get_partial_shape().is_dynamic]
    if missing:
        raise ShapeError(f"shapes gives no shape for the dynamic input(s) {missing}; give one for every dynamic "
                         f"input (given: {sorted(resolved)})")
    for port in ports:  # static inputs keep their own shape
        if input_name(port) not in resolved:
            resolved[input_name(port)] = [int(d) for d in port.get_partial_shape().to_shape()]
    return resolved


def static_clone(model: ov.Model, shapes: PlacementShapes) -> ov.Model:
    """A clone of ``model`` reshaped to ``shapes`` (``model`` itself keeps its dynamic shapes)."""
    clone = model.clone()
    by_index = {i: ov.PartialShape(shapes[input_name(port)]) for i, port in enumerate(clone.inputs)}
    try:
        clone.reshape(by_index)
    except Exception as exc:  # OpenVINO reports a failed shape inference as a RuntimeError with a long trace
        first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise ShapeError(f"the model cannot be reshaped to the placement shapes {format_shapes(shapes)}: {first}; "
                         "give shapes the model accepts (shapes= / --shape)") from exc
    name_new_constants(clone, {op.get_friendly_name() for op in model.get_ops()})  # the same names every time
    return clone


def default_static_clone(model: ov.Model, dim: int = DEFAULT_DIM) -> tuple[PlacementShapes, ov.Model]:
    """The default placement shapes that ``model`` accepts, and its static clone at them.

    The defaults (:func:`default_dims`, ``dim`` on non-batch axes: a decoder's prompt length) first; a model that rejects them (a position table shorter than
    :data:`DEFAULT_DIM`, say) is tried at halved non-batch defaults down to 1. Raises ShapeError naming what was
    tried when none fits (then only ``shapes=`` can say what to place for).
    """
    ports = list(model.inputs)
    tried, dim_default, first = [], dim, None
    while True:
        shapes = {input_name(p): (default_dims(p.get_partial_shape(), input_name(p), dim_default)
                                  if p.get_partial_shape().is_dynamic else
                                  [int(d) for d in p.get_partial_shape().to_shape()]) for p in ports}
        if shapes not in tried:
            tried.append(shapes)
            try:
                return shapes, static_clone(model, shapes)
            except ShapeError as exc:
                first = first or exc
        if dim_default == 1:
            raise ShapeError(f"{first}; tried {len(tried)} default shapes, down to {format_shapes(tried[-1])}")
        dim_default //= 2


def placement_clone(model: ov.Model, shapes: ShapesLike,
                    prompt_tokens: int | None = None) -> tuple[PlacementShapes | None, ov.Model, str]:
    """The model ``compile_model`` places: (its placement shapes, the model, why it cannot be placed or "").

    A static model is placed as it is (None shapes). A dynamic one is placed as a static clone: at ``shapes`` (the
    caller's: a model that rejects them raises ShapeError), else at the defaults, a decoder's prefill of
    ``prompt_tokens`` (:func:`default_static_clone`). A model that accepts no default is returned unplaced with the
    reason, never refused: only the caller's shapes can say what to place for. The CLI's ``profile`` calls this too,
    so a profile is keyed by the shapes the next start places at.
    """
    placement_shapes = resolve_shapes(model, shapes)  # ShapeError if shapes= does not fit
    if placement_shapes is None or not is_dynamic(model):
        return None, model, ""  # a static model (shapes= only repeated its own shapes)
    if shapes is not None:
        return placement_shapes, static_clone(model, placement_shapes), ""
    try:
        return (*default_static_clone(model, prompt_tokens or DEFAULT_DIM), "")
    except ShapeError as exc:
        return None, model, (f"no default placement shape fits this dynamic model ({exc}); pass shapes= (--shape) "
                             "with shapes it accepts to place it")


def format_shapes(shapes: PlacementShapes) -> str:
    """benchmark_app's syntax: ``input_ids[1,128],attention_mask[1,128]``."""
    return ",".join(f"{name}[{','.join(str(d) for d in dims)}]" for name, dims in shapes.items())


__all__ = ["DEFAULT_BATCH", "DEFAULT_DIM", "PlacementShapes", "ShapesLike", "default_dims", "default_static_clone",
           "format_shapes", "input_name", "is_dynamic", "placement_clone", "resolve_shapes", "static_clone"]
