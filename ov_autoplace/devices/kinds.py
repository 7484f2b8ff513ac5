"""The kinds of device OpenVINO serves, in one table: what every other module knows about CPU, GPU and NPU.

Adding a device kind (a new accelerator plugin) is one row here. A device name maps to its kind by its base name
(``"GPU.1"`` -> GPU; a virtual device such as ``"CPUF"`` keeps its prefix's kind, as AUTO classifies it) or, more
reliably, by the plugin that serves it (``core.get_versions(name)[name].description``).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class DeviceKind:
    """One kind of device and what the runtime relies on about it."""

    name: str  # the base device name OpenVINO lists: "CPU", "GPU", "NPU"
    kind: str  # the cost models' name of the kind: "cpu", "gpu", "npu"
    plugin_library: str  # the plugin's shared library (register_virtual_device registers it under another name)
    plugin_tag: str  # what the plugin's version description contains ("openvino_intel_cpu_plugin")
    auto_candidate: bool  # AUTO chooses it without being told to (its device_block_list leaves NPU out)
    default_precision: str  # the inference precision when the device reports no INFERENCE_PRECISION_HINT
    memory_property: str | None  # the property that reports its memory in bytes, if any
    dynamic_shapes: bool  # compiles models with dynamic dimensions


CPU = DeviceKind("CPU", "cpu", "libopenvino_intel_cpu_plugin.so", "intel_cpu", True, "f32", None, True)
GPU = DeviceKind("GPU", "gpu", "libopenvino_intel_gpu_plugin.so", "intel_gpu", True, "f16",
                 "GPU_DEVICE_TOTAL_MEM_SIZE", True)
NPU = DeviceKind("NPU", "npu", "libopenvino_intel_npu_plugin.so", "intel_npu", False, "f16",
                 "NPU_DEVICE_TOTAL_MEM_SIZE", False)
DEVICE_KINDS = (CPU, GPU, NPU)
#: The cost models' kind names, in table order.
KIND_NAMES = tuple(k.kind for k in DEVICE_KINDS)
#: The properties that report a device's memory, one per kind that has one.
MEMORY_PROPERTIES = tuple(k.memory_property for k in DEVICE_KINDS if k.memory_property)


def kind_of(device: str) -> DeviceKind | None:
    """The kind of a device name by its base name's prefix (``"GPU.1"``, ``"CPUF"``), None when none matches."""
    base = device.split(".")[0].upper()
    return next((k for k in DEVICE_KINDS if base.startswith(k.name)), None)


def kind_of_plugin(description: str) -> DeviceKind | None:
    """The kind a plugin serves, from its version description (``"openvino_intel_gpu_plugin"``), or None."""
    return next((k for k in DEVICE_KINDS if k.plugin_tag in description), None)


def kind_named(kind: str) -> DeviceKind | None:
    """The row of a cost-model kind name (``"npu"``), or None."""
    return next((k for k in DEVICE_KINDS if k.kind == kind), None)


__all__ = ["CPU", "DEVICE_KINDS", "DeviceKind", "GPU", "KIND_NAMES", "MEMORY_PROPERTIES", "NPU", "kind_named",
           "kind_of", "kind_of_plugin"]
