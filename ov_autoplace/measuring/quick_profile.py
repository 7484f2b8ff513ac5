"""A cheap measured profile: one compile and a few PERF_COUNT runs per device.

The rest: docs/architecture.md, "Module notes", ov_autoplace/measuring/quick_profile.py.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Sequence

import numpy as np
import openvino as ov

from ov_autoplace.graph.arrays import NodeRole
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.measuring.link_calibration import LINK_PROFILE_FORMAT, QUICK_LINK_CUTS, QUICK_LINK_SIZES, LinkProfile
from ov_autoplace.measuring.noise import (LoadProbe, busy_now, iqr, measured_window, noise_fields, per_run_node_ms,
                                          speed_drift)
from ov_autoplace.cache.profile_store import ProfileStore, profile_key
from ov_autoplace.measuring.perf_counts import (executed_ms, map_times, ms_per_byte_fallback, reports_running_average,
                                                warmed_up, window_ms)
from ov_autoplace.measuring.profiler import (DeviceReport, ModelProfile, device_memory_bytes, e2e_scale, merge_fusion,
                                             node_memory_bytes, profile_request)

logger = logging.getLogger(__name__)

# The profiled window of one device: at least this many runs, then runs until PROFILED_RUNS_BUDGET_MS is spent (or
# ``iterations`` are done); enough runs to keep two profiles' per-op times within a few percent at the least wall
# time (measured in docs/cost-model.md, "The quick profile").
MIN_PROFILED_RUNS = 3
PROFILED_RUNS_BUDGET_MS = 1500.0


def stored_or_prior_links(core: ov.Core, devices: Sequence[str], store: ProfileStore | None) -> LinkProfile:
    """The quick link profile stored for ``devices`` (as ``MeasuredCostProvider`` measures it), else the prior's."""
    devices = tuple(devices)
    if store is not None:
        key = profile_key(core, devices, kind="links", extra={
            "format": LINK_PROFILE_FORMAT, "sizes": sorted(QUICK_LINK_SIZES), "cuts": sorted(QUICK_LINK_CUTS)})
        if store.path_for(key).exists():
            cached = store.load(key, LinkProfile.from_dict)
            if cached is not None and cached.devices == devices:
                return cached
    from ov_autoplace.costmodel.prior_costs import prior_device, read_device_facts
    from ov_autoplace.costmodel.platforms import SimPlatform

    models = [prior_device(read_device_facts(core, d)) for d in devices]
    n = len(devices)
    if any(m is None for m in models):  # nothing known: free links, a small per-submodel cost (estimate)
        return LinkProfile(devices, np.zeros((n, n)), np.zeros((n, n)), np.full(n, 0.02), (), 0.0)
    platform = SimPlatform.from_host_links("prior links", [m.as_sim_device() for m in models])
    with np.errstate(divide="ignore"):
        per_byte = np.where(np.isinf(platform.link_bandwidth), 0.0, 1e3 / platform.link_bandwidth)
    return LinkProfile(devices, np.array(platform.link_latency_ms, np.float64), per_byte,
                       np.array([m.terms.submodel_ms for m in models], np.float64), (), 0.0)


def _runs(compiled: ov.CompiledModel, warmup: int, iterations: int, running_average: bool,
          budget_ms: float | None = None, *, runs_before: int = 0, per_run: list | None = None):
    """Per-runtime-node ms per inference over the profiled window, and each run's wall time (ms). More:
    docs/architecture.md, "Module notes", quick_profile.py."""
    request, inputs, stateful, before, start = warmed_up(compiled, warmup, runs_before)
    walls, snapshots = [], []
    while len(walls) < iterations and (budget_ms is None or len(walls) < MIN_PROFILED_RUNS
                                       or sum(walls) < budget_ms):
        if stateful:
            request.reset_state()
        t0 = time.perf_counter()
        request.infer(inputs)
        walls.append(1e3 * (time.perf_counter() - t0))
        if not running_average or per_run is not None:
            snapshots.append(executed_ms(request))
    if per_run is not None:
        per_run.extend(per_run_node_ms(start, snapshots, before, running_average))
    return window_ms(request, start, [] if running_average else snapshots, before, len(walls), running_average), walls


def _budgeted_window(compiled: ov.CompiledModel, running_average: bool, warmup: int, iterations: int,
                     budget_ms: float | None):
    """A profiled window for ``noise.measured_window``, each call continuing the run count since compile."""
    done = [0]

    def run():
        per_run: list[dict[str, float]] = []
        node_ms, walls = _runs(compiled, warmup, iterations, running_average, budget_ms, runs_before=done[0],
                               per_run=per_run)
        done[0] += warmup + len(walls)
        return node_ms, walls, per_run
    return run


def quick_model_profile(model: ov.Model, core: ov.Core, devices: Sequence[str], *, warmup: int = 1,
                        iterations: int = 6, store: ProfileStore | None = None,
                        links: LinkProfile | None = None,
                        budget_ms: float | None = PROFILED_RUNS_BUDGET_MS) -> ModelProfile:
    """Profile ``model`` (prepared here) on ``devices`` with one compile per device; see the module doc.

    ``iterations`` caps the profiled runs per device; ``budget_ms`` (None: exactly ``iterations``)
    stops earlier for slow models, after at least ``MIN_PROFILED_RUNS``.
    """
    started = time.perf_counter()
    devices, prepared, graph, key = profile_request(model, core, devices, warmup, iterations)
    if store is not None and store.path_for(key).exists():
        cached = store.load(key, lambda payload: ModelProfile.from_dict(payload, graph))
        if cached is not None and not cached.cost_model.loaded:
            return cached
        if cached is not None and busy_now():
            logger.info("the stored profile of this model was taken on a loaded machine and the machine is loaded "
                        "now: reused (its gains stay unproven) rather than measured again as loaded")
            return cached
        if cached is not None:
            logger.info("the stored profile of this model was taken on a loaded machine; measuring it again")
    links = links if links is not None else stored_or_prior_links(core, devices, store)
    n, num_devices = graph.num_nodes, len(devices)
    compute, unfused = np.zeros((n, num_devices)), np.zeros((n, num_devices))
    spread, e2e_spread = np.zeros((n, num_devices)), np.zeros(num_devices)
    fused_into = np.full(n, -1, dtype=np.int64)
    reports = []
    compute_mask = graph.role == NodeRole.COMPUTE
    from ov_autoplace.devices.facts import twin_of

    twins = twin_of(core, devices)
    for d, device in enumerate(devices):
        if d in twins:  # same plugin, same reported properties: measuring it again would only measure noise
            t = twins[d]
            compute[:, d], unfused[:, d] = compute[:, t], unfused[:, t]
            spread[:, d], e2e_spread[d] = spread[:, t], e2e_spread[t]
            reports.append(dataclasses.replace(reports[t], device=device))
            logger.info("quick profile of %s: reports the same properties as %s; its costs are %s's", device,
                        devices[t], devices[t])
            continue
        probe = LoadProbe().start()  # the compile counts towards the load window (no waiting for small models)
        compiled = core.compile_model(prepared, device, {"PERF_COUNT": True})
        window = _budgeted_window(compiled, reports_running_average(core, device), warmup, iterations, budget_ms)
        (node_ms, _, per_run), noise, remeasured = measured_window(device, window, probe)
        times, fused, stats, run_times = map_times(compiled, graph, node_ms, runs=per_run)
        if d == 0:  # timed again after the last window (speed_drift)
            first = compiled
        del compiled
        e2e = noise.e2e_ms
        scale = e2e_scale(e2e, float(links.submodel_overhead_ms[d]), stats["profiled_sum_ms"])
        compute[:, d] = times * scale
        spread[:, d], e2e_spread[d] = iqr(run_times) * scale, noise.e2e_spread_ms
        unfused[:, d] = compute[:, d]
        isolated = sorted(fused)
        if isolated:
            unfused[isolated, d] = ms_per_byte_fallback(times, graph) * np.maximum(graph.out_bytes[isolated], 0) \
                * scale
        merge_fusion(fused_into, fused)
        reports.append(DeviceReport(device=device, e2e_ms=e2e, scale=scale, compute_nodes=int(compute_mask.sum()),
                                    fused_nodes=len(fused), isolated_nodes=0, **stats,
                                    **noise_fields(noise, remeasured)))
        logger.info("quick profile of %s: end-to-end %.3f ms (IQR %.3f ms, other processes %.2f cores%s), per-op "
                    "sum %.3f ms, %d fused", device, e2e, noise.e2e_spread_ms, noise.other_cores,
                    ", loaded" if noise.loaded else "", stats["profiled_sum_ms"], len(fused))
    if num_devices - len(twins) > 1:
        budget = None if budget_ms is None else budget_ms / 4
        drift = speed_drift(devices[0], reports[0].e2e_ms, _runs(
            first, 1, iterations, reports_running_average(core, devices[0]), budget)[1])
        spread += compute * drift
        reports[0] = dataclasses.replace(reports[0], speed_drift=drift)
    del first
    link_source = "measured links" if links.pairs else "prior (simulated) links"
    cost = CostModel(
        devices=devices, node_names=tuple(graph.names), compute_ms=compute, unfused_ms=unfused,
        fused_into=fused_into, link_latency_ms=links.link_latency_ms, link_ms_per_byte=links.link_ms_per_byte,
        submodel_overhead_ms=links.submodel_overhead_ms, node_memory_bytes=node_memory_bytes(graph),
        device_memory_bytes=np.array([device_memory_bytes(core, d) for d in devices]), simulated=not links.pairs,
        source=f"quick profile on {','.join(devices)} ({link_source}), OpenVINO {ov.get_version().split('-')[0]}",
        compute_spread_ms=spread, e2e_spread_ms=e2e_spread, loaded=any(r.loaded for r in reports))
    profile = ModelProfile(cost, tuple(reports), links, time.perf_counter() - started)
    if store is not None:
        store.save(key, profile.to_dict())
    return profile


__all__ = ["quick_model_profile", "stored_or_prior_links"]
