"""What the measured testbed can and cannot show, said next to its numbers.

On a CPU without bf16 the testbed's ``CPU`` and ``CPUF`` are the same f32
device under two names, so any difference between them (and any "speed-up" of
a placement over the best of them) is timing noise. Real heterogeneity then
exists only on the simulated platforms: :func:`simulated_headroom_lines` gives
a model's headroom there, every number labelled simulated.
"""

from __future__ import annotations

import openvino as ov

from ov_autoplace.devices.targets import target_devices
from ov_autoplace.devices.device_strings import parse_device_string
from ov_autoplace.devices.testbed import ACCEL_DEVICE, HOST_DEVICE, cpu_supports_bf16

SAME_DEVICE_NOTE = (f"{ACCEL_DEVICE} and {HOST_DEVICE} are the same f32 device on this machine (the CPU has no bf16): "
                    "a difference between them, or a speed-up of a placement over either, is timing noise, "
                    "not a placement gain")


def same_device_note(device_string: str, core: ov.Core | None = None) -> str | None:
    """``SAME_DEVICE_NOTE`` when ``device_string`` places on both testbed devices and the CPU lacks bf16."""
    try:  # a bare "AUTO" lists no devices until a core is asked (devices/targets.py)
        devices = set(target_devices(core, device_string) if core is not None
                      else parse_device_string(device_string).devices)
    except Exception:  # noqa: BLE001 - a note must never break the command that prints it
        return None
    if {ACCEL_DEVICE, HOST_DEVICE} <= devices and not cpu_supports_bf16(core):
        return SAME_DEVICE_NOTE
    return None


def simulated_headroom_lines(model_name: str, graph, *, platforms: tuple[str, ...] | None = None,
                             milp_seconds: float = 5.0) -> list[str]:
    """One line per suite platform: best single device, optimum and HSDAG one pass, all SIMULATED."""
    from ov_autoplace_lab.paper_bench.headroom import headroom_row
    from ov_autoplace.costmodel.suite import load_suite

    suite = load_suite()
    lines = [f"headroom of {model_name} on the simulated platforms (SIMULATED: batch-1 device model fitted to "
             "published OpenVINO latencies; not measured here):"]
    for name in platforms or tuple(suite):
        row = headroom_row(suite[name], model_name, graph, finetune_budget=0, milp_seconds=milp_seconds,
                           methods=("Optimum (MILP)", "HSDAG (pretrained, one pass)"))
        best = row["best_single_device_ms"]
        single = "no single device fits" if best is None else f"best single {row['best_single_device']} {best:.2f} ms"
        opt, hsdag = row.get("optimum_ms"), row.get("hsdag_ms")
        gain = "" if best is None or opt is None else f", split gain {best / opt:.2f}x"
        exact = "" if row.get("optimum_exact") else f" (best found in {milp_seconds:g} s)"
        lines.append(f"  {name:<13} {single}; optimum {'—' if opt is None else f'{opt:.2f}'} ms{exact} on "
                     f"{'+'.join(row.get('optimum_devices') or [])}{gain}; HSDAG one pass "
                     f"{'—' if hsdag is None else f'{hsdag:.2f}'} ms")
    return lines


__all__ = ["SAME_DEVICE_NOTE", "same_device_note", "simulated_headroom_lines"]
