"""Measurement noise of a profile: per-op spreads, and whether the machine was loaded while it was taken.

More: docs/architecture.md, "Module notes", noise.py.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
from typing import Sequence

import numpy as np

logger = logging.getLogger(__name__)

#: Other processes' average busy cores (on this process's cores) above which a window is loaded.
LOADED_OTHER_CORES = 0.5
#: End-to-end IQR over median above which a window is loaded.
LOADED_RELATIVE_SPREAD = 0.25
#: Shortest window over which the CPU counters are read (the kernel counts in 10 ms ticks).
MIN_LOAD_WINDOW_S = 0.25
#: Relative spread assumed for every op and device of a profile stored without spreads.
UNKNOWN_RELATIVE_SPREAD = 0.05


def iqr(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """Interquartile range along ``axis`` (0 with fewer than two values)."""
    values = np.asarray(values, np.float64)
    if values.shape[axis] < 2:
        return np.zeros(np.delete(values.shape, axis))
    q25, q75 = np.percentile(values, [25, 75], axis=axis)
    return np.maximum(q75 - q25, 0.0)


def per_run_node_ms(before: dict[str, float], snapshots: Sequence[dict[str, float]], runs_before: int,
                    running_average: bool) -> list[dict[str, float]]:
    """Each profiled run's time per runtime node (ms) from the ``profiling_info`` read after every run.

    ``before`` was read after ``runs_before`` runs since compile (``{}`` when 0), ``snapshots[j]`` after
    the next run each. With running averages run ``k``'s time is ``k * avg_k - (k - 1) * avg_(k-1)``
    (negative values from the rounding are clipped to 0); otherwise the snapshots are the runs' times.
    """
    if not running_average:
        return [dict(s) for s in snapshots]
    runs, previous = [], before
    for k, snapshot in enumerate(snapshots, start=runs_before + 1):
        runs.append({n: max(0.0, k * v - (k - 1) * previous.get(n, 0.0)) for n, v in snapshot.items()})
        previous = snapshot
    return runs


# --- machine load -----------------------------------------------------------------------------------

def _busy_seconds(cpus: set[int]) -> float | None:
    """Busy CPU seconds of ``cpus`` since boot from /proc/stat (None where there is no /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    busy = 0
    for line in lines:
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            v = [int(x) for x in rest.split()]
            busy += v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)  # user nice system irq softirq steal
    return busy / tick


def _own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def _cpus() -> set[int]:
    return set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))


@dataclasses.dataclass
class LoadProbe:
    """Other processes' CPU use on this process's cores over a window: ``start()``, run, ``other_cores()``."""

    cpus: set[int] = dataclasses.field(default_factory=_cpus)
    _start: tuple[float, float | None, float] | None = None

    def start(self) -> "LoadProbe":
        self._start = (time.perf_counter(), _busy_seconds(self.cpus), _own_cpu_seconds())
        return self

    def other_cores(self) -> float:
        """Average number of this process's cores other processes kept busy since ``start()`` (nan: unknown).

        Waits until the window is :data:`MIN_LOAD_WINDOW_S` long (the counters tick every 10 ms)."""
        if self._start is None:
            raise RuntimeError("LoadProbe.other_cores() called before start()")
        wall0, busy0, own0 = self._start
        if busy0 is None:
            return math.nan
        waited = time.perf_counter() - wall0
        if waited < MIN_LOAD_WINDOW_S:
            time.sleep(MIN_LOAD_WINDOW_S - waited)
        busy1, own1, wall1 = _busy_seconds(self.cpus), _own_cpu_seconds(), time.perf_counter()
        if busy1 is None:
            return math.nan
        return max(0.0, ((busy1 - busy0) - (own1 - own0)) / (wall1 - wall0))


def busy_now(probe: LoadProbe | None = None) -> bool:
    """Whether other processes keep this process's cores busy right now (one :class:`LoadProbe` window; ``probe``:
    one started earlier, read over what ran since).

    A stored profile that was taken on a loaded machine is measured again only when this says no: measured on a
    machine that is still loaded it would be as loaded, and the run would pay the profile again for nothing (a
    busy machine re-profiled on every ``place``)."""
    other = (probe or LoadProbe().start()).other_cores()
    return not math.isnan(other) and other > LOADED_OTHER_CORES


@dataclasses.dataclass(frozen=True)
class WindowNoise:
    """One device window's noise: end-to-end median and IQR, other processes' cores, and the verdict."""

    e2e_ms: float
    e2e_spread_ms: float
    other_cores: float  # nan where the OS does not say
    loaded: bool
    reason: str  # why it is loaded ("" when not)


def assess_load(walls_ms: Sequence[float], other_cores: float) -> WindowNoise:
    """The verdict on one device window (see the module doc for the rule)."""
    walls = np.asarray(walls_ms, np.float64)
    median, spread = float(np.median(walls)), float(iqr(walls))
    reasons = []
    if np.isfinite(other_cores) and other_cores > LOADED_OTHER_CORES:
        reasons.append(f"other processes kept {other_cores:.2f} of this process's cores busy "
                       f"(limit {LOADED_OTHER_CORES})")
    if median > 0 and spread > LOADED_RELATIVE_SPREAD * median:
        reasons.append(f"end-to-end IQR {spread:.3f} ms is {spread / median:.0%} of the median {median:.3f} ms "
                       f"(limit {LOADED_RELATIVE_SPREAD:.0%})")
    return WindowNoise(median, spread, float(other_cores), bool(reasons), "; ".join(reasons))


def noise_fields(noise, remeasured: bool) -> dict:
    """The ``profiler.DeviceReport`` noise fields of a window's :class:`WindowNoise`."""
    return dict(e2e_spread_ms=noise.e2e_spread_ms, other_cores=noise.other_cores, loaded=noise.loaded,
                load_reason=noise.reason, remeasured=remeasured)


def measured_window(device: str, run, probe: LoadProbe | None = None):
    """``run()`` -> ``(node_ms, walls_ms, per_run)`` measured under a :class:`LoadProbe`, and once
    more when the window was loaded (:func:`assess_load`); returns ``(output, WindowNoise, remeasured)``.
    Still loaded the second time: a WARNING, and the caller marks the profile loaded. ``probe``: one
    started earlier (before the compile: a longer window needs no waiting to fill ``MIN_LOAD_WINDOW_S``)."""
    probe = probe or LoadProbe().start()
    output = run()
    noise = assess_load(output[1], probe.other_cores())
    if not noise.loaded:
        return output, noise, False
    logger.info("profiling %s: the machine is loaded (%s); measuring it once more", device, noise.reason)
    probe = LoadProbe().start()
    output = run()
    noise = assess_load(output[1], probe.other_cores())
    if noise.loaded:
        logger.warning("the profile of %s was taken on a loaded machine (%s), also when measured again; it is "
                       "marked loaded and no placement gain it predicts counts as proven. Profile again on a quiet "
                       "machine (ov-autoplace profile)", device, noise.reason)
    return output, noise, True


def speed_drift(device: str, window_ms: float, again_ms: Sequence[float]) -> float:
    """How far the machine's speed moved between the device windows, ``max / min - 1`` (0: unknown) of ``device``'s
    window median and of its times again after the last window (docs/cost-model.md, "Noise and load")."""
    again = float(np.median(again_ms))
    if not (window_ms > 0 and again > 0):
        return 0.0
    drift = max(again, window_ms) / min(again, window_ms) - 1
    logger.info("%s ran %.3f ms after the last device's window against %.3f ms in its own: the machine's speed moved "
                "%.0f%% between the windows, and every op's spread widens by as much of its time", device, again,
                window_ms, 100 * drift)
    return drift


def assumed_spread(compute_ms: np.ndarray, e2e_ms: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """The spreads assumed for a profile stored without them: :data:`UNKNOWN_RELATIVE_SPREAD` of each value."""
    compute = np.where(np.isfinite(compute_ms), np.asarray(compute_ms, np.float64), 0.0)
    return UNKNOWN_RELATIVE_SPREAD * compute, UNKNOWN_RELATIVE_SPREAD * np.asarray(e2e_ms, np.float64)


__all__ = ["LOADED_OTHER_CORES", "LOADED_RELATIVE_SPREAD", "MIN_LOAD_WINDOW_S", "UNKNOWN_RELATIVE_SPREAD", "LoadProbe",
           "WindowNoise", "assess_load", "assumed_spread", "busy_now", "iqr", "measured_window", "noise_fields",
           "per_run_node_ms", "speed_drift"]
