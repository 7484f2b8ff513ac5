"""The validated call: everything a placement decision depends on, as one typed value.

``call_request.build_request`` makes it at the door (every user mistake raised there, as a typed error); from
then on the decision takes it by type (``first_start``, ``placement_sources``, ``strategy_path``,
``stored_placement``, the background worker) and never validates again.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Mapping

import openvino as ov

from ov_autoplace.devices.device_strings import DeviceSpec
from ov_autoplace.graph.arrays import GraphArrays, extract_graph
from ov_autoplace.model.generation import Generation
from ov_autoplace.model.prepare import computes_shapes, prepare_model
from ov_autoplace.model.shapes import PlacementShapes
from ov_autoplace.placement.pins import Pin
from ov_autoplace.strategies.base import PlacementStrategy


@dataclasses.dataclass(frozen=True)
class PlacementRequest:
    """One ``compile_model`` / ``place`` call, validated.

    ``strategy`` is None on the default path, which chooses its own source (cache, profile, prior); an explicit
    strategy (or ``search_budget``'s fine-tuner) is the instance that places. ``placement_model`` is what gets
    placed: ``model`` itself, or its static clone at ``shapes`` for a dynamic model.
    """

    core: ov.Core
    spec: DeviceSpec  # the device string with OpenVINO's meaning (devices/call_forms.py)
    props: dict[str, Any]  # the caller's config, checked
    model: ov.Model  # the caller's model: what a one-device decision compiles, as plain OpenVINO would
    devices: tuple[str, ...]  # the devices placed over: the spec's, minus exclude_devices
    strategy: PlacementStrategy | None = None
    pins: tuple[Pin, ...] = ()
    exclude_devices: tuple[str, ...] = ()
    max_submodels: int | None = None
    seed: int = 0
    shapes: PlacementShapes | None = None  # a dynamic model's placement shapes; None for a static model
    placement_model: ov.Model | None = None
    #: Why this call cannot be placed though the caller made no mistake (e.g. no default placement shape fits the
    #: dynamic model): compile_model then compiles it as plain OpenVINO would, with a WARNING; "" when it can.
    unplaceable: str = ""
    #: ``memory_caps=``: bytes each capped device may hold (read-only; empty: no cap but what plugins report).
    #: Every decision keeps each device's weights and KV cache under its cap (``decision/memory_path.py``).
    memory_caps: Mapping[str, int] = dataclasses.field(default_factory=lambda: types.MappingProxyType({}))
    #: The generation a stateful decoder is placed and verified for (``model/generation.py``); None: single-shot.
    generation: Generation | None = None
    #: Devices of ``memory_caps`` capped at their plugin's report, not by the caller (``with_reported_caps``).
    reported_caps: tuple[str, ...] = ()

    def __post_init__(self):
        if self.placement_model is None:
            object.__setattr__(self, "placement_model", self.model)

    def placement_graph(self, prepared: ov.Model) -> GraphArrays:
        """``model.prepare.placement_graph`` of ``prepared`` (``prepare_model(placement_model)``), the dynamic
        model's graph (or None) found once per request."""
        graph = extract_graph(prepared)
        if self.placement_model is self.model:
            return graph
        if "_dynamic" not in self.__dict__:
            judged = graph.variables or computes_shapes(self.model)
            object.__setattr__(self, "_dynamic", extract_graph(prepare_model(self.model)) if judged else None)
        dynamic = self.__dict__["_dynamic"]
        return graph if dynamic is None else dataclasses.replace(graph, dynamic=dynamic)


__all__ = ["PlacementRequest"]
