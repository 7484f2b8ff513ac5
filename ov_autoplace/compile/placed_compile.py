"""Compile a model with a given placement: the one step every caller shares.

Who calls it and why a dynamic split is run once first: docs/architecture.md, "Module notes",
ov_autoplace/compile/placed_compile.py.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

import numpy as np
import openvino as ov

from ov_autoplace.placement.dynamic_model import transfer_placement
from ov_autoplace.devices.properties import with_runtime_options
from ov_autoplace.devices.timing import LLM_INPUTS, llm_convention
from ov_autoplace.errors import DynamicSplitError, ShapeError
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.legality_check import ensure_legal
from ov_autoplace.placement.legalizer import query_support
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.shapes import PlacementShapes, input_name, is_dynamic, resolve_shapes

logger = logging.getLogger("ov_autoplace")


def _smoke_inputs(model: ov.Model, shapes: PlacementShapes) -> list[np.ndarray]:
    """Inputs at the placement shapes: an LLM's inputs by its conventions (``timing.random_inputs``), other
    integers token-like 0/1, standard-normal floats."""
    rng = np.random.default_rng(0)
    arrays = []
    for port in model.inputs:
        shape = shapes[input_name(port)]
        dtype = port.get_element_type().to_dtype()
        named = next((n for n in port.get_names() if n in LLM_INPUTS), None)
        fed = llm_convention(named, tuple(shape), dtype, rng, None) if named and np.issubdtype(dtype, np.integer) \
            else None
        if fed is not None:
            arrays.append(np.ascontiguousarray(fed))
        elif np.issubdtype(dtype, np.floating):
            arrays.append(rng.standard_normal(shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 2, size=shape).astype(dtype))
    return arrays


def check_dynamic_split_runs(compiled: ov.CompiledModel, model: ov.Model, placement: Placement,
                             shapes: PlacementShapes | None) -> None:
    """Run a dynamic split once at ``shapes``; DynamicSplitError if HETERO cannot run it."""
    if shapes is None:
        return
    try:
        inputs = _smoke_inputs(model, shapes)
    except (KeyError, TypeError, ValueError):
        return  # inputs the smoke run cannot make (e.g. strings): the compile itself is all we can check
    try:
        compiled.create_infer_request().infer(inputs)
    except Exception as exc:  # noqa: BLE001 - the runtime's message is what we report
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        reason = next((line for line in lines if "Can't" in line or "cannot" in line.lower()), lines[-1] if lines
                      else type(exc).__name__)
        raise DynamicSplitError(
            f"HETERO compiled the dynamic model split into {placement.num_submodels} submodel(s) over "
            f"{list(placement.devices)} ({placement.counts_per_device()}) but cannot run it with dynamic shapes: "
            f"{reason}. Place for static shapes (reshape the model first) or use one device") from exc


def compile_with_affinities(core: ov.Core, model: ov.Model, placement: Placement, device_string: str,
                            props: Mapping[str, Any] | None = None, *, shapes: PlacementShapes | None = None,
                            check_carried: Callable[[Placement, Placement, ov.Model], None] | None = None
                            ) -> ov.CompiledModel:
    """Set ``placement``'s affinities on a prepared clone of ``model`` and compile it on ``device_string``.

    ``shapes``: a dynamic model's placement shapes (default: the documented
    default shapes), at which a split is run once before it is returned.
    ``check_carried(static, carried, dynamic)``: called before a dynamic model's compile (memory caps).
    """
    prepared = prepare_model(model)
    dynamic = is_dynamic(model)
    if dynamic:  # legalized on the dynamic model, with its device support
        static, placement = placement, transfer_placement(placement, prepared, core)
        if check_carried is not None:
            check_carried(static, placement, prepared)
    else:  # every placement that reaches a compile is legality-checked (re-legalized with a WARNING)
        graph = extract_graph(prepared)
        support = query_support(core, prepared, graph, placement.devices)
        placement = ensure_legal(placement, graph, placement.devices, support, source="given")
    placement.apply(prepared)
    compiled = core.compile_model(prepared, device_string, with_runtime_options(core, model, placement.devices, props))
    say_hetero_count(compiled, placement)
    if dynamic and len(set(placement.assignment.values())) > 1:
        if shapes is None:
            try:
                shapes = resolve_shapes(model, None)
            except ShapeError:
                shapes = None  # a dynamic rank: no default shape to run it at
        check_dynamic_split_runs(compiled, model, placement, shapes)
    return compiled


def say_hetero_count(compiled: ov.CompiledModel, placement: Placement) -> None:
    """INFO where HETERO compiled another number of submodels than ``placement`` counts: the count mirrors HETERO's
    split, which cuts some placements finer (docs/architecture.md, "Submodels")."""
    try:
        count = int(compiled.get_property("HETERO_NUMBER_OF_SUBMODELS"))
    except Exception:  # noqa: BLE001 - no such property (not HETERO, another release): nothing to compare
        return
    if count != placement.num_submodels:
        logger.info("HETERO compiled %d submodel(s) where the placement counts %d (%s)", count,
                    placement.num_submodels, placement.counts_per_device())


def compile_plain_call(core: ov.Core, model: ov.Model, device_name: str, devices, props) -> ov.CompiledModel:
    """The caller's call itself, ``core.compile_model(model, device_name, props)``, with the model's runtime
    options given to ``devices`` (plain HETERO loses them): what a decision for the plain call returns."""
    return core.compile_model(model, device_name, with_runtime_options(core, model, devices, props))


def compile_on_one_device(core: ov.Core, model: ov.Model, device_string: str, device: str,
                          props: Mapping[str, Any] | None = None) -> ov.CompiledModel:
    """``model`` wholly on ``device``, compiled through the HETERO string the caller named.

    Every node of a clone gets ``device`` as its affinity (the caller's model is not touched; a dynamic model stays
    dynamic: one submodel, nothing to carry over), so the result answers HETERO's properties
    (``MULTI_DEVICE_PRIORITIES``) and exports a blob that imports with ``device_string``, as the plain call's does.
    """
    clone = model.clone()
    for op in clone.get_ops():
        op.get_rt_info()["affinity"] = device
    return core.compile_model(clone, device_string, with_runtime_options(core, model, (device,), props))


__all__ = ["check_dynamic_split_runs", "compile_on_one_device", "compile_plain_call", "compile_with_affinities", "say_hetero_count"]
