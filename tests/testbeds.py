"""Two devices the prior can tell apart, on every machine kind: the choice the fixtures (``conftest.py``) and the
hostile probe's processes (``hostile.py``, which have no fixtures) share; and the machine's load a test states."""

from __future__ import annotations

#: CPUS: the CPU plugin on one thread. Both devices state their precision: a CPU plugin's default is bf16 on a CPU
#: with AMX and f32 elsewhere.
ONE_THREAD = {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"}
ALL_CORES = {"INFERENCE_NUM_THREADS": 2, "INFERENCE_PRECISION_HINT": "f32"}


def one_thread_core():
    """A fresh core with CPUS registered (the CPU plugin on one thread) beside CPU (two threads), both f32."""
    import openvino as ov

    from ov_autoplace.devices.device_strings import register_virtual_device

    core = ov.Core()
    core.set_property("CPU", dict(ALL_CORES))
    register_virtual_device(core, "CPUS", base_device="CPU", properties=ONE_THREAD)
    return core


def distinct_devices():
    """``(core, devices, setup)``: the testbed's CPU (bf16) and CPUF (f32) where the CPU has bf16; where it has not,
    both are the same f32 device and a first start compiles on the first one without touching the cache, so the
    second device is CPUS instead (``setup``: each device's properties, for a Testbed)."""
    from ov_autoplace.devices.facts import identical_devices
    from ov_autoplace.devices.testbed import shared_testbed

    standard = shared_testbed(False)
    if not identical_devices(standard.core, standard.devices):
        return standard.core, tuple(standard.devices), None
    core = one_thread_core()
    assert not identical_devices(core, ("CPU", "CPUS"))
    return core, ("CPU", "CPUS"), {"CPU": dict(ALL_CORES), "CPUS": dict(ONE_THREAD)}


def stated_load(monkeypatch, other_cores: float) -> None:
    """The machine's load as a verification reads it (``verification.LoadProbe``, over its compiles and rounds):
    ``other_cores`` of this process's cores kept busy by other processes, whatever the host's own load."""
    from ov_autoplace.decision import verification

    class Probe:
        def start(self):
            return self

        def other_cores(self):
            return other_cores
    monkeypatch.setattr(verification, "LoadProbe", Probe)
