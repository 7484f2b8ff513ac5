"""``ov_autoplace.save_model``: an IR that carries its placement, for ``compile_model`` on another machine.

The rest of this overview: docs/architecture.md, "Module notes".
"""

from __future__ import annotations

import os
from typing import Any, Mapping

import openvino as ov

from ov_autoplace import api
from ov_autoplace.errors import PlacementError, ShapeError
from ov_autoplace.reentry import ov_autoplace_call
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.compile.placed_compile import compile_with_affinities
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.placement.portable import attach, stored_placement
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.generation import check_generation
from ov_autoplace.model.shapes import ShapesLike, format_shapes, placement_clone
from ov_autoplace.decision.verification import evidence_intact, verified_placement


@ov_autoplace_call()
def save_model(model: api.ModelLike, path: str | os.PathLike, placement: Placement | None = None,
               device_name: str | None = None, config: Mapping[str, Any] | None = None, *,
               core: ov.Core | None = None, compress_to_fp16: bool = False, verify: bool = True,
               shapes: ShapesLike = None, **place_options: Any) -> Placement:
    """Write ``model`` as an IR at ``path`` with its placement stored in rt_info; return the placement.

    ``placement``: one made by :func:`ov_autoplace.place` for this model; when None the model is placed
    here over ``device_name`` (``place``'s default strategy, or ``place_options`` such as ``strategy=``,
    ``pins=``). ``compress_to_fp16`` is ``ov.save_model``'s (default False here: the IR holds the weights
    as given). ``verify`` (default): a placement that differs from the plain call's and carries no intact
    evidence is measured against the plain call now (``verification.py``) and the winner is stored, sealed,
    so ``compile_model`` of the IR on a machine with these devices uses it without measuring (the returned
    placement is the one stored). ``verify=False`` stores it as given; ``compile_model`` then verifies it on
    every load. Pins are not stored: there a pinned placement is a proposal like any other.
    ``shapes``: for a model with dynamic dimensions, the static shapes to place at (``compile_model``'s
    ``shapes=``; default: the shapes ``compile_model`` places at, docs/dynamic-shapes.md); a given ``placement``
    must have been made at the same shapes (``place(model, ..., shapes=...)``). The IR stays dynamic; a
    split is compiled dynamic and run once at those shapes first (``DynamicSplitError`` if HETERO cannot run it).
    The file is read back and its stored placement matched before returning; a mismatch raises
    PlacementError. The user's model object is not changed (a clone is written).

    Example::

        placement = ov_autoplace.save_model("model.xml", "placed.xml", device_name="HETERO:GPU,CPU")  # verified first
        compiled = ov_autoplace.compile_model("placed.xml", "HETERO:GPU,CPU")  # compiles the stored placement
    """
    core = core if core is not None else api.default_core()
    ov_model = api.load_model(model, core)
    generation = check_generation(place_options.get("generation"), ov_model, model)  # a decoder: placed at its prefill
    placement_shapes, placement_model, unplaceable = placement_clone(  # the shapes compile_model places at
        ov_model, shapes, generation.prompt_tokens if generation else None)
    if unplaceable:
        raise ShapeError(unplaceable)
    prepared = prepare_model(placement_model)
    graph = extract_graph(prepared)
    if placement is None:
        placement = api.place(ov_model, device_name, config, core=core, shapes=placement_shapes, **place_options)
    if verify and not evidence_intact(placement):
        req = api.build_request(ov_model, placement.device_string, config, core=core, shapes=placement_shapes,
                                generation=place_options.get("generation"))  # a decoder: verified on it
        placement = verified_placement(req, prepared, graph, placement)
    clone = ov_model.clone()
    attach(clone, placement, graph, placement_shapes)  # FileFormatError if it is not this graph's placement
    if placement_shapes is not None and len(set(placement.assignment.values())) > 1:
        # the split as compile_model of the IR will build it: carried over, compiled dynamic, run once
        _, spec, props, _ = api.validated_call(ov_model, placement.device_string, config, core)
        compile_with_affinities(core, ov_model, placement, spec.hetero_string, props, shapes=placement_shapes)
    ov.save_model(clone, os.fspath(path), compress_to_fp16=compress_to_fp16)
    read_back, stored = load_placed(path, core=core)
    if stored is None or stored.assignment != placement.assignment or stored.verification != placement.verification:
        at = f" at the placement shapes {format_shapes(placement_shapes)}" if placement_shapes is not None else ""
        raise PlacementError(f"the IR written at {os.fspath(path)} does not read back with its placement{at} "
                             "(OpenVINO prepares the saved graph differently); save with compress_to_fp16=False")
    return placement


def load_placed(path: str | os.PathLike, *, core: ov.Core | None = None) -> tuple[ov.Model, Placement | None]:
    """(the model at ``path``, the placement it carries keyed by its prepared nodes' names, or None).

    For a dynamic model's IR the placement names the nodes of its static clone at the stored placement
    shapes (``placement/portable.stored_shapes``): ``compile_placement(model, placement)`` carries it over.

    Example::

        model, placement = ov_autoplace.load_placed("placed.xml")
        print(placement.counts_per_device() if placement else "no placement stored")
    """
    core = core if core is not None else api.default_core()
    model = api.load_model(path, core)
    return model, stored_placement(model)


__all__ = ["load_placed", "save_model"]
