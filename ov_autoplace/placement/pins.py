"""Pins: the user's "this node runs there" (by exact friendly name, name pattern or op type).

``compile_model(..., pins=...)`` takes a mapping or a list of :class:`Pin`; :func:`parse_pins` reads either,
:func:`unmatched_pin_message` names the nearest node names and op types when a pin matches nothing. The
legalizer applies them (``legalizer.py``); a pin is never dropped, by a fallback either.
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
from typing import Iterable, Mapping, Sequence

from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import GraphArrays


@dataclasses.dataclass(frozen=True)
class Pin:
    """Pin nodes to a device: by exact friendly name, name pattern, or op type.

    Example::

        pins = [ov_autoplace.Pin(device="CPU", op_type="Softmax"), ov_autoplace.Pin(device="GPU", pattern="*attention*")]
        compiled = ov_autoplace.compile_model(model, "HETERO:GPU,CPU", pins=pins)  # or pins={"Softmax": "CPU"}
    """

    device: str
    name: str | None = None
    pattern: str | None = None
    op_type: str | None = None

    def __post_init__(self) -> None:
        given = [x for x in (self.name, self.pattern, self.op_type) if x is not None]
        if len(given) != 1:
            raise PlacementError(
                f"a Pin needs exactly one of name=, pattern= or op_type= (got {len(given)}) for device {self.device!r}"
            )

    def matches(self, name: str, op_type: str) -> bool:
        if self.name is not None:
            return name == self.name
        if self.pattern is not None:
            return fnmatch.fnmatchcase(name, self.pattern)
        return op_type == self.op_type


def parse_pins(pins: Mapping[str, str] | Sequence[Pin] | None) -> list[Pin]:
    """Accept ``[Pin(...)]`` or a mapping ``{"name or pattern or type:OpType": device}``."""
    if pins is None:
        return []
    if isinstance(pins, Mapping):
        parsed = []
        for key, device in pins.items():
            if not isinstance(key, str) or not isinstance(device, str):
                raise PlacementError(f"pins must map str to a device name, got {key!r}: {device!r}")
            if key.startswith("type:"):
                parsed.append(Pin(device, op_type=key[len("type:"):]))
            elif any(ch in key for ch in "*?["):
                parsed.append(Pin(device, pattern=key))
            else:
                parsed.append(Pin(device, name=key))
        return parsed
    if isinstance(pins, (str, bytes)) or not isinstance(pins, Iterable):
        raise PlacementError(f"pins must be a dict {{node name, pattern or 'type:OpType': device}} or a list of Pin, "
                             f"got {type(pins).__name__} {pins!r:.60}")
    out = list(pins)
    for pin in out:
        if not isinstance(pin, Pin):
            raise PlacementError(f"pins must be Pin objects or a dict, got {type(pin).__name__}")
    return out


def unmatched_pin_message(pin: Pin, graph: GraphArrays) -> str:
    """Why ``pin`` matched nothing, with the nearest node names or op types that would match."""
    if pin.op_type is not None:
        known = sorted(set(graph.op_types))
        close = difflib.get_close_matches(pin.op_type, known, n=3) or known[:8]
        return f"pin type:{pin.op_type} -> {pin.device} matches no node: the model has no {pin.op_type!r} op; " \
               f"op types it has include {close}"
    wanted = pin.name if pin.name is not None else pin.pattern
    close = difflib.get_close_matches(wanted, graph.names, n=3, cutoff=0.4)
    kind = "name" if pin.name is not None else "pattern"
    return (f"pin {kind} {wanted!r} -> {pin.device} matches no node of the model "
            f"({graph.num_nodes} nodes, names after constant folding); nearest names: {close or graph.names[:3]} "
            "(see the names with `ov-autoplace place -o placement.json`, or pin by 'type:OpType' or a '*pattern*')")
