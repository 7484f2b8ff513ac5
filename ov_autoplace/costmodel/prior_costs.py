"""A prior cost model: what a placement costs, predicted from what is known without running the model.

How and why, in full: docs/cost-model.md, "Module notes", ov_autoplace/costmodel/prior_costs.py.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import re
from typing import Any, Sequence

import numpy as np

from ov_autoplace.devices.kinds import CPU, kind_named
from ov_autoplace.devices.facts import FACT_PROPERTIES, DeviceFacts, indistinguishable, read_device_facts
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.device_model import Batch1Terms, ModelDevice, SuitePlatform
from ov_autoplace.costmodel.device_names import normalized_device_name
from ov_autoplace.costmodel.platforms import SimDevice
from ov_autoplace.costmodel.sim_costs import graph_load, host_cpu_device

logger = logging.getLogger(__name__)

#: The prior splits only when it predicts the split faster than the best single device by more than this
#: fraction: about twice the p90 of its error on a split's share of the latency (``bench_prior.py`` part A,
#: docs/default-path.md "Prior error"). Between two *different* devices the error is the device model's (median
#: 22 % on published latencies it did not fit, docs/bench/headroom.md), so a device switch needs it too.
PRIOR_SPLIT_MARGIN = 0.25
#: The margin when the prior recognizes every device (:func:`recognize_devices`) and models each by its own fit
#: (why 10 %, and the risk it takes: docs/architecture.md, prior_costs.py).
PRIOR_SPLIT_MARGIN_RECOGNIZED = 0.10


@functools.lru_cache(maxsize=2)
def _suite(use_fit: bool):
    """The shipped suite (two JSON files parsed), once per process: every prior_device call reads it."""
    from ov_autoplace.costmodel.suite import load_suite

    return load_suite(use_fit=use_fit)


def _usable_cores() -> int:
    import os

    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def _geometric_mean_terms(devices: Sequence[ModelDevice]) -> Batch1Terms:
    """One set of batch-1 terms from several fitted devices of a kind (geometric mean, term by term)."""
    def gmean(values) -> float:
        values = list(values)
        if min(values) == max(values):  # one device, or agreeing devices: exactly that value (0 stays 0)
            return float(values[0])
        if any(math.isinf(v) for v in values):
            return math.inf
        return float(math.exp(sum(math.log(max(v, 1e-12)) for v in values) / len(values)))

    terms = [d.terms for d in devices]
    scalar = {f.name: gmean(getattr(t, f.name) for t in terms) for f in dataclasses.fields(Batch1Terms)
              if f.name != "category_scale"}
    categories = sorted({c for t in terms for c in t.category_scale})
    scales = {c: gmean(t.category_scale.get(c, 1.0) for t in terms) for c in categories}
    return Batch1Terms(**scalar, category_scale=scales)


def _calibrated(exclude_platforms: Sequence[str]) -> list[tuple[ModelDevice, str]]:
    seen: dict[str, tuple[ModelDevice, str]] = {}
    for platform in _suite(True).values():
        for device in platform.devices:
            key = device.calibration_key
            if key and device.fitted and key not in seen and key.split("/")[0] not in exclude_platforms:
                seen[key] = (device, platform.precision)
    return list(seen.values())


def _at_precision(terms: Batch1Terms, fitted_at: set[str], precision: str) -> Batch1Terms:
    """The terms for ``precision``: the per-category scales only where they were fitted at that precision.

    The published points are int8; their fitted matmul scale (~0.45 on both CPUs) reflects int8 GEMMs with
    their (de)quantization, not an f32 GEMM: kept, it predicted BERT-base 742 ms on this machine's CPU where
    a profile measures ~330 ms; dropped, 340 ms.
    """
    return terms if precision in fitted_at else dataclasses.replace(terms, category_scale={})


def _precision(facts: DeviceFacts) -> str:
    """The precision the device runs: its INFERENCE_PRECISION_HINT, else its kind's default (devices/kinds.py; f16 for
    a kind the table does not know, as an accelerator's)."""
    row = kind_named(facts.kind) if facts.kind else None
    return facts.precision or (row.default_precision if row is not None else "f16")


def recognize_devices(facts: Sequence[DeviceFacts], exclude_platforms: Sequence[str] = ()
                      ) -> list[tuple[ModelDevice, str] | None]:
    """For each device, the calibrated device it is (with the precision it was fitted at), or None.

    A device is recognized when its ``FULL_DEVICE_NAME`` matches a calibrated device's ``recognized_by``
    (``data/platforms.json``) of the same kind. An integrated GPU or NPU reports a name that several chips
    share ("Intel(R) AI Boost" is every Core Ultra NPU), so it counts only beside a CPU recognized as its
    platform's CPU.
    """
    calibrated = _calibrated(exclude_platforms)

    def match(f: DeviceFacts):
        if not f.full_name or f.kind is None:
            return None
        name = normalized_device_name(f.full_name)
        return next(((d, p) for d, p in calibrated
                     if d.spec.kind == f.kind and any(re.search(pattern, name) for pattern in d.recognized_by)), None)

    found = [match(f) for f in facts]
    host_platforms = {m[0].calibration_key.split("/")[0] for m in found if m is not None and m[0].spec.kind == CPU.kind}
    return [m if m is None or m[0].spec.kind == CPU.kind or not m[0].spec.shares_host_memory
            or m[0].calibration_key.split("/")[0] in host_platforms else None for m in found]


def _recognized_device(facts: DeviceFacts, device: ModelDevice, fitted_at: str) -> ModelDevice:
    """The calibrated device itself, under the name HETERO uses (its reported memory, if any)."""
    precision = _precision(facts)
    changes: dict[str, Any] = {"name": facts.name, "notes": f"recognized as {device.calibration_key}"}
    if facts.memory_bytes:
        changes["memory_bytes"] = facts.memory_bytes
    return dataclasses.replace(device, spec=dataclasses.replace(device.spec, **changes),
                               terms=_at_precision(device.terms, {fitted_at}, precision))


def _unfitted_template(kind: str) -> ModelDevice | None:
    """A device of ``kind`` from the suite at its prior (unfitted) terms, when no fitted one is available."""
    for platform in _suite(False).values():
        for device in platform.devices:
            if device.spec.kind == kind:
                return device
    return None


def prior_device(facts: DeviceFacts, *, cpu_spec: SimDevice | None = None,
                 exclude_platforms: Sequence[str] = ()) -> ModelDevice | None:
    """A batch-1 model of the device from its facts (spec + terms), or None when nothing usable is known. More:
    docs/architecture.md, "Module notes", prior_costs.py."""
    if not facts.reported or facts.kind is None:
        return None
    calibrated = [(d, p) for d, p in _calibrated(exclude_platforms) if d.spec.kind == facts.kind]
    fitted = [d for d, _ in calibrated]
    fitted_at = {p for _, p in calibrated}
    precision = _precision(facts)
    if facts.kind == CPU.kind:
        spec = cpu_spec if cpu_spec is not None else host_cpu_device(facts.threads or _usable_cores(),
                                                                     name=facts.name)
        if cpu_spec is None and facts.precision == "bf16" and "bf16" not in spec.peak_flops:
            logger.info("prior: %s asks for bf16 but /proc/cpuinfo shows no AMX unit; modelled as f32", facts.name)
        if fitted:
            terms = _geometric_mean_terms(fitted)
        else:
            fallback = _unfitted_template(CPU.kind)
            if fallback is None:
                return None
            terms = fallback.terms
        return ModelDevice(dataclasses.replace(spec, name=facts.name), _at_precision(terms, fitted_at, precision),
                           "+".join(d.calibration_key for d in fitted) or None, bool(fitted))
    integrated = None if facts.device_type is None else "integrated" in facts.device_type.lower()
    same_memory = [d for d in fitted if integrated is None or d.spec.shares_host_memory == integrated]
    template = (same_memory or fitted or [None])[0] or _unfitted_template(facts.kind)
    if template is None:
        return None
    changes: dict[str, Any] = {"name": facts.name, "product": facts.full_name or template.spec.product,
                               "notes": f"prior from {template.spec.product}'s batch-1 model"}
    if facts.gops:
        rates = {p: g * 1e9 for p, g in facts.gops if p in ("f32", "f16", "bf16", "int8")}
        vector = {p: r for p, r in rates.items() if p in ("f32", "f16")}
        if vector:
            fallback = template.spec.fallback_precision if template.spec.fallback_precision in vector \
                else next(iter(vector))
            changes.update(peak_flops=vector, matrix_peak_flops=rates, fallback_precision=fallback)
    if facts.memory_bytes:
        changes["memory_bytes"] = facts.memory_bytes
    return dataclasses.replace(template, spec=dataclasses.replace(template.spec, **changes),
                               terms=_at_precision(template.terms, fitted_at, precision))


@dataclasses.dataclass(frozen=True)
class Prior:
    """The prior CostModel, which devices it knows nothing about and which it recognized."""

    cost: CostModel | None  # None when some device is unknown
    facts: tuple[DeviceFacts, ...]
    unknown: tuple[str, ...]
    recognized: tuple[str, ...] = ()  # devices modelled by their own fit to published latencies

    @property
    def margin(self) -> float:
        """The gain a split or a device switch must clear: smaller when every device is recognized."""
        every = self.cost is not None and set(self.recognized) == {f.name for f in self.facts}
        return PRIOR_SPLIT_MARGIN_RECOGNIZED if every else PRIOR_SPLIT_MARGIN


def prior_cost_model(graph: GraphArrays, facts: Sequence[DeviceFacts], *, cpu_spec: SimDevice | None = None,
                     exclude_platforms: Sequence[str] = ()) -> Prior:
    """The prior CostModel of ``graph`` over the devices of ``facts`` (simulated, labelled "prior").

    ``cpu_spec`` / ``exclude_platforms``: see :func:`prior_device` (the defaults are the runtime's).
    """
    facts = tuple(facts)
    known = recognize_devices(facts, exclude_platforms)
    models = [_recognized_device(f, *k) if k is not None else
              prior_device(f, cpu_spec=cpu_spec, exclude_platforms=exclude_platforms) for f, k in zip(facts, known)]
    recognized = tuple(f.name for f, k in zip(facts, known) if k is not None)
    unknown = tuple(f.name for f, m in zip(facts, models) if m is None)
    if unknown:
        return Prior(None, facts, unknown, recognized)
    precisions = [_precision(f) for f in facts]
    platform = SuitePlatform("prior", "prior from device properties", tuple(models), precisions[0],
                             kind="hypothetical")
    base = platform.cost_model(graph, precision=precisions[0])
    compute, unfused = np.array(base.compute_ms), np.array(base.unfused_ms)
    # the platform asks one precision of all devices: a device at another precision gets its own column
    load, members = graph_load(graph), np.asarray(base.fused_into) >= 0
    for d, (precision, model) in enumerate(zip(precisions, models)):
        if precision != precisions[0]:
            unfused[:, d] = model.node_costs(graph, load, precision)
            compute[:, d] = np.where(members, np.where(np.isfinite(unfused[:, d]), 0.0, np.inf), unfused[:, d])
    names = ", ".join(f"{f.name}={m.spec.product}" for f, m in zip(facts, models))
    cost = dataclasses.replace(base, compute_ms=compute, unfused_ms=unfused, simulated=True,
                               source=f"prior from device properties ({names})")
    return Prior(cost, facts, (), recognized)


def predicted_single_ms(cost: CostModel) -> dict[str, float]:
    """Predicted latency of everything on each device (compute + one submodel), inf where unsupported."""
    totals = np.asarray(cost.compute_ms).sum(axis=0)
    return {d: float(totals[k] + cost.submodel_overhead_ms[k]) if math.isfinite(totals[k]) else math.inf
            for k, d in enumerate(cost.devices)}


__all__ = ["DeviceFacts", "FACT_PROPERTIES", "PRIOR_SPLIT_MARGIN", "PRIOR_SPLIT_MARGIN_RECOGNIZED", "Prior",
           "indistinguishable", "normalized_device_name", "predicted_single_ms", "prior_cost_model", "prior_device",
           "read_device_facts", "recognize_devices"]
