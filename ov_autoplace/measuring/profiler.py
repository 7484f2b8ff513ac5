"""Measure a :class:`CostModel` on real devices.

More: docs/architecture.md, "Module notes", profiler.py.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any, Sequence

import numpy as np
import openvino as ov
from openvino import opset13 as ops

from ov_autoplace.graph.arrays import GraphArrays, NodeRole, extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.progress import progress_bar
from ov_autoplace.devices.timing import measure_latency
from ov_autoplace.devices.properties import with_runtime_options
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.memory_need import weight_bytes
from ov_autoplace.measuring.link_calibration import LinkProfile, check_devices, profile_links
from ov_autoplace.measuring.noise import (UNKNOWN_RELATIVE_SPREAD, LoadProbe, assumed_spread, busy_now, iqr,
                                          measured_window, noise_fields, speed_drift)
from ov_autoplace.cache.profile_store import MODEL_PROFILE_FORMAT, ProfileStore, profile_key  # noqa: F401 - re-exported
from ov_autoplace.measuring.perf_counts import (HEAVY_OP_TYPES, map_times, ms_per_byte_fallback, profiled_window,
                                                reports_running_average, unfused_times)

logger = logging.getLogger(__name__)

@dataclasses.dataclass(frozen=True)
class DeviceReport:
    """How one device's per-op profile was obtained (times in ms, per inference)."""

    device: str
    e2e_ms: float  # measure_latency median, one submodel on this device
    profiled_sum_ms: float  # sum of the per-runtime-node times (PERF_COUNT clock)
    unmapped_ms: float  # runtime nodes naming no compute op
    spread_ms: float  # part of unmapped_ms no neighbour could take (spread proportionally)
    scale: float  # factor applied to per-op times
    runtime_nodes: int
    executed_nodes: int
    compute_nodes: int
    named_nodes: int  # compute nodes named by some runtime node's originalLayersNames
    attached_nodes: int  # unnamed compute nodes given to a named neighbour's runtime node
    fused_nodes: int
    isolated_nodes: int  # fused nodes whose unfused cost was measured alone
    # noise (noise.py); the defaults are what a report stored before these fields existed reads as
    e2e_spread_ms: float = float("nan")  # IQR of the end-to-end samples (nan: not recorded)
    other_cores: float = float("nan")  # other processes' busy cores on ours during the window (nan: unknown)
    loaded: bool = False  # the window was loaded, also when measured again
    load_reason: str = ""
    remeasured: bool = False  # the first window was loaded and was measured again
    speed_drift: float = 0.0  # first report: noise.speed_drift, added to every op's relative spread

    @property
    def ratio(self) -> float:
        """Profiled per-op sum over end-to-end latency (before scaling)."""
        return self.profiled_sum_ms / self.e2e_ms if self.e2e_ms > 0 else float("nan")

    @property
    def unmapped_fraction(self) -> float:
        return self.unmapped_ms / self.profiled_sum_ms if self.profiled_sum_ms > 0 else 0.0


@dataclasses.dataclass(frozen=True)
class ModelProfile:
    """A measured CostModel with the per-device reports and the profiler's own run time."""

    cost_model: CostModel
    reports: tuple[DeviceReport, ...]
    links: LinkProfile
    profiler_seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"cost_model": self.cost_model.to_dict(), "reports": [dataclasses.asdict(r) for r in self.reports],
                "links": self.links.to_dict(), "profiler_seconds": self.profiler_seconds}

    @classmethod
    def from_dict(cls, data: dict[str, Any], graph: GraphArrays | None = None) -> "ModelProfile":
        """Rebuild; with ``graph``, check the node count and take the node names from it."""
        cost = CostModel.from_dict(data["cost_model"])
        if graph is not None:
            if cost.num_nodes != graph.num_nodes:
                raise ValueError(f"stored profile has {cost.num_nodes} nodes, the model has {graph.num_nodes}")
            # Same structure, node for node; auto-generated friendly names may differ between builds.
            cost = dataclasses.replace(cost, node_names=tuple(graph.names))
        reports = tuple(DeviceReport(**r) for r in data["reports"])
        if [r.device for r in reports] != list(cost.devices):
            raise ValueError(f"reports are for {[r.device for r in reports]}, cost model for {list(cost.devices)}")
        if cost.compute_spread_ms is None:  # stored before profiles had spreads: unknown, assumed (noise.py)
            compute_spread, e2e_spread = assumed_spread(cost.compute_ms, [r.e2e_ms for r in reports])
            cost = dataclasses.replace(cost, compute_spread_ms=compute_spread, e2e_spread_ms=e2e_spread,
                                       source=f"{cost.source}; spread unknown, assumed {UNKNOWN_RELATIVE_SPREAD:.0%}")
        return cls(cost, reports, LinkProfile.from_dict(data["links"]), float(data["profiler_seconds"]))


# --- assembly -------------------------------------------------------------------------------------

#: Weights per node, as every cost model charges them (``costmodel/memory_need.py``).
node_memory_bytes = weight_bytes


def device_memory_bytes(core: ov.Core, device: str) -> float:
    try:
        if "GPU_DEVICE_TOTAL_MEM_SIZE" in core.get_property(device, "SUPPORTED_PROPERTIES"):
            return float(core.get_property(device, "GPU_DEVICE_TOTAL_MEM_SIZE"))
    except Exception:  # noqa: BLE001 - no capacity reported: treat as host memory
        pass
    return float("inf")


def _single_device_compile(core: ov.Core, prepared: ov.Model, device: str) -> ov.CompiledModel:
    """``prepared`` all on ``device``, compiled through HETERO (one submodel) like every placement, with the model's
    runtime options HETERO would drop (a decoder's KV cache precision)."""
    for op in prepared.get_ordered_ops():
        op.get_rt_info()["affinity"] = device
    return core.compile_model(prepared, f"HETERO:{device}", with_runtime_options(core, prepared, (device,),
                                                                                 {"PERF_COUNT": False}))


def profile_request(model: ov.Model, core: ov.Core, devices: Sequence[str], warmup: int, iterations: int):
    """What every model profiler starts with: the arguments checked, the model prepared and extracted, and
    the profile store key of this model on these devices: ``(devices, prepared, graph, key)``."""
    devices = tuple(devices)
    check_devices(core, devices)
    if warmup < 0 or iterations < 1:
        raise ValueError(f"need warmup >= 0 and iterations >= 1, got warmup={warmup}, iterations={iterations}")
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    return devices, prepared, graph, profile_key(core, devices, kind="model", graph=graph,
                                                 extra={"format": MODEL_PROFILE_FORMAT})


def e2e_scale(e2e_ms: float, submodel_overhead_ms: float, profiled_sum_ms: float) -> float:
    """The factor that makes the per-op times add up to the end-to-end median minus the device's submodel
    overhead (never below half of the median): PERF_COUNT's per-op times miss the time between kernels."""
    target = max(e2e_ms - submodel_overhead_ms, 0.5 * e2e_ms)
    return target / profiled_sum_ms if profiled_sum_ms > 0 else 1.0


def merge_fusion(fused_into: np.ndarray, fused: dict[int, int]) -> None:
    """Add one device's fusions ``{op: primary}`` to ``fused_into`` in place, keeping it one level deep and
    first come first served (an op fused on an earlier device keeps that primary)."""
    for i, p in fused.items():
        if fused_into[i] < 0 and fused_into[p] < 0 and not (fused_into == i).any():
            fused_into[i] = p


def measure_model_profile(model: ov.Model, core: ov.Core, devices: Sequence[str], *, warmup: int = 3,
                          iterations: int = 20, store: ProfileStore | None = None,
                          links: LinkProfile | None = None) -> ModelProfile:
    """Profile ``model`` (original or prepared; it is prepared here) on ``devices``; see the module doc."""
    started = time.perf_counter()
    devices, prepared, graph, key = profile_request(model, core, devices, warmup, iterations)
    if store is not None:
        cached = store.load(key, lambda payload: ModelProfile.from_dict(payload, graph))
        if cached is not None and not cached.cost_model.loaded:
            logger.info("model profile for %s loaded from %s", devices, store.path_for(key))
            return cached
        if cached is not None and busy_now():
            logger.info("the stored profile for %s was taken on a loaded machine and the machine is loaded now: "
                        "reused (its gains stay unproven) rather than measured again as loaded", devices)
            return cached
        if cached is not None:
            logger.info("the stored profile for %s was taken on a loaded machine; measuring it again", devices)
    links = links if links is not None else profile_links(core, devices, store=store)
    if links.devices != devices:
        raise ValueError(f"link profile is for {links.devices}, profiling {devices}")

    n, num_devices = graph.num_nodes, len(devices)
    compute = np.zeros((n, num_devices))
    unfused = np.zeros((n, num_devices))
    spread, e2e_spread, loaded = np.zeros((n, num_devices)), np.zeros(num_devices), False
    fused_into = np.full(n, -1, dtype=np.int64)
    reports = []
    compute_mask = graph.role == NodeRole.COMPUTE
    with progress_bar(num_devices, f"profiling {graph.num_nodes} nodes", unit="device") as bar:
        for d, device in enumerate(devices):
            bar.set_postfix_str(device)
            probe = LoadProbe().start()  # the compiles count towards the load window
            compiled = core.compile_model(prepared, device, {"PERF_COUNT": True})
            companion = _single_device_compile(core, prepared, device)
            if d == 0:  # timed again after the last window (speed_drift)
                first = companion
            window = profiled_window(compiled, reports_running_average(core, device), warmup, iterations,
                                     companion=companion)
            (node_ms, _, per_run), noise, remeasured = measured_window(device, window, probe)
            times, fused, stats, run_times = map_times(compiled, graph, node_ms, runs=per_run)
            e2e = noise.e2e_ms
            del compiled
            scale = e2e_scale(e2e, float(links.submodel_overhead_ms[d]), stats["profiled_sum_ms"])
            compute[:, d] = times * scale
            spread[:, d] = iqr(run_times) * scale
            e2e_spread[d] = noise.e2e_spread_ms
            loaded |= noise.loaded
            unfused[:, d] = compute[:, d]
            isolated = sorted(fused)
            # A ReadValue or Assign cannot be compiled without its pair (an Assign alone is a sink without a
            # model), nor an op fed a dynamic shape (what a variable's ReadValue gives even in the static clone) be
            # timed alone; their unfused cost is priced per output byte, the others are compiled alone.
            dynamic_input = np.zeros(graph.num_nodes, dtype=bool)
            dynamic_input[graph.edge_dst[graph.edge_bytes < 0]] = True
            alone_ok = [graph.op_types[i] not in ("ReadValue", "Assign") and not dynamic_input[i] for i in isolated]
            by_byte = [i for i, ok in zip(isolated, alone_ok) if not ok]
            isolated = [i for i, ok in zip(isolated, alone_ok) if ok]
            if isolated:
                alone = unfused_times(core, prepared, graph, device, isolated, warmup, iterations)
                if alone is None:
                    alone = ms_per_byte_fallback(times, graph) * np.maximum(graph.out_bytes[isolated], 0)
                unfused[isolated, d] = alone * scale
            if by_byte:
                unfused[by_byte, d] = ms_per_byte_fallback(times, graph) * np.maximum(graph.out_bytes[by_byte], 0) \
                    * scale
            merge_fusion(fused_into, fused)
            report = DeviceReport(device=device, e2e_ms=e2e, scale=scale, compute_nodes=int(compute_mask.sum()),
                                  fused_nodes=len(fused), isolated_nodes=len(isolated), **stats,
                                  **noise_fields(noise, remeasured))
            logger.info("profiled %s: per-op sum %.3f ms vs end-to-end %.3f ms (ratio %.2f), unmapped %.1f %%, "
                        "%d/%d compute ops named by the runtime, %d fused", device, report.profiled_sum_ms, e2e,
                        report.ratio, 100 * report.unmapped_fraction, report.named_nodes, report.compute_nodes,
                        report.fused_nodes)
            reports.append(report)
            bar.update(1)
    if num_devices > 1:
        drift = speed_drift(devices[0], reports[0].e2e_ms, measure_latency(first, warmup=1,
                                                                         iterations=max(iterations, 12)).samples_ms)
        spread += compute * drift
        reports[0] = dataclasses.replace(reports[0], speed_drift=drift)
    del first, companion

    cost = CostModel(
        devices=devices, node_names=tuple(graph.names), compute_ms=compute, unfused_ms=unfused,
        fused_into=fused_into, link_latency_ms=links.link_latency_ms, link_ms_per_byte=links.link_ms_per_byte,
        submodel_overhead_ms=links.submodel_overhead_ms, node_memory_bytes=node_memory_bytes(graph),
        device_memory_bytes=np.array([device_memory_bytes(core, d) for d in devices]), simulated=False,
        source=f"profiled on {','.join(devices)}, OpenVINO {ov.get_version().split('-')[0]}",
        compute_spread_ms=spread, e2e_spread_ms=e2e_spread, loaded=loaded)
    profile = ModelProfile(cost, tuple(reports), links, time.perf_counter() - started)
    if store is not None:
        store.save(key, profile.to_dict())
    return profile


def profile_model(model: ov.Model, core: ov.Core, devices: Sequence[str], *, warmup: int = 3,
                  iterations: int = 20, store: ProfileStore | None = None,
                  links: LinkProfile | None = None) -> CostModel:
    """A measured CostModel of ``model`` on ``devices`` (cached in ``store`` if given)."""
    return measure_model_profile(model, core, devices, warmup=warmup, iterations=iterations, store=store,
                                 links=links).cost_model


__all__ = ["HEAVY_OP_TYPES", "DeviceReport", "ModelProfile", "check_devices", "measure_model_profile",
           "profile_links", "profile_model"]
