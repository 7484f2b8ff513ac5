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

from ov_autoplace.devices.kinds import CPU, DEVICE_KINDS
from ov_autoplace.errors import DeviceError, PropertyError

# Meta devices that schedule over other devices. Placement only makes sense for
# HETERO; the others are handed to OpenVINO unchanged (docs/call-forms.md).
PLACEMENT_META_DEVICE = "HETERO"
PASS_THROUGH_META_DEVICES = ("AUTO", "MULTI", "BATCH")
META_DEVICES = (PLACEMENT_META_DEVICE, *PASS_THROUGH_META_DEVICES)

# A device name as OpenVINO spells them: "CPU", "GPU", "GPU.1", "NPU", "CPUF".
_DEVICE_NAME = re.compile(r"^[A-Z][A-Z0-9_]*(\.[0-9]+)?$")
_VIRTUAL_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
# One entry of a meta device's list: "-CPU" (AUTO only), "CPU(4)" (AUTO, MULTI: requests; BATCH: batch size).
_ENTRY = re.compile(r"^(?P<minus>-?)(?P<name>[^()]*)(\((?P<count>[^()]*)\))?$")


@dataclasses.dataclass(frozen=True)
class DeviceSpec:
    """A parsed device string.

    ``meta`` is ``"HETERO"``, one of the pass-through meta devices, or ``None``
    for a single device; ``devices`` lists the target devices in priority order
    (for ``"AUTO"`` without a list, or with only exclusions, the candidates
    AUTO chooses among once :func:`ov_autoplace.devices.call_forms.resolve_device_request`
    has asked the core; empty straight from :func:`parse_device_string`);
    ``excluded`` the devices an ``AUTO:-X`` string excludes. ``text`` is a
    device string with OpenVINO's meaning of the request (``"AUTO"`` when the
    caller gave no device), ``given`` what the caller passed, ``plain`` what
    ov_autoplace hands to ``core.compile_model`` when it does not place.
    ``passed_through`` says why a HETERO request is compiled by OpenVINO as
    given instead of placed (e.g. ``MODEL_DISTRIBUTION_POLICY=PIPELINE_PARALLEL``).
    """

    text: str
    meta: str | None
    devices: tuple[str, ...]
    excluded: tuple[str, ...] = ()
    given: object = None
    plain: str = ""
    from_default: bool = False
    passed_through: str | None = None

    def __post_init__(self):
        if not self.plain:
            object.__setattr__(self, "plain", self.text)
        if self.given is None and not self.from_default:
            object.__setattr__(self, "given", self.text)

    @property
    def is_placement(self) -> bool:
        """True when there is a placement to choose (HETERO over 2+ devices, not passed through)."""
        return self.meta == PLACEMENT_META_DEVICE and len(self.devices) > 1 and self.passed_through is None

    @property
    def hetero_string(self) -> str:
        return f"{PLACEMENT_META_DEVICE}:{','.join(self.devices)}"

    def without(self, excluded: Sequence[str]) -> str:
        """The device string for :attr:`plain` with ``excluded`` devices left out (``exclude_devices=``)."""
        if not excluded:
            return self.plain
        kept = [d for d in self.devices if d not in excluded]
        if self.meta is None or self.meta == "BATCH":
            return self.plain  # nothing to leave out: an exclusion of the only device is raised before
        # An explicit list in the same priority order (AUTO's "-X" would also exclude every device whose
        # name is part of X, see device_requests.auto_exclusion_quirk).
        return f"{self.meta}:{','.join(kept)}"


def _check_name(name: str, text: str) -> None:
    if not name:
        raise DeviceError(f"device string {text!r} has an empty device name; expected e.g. 'HETERO:GPU,CPU'")
    if not _DEVICE_NAME.match(name):
        hint = f" (did you mean {name.upper()!r}?)" if _DEVICE_NAME.match(name.upper()) else ""
        raise DeviceError(
            f"device name {name!r} in {text!r} is malformed: expected upper-case letters, digits or '_', "
            f"optionally '.<index>' (e.g. 'CPU', 'GPU.1'){hint}"
        )


def _parse_entries(meta: str, rest: str, text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The devices and the exclusions of ``META:rest``, checked the way the meta device reads them."""
    entries = [e.strip() for e in rest.split(",")]
    if entries == [""]:
        alone = {"AUTO": "; write 'AUTO' alone to let AUTO choose among all devices",
                 "HETERO": "; or write 'HETERO' with config {'MULTI_DEVICE_PRIORITIES': 'GPU,CPU'}"}.get(meta, "")
        raise DeviceError(f"{text!r} lists no devices after '{meta}:'; expected e.g. '{meta}:GPU,CPU'{alone}")
    devices: list[str] = []
    excluded: list[str] = []
    for entry in entries:
        match = _ENTRY.match(entry)
        if match is None:
            raise DeviceError(f"device entry {entry!r} in {text!r} is malformed: expected 'CPU', 'CPU(4)' or "
                              "(AUTO only) '-CPU'")
        name = match["name"].strip()
        if match["minus"]:
            if meta != "AUTO":
                raise DeviceError(f"{text!r} excludes {name!r}, but only AUTO takes exclusions ('AUTO:-{name}'); "
                                  f"list the devices {meta} should use instead")
            if match["count"] is not None:
                raise DeviceError(f"exclusion {entry!r} in {text!r} cannot carry a count; write '-{name}'")
        if match["count"] is not None:
            if meta == "HETERO":
                raise DeviceError(f"{text!r}: HETERO takes no '(count)' after a device name; write '{name}'")
            count = match["count"].strip()
            if not count.isdigit() or int(count) < 1:
                raise DeviceError(f"the count in {entry!r} of {text!r} must be a positive integer, got {count!r}; "
                                  f"e.g. '{name}(4)'")
        if meta == "BATCH" and name in META_DEVICES:
            pass  # "BATCH:AUTO" batches whatever AUTO chooses
        else:
            _check_name(name, text)
        (excluded if match["minus"] else devices).append(name)
    for kind, names in (("lists", devices), ("excludes", excluded)):
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise DeviceError(f"device string {text!r} {kind} {', '.join(duplicates)} more than once; "
                              "name each device once")
    both = sorted(set(devices) & set(excluded))
    if both:
        raise DeviceError(f"device string {text!r} both lists and excludes {', '.join(both)}; keep one of them")
    if meta == "BATCH" and len(devices) != 1:
        raise DeviceError(f"{text!r}: BATCH batches for exactly one device, got {len(devices)}; "
                          "expected e.g. 'BATCH:GPU(4)'")
    return tuple(devices), tuple(excluded)


def _check_literal_spaces(text: str) -> None:
    """DeviceError where OpenVINO reads a name with its white space and finds no such device.

    ``core.compile_model`` looks up a single device, a meta device's name and the first device of a HETERO list
    exactly as written (``"HETERO: CPU , GPU"``: 'Device with " CPU " name is not registered'), while it trims
    the later entries of a list (``"HETERO:CPU, GPU"`` compiles). The same strings raise here, and the same ones
    pass.
    """
    meta, colon, rest = text.partition(":")
    literal = [meta] if not colon else [meta, rest.split(",")[0]] if meta.strip() == PLACEMENT_META_DEVICE else [meta]
    for name in literal:
        if name != name.strip():
            raise DeviceError(f"device string {text!r}: {name!r} has white space around it, and OpenVINO looks that "
                              f"name up as written (no device is called {name!r}); write {name.strip()!r}, e.g. "
                              f"{text.replace(' ', '').replace(chr(9), '')!r}")


def parse_device_string(text: object) -> DeviceSpec:
    """Parse ``"CPU"``, ``"GPU.1"``, ``"HETERO:GPU,CPU"``, ``"AUTO"``, ``"AUTO:-NPU"``, ``"BATCH:GPU(4)"``...

    Syntax only (no core is asked). Raises DeviceError (a RuntimeError, as
    OpenVINO's own error is) for anything OpenVINO would not accept, and for
    lists OpenVINO reads silently in a way the caller surely did not mean
    (empty entries, a device named twice, a device both listed and excluded),
    naming the part that is wrong. A meta device without a list (``"AUTO"``,
    ``"HETERO"``...) has no ``devices`` here; ``device_requests`` resolves it.
    """
    if not isinstance(text, str):
        raise DeviceError(f"device_name must be a str such as 'CPU' or 'HETERO:GPU,CPU' (or omitted for OpenVINO's "
                          f"default, AUTO), got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise DeviceError("device_name is empty; expected e.g. 'CPU' or 'HETERO:GPU,CPU', or omit it for "
                          "OpenVINO's default (AUTO)")
    _check_literal_spaces(text)
    if ":" not in stripped:
        if stripped.upper() in META_DEVICES:
            if stripped != stripped.upper():
                raise DeviceError(f"meta device {stripped!r} must be upper case: {stripped.upper()!r}")
            return DeviceSpec(stripped, stripped, (), given=text)
        _check_name(stripped, text)
        return DeviceSpec(stripped, None, (stripped,), given=text)
    meta, _, rest = stripped.partition(":")
    meta_upper = meta.strip().upper()
    if meta_upper not in META_DEVICES:
        raise DeviceError(f"unknown meta device {meta!r} in {text!r}; expected one of {', '.join(META_DEVICES)} "
                          "before ':'")
    if meta != meta_upper:
        raise DeviceError(f"meta device {meta!r} in {text!r} must be upper case: {meta_upper!r}")
    if ":" in rest:
        raise DeviceError(f"device string {text!r} has more than one ':'; expected '{meta_upper}:DEV1,DEV2' (a meta "
                          "device inside another one's list is not supported)")
    devices, excluded = _parse_entries(meta_upper, rest, text)
    canonical = f"{meta_upper}:{','.join(e.strip() for e in rest.split(','))}"
    return DeviceSpec(canonical, meta_upper, devices, excluded, given=text)


def normalized_exclusions(exclude_devices: object) -> tuple[str, ...] | None:
    """``exclude_devices`` as a tuple of device names; a str is one device (or a comma-separated list).

    ``"CPUF"`` means ``("CPUF",)``, never ``('C', 'P', 'U', 'F')``; ``"GPU,NPU"`` means ``("GPU", "NPU")``, as
    in a device string. Raises DeviceError for a name that is not a str, an empty name or a name given twice.
    """
    if exclude_devices is None:
        return None
    if isinstance(exclude_devices, str):
        names = [n.strip() for n in exclude_devices.split(",")]
    elif isinstance(exclude_devices, (list, tuple, set, frozenset)):
        names = list(exclude_devices)
    else:
        raise DeviceError(f"exclude_devices must be a device name or a list of them, e.g. ['CPUF'], "
                          f"got {type(exclude_devices).__name__}")
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise DeviceError(f"exclude_devices={exclude_devices!r} holds {name!r}; expected device names such as "
                              "'CPUF' or 'GPU.1'")
    names = [n.strip() for n in names]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DeviceError(f"exclude_devices={exclude_devices!r} names {', '.join(twice)} more than once; "
                          "name each device once")
    return tuple(names)


def available_devices(core: ov.Core) -> list[str]:
    """The devices this OpenVINO core can use now (virtual devices included).

    Example::

        ov_autoplace.available_devices(ov.Core())   # e.g. ["CPU", "GPU.0", "NPU"]
    """
    return list(core.available_devices)


def _is_present(name: str, present: Sequence[str]) -> bool:
    # "GPU" is present when "GPU.0"/"GPU.1" are listed; "GPU.0" when "GPU" is the only one.
    base = name.split(".")[0]
    return name in present or any(p.split(".")[0] == base and (p == base or "." in p) for p in present)


def _index_exists(core: ov.Core, name: str, present: Sequence[str]) -> bool:
    """Whether ``"GPU.1"``'s index is one its plugin reports (the CPU plugin has only '': "CPU.0" fails).

    ``present``: the names listed for ``name``'s plugin at least (the whole list, or :func:`_listed_by_plugin`'s).
    """
    base, _, index = name.partition(".")
    if not index or name in present:
        return True
    try:
        return index in [str(i) for i in core.get_property(base, "AVAILABLE_DEVICES")]
    except RuntimeError:
        return False


def missing_devices_message(missing: Sequence[str], present: Sequence[str]) -> str:
    """'device(s) X not available; this machine has ...' with a spelling hint, the fix, and nothing else."""
    # Only a spelling slip is worth suggesting ("cpuf" for "CPUF"), not another device.
    by_upper = {p.upper(): p for p in present}
    hints = "".join(f" (did you mean {by_upper[m.upper()]!r} for {m!r}?)" for m in missing if m.upper() in by_upper)
    return (f"device(s) {', '.join(missing)} not available; this machine has {', '.join(present) or 'none'}"
            f"{hints}. Use only available devices, or register a virtual one with "
            "ov_autoplace.register_virtual_device()")


def check_devices_present(core: ov.Core, devices: Sequence[str]) -> None:
    """Raise DeviceError naming the available devices if any listed one is missing.

    Called before any compile: naming "GPU" on a machine without one would
    otherwise fail deep inside OpenVINO with an OpenCL message (a RuntimeError;
    DeviceError is one too).
    """
    named = [name for base in dict.fromkeys(d.split(".")[0] for d in devices) for name in _listed_by_plugin(core, base)]
    if all(_is_present(d, named) and _index_exists(core, d, named) for d in devices):
        return
    present = available_devices(core)  # the whole list, to name what this machine has
    missing = [d for d in devices if not _is_present(d, present) or not _index_exists(core, d, present)]
    if missing:
        raise DeviceError(missing_devices_message(missing, present))


def _listed_by_plugin(core: ov.Core, base: str) -> list[str]:
    """The names ``core.available_devices`` lists for the plugin ``base``, asked of that plugin alone. More:
    docs/architecture.md, "Module notes", device_strings.py."""
    try:
        ids = [str(i) for i in core.get_property(base, "AVAILABLE_DEVICES")]
    except RuntimeError:  # not registered, or the plugin cannot be created here
        return []
    if len(ids) > 1:
        return [f"{base}.{i}" for i in ids]
    return [base] if ids else []


def property_name(key: object) -> str:
    """A config key as OpenVINO names it: ``"PERFORMANCE_HINT"`` for itself or for ``hints.performance_mode``."""
    if isinstance(key, str):
        return key
    if callable(key):  # openvino.properties.* objects: called without a value they return their name
        try:
            name = key()
        except TypeError:
            name = None
        if isinstance(name, str):
            return name
    raise PropertyError(f"property names must be str such as 'PERFORMANCE_HINT' or openvino.properties keys such "
                        f"as openvino.properties.hint.performance_mode, got {key!r}")


def check_properties(config: object) -> dict[str, object]:
    """Validate a property dict's form; keys come back as OpenVINO's names (``device_requests`` checks values).

    Accepts what ``core.compile_model`` accepts: str keys or ``openvino.properties`` keys
    (``{hints.performance_mode: hints.PerformanceMode.LATENCY}``, ``dict([hints.performance_mode(...)])``).
    """
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise PropertyError(f"config must be a dict of OpenVINO properties, got {type(config).__name__}")
    checked: dict[str, object] = {}
    for key, value in config.items():
        name = property_name(key)
        if not name:
            raise PropertyError(f"property names must be non-empty str such as 'PERFORMANCE_HINT', got {key!r}")
        if value is None:
            raise PropertyError(f"property {name!r} has value None; give a str, int, float, bool or OpenVINO enum")
        if name in checked:
            raise PropertyError(f"property {name!r} is given twice (once as {key!r}); give it once")
        checked[name] = value
    return checked


def plugin_library(base_device: str = CPU.name) -> Path:
    """Path of the plugin library OpenVINO uses for ``base_device``."""
    import openvino

    libs = Path(openvino.__file__).parent / "libs"
    names = {k.name: k.plugin_library for k in DEVICE_KINDS}
    if base_device not in names:
        raise DeviceError(f"cannot clone device {base_device!r}; expected one of {', '.join(names)}")
    path = libs / names[base_device]
    if not path.exists():
        raise DeviceError(f"the {base_device} plugin library is not at {path}; is the openvino wheel complete?")
    return path


def register_virtual_device(
    core: ov.Core, name: str, *, base_device: str = CPU.name, properties: Mapping[str, object] | None = None
) -> str:
    """Register ``base_device``'s plugin under ``name`` on ``core`` and set its properties.

    Registering the same name again only updates the properties. Returns the name.

    Example::

        core = ov.Core()
        ov_autoplace.register_virtual_device(core, "CPUF", base_device="CPU", properties={"INFERENCE_PRECISION_HINT": "f32"})
        compiled = ov_autoplace.compile_model(model, "HETERO:CPU,CPUF", core=core)
    """
    if not isinstance(name, str) or not _VIRTUAL_NAME.match(name):
        raise DeviceError(
            f"virtual device name {name!r} is invalid: expected upper-case letters, digits or '_' and no '.' "
            "(OpenVINO reserves '.' for device indices), e.g. 'CPUF'"
        )
    if name in (base_device, *META_DEVICES):
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
    "META_DEVICES",
    "DeviceSpec",
    "available_devices",
    "check_devices_present",
    "check_properties",
    "missing_devices_message",
    "normalized_exclusions",
    "parse_device_string",
    "property_name",
    "plugin_library",
    "register_virtual_device",
]
