"""Device properties as values: what the background worker sets must be what the app read.

Why values are stored as JSON that names them, and the model's runtime options on each device: docs/architecture.md,
"Module notes", ov_autoplace/devices/properties.py.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Mapping, Sequence

import openvino as ov

from ov_autoplace.devices.device_strings import property_name
from ov_autoplace.devices.kinds import kind_of


def encode_property(value: Any) -> Any:
    """A property value as JSON the worker turns back into the same OpenVINO value (TypeError if it cannot)."""
    if isinstance(value, ov.Type):
        return {"ov_type": value.get_type_name()}  # "bf16", "f32"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    kind = type(value)
    members = getattr(kind, "__members__", None)
    if kind.__module__.startswith("openvino") and members and members.get(getattr(value, "name", None)) == value:
        return {"ov_enum": f"{kind.__module__}.{kind.__qualname__}", "name": value.name}
    raise TypeError(f"{type(value).__name__} value {value!r} has no stored form")


def decode_property(data: Any) -> Any:
    """The OpenVINO value :func:`encode_property` stored (ValueError for anything else)."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, dict) and set(data) == {"ov_type"}:
        value = getattr(ov.Type, str(data["ov_type"]), None)
        if isinstance(value, ov.Type):
            return value
    if isinstance(data, dict) and set(data) == {"ov_enum", "name"} and str(data["ov_enum"]).startswith("openvino."):
        obj: Any = importlib.import_module("openvino")
        for part in str(data["ov_enum"]).split(".")[1:]:  # attributes, not imports: pybind submodules
            obj = getattr(obj, part, None)
        members = getattr(obj, "__members__", None)
        if members and data["name"] in members:
            return members[data["name"]]
    raise ValueError(f"not a stored property value: {data!r}")


def model_runtime_options(model: ov.Model) -> dict[str, str]:
    """``{property: value text}`` of ``model``'s ``runtime_options``, {} without them."""
    try:
        if model.has_rt_info(["runtime_options"]):
            return {str(k): v.astype(str) for k, v in model.get_rt_info(["runtime_options"]).astype(dict).items()}
    except (RuntimeError, TypeError, AttributeError):  # not a map: no plugin reads it either
        pass
    return {}


@functools.lru_cache(maxsize=None)
def _plugin_default(device: str, key: str) -> str | None:
    """``key`` on a fresh core (a virtual ``CPUF``: its kind's plugin)."""
    core, kind = ov.Core(), kind_of(device)
    try:
        return str(core.get_property(device if device in core.available_devices or not kind else kind.name, key))
    except RuntimeError:
        return None


def with_runtime_options(core: ov.Core, model: ov.Model, devices: Sequence[str],
                         props: Mapping[str, Any] | None) -> dict[str, Any]:
    """``props`` with ``DEVICE_PROPERTIES`` giving each of ``devices`` the model's runtime options it supports, but
    not a key the call sets or the core holds off the plugin's default (the plugin keeps those too)."""
    props, options = dict(props or {}), model_runtime_options(model)
    given = props.get("DEVICE_PROPERTIES") or {}
    if not options or not isinstance(given, Mapping):  # a section as text: OpenVINO parses it, left as given
        return props
    per_device = {str(d): {property_name(k): v for k, v in dict(s).items()} for d, s in given.items()}
    top = {property_name(k) for k in props}
    for device in devices:
        try:
            writable = {str(k) for k, mode in core.get_property(device, "SUPPORTED_PROPERTIES").items()
                        if str(mode) == "RW"}
            own = per_device.setdefault(device, {})
            for key, value in options.items():
                if key in writable and key not in top and key not in own and \
                        str(core.get_property(device, key)) == _plugin_default(device, key):
                    own[key] = value
        except RuntimeError:  # a device that cannot say: it gets nothing, as from plain HETERO
            continue
    if any(per_device.values()):
        props["DEVICE_PROPERTIES"] = {d: s for d, s in per_device.items() if s}
    return props


__all__ = ["decode_property", "encode_property", "model_runtime_options", "with_runtime_options"]
