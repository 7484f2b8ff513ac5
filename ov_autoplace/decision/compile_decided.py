"""Compile what the decision chose: the plain call itself, one device through HETERO, or the placement's split.

Every path ends here (the default path, an explicit strategy, an IR that carries its placement). A decision for
HETERO's own first device (no device excluded) is the call it replaces, ``core.compile_model(model, device_name,
config)``: the caller's model object, string and config, plus the model's runtime options that plain HETERO loses
(``compile/placed_compile.py``).
Another single device is compiled through the same HETERO string with every node's affinity on it
(``compile_on_one_device``): a one-submodel HETERO model that answers HETERO's properties and exports a blob that
imports with the caller's string.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import openvino as ov

from ov_autoplace.compile.placed_compile import compile_on_one_device, compile_with_affinities, say_hetero_count
from ov_autoplace.devices.properties import with_runtime_options
from ov_autoplace.decision.memory_path import check_carried_within_caps
from ov_autoplace.decision.request import PlacementRequest
from ov_autoplace.decision.verification import PLAIN
from ov_autoplace.placement.assignment import Placement

logger = logging.getLogger("ov_autoplace")


def is_plain_call(req: PlacementRequest, device: str) -> bool:
    """Whether everything on ``device`` is what the replaced call itself runs (HETERO's first device, none excluded)."""
    return device == req.devices[0] and req.devices == req.spec.devices


def compile_decided(req: PlacementRequest, props: dict[str, Any], *, device: str | None = None,
                    placement: Placement | None = None, prepared: ov.Model | None = None,
                    kept: dict | None = None) -> ov.CompiledModel:
    """``device``: the caller's model wholly on it (the plain call itself where :func:`is_plain_call`). Else
    ``placement`` (of ``prepared``) through HETERO: a dynamic model gets it carried over from the static clone,
    compiled dynamic and run once (``compile_with_affinities``). ``kept``: what ``verified_placement`` kept."""
    if device is not None:
        if is_plain_call(req, device):
            if kept and PLAIN in kept and "CACHE_DIR" not in props:
                logger.info("returning the faster of the plain call's two measured compiles (not compiled again)")
                return kept.pop(PLAIN)
            return req.core.compile_model(req.model, req.spec.text, with_runtime_options(req.core, req.model,
                                                                                         req.devices, props))
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
