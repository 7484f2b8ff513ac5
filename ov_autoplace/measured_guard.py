"""The measured guard: a split is kept only if it *measurably* beats the best single device.

The predicted guard (``guard.py``) compares cost-model predictions; a model
profiled on two devices that differ only by noise can predict a split to win
that then runs slower (seen: a RegNet-like CNN split 16/233 nodes into three
submodels ran 1.30x slower than CPU alone). Where measuring is cheap next to
what the placement already cost (the first compile profiled the model, or a
search timed placements), :func:`measured_guard` compiles the placement and
every single-device placement through HETERO (what the user would get
either way), times them interleaved with the native timer (``rounds`` rounds
of ``iterations`` runs each, so drifting machine load hits all alike), and
keeps the split only if

    median(split) < median(best single device) - noise,
    noise = max(IQR(split), IQR(best single device))

i.e. the split wins by more than the spread of either measurement. Otherwise
the placement becomes "everything on the best single device". The decision
and its numbers are logged (INFO) and written into the placement (notes,
``measured_latency_ms``, ``reference_latency_ms``), so the placement cache
stores them with it. It never runs on a placement that is already on one
device, on pinned placements (the user's call), or where the strategy did not
measure (e.g. a prior-only first compile, whose budget is a plain compile).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Mapping, Sequence

import numpy as np
import openvino as ov

from .graph import GraphArrays
from .legalize import legalize
from .placement import Placement
from .timing import measure_latency, random_inputs

logger = logging.getLogger(__name__)

DEFAULT_ROUNDS = 5
DEFAULT_ITERATIONS = 6


@dataclasses.dataclass(frozen=True)
class GuardVerdict:
    """Medians and spreads (ms) of the split and of each single device, and the decision."""

    split_ms: float
    split_iqr_ms: float
    single_ms: dict[str, float]
    single_iqr_ms: dict[str, float]
    best_device: str
    noise_ms: float
    keep: bool

    def describe(self) -> str:
        singles = ", ".join(f"{d} alone {ms:.3f} ms (IQR {self.single_iqr_ms[d]:.3f})"
                            for d, ms in self.single_ms.items())
        decision = "kept the split" if self.keep else f"placed everything on {self.best_device}"
        return (f"measured guard: split {self.split_ms:.3f} ms (IQR {self.split_iqr_ms:.3f}); {singles}; "
                f"noise {self.noise_ms:.3f} ms -> {decision}")


def decide(split_samples: Sequence[float], single_samples: Mapping[str, Sequence[float]]) -> GuardVerdict:
    """The guard's rule on latency samples (ms): keep the split only if it wins by more than the noise."""
    if not single_samples:
        raise ValueError("the measured guard needs at least one single-device measurement")

    def spread(samples) -> float:
        p25, p75 = np.percentile(np.asarray(samples, dtype=np.float64), [25, 75])
        return float(p75 - p25)

    medians = {d: float(np.median(s)) for d, s in single_samples.items()}
    spreads = {d: spread(s) for d, s in single_samples.items()}
    best = min(medians, key=medians.get)
    split_ms, split_iqr = float(np.median(split_samples)), spread(split_samples)
    noise = max(split_iqr, spreads[best])
    return GuardVerdict(split_ms, split_iqr, medians, spreads, best, noise, split_ms < medians[best] - noise)


def measure_split_and_singles(core: ov.Core, prepared: ov.Model, placement: Placement, devices: Sequence[str],
                              single_devices: Sequence[str], properties: Mapping[str, Any] | None = None, *,
                              rounds: int = DEFAULT_ROUNDS, iterations: int = DEFAULT_ITERATIONS
                              ) -> tuple[list[float], dict[str, list[float]]]:
    """Latency samples (ms) of ``placement`` and of each of ``single_devices`` alone, all through HETERO."""
    hetero = "HETERO:" + ",".join(devices)
    props = {k: v for k, v in dict(properties or {}).items() if k != "CACHE_DIR"}  # measure, do not cache blobs
    candidates: dict[str, ov.CompiledModel] = {}
    for label, assignment in [("split", placement.assignment)] + [
            (d, dict.fromkeys(placement.assignment, d)) for d in single_devices]:
        model = prepared.clone()
        dataclasses.replace(placement, assignment=assignment).apply(model)
        candidates[label] = core.compile_model(model, hetero, props)
    inputs = random_inputs(candidates["split"])
    samples: dict[str, list[float]] = {label: [] for label in candidates}
    for _ in range(rounds):  # interleaved: every candidate once per round
        for label, compiled in candidates.items():
            samples[label].extend(measure_latency(compiled, inputs, warmup=1, iterations=iterations)
                                  .samples_ms.tolist())
    split = samples.pop("split")
    return split, samples


def measured_guard(core: ov.Core, prepared: ov.Model, graph: GraphArrays, placement: Placement,
                   support: np.ndarray, properties: Mapping[str, Any] | None = None, *,
                   rounds: int = DEFAULT_ROUNDS, iterations: int = DEFAULT_ITERATIONS) -> Placement:
    """``placement`` if it measurably beats every single device that can run the model, else that device alone."""
    devices = tuple(placement.devices)
    used = {placement.assignment[n] for n in placement.compute_nodes}
    compute = np.array([n in placement.compute_nodes for n in graph.names])
    able = [d for k, d in enumerate(devices) if support[compute, k].all()]
    if len(used) < 2 or not able:
        return placement  # already on one device, or no device could take the whole model
    split, singles = measure_split_and_singles(core, prepared, placement, devices, able, properties,
                                               rounds=rounds, iterations=iterations)
    verdict = decide(split, singles)
    logger.info("%s (%s, %d samples each)", verdict.describe(), placement.strategy, len(split))
    if verdict.keep:
        kept = dataclasses.replace(placement, notes=placement.notes + [verdict.describe()],
                                   measured_latency_ms=verdict.split_ms, reference_latency_ms=verdict.single_ms)
        return kept
    single = legalize(graph, np.full(graph.num_nodes, devices.index(verdict.best_device), dtype=np.int64), devices,
                      support, strategy=f"{placement.strategy}+measured-guard")
    single.notes = placement.notes + [verdict.describe()]
    single.measured_latency_ms = verdict.single_ms[verdict.best_device]
    single.reference_latency_ms = dict(verdict.single_ms)
    return single


def measurement_is_cheap(strategy: object) -> bool:
    """Whether the strategy measured this model on the devices (a profile or a search), so timing is cheap."""
    cost = getattr(strategy, "last_cost", None)
    if cost is not None and not getattr(cost, "simulated", True):
        return True
    return getattr(strategy, "last_outcome", None) is not None


__all__ = ["GuardVerdict", "decide", "measure_split_and_singles", "measured_guard", "measurement_is_cheap"]
