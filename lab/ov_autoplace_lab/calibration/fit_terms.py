"""Fit each calibrated device's batch-1 terms to published latencies (least squares on log latency).

For one device (``"platform/DEVICE"`` of ``calibration.csv``) four terms
are free: ``compute_scale``, ``memory_scale``, ``dispatch_ms`` and
``occupancy_mflop`` (log-parametrised, so they stay positive; the scales are
bounded so no category exceeds 100 % of the spec-sheet peak). The residuals are
``log(simulated / published)`` of the device's non-held-out rows plus a weak
pull of each log term toward the platform file's prior (``PRIOR_SIGMA``): with
two or three published points per device the prior keeps the under-determined
directions where the spec sheet puts them. Held-out rows never enter the fit;
``FitReport`` lists them separately. Submodel and link terms do not show in a
single-device latency and keep their prior values.

The simulated single-device latency is exactly what ``Simulator`` gives for
the all-on-one-device placement (sum of the fused node costs plus one submodel
overhead per connected component; checked in the tests). For the NPU the
published models ran whole on the device, so the fit ignores our op-support
list (an estimate; the suite applies it).

Needs scipy (the dev / train extras); only ``benchmarks/bench_platforms.py`` calls it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace_lab.calibration.calibration_data import CalibrationPoint
from ov_autoplace.costmodel.device_model import Batch1Terms, ModelDevice, SuitePlatform, batch1_fusion
from ov_autoplace.costmodel.platforms import CATEGORIES
from ov_autoplace.costmodel.sim_costs import graph_load

#: ``matmul_scale`` is ``category_scale`` of matmul and attention: transformer kernels against convolutions.
FREE_TERMS = ("compute_scale", "memory_scale", "dispatch_ms", "occupancy_mflop", "matmul_scale")
#: Standard deviation, in natural-log units, of the pull toward each prior term.
PRIOR_SIGMA = {"compute_scale": 2.0, "memory_scale": 2.0, "dispatch_ms": 1.5, "occupancy_mflop": 2.0,
               "matmul_scale": 1.0}
#: Standard deviation of a published log latency (about 5 %: run-to-run spread of a published number).
DATA_SIGMA = 0.05
_BOUNDS = {"dispatch_ms": (1e-4, 1.0), "occupancy_mflop": (1e-3, 1e4)}


@dataclasses.dataclass
class _ModelLoad:
    graph: GraphArrays
    load: object
    fused: np.ndarray
    submodels: int


@dataclasses.dataclass(frozen=True)
class PointResult:
    point: CalibrationPoint
    simulated_ms: float

    @property
    def rel_error(self) -> float:
        return self.simulated_ms / self.point.latency_ms - 1.0


@dataclasses.dataclass
class FitReport:
    """The fitted terms of every calibrated device and each published point's simulated latency."""

    terms: dict[str, Batch1Terms]
    results: list[PointResult]

    def errors(self, held_out: bool) -> np.ndarray:
        return np.array([abs(r.rel_error) for r in self.results if r.point.held_out == held_out])

    def summary(self) -> str:
        lines = []
        for held in (False, True):
            e = self.errors(held)
            if e.size:
                lines.append(f"{'held-out' if held else 'fitted'} points: {e.size}, median |error| "
                             f"{100 * np.median(e):.1f} %, max {100 * e.max():.1f} %")
        return "\n".join(lines)


def _single_device(device: ModelDevice, ignore_support: bool) -> ModelDevice:
    spec = dataclasses.replace(device.spec, supported_op_types=None) if ignore_support else device.spec
    return dataclasses.replace(device, spec=spec)


def prepare_load(graph: GraphArrays) -> _ModelLoad:
    """What the fit needs of a graph, computed once: loads, fusion and the one-device submodel count."""
    from ov_autoplace.costmodel.simulator import Simulator
    from ov_autoplace.costmodel.device_model import Batch1Terms as _T

    probe_terms = _T(0.0, 0.0, 1.0, 1.0, 0.0, 0.0, math.inf)
    from ov_autoplace.costmodel.platforms import CORE_ULTRA_7_155H

    probe = SuitePlatform("probe", "probe", (ModelDevice(CORE_ULTRA_7_155H, probe_terms),), "f32")
    submodels = int(Simulator(probe.cost_model(graph), graph).num_submodels(np.zeros(graph.num_nodes, np.int64)))
    return _ModelLoad(graph, graph_load(graph), batch1_fusion(graph) >= 0, submodels)


def single_device_ms(device: ModelDevice, model: _ModelLoad, precision: str, *, ignore_support: bool = False) -> float:
    """Simulated latency of the whole model on ``device`` alone (what Simulator gives for that placement)."""
    device = _single_device(device, ignore_support)
    cost = device.node_costs(model.graph, model.load, precision)
    if not np.all(np.isfinite(cost)):
        return math.inf
    return float(cost[~model.fused].sum() + model.submodels * device.terms.submodel_ms)


def _value(terms: Batch1Terms, key: str) -> float:
    return terms.category_scale.get("matmul", 1.0) if key == "matmul_scale" else getattr(terms, key)


def _with(terms: Batch1Terms, theta: np.ndarray) -> Batch1Terms:
    values = {k: float(math.exp(v)) for k, v in zip(FREE_TERMS, theta)}
    matmul = values.pop("matmul_scale")
    return dataclasses.replace(terms, **values,
                               category_scale={**terms.category_scale, "matmul": matmul, "attention": matmul})


def fit_device(device: ModelDevice, points: list[CalibrationPoint], loads: dict[str, _ModelLoad]) -> Batch1Terms:
    """The device's terms fitted to ``points`` (its non-held-out rows); priors are ``device.terms``."""
    from scipy.optimize import least_squares

    prior = device.terms
    theta0 = np.log([_value(prior, k) for k in FREE_TERMS])
    max_ceff = max(device.spec.compute_efficiency[c] for c in CATEGORIES if c != "view")
    max_meff = max(device.spec.memory_efficiency[c] for c in CATEGORIES if c != "view")
    bounds = {"compute_scale": (1e-3, 1.0 / max_ceff), "memory_scale": (1e-3, 1.0 / max_meff),
              "matmul_scale": (0.05, 20.0), **_BOUNDS}
    lo = np.log([bounds[k][0] for k in FREE_TERMS])
    hi = np.log([bounds[k][1] for k in FREE_TERMS])
    sigma = np.array([PRIOR_SIGMA[k] for k in FREE_TERMS])
    fitted = [p for p in points if not p.held_out]
    ignore_support = device.spec.kind == "npu"

    def residuals(theta: np.ndarray) -> np.ndarray:
        d = dataclasses.replace(device, terms=_with(prior, theta))
        sim = np.array([single_device_ms(d, loads[p.model], p.precision, ignore_support=ignore_support)
                        for p in fitted])
        data = (np.log(np.maximum(sim, 1e-9)) - np.log([p.latency_ms for p in fitted])) / DATA_SIGMA
        return np.concatenate([data, (theta - theta0) / sigma])

    start = np.clip(theta0, lo + 1e-9, hi - 1e-9)
    solution = least_squares(residuals, start, bounds=(lo, hi), method="trf", x_scale=1.0)
    return _with(prior, solution.x)


def fit_suite(suite: dict[str, SuitePlatform], points: Iterable[CalibrationPoint],
              load_graph: Callable[[str], GraphArrays]) -> FitReport:
    """Fit every calibrated device of ``suite`` (the priors: ``load_suite(use_fit=False)``) to ``points``."""
    points = list(points)
    devices: dict[str, ModelDevice] = {}
    for platform in suite.values():
        if platform.kind != "calibrated":
            continue
        for d in platform.devices:
            if d.calibration_key:
                devices[d.calibration_key] = d
    loads = {m: prepare_load(load_graph(m)) for m in sorted({p.model for p in points if p.key in devices})}
    terms: dict[str, Batch1Terms] = {}
    results = []
    for key, device in devices.items():
        mine = [p for p in points if p.key == key]
        if not any(not p.held_out for p in mine):
            continue  # nothing published to fit: the device keeps its prior (the data file says so)
        terms[key] = fit_device(device, mine, loads)
        fitted_device = dataclasses.replace(device, terms=terms[key], fitted=True)
        for p in mine:
            results.append(PointResult(p, single_device_ms(fitted_device, loads[p.model], p.precision,
                                                           ignore_support=device.spec.kind == "npu")))
    return FitReport(terms, results)


def write_fitted_terms(report: FitReport, path: str | Path, *, command: str) -> None:
    data = {"_about": ["Batch-1 terms fitted by least squares on log latency to lab/ov_autoplace_lab/calibration/"
                       "calibration.csv (fit_terms.py beside it). Simulated-platform parameters, not measurements.",
                       f"written by: {command}"],
            "summary": report.summary().splitlines(),
            "devices": {k: v.to_dict() for k, v in sorted(report.terms.items())}}
    Path(path).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


__all__ = ["DATA_SIGMA", "FREE_TERMS", "FitReport", "PRIOR_SIGMA", "PointResult", "fit_device", "fit_suite",
           "prepare_load", "single_device_ms", "write_fitted_terms"]
