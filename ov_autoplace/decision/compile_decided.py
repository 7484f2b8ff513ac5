"""Compile what the decision chose: one device exactly as plain OpenVINO would, or the placement through HETERO.

Every path ends here (the default path, an explicit strategy, an IR that carries its placement), so a decision
on one device always compiles the caller's own model object on that device with the caller's config (the keys it
knows), which hits the same ``CACHE_DIR`` blob as ``core.compile_model(model, device)``.
"""

from __future__ import annotations

from typing import Any

import openvino as ov

from ov_autoplace.compile.placed_compile import compile_with_affinities
from ov_autoplace.decision.request import PlacementRequest
from ov_autoplace.devices.call_forms import properties_for
from ov_autoplace.placement.assignment import Placement


def compile_decided(req: PlacementRequest, props: dict[str, Any], *, device: str | None = None,
                    placement: Placement | None = None, prepared: ov.Model | None = None) -> ov.CompiledModel:
    """``device``: the caller's model compiled on it alone. Else ``placement`` (of ``prepared``) through HETERO: a
    dynamic model gets it carried over from the static clone, compiled dynamic and run once (``compile_with_affinities``)."""
    if device is not None:
        return req.core.compile_model(req.model, device, properties_for(req.core, device, props))
    if req.shapes is not None:
        return compile_with_affinities(req.core, req.model, placement, req.spec.hetero_string, props, shapes=req.shapes)
    placement.apply(prepared)
    return req.core.compile_model(prepared, req.spec.hetero_string, props)


__all__ = ["compile_decided"]
