"""The devices a command places over, for every device string OpenVINO takes (the CLI, compare, notes).

``parse_device_string("AUTO").devices`` is empty: a bare ``AUTO`` (or ``HETERO``
with ``MULTI_DEVICE_PRIORITIES``) names its devices only once the core is
asked. :func:`placement_target` asks it through
``device_requests.resolve_device_request`` (OpenVINO's meaning, the same as
``compile_model``) and returns what :func:`ov_autoplace.place` takes.
"""

from __future__ import annotations

from typing import Any, Mapping

import openvino as ov

from ov_autoplace.devices.call_forms import resolve_device_request
from ov_autoplace.devices.device_strings import DeviceSpec


def placement_target(core: ov.Core, device: str | None, config: Mapping[str, Any] | None = None
                     ) -> tuple[str | None, DeviceSpec]:
    """(what ``place`` takes, the resolved spec) for ``device`` on ``core``. More: docs/architecture.md, "Module notes",
    targets.py."""
    spec, _ = resolve_device_request(core, device, dict(config or {}))
    if device is None:
        return None, spec
    if spec.meta == "HETERO" and spec.passed_through is None:
        return spec.hetero_string if len(spec.devices) > 1 else spec.devices[0], spec
    if len(spec.devices) == 1:
        return spec.devices[0], spec
    return spec.hetero_string, spec


def target_devices(core: ov.Core, device: str | None, config: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The devices ``device`` places over on ``core`` (``AUTO`` -> the candidates AUTO chooses among)."""
    return placement_target(core, device, config)[1].devices


__all__ = ["placement_target", "target_devices"]
