"""A prior cost model: what a placement costs, predicted from what is known without running the model.

Sources, all read without compiling or running anything:

* the graph: FLOPs, bytes, op categories (``GraphArrays`` from the native extractor);
* each device's own properties (:class:`DeviceFacts`): ``DEVICE_TYPE``,
  ``DEVICE_ARCHITECTURE``, ``OPTIMIZATION_CAPABILITIES``, ``DEVICE_GOPS``,
  ``GPU_DEVICE_TOTAL_MEM_SIZE``, ``FULL_DEVICE_NAME``, ``INFERENCE_PRECISION_HINT``,
  ``INFERENCE_NUM_THREADS`` and the plugin that serves it;
* the simulated device models (``platforms.py``, ``sim_costs.py``): a CPU is
  this machine's CPU from ``/proc/cpuinfo`` (``host_cpu_device``); a GPU or NPU
  takes the efficiency factors and overheads of the first simulated device of
  its kind, with its peak rates replaced by ``DEVICE_GOPS`` and its memory by the
  reported size when the device reports them.

Every number of a prior is a model, never a measurement: the CostModel is
``simulated=True`` and its source says "prior". Two devices whose facts are
equal (same plugin, kind, precision, threads, capabilities) get equal columns,
so under the prior no split between them can win: :func:`indistinguishable`
answers that from the facts alone, before the graph is even read.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any, Sequence

import numpy as np

from ..device_facts import FACT_PROPERTIES, DeviceFacts, indistinguishable, read_device_facts
from ..graph import GraphArrays
from .cost_model import CostModel
from .platforms import PLATFORMS, SimDevice, SimPlatform
from .sim_costs import cost_model_for, host_cpu_device

logger = logging.getLogger(__name__)

#: The prior splits only when it predicts the split faster than the best single device by more than this
#: fraction. ``benchmarks/bench_prior.py`` part A measures how wrong the prior is about what a two-way split
#: moves: over topological prefixes (5 % .. 95 % of the ops) of the three zoo models, the relative error of
#: the prefix's (and the rest's) share of the latency, prior vs a measured profile of this machine's CPU, was
#: median 0.04 and 90th percentile 0.11 (2026-11-23, a loaded machine). A predicted gain below ~2x that p90 is
#: within the prior's own error and is not acted on. What this machine cannot measure is the error of the
#: prior's ratio between two *different* devices (there is only one CPU); spec sheets overstate GPUs by far
#: (BRIEF: the paper's Flex 170 gave 1.2-1.6x, not its spec 15-20x), so a device switch always needs the margin too.
PRIOR_SPLIT_MARGIN = 0.25

def _template(kind: str) -> SimDevice | None:
    """The first simulated device of ``kind`` among the spec-sheet platforms."""
    for platform in PLATFORMS.values():
        for device in platform.devices:
            if device.kind == kind:
                return device
    return None


def _usable_cores() -> int:
    import os

    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def prior_device(facts: DeviceFacts) -> SimDevice | None:
    """A simulated model of the device from its facts, or None when nothing usable is known."""
    if not facts.reported or facts.kind is None:
        return None
    if facts.kind == "cpu":
        device = host_cpu_device(facts.threads or _usable_cores(), name=facts.name)  # 0 threads: "all"
        if facts.precision == "bf16" and "bf16" not in device.peak_flops:
            logger.info("prior: %s asks for bf16 but /proc/cpuinfo shows no bf16 unit; modelled as f32", facts.name)
        return device
    template = _template(facts.kind)
    if template is None:
        return None
    changes: dict[str, Any] = {"name": facts.name, "product": facts.full_name or template.product,
                               "notes": f"prior from {template.product}'s simulated model"}
    if facts.gops:
        rates = {p: g * 1e9 for p, g in facts.gops if p in ("f32", "f16", "bf16", "int8")}
        if rates:
            vector = {p: r for p, r in rates.items() if p in ("f32", "f16")}
            fallback = template.fallback_precision if template.fallback_precision in vector else next(iter(vector), None)
            if fallback is not None:
                changes.update(peak_flops=vector, matrix_peak_flops=rates, fallback_precision=fallback)
    if facts.memory_bytes:
        changes["memory_bytes"] = facts.memory_bytes
    return dataclasses.replace(template, **changes)


@dataclasses.dataclass(frozen=True)
class Prior:
    """The prior CostModel and which devices the prior knows nothing about."""

    cost: CostModel | None  # None when some device is unknown
    facts: tuple[DeviceFacts, ...]
    unknown: tuple[str, ...]


def prior_cost_model(graph: GraphArrays, facts: Sequence[DeviceFacts]) -> Prior:
    """The prior CostModel of ``graph`` over the devices of ``facts`` (simulated, labelled "prior")."""
    facts = tuple(facts)
    models = [prior_device(f) for f in facts]
    unknown = tuple(f.name for f, m in zip(facts, models) if m is None)
    if unknown:
        return Prior(None, facts, unknown)
    platform = SimPlatform.from_host_links("prior", models)
    precisions = [f.precision or ("f32" if f.kind == "cpu" else "f16") for f in facts]
    base = cost_model_for(graph, platform, precision=precisions[0])
    compute, unfused = np.array(base.compute_ms), np.array(base.unfused_ms)
    # cost_model_for asks one precision of all devices: a device at another precision gets its own column
    for d, (precision, model) in enumerate(zip(precisions, models)):
        if precision != precisions[0]:
            single = cost_model_for(graph, SimPlatform.from_host_links("prior", (model,)), precision=precision)
            compute[:, d], unfused[:, d] = single.compute_ms[:, 0], single.unfused_ms[:, 0]
    names = ", ".join(f"{f.name}={(m.product if m else '?')}" for f, m in zip(facts, models))
    cost = dataclasses.replace(base, compute_ms=compute, unfused_ms=unfused,
                               source=f"prior from device properties ({names})")
    return Prior(cost, facts, ())


def predicted_single_ms(cost: CostModel) -> dict[str, float]:
    """Predicted latency of everything on each device (compute + one submodel), inf where unsupported."""
    totals = np.asarray(cost.compute_ms).sum(axis=0)
    return {d: float(totals[k] + cost.submodel_overhead_ms[k]) if math.isfinite(totals[k]) else math.inf
            for k, d in enumerate(cost.devices)}


__all__ = ["DeviceFacts", "FACT_PROPERTIES", "PRIOR_SPLIT_MARGIN", "Prior", "indistinguishable",
           "predicted_single_ms", "prior_cost_model", "prior_device", "read_device_facts"]
