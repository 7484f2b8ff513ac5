"""The standard two-device testbed every test and benchmark runs on.

The rest: docs/architecture.md, "Module notes", ov_autoplace/devices/testbed.py.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Mapping

import openvino as ov

from ov_autoplace.devices.device_strings import register_virtual_device

ACCEL_DEVICE = "CPU"
HOST_DEVICE = "CPUF"


def cpu_supports_bf16(core: ov.Core | None = None) -> bool:
    """Whether the CPU plugin reports native bf16 (AVX512-BF16 or AMX)."""
    core = core or ov.Core()
    return "BF16" in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")


@dataclasses.dataclass(frozen=True)
class Testbed:
    """A core with the two testbed devices registered and configured."""

    core: ov.Core
    devices: tuple[str, ...]
    properties: Mapping[str, Mapping[str, object]]
    bf16: bool

    @property
    def hetero(self) -> str:
        """The HETERO device string over the testbed devices, in priority order."""
        return "HETERO:" + ",".join(self.devices)

    def describe(self) -> str:
        rows = [f"{d}: " + ", ".join(f"{k}={v}" for k, v in self.properties[d].items()) for d in self.devices]
        return "testbed (real execution, two configurations of the CPU plugin)\n  " + "\n  ".join(rows)


def testbed_properties(bf16: bool, *, like_for_like: bool = False) -> dict[str, dict[str, object]]:
    """Per-device properties of the testbed.

    ``like_for_like`` makes both devices f32 (threads still differ): outputs of
    any placement then match a single-device f32 reference up to summation
    order, which is what the legalizer's correctness tests need.
    """
    accel_precision = "bf16" if bf16 and not like_for_like else "f32"
    common = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1, "INFERENCE_NUM_THREADS": usable_cores()}
    return {
        ACCEL_DEVICE: {**common, "INFERENCE_PRECISION_HINT": accel_precision},
        HOST_DEVICE: {**common, "INFERENCE_PRECISION_HINT": "f32"},
    }


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask), at least 1."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def make_testbed(*, like_for_like: bool = False, core: ov.Core | None = None) -> Testbed:
    """Build a fresh core (or configure ``core``) with the testbed devices."""
    core = core or ov.Core()
    bf16 = cpu_supports_bf16(core)
    props = testbed_properties(bf16, like_for_like=like_for_like)
    core.set_property(ACCEL_DEVICE, props[ACCEL_DEVICE])
    register_virtual_device(core, HOST_DEVICE, base_device="CPU", properties=props[HOST_DEVICE])
    return Testbed(core=core, devices=(ACCEL_DEVICE, HOST_DEVICE), properties=props, bf16=bf16)


@functools.lru_cache(maxsize=2)
def shared_testbed(like_for_like: bool = False) -> Testbed:
    """One testbed per process and mode (registering plugins costs time)."""
    return make_testbed(like_for_like=like_for_like)


__all__ = ["ACCEL_DEVICE", "HOST_DEVICE", "Testbed", "cpu_supports_bf16", "make_testbed", "shared_testbed",
           "testbed_properties", "usable_cores"]
