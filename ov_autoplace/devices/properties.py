"""Device properties as values: what the background worker sets must be what the app read.

``core.get_property`` returns OpenVINO objects (``ov.Type``, enums such as
``PerformanceMode``); their ``str()`` (``"<Type: 'bfloat16'>"``) is not a value
``set_property`` understands: set on a CPU plugin not yet loaded it was
accepted and left every property ``<unsupported>``, and the worker never
measured on the testbed. So a value is stored as JSON that names it
(``{"ov_type": "bf16"}``, ``{"ov_enum": "openvino._pyopenvino.properties.hint.PerformanceMode", "name":
"LATENCY"}``, or a plain number/string/bool) and turned back into the same
object; anything else is refused rather than stringified.
"""

from __future__ import annotations

import importlib
from typing import Any


def encode_property(value: Any) -> Any:
    """A property value as JSON the worker turns back into the same OpenVINO value (TypeError if it cannot)."""
    import openvino as ov

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
    import openvino as ov

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


__all__ = ["decode_property", "encode_property"]
