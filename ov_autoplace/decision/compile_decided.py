"""Compile what the decision chose: the plain call itself, one device through HETERO, or the placement's split.

The rest: docs/architecture.md, "Module notes", ov_autoplace/decision/compile_decided.py.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

import openvino as ov

from ov_autoplace.compile.placed_compile import (compile_on_one_device, compile_plain_call, compile_with_affinities,
                                                say_hetero_count)
from ov_autoplace.devices.properties import with_runtime_options
from ov_autoplace.decision.memory_path import check_carried_within_caps
from ov_autoplace.decision.request import PlacementRequest
from ov_autoplace.placement.assignment import Placement

if TYPE_CHECKING:
    from ov_autoplace.decision.verification import KeptCompile

logger = logging.getLogger("ov_autoplace")


def is_plain_call(req: PlacementRequest, device: str) -> bool:
    """Whether everything on ``device`` is what the replaced call itself runs (HETERO's first device, none excluded)."""
    return device == req.devices[0] and req.devices == req.spec.devices


def _measured(kept: KeptCompile | None, props: dict[str, Any], kind: str, device_string: str, device: str | None,
              assignment: dict | None) -> ov.CompiledModel | None:
    """The verification's compile when it is the one asked for; None else, or when the call writes a blob cache
    (only a compile with ``CACHE_DIR`` fills it)."""
    compiled = None if kept is None or "CACHE_DIR" in props else kept.take(kind, device_string, device, assignment)
    if compiled is not None:
        logger.info("returning the %s compile the verification measured (not compiled again)", kind)
    return compiled


def compile_decided(req: PlacementRequest, props: dict[str, Any], *, device: str | None = None,
                    placement: Placement | None = None, prepared: ov.Model | None = None,
                    kept: KeptCompile | None = None) -> ov.CompiledModel:
    """``device``: the caller's model wholly on it (the plain call itself where :func:`is_plain_call`). Else
    ``placement`` (of ``prepared``) through HETERO: a dynamic model gets it carried over from the static clone,
    compiled dynamic and run once (``compile_with_affinities``). ``kept``: what the verification measured, returned
    when it is this very compile."""
    plain = device is not None and is_plain_call(req, device)
    measured = _measured(kept, props, "plain" if plain else "single" if device is not None else "split",
                         req.spec.text if plain else req.spec.hetero_string, device,
                         None if placement is None else placement.assignment)
    if measured is not None:
        return measured
    if plain:
        return compile_plain_call(req.core, req.model, req.spec.text, req.devices, props)
    if device is not None:
        return compile_on_one_device(req.core, req.model, req.spec.hetero_string, device, props)
    if req.shapes is not None:
        return compile_with_affinities(req.core, req.model, placement, req.spec.hetero_string, props,
                                       shapes=req.shapes, check_carried=functools.partial(
                                           check_carried_within_caps, req) if req.memory_caps else None)
    placement.apply(prepared)
    compiled = req.core.compile_model(prepared, req.spec.hetero_string,
                                      with_runtime_options(req.core, req.model, placement.devices, props))
    say_hetero_count(compiled, placement)
    return compiled


__all__ = ["compile_decided", "is_plain_call"]
