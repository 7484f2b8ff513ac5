"""Checks of the user's own request that no fallback may hide (why: docs/architecture.md, "Module notes")."""

from __future__ import annotations

from typing import Sequence

from ov_autoplace.errors import MemoryCapError, PinError, ShapeError, UnsupportedOpError
from ov_autoplace.placement.legalizer import Pin

#: Raised through ``compile_model``'s fallback: the request is wrong (or plain OpenVINO cannot compile it either).
USER_ERRORS = (PinError, ShapeError, UnsupportedOpError, MemoryCapError)


def check_pins_devices(pins: Sequence[Pin], devices: Sequence[str], excluded: Sequence[str]) -> None:
    """Every pin names a device of the device string that ``exclude_devices`` does not exclude."""
    for pin in pins:
        if pin.device not in devices:
            raise PinError(f"pin {pin} names device {pin.device!r}, which is not in the device string's devices "
                           f"{list(devices)}; pin to one of them or add {pin.device!r} to the device string")
        if pin.device in excluded:
            usable = [d for d in devices if d not in excluded]
            raise PinError(f"pin {pin} names device {pin.device!r}, which exclude_devices={list(excluded)} excludes; "
                           f"pin to one of {usable} or stop excluding {pin.device!r}")


__all__ = ["USER_ERRORS", "check_pins_devices"]
