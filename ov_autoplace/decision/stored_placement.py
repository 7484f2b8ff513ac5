"""``compile_model`` of an IR that carries its placement (``save_model``): use it, without placing again.

How and why, in full: docs/default-path.md, "Module notes", ov_autoplace/decision/stored_placement.py.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import openvino as ov

from ov_autoplace.cache.root import blob_cache_props, cache_root
from ov_autoplace.decision.compile_decided import compile_decided
from ov_autoplace.decision.request import PlacementRequest
from ov_autoplace.decision.verification import (KeptCompile, evidence_intact, needs_verification, single_device_of,
                                                verified_placement)
from ov_autoplace.errors import ShapeError
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.shapes import format_shapes, is_dynamic, resolve_shapes
from ov_autoplace.placement.legality_check import ensure_legal
from ov_autoplace.placement.legalizer import query_support
from ov_autoplace.placement.portable import RT_INFO_PATH, stored_placement, stored_shapes, stored_static_clone

logger = logging.getLogger("ov_autoplace")


def compile_carried_placement(req: PlacementRequest, *, cache_dir=None, cache_blobs: bool = False) -> ov.CompiledModel | None:
    """The model compiled with the placement its rt_info carries, or None when there is none to use."""
    if req.pins or req.memory_caps or not req.model.has_rt_info(RT_INFO_PATH):  # caps: placed within them
        return None
    started = time.perf_counter()
    if is_dynamic(req.model):
        req = _at_stored_shapes(req)
        if req is None:
            return None
    elif req.shapes is not None:
        return None
    prepared = prepare_model(req.placement_model)
    graph = req.placement_graph(prepared)
    placement = stored_placement(req.model, graph, req.devices)
    if placement is None:
        return None
    support = query_support(req.core, prepared, graph, req.devices)
    placement = ensure_legal(placement, graph, req.devices, support, max_submodels=req.max_submodels, source="stored")
    kept = KeptCompile()
    if not evidence_intact(placement) and needs_verification(placement, graph, support):
        # a proposal: measured against the plain call
        placement = verified_placement(req, prepared, graph, placement, support, kept=kept)
    logger.info("placement source: the model's rt_info (%s) -> %s (%.0f ms to decide)", placement.strategy,
                placement.counts_per_device(), 1e3 * (time.perf_counter() - started))
    props = blob_cache_props(req.core, req.props, cache_root(cache_dir), cache_blobs)
    return compile_decided(req, props, device=single_device_of(placement), placement=placement, prepared=prepared,
                           kept=kept)


def _at_stored_shapes(req: PlacementRequest) -> PlacementRequest | None:
    """``req`` of a dynamic model, placing at the stored placement shapes; None when they do not apply."""
    shapes = stored_shapes(req.model)
    if shapes is None:
        logger.info("the dynamic model carries a placement without placement shapes (not one save_model wrote for "
                    "it): placing again")
        return None
    try:
        default = resolve_shapes(req.model, None)
    except ShapeError:
        default = None  # a dynamic rank: shapes= was given (the request needs it)
    if req.shapes not in (shapes, default):
        logger.info("the model carries a placement made at %s; shapes=%s asks for another: placing again",
                    format_shapes(shapes), format_shapes(req.shapes))
        return None
    clone = stored_static_clone(req.model, shapes)
    return None if clone is None else dataclasses.replace(req, shapes=shapes, placement_model=clone)


__all__ = ["compile_carried_placement"]
