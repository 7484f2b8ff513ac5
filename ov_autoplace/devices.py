"""Device strings, device discovery and virtual devices.

A *virtual device* is an OpenVINO plugin library registered under a second
name with its own properties (``core.register_plugin(lib, "CPUF")``). HETERO
treats it as a separate device, so on a CPU-only machine two differently
configured CPU "devices" form a real heterogeneous system whose placements are
compiled and executed for real.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Mapping, Sequence

import openvino as ov

from .errors import DeviceError, PropertyError

# Meta devices that schedule over other devices. Placement only makes sense for
# HETERO; the others are handed to OpenVINO unchanged.
PLACEMENT_META_DEVICE = "HETERO"
PASS_THROUGH_META_DEVICES = ("AUTO", "MULTI", "BATCH")

# A device name as OpenVINO spells them: "CPU", "GPU", "GPU.1", "NPU", "CPUF".
_DEVICE_NAME = re.compile(r"^[A-Z][A-Z0-9_]*(\.[0-9]+)?$")
_VIRTUAL_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


@dataclasses.dataclass(frozen=True)
class DeviceSpec:
    """A parsed device string.

    ``meta`` is ``"HETERO"``, one of the pass-through meta devices, or ``None``
    for a single device; ``devices`` lists the target devices in priority order.
    """

    text: str
    meta: str | None
    devices: tuple[str, ...]

    @property
    def is_placement(self) -> bool:
        """True when there is a placement to choose (HETERO over 2+ devices)."""
        return self.meta == PLACEMENT_META_DEVICE and len(self.devices) > 1

    @property
    def hetero_string(self) -> str:
        return f"{PLACEMENT_META_DEVICE}:{','.join(self.devices)}"


def _check_name(name: str, text: str) -> None:
    if not name:
        raise DeviceError(f"device string {text!r} has an empty device name; expected e.g. 'HETERO:GPU,CPU'")
    if not _DEVICE_NAME.match(name):
        hint = f" (did you mean {name.upper()!r}?)" if _DEVICE_NAME.match(name.upper()) else ""
        raise DeviceError(
            f"device name {name!r} in {text!r} is malformed: expected upper-case letters, digits or '_', "
            f"optionally '.<index>' (e.g. 'CPU', 'GPU.1'){hint}"
        )


def parse_device_string(text: object) -> DeviceSpec:
    """Parse ``"CPU"``, ``"GPU.1"``, ``"HETERO:GPU,CPU"``, ``"AUTO:GPU,CPU"``...

    Raises DeviceError for anything OpenVINO would not accept, naming the part
    that is wrong.
    """
    if not isinstance(text, str):
        raise DeviceError(f"device_name must be a str such as 'HETERO:GPU,CPU', got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise DeviceError("device_name is empty; expected e.g. 'CPU' or 'HETERO:GPU,CPU'")
    if ":" not in stripped:
        if stripped.upper() in (PLACEMENT_META_DEVICE, *PASS_THROUGH_META_DEVICES):
            raise DeviceError(f"{stripped!r} needs a device list, e.g. '{stripped.upper()}:GPU,CPU'")
        _check_name(stripped, text)
        return DeviceSpec(text, None, (stripped,))
    meta, _, rest = stripped.partition(":")
    meta_upper = meta.strip().upper()
    if meta_upper not in (PLACEMENT_META_DEVICE, *PASS_THROUGH_META_DEVICES):
        raise DeviceError(
            f"unknown meta device {meta!r} in {text!r}; expected one of "
            f"{', '.join((PLACEMENT_META_DEVICE, *PASS_THROUGH_META_DEVICES))} before ':'"
        )
    if meta != meta_upper:
        raise DeviceError(f"meta device {meta!r} in {text!r} must be upper case: {meta_upper!r}")
    if ":" in rest:
        raise DeviceError(f"device string {text!r} has more than one ':'; expected '{meta_upper}:DEV1,DEV2'")
    names = [n.strip() for n in rest.split(",")]
    if names == [""]:
        raise DeviceError(f"{text!r} lists no devices after '{meta_upper}:'; expected e.g. '{meta_upper}:GPU,CPU'")
    for name in names:
        _check_name(name, text)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise DeviceError(f"device string {text!r} lists {', '.join(duplicates)} more than once")
    return DeviceSpec(text, meta_upper, tuple(names))


def available_devices(core: ov.Core) -> list[str]:
    """The devices this OpenVINO core can use now (virtual devices included)."""
    return list(core.available_devices)


def _is_present(name: str, present: Sequence[str]) -> bool:
    # "GPU" is present when "GPU.0"/"GPU.1" are listed; "GPU.0" when "GPU" is the only one.
    base = name.split(".")[0]
    return name in present or any(p.split(".")[0] == base and (p == base or "." in p) for p in present)


def devices_present(core: ov.Core | None, devices: Sequence[str]) -> bool:
    """Whether every device of ``devices`` is available on ``core`` (False without a core)."""
    if core is None:
        return False
    present = available_devices(core)
    return all(_is_present(d, present) for d in devices)


def check_devices_present(core: ov.Core, devices: Sequence[str]) -> None:
    """Raise DeviceError naming the available devices if any listed one is missing.

    Called before any compile: naming "GPU" on a machine without one would
    otherwise fail deep inside OpenVINO with an OpenCL message.
    """
    present = available_devices(core)
    missing = [d for d in devices if not _is_present(d, present)]
    if missing:
        # Only a spelling slip is worth suggesting ("cpuf" for "CPUF"), not another device.
        by_upper = {p.upper(): p for p in present}
        hints = "".join(f" (did you mean {by_upper[m.upper()]!r} for {m!r}?)" for m in missing if m.upper() in by_upper)
        raise DeviceError(
            f"device(s) {', '.join(missing)} not available; this machine has {', '.join(present) or 'none'}"
            f"{hints}. Use only available devices, or register a virtual one with "
            "ov_autoplace.register_virtual_device()"
        )


def check_properties(config: object) -> dict[str, object]:
    """Validate a property dict's form (OpenVINO validates names and values on compile)."""
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise PropertyError(f"config must be a dict of OpenVINO properties, got {type(config).__name__}")
    checked: dict[str, object] = {}
    for key, value in config.items():
        if not isinstance(key, str) or not key:
            raise PropertyError(f"property names must be non-empty str such as 'PERFORMANCE_HINT', got {key!r}")
        if value is None:
            raise PropertyError(f"property {key!r} has value None; give a str, int, float, bool or OpenVINO enum")
        checked[key] = value
    return checked


def plugin_library(base_device: str = "CPU") -> Path:
    """Path of the plugin library OpenVINO uses for ``base_device``."""
    import openvino

    libs = Path(openvino.__file__).parent / "libs"
    names = {"CPU": "libopenvino_intel_cpu_plugin.so", "GPU": "libopenvino_intel_gpu_plugin.so",
             "NPU": "libopenvino_intel_npu_plugin.so"}
    if base_device not in names:
        raise DeviceError(f"cannot clone device {base_device!r}; expected one of {', '.join(names)}")
    path = libs / names[base_device]
    if not path.exists():
        raise DeviceError(f"the {base_device} plugin library is not at {path}; is the openvino wheel complete?")
    return path


def register_virtual_device(
    core: ov.Core, name: str, *, base_device: str = "CPU", properties: Mapping[str, object] | None = None
) -> str:
    """Register ``base_device``'s plugin under ``name`` on ``core`` and set its properties.

    Registering the same name again only updates the properties. Returns the name.
    """
    if not isinstance(name, str) or not _VIRTUAL_NAME.match(name):
        raise DeviceError(
            f"virtual device name {name!r} is invalid: expected upper-case letters, digits or '_' and no '.' "
            "(OpenVINO reserves '.' for device indices), e.g. 'CPUF'"
        )
    if name in (base_device, PLACEMENT_META_DEVICE, *PASS_THROUGH_META_DEVICES):
        raise DeviceError(f"virtual device name {name!r} clashes with a built-in device name; choose e.g. 'CPUF'")
    props = check_properties(properties)
    if name not in core.available_devices:
        try:
            core.register_plugin(str(plugin_library(base_device)), name)
            # Load the plugin now: properties set on a not-yet-loaded plugin are
            # only checked at load time, and a bad one then makes the device
            # unusable for the rest of the process instead of raising here.
            core.get_property(name, "FULL_DEVICE_NAME")
        except RuntimeError as exc:
            raise DeviceError(f"cannot register virtual device {name!r} from {base_device}: {exc}") from exc
    if props:
        try:
            core.set_property(name, props)
        except (RuntimeError, TypeError) as exc:
            raise PropertyError(f"virtual device {name!r} rejected properties {props}: {exc}") from exc
    return name


__all__ = [
    "DeviceSpec",
    "available_devices",
    "devices_present",
    "check_devices_present",
    "check_properties",
    "parse_device_string",
    "plugin_library",
    "register_virtual_device",
]
