"""What a device reports about itself, read without compiling anything (the prior's inputs).

Kept apart from ``costmodel/prior_costs.py`` on purpose: deciding that the devices are
indistinguishable (the first start's fast path) needs only these few property
reads, not the simulated device models, numpy or the graph.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from ov_autoplace.devices.kinds import MEMORY_PROPERTIES, kind_of, kind_of_plugin

#: Properties a device reports about itself that the prior reads (:class:`DeviceFacts`).
FACT_PROPERTIES = ("DEVICE_TYPE", "DEVICE_ARCHITECTURE", "OPTIMIZATION_CAPABILITIES", "DEVICE_GOPS",
                   *MEMORY_PROPERTIES, "FULL_DEVICE_NAME", "INFERENCE_PRECISION_HINT",
                   "INFERENCE_NUM_THREADS")


def identical_devices(core: Any, devices: Sequence[str]) -> bool:
    """Whether every device reports the same facts, read as plain values (the first start's whole fast path).

    The same test as :func:`indistinguishable`, on the same reads (:func:`_reported`), without building
    DeviceFacts.
    """
    signatures = set()
    for device in devices:
        values = [None if v is None else str(v) for v in _reported(core, device).values()]
        try:
            values.append(core.get_versions(device)[device].description)
        except Exception:  # noqa: BLE001
            values.append(None)
        if not any(v for v in values[:-1]):
            return False  # knows nothing: not "identical"
        signatures.add(tuple(values))
    return len(signatures) == 1

_PRECISION_NAMES = {"f32": "f32", "float32": "f32", "f16": "f16", "float16": "f16", "bf16": "bf16",
                    "bfloat16": "bf16", "i8": "int8", "u8": "int8", "int8": "int8"}


@dataclasses.dataclass(frozen=True)
class DeviceFacts:
    """What a device reports about itself (None / empty where it reports nothing)."""

    name: str
    plugin: str | None
    device_type: str | None
    architecture: str | None
    full_name: str | None
    capabilities: tuple[str, ...]
    gops: tuple[tuple[str, float], ...]  # (precision, GOPS) pairs from DEVICE_GOPS
    memory_bytes: float | None
    precision: str | None  # f32 / f16 / bf16 / int8, from INFERENCE_PRECISION_HINT
    threads: int | None

    @property
    def kind(self) -> str | None:
        """cpu / gpu / npu from the plugin or the device name (a virtual device keeps its plugin's kind)."""
        found = kind_of_plugin(self.plugin or "") or kind_of(self.name)
        return found.kind if found is not None else None

    @property
    def reported(self) -> bool:
        """Whether the device reported anything the prior can use."""
        return any((self.device_type, self.architecture, self.full_name, self.capabilities, self.gops,
                    self.memory_bytes, self.precision))

    def signature(self) -> tuple[Any, ...]:
        """Everything but the name: devices with equal signatures are the same device to the prior."""
        return dataclasses.astuple(dataclasses.replace(self, name=""))


def _get(core: Any, device: str, prop: str) -> Any:
    try:
        return core.get_property(device, prop)
    except Exception:  # noqa: BLE001 - a plugin that lacks the property reports nothing for it
        return None


def _reported(core: Any, device: str) -> dict[str, Any]:
    """:data:`FACT_PROPERTIES` of ``device`` as OpenVINO returns them; None where not listed as supported or refused.

    Only the listed ones are asked for: a refused read is a C++ exception carried into Python (30-170 us each,
    on every start, through :func:`identical_devices`).
    """
    try:
        supported = {str(p) for p in core.get_property(device, "SUPPORTED_PROPERTIES")}
    except Exception:  # noqa: BLE001 - then ask for each one and take what answers
        supported = set(FACT_PROPERTIES)
    return {p: (_get(core, device, p) if p in supported else None) for p in FACT_PROPERTIES}


def read_device_facts(core: Any, device: str) -> DeviceFacts:
    """Read :data:`FACT_PROPERTIES` of ``device`` (each one that fails is None)."""
    values = _reported(core, device)
    try:
        plugin = core.get_versions(device)[device].description
    except Exception:  # noqa: BLE001
        plugin = None
    gops = values["DEVICE_GOPS"]
    gops_pairs = tuple(sorted((_precision_name(k) or str(k), float(v)) for k, v in gops.items())) \
        if isinstance(gops, dict) else ()
    caps = values["OPTIMIZATION_CAPABILITIES"]
    memory = next((values[p] for p in MEMORY_PROPERTIES if values[p]), None)
    threads = values["INFERENCE_NUM_THREADS"]
    return DeviceFacts(
        name=device, plugin=plugin,
        device_type=str(values["DEVICE_TYPE"]) if values["DEVICE_TYPE"] is not None else None,
        architecture=str(values["DEVICE_ARCHITECTURE"]) if values["DEVICE_ARCHITECTURE"] else None,
        full_name=str(values["FULL_DEVICE_NAME"]) if values["FULL_DEVICE_NAME"] else None,
        capabilities=tuple(str(c) for c in caps) if caps else (),
        gops=gops_pairs,
        memory_bytes=float(memory) if memory else None,
        precision=_precision_name(values["INFERENCE_PRECISION_HINT"]),
        threads=int(threads) if isinstance(threads, int) and threads > 0 else None,
    )


def _precision_name(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).lower().replace("<type: '", "").replace("'>", "").strip()
    return _PRECISION_NAMES.get(text)


def indistinguishable(facts: Sequence[DeviceFacts]) -> bool:
    """Whether every device reported the same facts (then no split can be predicted faster)."""
    return len({f.signature() for f in facts}) == 1 and all(f.reported for f in facts)



def twin_of(core: Any, devices: Sequence[str]) -> dict[int, int]:
    """``{d: t}`` for each device ``d`` that reports the same facts as an earlier device ``t`` (both reporting
    some): one device under two names as far as anything but a timing can tell, so timing one against the other
    measures only noise (the quick profile copies ``t``'s costs, the verification does not time ``d``)."""
    seen: dict[tuple, int] = {}
    twins = {}
    for d, device in enumerate(devices):
        facts = read_device_facts(core, device)
        if facts.reported:
            twins[d] = seen.setdefault(facts.signature(), d)
    return {d: t for d, t in twins.items() if d != t}


__all__ = ["DeviceFacts", "FACT_PROPERTIES", "identical_devices", "indistinguishable", "read_device_facts",
           "twin_of"]
