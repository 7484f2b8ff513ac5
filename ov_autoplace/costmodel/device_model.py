"""A batch-1 device model: the terms that dominate one inference, on top of a spec-sheet roofline.

More: docs/architecture.md, "Module notes", device_model.py.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

import numpy as np

from ov_autoplace.devices.kinds import NPU
from ov_autoplace.errors import CalibrationDataError
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.platforms import CATEGORIES, SimDevice, SimPlatform
from ov_autoplace.costmodel.sim_costs import (FUSABLE_POST_OPS, graph_load, cost_model_for, post_op_fusion,
                                              post_op_inputs)

#: Ops that write nothing of their own in OpenVINO's CPU / GPU plugins (producers write into the buffer).
IN_PLACE_OP_TYPES = frozenset({"Concat"})

#: Every term a device needs, with the bound its value must respect.
TERM_BOUNDS = {
    "dispatch_ms": ">= 0",
    "occupancy_mflop": ">= 0",
    "compute_scale": "> 0",
    "memory_scale": "> 0",
    "submodel_ms": ">= 0",
    "link_latency_ms": ">= 0",
    "link_gbps": "> 0",
}


@dataclasses.dataclass(frozen=True)
class Batch1Terms:
    """The fitted (or prior) batch-1 terms of one device; each term: docs/cost-model.md, "The batch-1 device model"."""

    dispatch_ms: float
    occupancy_mflop: float
    compute_scale: float
    memory_scale: float
    submodel_ms: float
    link_latency_ms: float
    link_gbps: float  # inf: the host itself
    category_scale: Mapping[str, float] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str) -> "Batch1Terms":
        """Validate a JSON mapping; ``where`` names the platform file entry in every error."""
        if not isinstance(data, Mapping):
            raise CalibrationDataError(f"{where}: terms must be a mapping of {sorted(TERM_BOUNDS)}, got {data!r}")
        missing = [k for k in TERM_BOUNDS if k not in data]
        if missing:
            raise CalibrationDataError(f"{where}: missing term(s) {missing}; every device needs {list(TERM_BOUNDS)}")
        unknown = sorted(set(data) - set(TERM_BOUNDS) - {"category_scale"})
        if unknown:
            raise CalibrationDataError(f"{where}: unknown term(s) {unknown}; known terms are "
                                       f"{list(TERM_BOUNDS) + ['category_scale']}")
        values: dict[str, float] = {}
        for key, bound in TERM_BOUNDS.items():
            raw = data[key]
            value = math.inf if raw in ("inf", "Infinity") else raw
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
                raise CalibrationDataError(f"{where}.{key}: must be a number {bound}, got {raw!r}")
            if value < 0 or (bound == "> 0" and value == 0):
                raise CalibrationDataError(f"{where}.{key}: must be {bound} (a rate or time cannot be negative), "
                                           f"got {raw!r}")
            values[key] = float(value)
        scales = dict(data.get("category_scale", {}))
        for cat, value in scales.items():
            if cat not in CATEGORIES:
                raise CalibrationDataError(f"{where}.category_scale: unknown category {cat!r}; one of {CATEGORIES}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise CalibrationDataError(f"{where}.category_scale.{cat}: must be a number > 0, got {value!r}")
        return cls(**values, category_scale={k: float(v) for k, v in scales.items()})

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: (v if math.isfinite(v) else "inf") for k, v in dataclasses.asdict(self).items()
                               if k != "category_scale"}
        if self.category_scale:
            out["category_scale"] = dict(self.category_scale)
        return out


@dataclasses.dataclass(frozen=True)
class ModelDevice:
    """A spec-sheet device (peaks, bandwidth, memory, op support) plus its batch-1 terms."""

    spec: SimDevice
    terms: Batch1Terms
    calibration_key: str | None = None  # "platform/DEVICE" whose published latencies fit these terms
    fitted: bool = False  # the terms come from data/fitted_terms.json, not the prior
    recognized_by: tuple[str, ...] = ()  # FULL_DEVICE_NAME regexes of the real device (costmodel/prior_costs.py)

    @property
    def name(self) -> str:
        return self.spec.name

    def as_sim_device(self) -> SimDevice:
        """The spec device with its dispatch, submodel and link terms (for links and descriptions)."""
        gbps = self.terms.link_gbps
        return dataclasses.replace(
            self.spec, launch_overhead_ms=self.terms.dispatch_ms, submodel_overhead_ms=self.terms.submodel_ms,
            host_link_bandwidth=math.inf if math.isinf(gbps) else gbps * 1e9,
            host_link_latency_ms=self.terms.link_latency_ms)

    def node_costs(self, graph: GraphArrays, load, precision: str) -> np.ndarray:
        """Unfused cost in ms of every node on this device (0: does not run, inf: unsupported)."""
        return node_costs(self.spec, self.terms, graph, load, precision)


def node_costs(spec: SimDevice, terms: Batch1Terms, graph: GraphArrays, load, precision: str) -> np.ndarray:
    """The batch-1 cost of every node of ``graph`` (``load``: ``sim_costs.graph_load(graph)``)."""
    prec = spec.precision_for(precision)
    peak = np.array([spec.peak_for(c, prec) * spec.compute_efficiency[c] * terms.category_scale.get(c, 1.0)
                     for c in CATEGORIES])[load.category] * terms.compute_scale
    bandwidth = np.array([spec.memory_bandwidth * spec.memory_efficiency[c] for c in CATEGORIES])[load.category]
    bandwidth = bandwidth * terms.memory_scale
    work = np.where(load.flops > 0, load.flops + terms.occupancy_mflop * 1e6, 0.0)
    roofline = 1e3 * np.maximum(work / peak, load.bytes_at(prec) / bandwidth)
    roofline[np.array([t in IN_PLACE_OP_TYPES for t in graph.op_types], bool)] = 0.0
    cost = np.where(load.costed, terms.dispatch_ms + roofline, 0.0)
    unsupported = np.array([not spec.supports(t) for t in graph.op_types]) & load.costed
    if spec.kind == NPU.kind:
        unsupported |= load.dynamic
    cost[unsupported] = np.inf
    return cost


def batch1_fusion(graph: GraphArrays) -> np.ndarray:
    """``fused_into`` of post-op fusion plus element-wise chains (docs/cost-model.md, "The batch-1 device model")."""
    fused = post_op_fusion(graph)
    for i, p in post_op_inputs(graph, fused < 0):
        if graph.op_types[p] in FUSABLE_POST_OPS and graph.out_degree[p] == 1 and graph.role[p] == NodeRole.COMPUTE:
            fused[i] = p if fused[p] < 0 else fused[p]
    return fused


@dataclasses.dataclass(frozen=True, eq=False)
class SuitePlatform:
    """A named platform of the suite: batch-1 devices, the precision its calibration used, and provenance."""

    name: str
    title: str
    devices: tuple[ModelDevice, ...]
    precision: str
    notes: str = ""
    kind: str = "calibrated"  # calibrated | derived (built from calibrated devices) | hypothetical

    @property
    def device_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.devices)

    def device(self, name: str) -> ModelDevice:
        for d in self.devices:
            if d.name == name:
                return d
        raise KeyError(f"platform {self.name!r} has no device {name!r}; it has {list(self.device_names)}")

    def sim_platform(self) -> SimPlatform:
        return SimPlatform.from_host_links(self.title, [d.as_sim_device() for d in self.devices], self.notes)

    def subset(self, names: tuple[str, ...]) -> "SuitePlatform":
        """The same platform restricted to ``names`` (a what-if: which devices pay for a model)."""
        devices = tuple(self.device(n) for n in names)
        return dataclasses.replace(self, name=f"{self.name}[{'+'.join(names)}]", devices=devices)

    def cost_model(self, graph: GraphArrays, *, precision: str | None = None) -> CostModel:
        """The simulated CostModel of ``graph`` (the prepared model's) on this platform."""
        precision = precision or self.precision
        base = cost_model_for(graph, self.sim_platform(), precision=precision)  # links, weights, memory
        load = graph_load(graph)
        unfused = np.stack([d.node_costs(graph, load, precision) for d in self.devices], axis=1)
        compute = unfused.copy()
        fused_into = batch1_fusion(graph)
        members = fused_into >= 0
        compute[members] = np.where(np.isfinite(unfused[members]), 0.0, np.inf)
        return dataclasses.replace(
            base, compute_ms=compute, unfused_ms=unfused, fused_into=fused_into,
            source=f"{self.name} ({self.kind}, batch-1 device model), {precision}")

    def describe(self) -> str:
        lines = [f"Simulated platform '{self.name}': {self.title} ({self.kind}; every number simulated)"]
        for d in self.devices:
            t = d.terms
            origin = f"fitted on {d.calibration_key}" if d.fitted else "prior (not fitted)"
            link = "host" if math.isinf(t.link_gbps) else f"{t.link_gbps:g} GB/s + {t.link_latency_ms * 1e3:.0f} us"
            lines.append(f"  {d.name:<4} {d.spec.product}: dispatch {t.dispatch_ms * 1e3:.1f} us, occupancy "
                         f"{t.occupancy_mflop:g} MFLOP, compute x{t.compute_scale:.3g}, memory x{t.memory_scale:.3g}, "
                         f"submodel {t.submodel_ms * 1e3:.0f} us, link {link}, memory "
                         f"{d.spec.memory_bytes / 2**30:.2f} GiB ({origin})")
        if self.notes:
            lines.append(f"  note: {self.notes}")
        return "\n".join(lines)


__all__ = ["Batch1Terms", "IN_PLACE_OP_TYPES", "ModelDevice", "SuitePlatform", "TERM_BOUNDS", "batch1_fusion",
           "node_costs"]
