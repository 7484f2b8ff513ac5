"""What a call's device argument and config mean on this core, resolved before anything is compiled.

The rest: docs/architecture.md, "Module notes", ov_autoplace/devices/call_forms.py.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import openvino as ov

from ov_autoplace.devices.device_strings import DeviceSpec, available_devices, check_devices_present, parse_device_string
from ov_autoplace.devices.kinds import CPU, DEVICE_KINDS, GPU, kind_of
from ov_autoplace.errors import DeviceError, PropertyError

logger = logging.getLogger("ov_autoplace")

PRIORITIES = "MULTI_DEVICE_PRIORITIES"
DISTRIBUTION_POLICY = "MODEL_DISTRIBUTION_POLICY"
#: Devices AUTO never picks unless they are named (its device_block_list).
AUTO_BLOCKED = tuple(k.name for k in DEVICE_KINDS if not k.auto_candidate)
#: Properties the core itself reads (not listed in any plugin's SUPPORTED_PROPERTIES).
CORE_PROPERTIES = ("CACHE_DIR", "CACHE_MODE", "CACHE_ENCRYPTION_CALLBACKS", "ENABLE_MMAP", "FORCE_TBB_TERMINATE",
                   "ALLOW_AUTO_BATCHING", "AUTO_BATCH_TIMEOUT", "DEVICE_PROPERTIES", "WEIGHTS_PATH", "COMPILED_BLOB")


def _text(value: Any) -> str:
    """A property value as text (``dict([device.priorities(...)])`` holds an OVAny)."""
    return str(getattr(value, "value", value))


def _supported(core: ov.Core, device: str) -> set[str]:
    try:
        return {str(p) for p in core.get_property(device, "SUPPORTED_PROPERTIES")}
    except RuntimeError:
        return set()


def auto_candidates(core: ov.Core, present: list[str] | None = None) -> tuple[str, ...]:
    """The devices AUTO chooses among by default, in its order: discrete GPU, integrated GPU, others, CPU.

    The order and the exclusions are AUTO's (src/plugins/auto: get_valid_device, device_block_list): NPU
    and non-Intel GPUs only when named; CPU-type names (``CPU``, a virtual ``CPUF``) last, in core order.
    """
    present = available_devices(core) if present is None else present
    discrete, integrated, others, cpus = [], [], [], []
    for device in present:
        base = device.split(".")[0]
        if base in AUTO_BLOCKED:
            continue
        kind = kind_of(device)
        if kind is CPU:
            cpus.append(device)
        elif kind is GPU:
            try:
                if "vendor=0x8086" not in str(core.get_property(device, "DEVICE_ARCHITECTURE")):
                    continue
                memory = str(core.get_property(device, "DEVICE_TYPE")).upper()
            except RuntimeError:
                memory = ""
            (discrete if "DISCRETE" in memory else integrated).append(device)
        else:
            others.append(device)
    return tuple(discrete + integrated + others + cpus)


def openvino_auto_excludes(device: str, excluded: tuple[str, ...]) -> bool:
    """AUTO's own exclusion test: ``device`` (without its index) is part of some ``"-X"``.

    This is wider than the name: ``-CPUF`` excludes ``CPU`` too (intended so that ``-GPU`` drops ``GPU.0``).
    """
    for name in excluded:
        item = f"-{name}"
        probe = device.split(".")[0] if "." in device and "." not in item else device
        if probe in item:
            return True
    return False


def _auto_only_properties(core: ov.Core, devices: tuple[str, ...]) -> set[str]:
    """Properties AUTO takes that none of ``devices`` does (``ENABLE_STARTUP_FALLBACK``, ``SCHEDULE_POLICY``...)."""
    device_props = set().union(*(_supported(core, d) for d in devices)) if devices else set()
    return _supported(core, "AUTO") - device_props - {"SUPPORTED_PROPERTIES", "FULL_DEVICE_NAME"}


def _default_request(core: ov.Core, props: dict[str, Any]) -> tuple[DeviceSpec, dict[str, Any]]:
    present = available_devices(core)
    candidates = auto_candidates(core, present)
    if not candidates:
        raise DeviceError(f"no device given and AUTO (OpenVINO's default) has no device to choose: this machine has "
                          f"{', '.join(present) or 'none'} (AUTO uses NPU only when named); name one, e.g. "
                          f"{present[0] if present else 'CPU'!r}")
    auto_only = _auto_only_properties(core, candidates) if props else set()
    auto_keys = sorted(k for k in props if k in auto_only)
    if "CUMULATIVE_THROUGHPUT" in _text(props.get("PERFORMANCE_HINT", "")).upper():
        auto_keys.append("PERFORMANCE_HINT=CUMULATIVE_THROUGHPUT")
    if auto_keys:
        logger.info("no device given and config holds AUTO's own %s: compiled by AUTO, as core.compile_model "
                    "does (not placed)", ", ".join(auto_keys))
        return DeviceSpec("AUTO", "AUTO", candidates, from_default=True), props
    props = _as_auto_hands_it(core, candidates, props)
    if len(candidates) == 1:  # a CPU-only machine: core.compile_model(model, "CPU", config as AUTO hands it)
        return DeviceSpec("AUTO", None, candidates, plain=candidates[0], from_default=True), props
    return DeviceSpec("AUTO", "HETERO", candidates, from_default=True), props


def _as_auto_hands_it(core: ov.Core, candidates: tuple[str, ...], props: dict[str, Any]) -> dict[str, Any]:
    """The config AUTO hands the device it picks: without the keys none of AUTO, its candidates or the core knows
    (AUTO compiles ``{"NOT_A_PROPERTY": 1}``, the CPU plugin alone rejects it), and with AUTO's performance hint
    when the config has none (AUTO's own property, LATENCY unless set on AUTO or on the whole core: a hint the app
    set on ``CPU`` alone does not reach a device AUTO picks)."""
    known = set(CORE_PROPERTIES) | _supported(core, "AUTO")
    for device in candidates:
        known |= _supported(core, device)
    ignored = [k for k in props if k not in known]
    if ignored:
        logger.info("no device given: AUTO (OpenVINO's default) ignores %s (none of %s knows it); so does "
                    "ov_autoplace", ", ".join(ignored), ", ".join(candidates))
    handed = {k: v for k, v in props.items() if k not in ignored}
    if "PERFORMANCE_HINT" not in handed:
        try:
            handed["PERFORMANCE_HINT"] = core.get_property("AUTO", "PERFORMANCE_HINT")
        except RuntimeError:  # no AUTO plugin in this installation: nothing to hand on
            pass
    return handed


def _list_from_config(spec: DeviceSpec, props: dict[str, Any]) -> DeviceSpec:
    """``"HETERO"`` / ``"MULTI"`` / ``"AUTO"`` / ``"BATCH"`` with their devices in ``MULTI_DEVICE_PRIORITIES``."""
    # openvino.properties.device.priorities("CPU", "GPU") writes "CPU,GPU," (a trailing comma)
    listed = parse_device_string(f"{spec.meta}:{_text(props[PRIORITIES]).strip().rstrip(',')}")
    return DeviceSpec(listed.text, listed.meta, listed.devices, listed.excluded, given=spec.given)


def _hetero(core: ov.Core, spec: DeviceSpec, props: dict[str, Any]) -> tuple[DeviceSpec, dict[str, Any]]:
    if PRIORITIES in props:
        from_config = _list_from_config(spec, props)
        if spec.devices and from_config.devices != spec.devices:
            raise DeviceError(f"{spec.given!r} and config {PRIORITIES}={_text(props[PRIORITIES])!r} name different "
                              f"devices; give them once (OpenVINO: 'Device priority / ID mismatch')")
        spec = from_config
        props = {k: v for k, v in props.items() if k != PRIORITIES}  # now in the device string
    if not spec.devices:
        raise DeviceError(f"'HETERO' needs its devices: 'HETERO:GPU,CPU' or config {{'{PRIORITIES}': 'GPU,CPU'}}; "
                          f"this machine has {', '.join(available_devices(core))}")
    check_devices_present(core, spec.devices)
    props = _without_keys_hetero_ignores(core, spec.devices, props)
    if "PIPELINE_PARALLEL" in _text(props.get(DISTRIBUTION_POLICY, "")).upper():
        logger.info("%s=PIPELINE_PARALLEL: HETERO's own memory-based split over %s, compiled as given (not placed)",
                    DISTRIBUTION_POLICY, ", ".join(spec.devices))
        spec = DeviceSpec(spec.hetero_string, "HETERO", spec.devices, given=spec.given,
                          passed_through="PIPELINE_PARALLEL")
    else:
        spec = DeviceSpec(spec.hetero_string, "HETERO", spec.devices, given=spec.given)
    return spec, props


def _without_keys_hetero_ignores(core: ov.Core, devices: tuple[str, ...], props: dict[str, Any]) -> dict[str, Any]:
    """Drop the keys HETERO drops: known to none of its devices, to HETERO or to the core.

    HETERO hands each device only the keys it supports, so ``{"NOT_A_PROPERTY": 1}`` compiles there; a
    placement that ends on one device compiles that device alone, which would reject the key.
    """
    known = set(CORE_PROPERTIES) | _supported(core, "HETERO")
    for device in devices:
        known |= _supported(core, device)
    ignored = [k for k in props if k not in known]
    if ignored:
        logger.info("HETERO ignores %s (none of %s knows it); so does ov_autoplace", ", ".join(ignored),
                    ", ".join(devices))
    return {k: v for k, v in props.items() if k not in ignored}


def _auto_or_multi(core: ov.Core, spec: DeviceSpec, props: dict[str, Any]) -> DeviceSpec:
    if PRIORITIES in props and not spec.devices and not spec.excluded:
        listed = _list_from_config(spec, props)  # checked like a list in the string; the call keeps the config
        spec = DeviceSpec(spec.text, spec.meta, listed.devices, listed.excluded, given=spec.given)
    if spec.devices:
        check_devices_present(core, spec.devices)
        return spec
    if spec.meta == "MULTI":
        raise DeviceError(f"'MULTI' needs its devices: 'MULTI:GPU,CPU' or config {{'{PRIORITIES}': 'GPU,CPU'}}; "
                          f"this machine has {', '.join(available_devices(core))}")
    candidates = auto_candidates(core)
    left = tuple(d for d in candidates if d not in spec.excluded)
    if not left:
        raise DeviceError(f"{spec.given!r} excludes every device AUTO can choose ({', '.join(candidates) or 'none'}; "
                          f"this machine has {', '.join(available_devices(core))}); exclude fewer devices")
    widened = tuple(d for d in left if openvino_auto_excludes(d, spec.excluded))
    if widened:  # OpenVINO would also drop these: keep the caller's meaning with an explicit list
        explicit = f"AUTO:{','.join(left)}"
        logger.info("%r: OpenVINO's AUTO would also exclude %s (any device whose name is part of an excluded "
                    "name); compiling %r instead", spec.given, ", ".join(widened), explicit)
        return DeviceSpec(spec.text, "AUTO", left, spec.excluded, given=spec.given, plain=explicit)
    return DeviceSpec(spec.text, "AUTO", left, spec.excluded, given=spec.given)


def _batch(core: ov.Core, spec: DeviceSpec, props: dict[str, Any]) -> DeviceSpec:
    if not spec.devices and PRIORITIES in props:
        listed = _list_from_config(spec, props)
        spec = DeviceSpec(spec.text, "BATCH", listed.devices, given=spec.given)
    if not spec.devices:
        raise DeviceError(f"'BATCH' needs its device: 'BATCH:GPU(4)' or config {{'{PRIORITIES}': 'GPU(4)'}}; "
                          f"this machine has {', '.join(available_devices(core))}")
    check_devices_present(core, [d for d in spec.devices if d not in ("AUTO", "MULTI", "HETERO", "BATCH")])
    return spec


def resolve_device_request(core: ov.Core, device_name: str | None, props: dict[str, Any]
                           ) -> tuple[DeviceSpec, dict[str, Any]]:
    """The DeviceSpec with OpenVINO's meaning of ``device_name`` + ``props`` on ``core``, and the props to use.

    ``device_name=None`` is OpenVINO's default (AUTO, see the module docstring). Raises DeviceError before
    any compile for a malformed string, a device this machine does not have, or a list that leaves no device;
    every message names the devices this machine has.
    """
    try:
        return _resolve(core, device_name, props)
    except DeviceError as exc:
        if "this machine has" in str(exc):
            raise
        raise type(exc)(f"{exc}; this machine has {', '.join(available_devices(core)) or 'no device'}") from None


def _resolve(core: ov.Core, device_name: str | None, props: dict[str, Any]) -> tuple[DeviceSpec, dict[str, Any]]:
    if device_name is None:
        return _default_request(core, props)
    spec = parse_device_string(device_name)
    if spec.meta is None:
        check_devices_present(core, spec.devices)
        return spec, props
    if spec.meta == "HETERO":
        return _hetero(core, spec, props)
    if spec.meta == "BATCH":
        return _batch(core, spec, props), props
    return _auto_or_multi(core, spec, props), props


@functools.lru_cache(maxsize=1)
def _probe_model() -> ov.Model:
    """The smallest model a plugin parses a config for (query_model reads the config as compile_model does)."""
    import openvino.opset13 as ops

    x = ops.parameter([1, 4], ov.Type.f32, name="probe")
    return ov.Model([ops.relu(x)], [x], "property_probe")


#: (core, HETERO string, config) triples whose config the plugins already read in this process.
_READ_CONFIGS: set[tuple[int, str, str]] = set()


def check_property_values(core: ov.Core, spec: DeviceSpec, props: dict[str, Any]) -> None:
    """For a placement request, let the plugins read ``props`` now: a bad value is a PropertyError before any compile.

    ``{"PERFORMANCE_HINT": 3.5}`` or ``{"NUM_STREAMS": "x"}`` would otherwise reach the placement machinery,
    fail there and fall back. A probe costs one query_model of a one-op model (~20-30 ms on the 2-core CI
    machine), once per process and config. Calls that are not placed need no probe: :func:`compile_as_openvino`
    types the error OpenVINO raises.
    """
    if not props or not spec.is_placement:
        return
    key = (id(core), spec.hetero_string, repr(sorted(props.items(), key=str)))
    if key not in _READ_CONFIGS:
        _probe(core, spec, props, spec.hetero_string)
        if len(_READ_CONFIGS) > 256:  # a process that tries many configs re-reads them rather than growing
            _READ_CONFIGS.clear()
        _READ_CONFIGS.add(key)


def compile_as_openvino(core: ov.Core, model: ov.Model, spec: DeviceSpec, device: str, props: dict[str, Any]):
    """``core.compile_model(model, device, props)`` as OpenVINO does it (no probe, nothing added).

    When it raises and a single device or HETERO rejected the config, the error is a PropertyError (still a
    RuntimeError) with OpenVINO's words; anything else (and AUTO/MULTI/BATCH, which read their config in their
    own way) is OpenVINO's RuntimeError unchanged.
    """
    try:
        return core.compile_model(model, device, props)
    except RuntimeError:
        if props and spec.meta in (None, "HETERO"):
            _probe(core, spec, props, device)
        raise


def _probe(core: ov.Core, spec: DeviceSpec, props: dict[str, Any], target: str) -> None:
    """Raise PropertyError if ``target`` rejects ``props`` but takes the probe model without them."""
    try:
        core.query_model(_probe_model(), target, props)
    except RuntimeError as exc:
        try:
            core.query_model(_probe_model(), target, {})
        except RuntimeError:
            return  # the device cannot take even the probe without a config: not the config's fault
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        reason = lines[-1].rstrip(".") if lines else type(exc).__name__
        if spec.from_default:
            target = f"{target} (no device given: the devices OpenVINO's default, AUTO, chooses among)"
        raise PropertyError(f"config {props!r} is rejected by {target}: {reason}. Give each property a value "
                            "OpenVINO accepts (e.g. 'PERFORMANCE_HINT': 'LATENCY'), or leave it out") from None


__all__ = ["auto_candidates", "check_property_values", "compile_as_openvino", "openvino_auto_excludes",
           "resolve_device_request"]
