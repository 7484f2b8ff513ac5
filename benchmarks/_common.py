"""Helpers shared by bench_fidelity.py and bench_methods.py (zoo loading, profiles, measuring, tables).

Not a benchmark itself. Everything measured goes through ``compile_placement``
and ``measure_latency``; every prediction through the ``Simulator``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import sys
import time
from typing import Any, Sequence

import numpy as np
from ov_autoplace.devices.testbed import Testbed

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import ov_autoplace as oa  # noqa: E402
from ov_autoplace.cache.profile_store import ProfileStore  # noqa: E402
from ov_autoplace.costmodel import CostModel  # noqa: E402
from ov_autoplace.measuring import measure_model_profile  # noqa: E402
from ov_autoplace.costmodel.simulator import Simulator  # noqa: E402
from ov_autoplace.graph.arrays import GraphArrays, extract_graph  # noqa: E402
from ov_autoplace.placement.legalizer import query_support  # noqa: E402
from ov_autoplace.placement.assignment import Placement  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402

ZOO_MODELS = ("inception_v3", "resnet50", "bert_base")


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, formatted (the machine has ``os.cpu_count()`` cores)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min) on {os.cpu_count()} cores"


def cpu_description() -> str:
    """This machine's CPU as a table should name it: the model name and its bf16 units (from /proc/cpuinfo).

    Which units it has decides what the testbed's bf16 ``CPU`` is: with AMX it ran faster than ``CPUF`` (f32),
    with AVX512-BF16 alone slower (docs/results.md).
    """
    name, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    name = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        return name
    units = "AMX-BF16" if "amx_bf16" in flags else "AVX512-BF16 without AMX" if "avx512_bf16" in flags \
        else "no bf16 unit"
    return f"{name} ({units})"


@dataclasses.dataclass
class ZooCase:
    """One zoo model ready for placing on the testbed: the model, its prepared graph, support and costs."""

    name: str
    model: Any  # ov.Model (original; compile_placement prepares it the same way)
    graph: GraphArrays
    support: np.ndarray  # bool [N, D] over the testbed devices
    cost: CostModel  # measured on the testbed
    profile_seconds: float
    reports: tuple  # DeviceReport per device: the single-device end-to-end latency the profile was scaled to
    simulator: Simulator

    def devices_of(self, placement: Placement, devices: Sequence[str]) -> np.ndarray:
        """Device index per graph node (into ``devices``) of a legal placement."""
        return np.array([devices.index(placement.assignment[n]) for n in self.graph.names], dtype=np.int64)

    def predict(self, device: np.ndarray) -> float:
        return float(self.simulator(np.asarray(device, dtype=np.int64)))


def load_case(name: str, tb: Testbed, store: ProfileStore, *, iterations: int = 20) -> ZooCase:
    """Load zoo model ``name`` and its measured testbed CostModel (from ``store`` when already profiled)."""
    from ov_autoplace_lab import models as zoo

    model = zoo.load(name)
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    support = query_support(tb.core, prepared, graph, tb.devices)
    started = time.perf_counter()
    profile = measure_model_profile(model, tb.core, tb.devices, iterations=iterations, store=store)
    seconds = time.perf_counter() - started
    return ZooCase(name, model, graph, support, profile.cost_model, seconds, profile.reports,
                   Simulator(profile.cost_model, graph))


def profile_store(directory: str | None) -> ProfileStore:
    """The store profiles are read from / written to (None: the default user store)."""
    return ProfileStore(directory) if directory else ProfileStore()


def time_runs(fn, runs: int) -> list[float]:
    """Wall-clock seconds of ``runs`` calls of ``fn`` after one warm-up call (imports, lazy initialisation)."""
    fn()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return samples


def fmt_samples(samples: Sequence[float], digits: int = 2) -> str:
    """``median X ms (min, max, n)`` of samples in seconds."""
    ms = [s * 1e3 for s in samples]
    return (f"median {float(np.median(ms)):9.{digits}f} ms  (min {min(ms):9.{digits}f}, "
            f"max {max(ms):9.{digits}f}, n={len(ms)})")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table; floats are printed with 2 decimals, None as an empty cell."""

    def cell(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return "inf" if np.isinf(v) else f"{v:.2f}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def write_json(path: str | None, payload: dict[str, Any]) -> None:
    if path:
        pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(path).write_text(json.dumps(payload, indent=1, default=_jsonable))
        print(f"JSON written to {path}")


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")
