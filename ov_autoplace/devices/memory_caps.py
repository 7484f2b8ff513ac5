"""``memory_caps=`` read at the door: sizes with units (:data:`UNITS`), each cap on a device of the device string;
every mistake a :class:`PropertyError` before anything is compiled (docs/llm.md, "Memory")."""

from __future__ import annotations

import re
import types
from typing import Any, Mapping, Sequence

from ov_autoplace.errors import PropertyError

#: Bytes per unit. Decimal units are the SI ones (as disk and GPU vendors state memory), binary ones the IEC's.
UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
         "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}

_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")
_EXAMPLES = "an int of bytes (3_000_000_000) or a string such as '2 GB', '1.5GiB', '512 MiB', '4096 B'"


def parse_size(value: Any, what: str = "memory cap") -> int:
    """Bytes of ``value`` (an int of bytes, or a number with a unit of :data:`UNITS`); PropertyError if malformed."""
    if isinstance(value, bool):
        raise PropertyError(f"{what} must be {_EXAMPLES}, got {value!r}")
    if isinstance(value, int) or (hasattr(value, "__index__") and not isinstance(value, str)):
        size = int(value)
    elif isinstance(value, str):
        match = _SIZE.match(value)
        unit = match.group(2).lower() if match else ""
        if not match or (unit and unit not in UNITS):
            raise PropertyError(f"{what} {value!r} is not a size: use {_EXAMPLES} (units: B, KB, MB, GB, TB, KiB, "
                                "MiB, GiB, TiB)")
        size = int(float(match.group(1)) * UNITS[unit or "b"])
    else:
        raise PropertyError(f"{what} must be {_EXAMPLES}, got {type(value).__name__} {value!r}")
    if size <= 0:
        raise PropertyError(f"{what} must be a positive size ({_EXAMPLES}), got {value!r}")
    return size


def parse_memory_caps(caps: Any, devices: Sequence[str]) -> Mapping[str, int]:
    """``memory_caps=`` as a read-only mapping device -> bytes (empty for None); every device must be in ``devices``
    (the device string's)."""
    if caps is None:
        return types.MappingProxyType({})
    if not isinstance(caps, Mapping):
        raise PropertyError(f"memory_caps must be a mapping device -> size, e.g. {{'CPU': '2 GB'}}, got "
                            f"{type(caps).__name__} {caps!r}")
    parsed = {}
    for device, value in caps.items():
        if not isinstance(device, str) or device not in devices:
            raise PropertyError(f"memory_caps names device {device!r}, which is not in the device string's devices "
                                f"{list(devices)}; cap one of them or add {device!r} to the device string")
        parsed[device] = parse_size(value, f"memory_caps[{device!r}]")
    return types.MappingProxyType(parsed)


def parse_cap_option(text: str) -> tuple[str, int]:
    """The CLI's ``--memory-cap DEVICE=SIZE`` as ``(device, bytes)``."""
    device, sep, size = str(text).partition("=")
    if not sep or not device.strip():
        raise PropertyError(f"--memory-cap takes DEVICE=SIZE (e.g. CPU=2GB), got {text!r}")
    return device.strip(), parse_size(size, f"--memory-cap {device.strip()}")


def format_bytes(n: float) -> str:
    """``n`` bytes for a message: ``"1.50 GB (1500000000 B)"``, or plain bytes under a kilobyte."""
    if n < 1000:
        return f"{n:.0f} B"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit} ({n:.0f} B)"
    return f"{n:.0f} B"


__all__ = ["UNITS", "format_bytes", "parse_cap_option", "parse_memory_caps", "parse_size"]
