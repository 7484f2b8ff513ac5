"""CPU calibration: a simulated platform's CPU fitted to a measured CPU CostModel (the profiler's), its
efficiency factors carried over to the simulated CPU (the roofline: ``ov_autoplace/costmodel/sim_costs.py``).
Only the lab's studies calibrate a platform; the runtime prices the platforms as they are.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.platforms import CATEGORIES, SimDevice, SimPlatform
from ov_autoplace.costmodel.sim_costs import graph_load, host_cpu_device, roofline_ms
from ov_autoplace.devices.kinds import CPU
from ov_autoplace.graph.arrays import GraphArrays

log = logging.getLogger(__name__)

#: calibrate() fits a category only if more than this share of its measured time is beyond launch overhead.
LAUNCH_BOUND_SHARE = 0.25


def calibrate(
    platform: SimPlatform,
    measured: CostModel,
    graph: GraphArrays,
    *,
    measured_device: str = CPU.name,
    reference: SimDevice | None = None,
    reference_precision: str = "f32",
) -> SimPlatform:
    """Fit the platform CPU's per-category efficiency factors to a measured CPU cost model.

    ``reference`` describes the machine the measurement ran on (default:
    :func:`host_cpu_device` with one thread), ``reference_precision`` the
    precision it ran. For each category with measured nodes (compute nodes not
    fused into another, with a finite positive measured cost), the factor is
    scaled by the ratio of sums ``sum(roofline) / sum(measured - launch)`` - big
    ops weigh most, as they do in a latency - with compute and memory factors
    scaled together and capped at 1. A category whose measured time is mostly
    launch overhead (roofline share below ``LAUNCH_BOUND_SHARE``) keeps its factor:
    there the factor cannot be told apart from timing noise. The fitted fractions of peak then apply to
    the platform CPU's own peak and bandwidth: that is the scaling from the
    measured host to the simulated CPU. An absorber's measured time includes
    the ops fused into it, a small bias toward slower fused kernels.
    Returns a new platform; ``platform`` is not modified.
    """
    if tuple(measured.node_names) != tuple(graph.names):
        raise ValueError(f"the measured cost model ({measured.num_nodes} nodes) is not for this graph "
                         f"({graph.num_nodes} nodes); profile the same prepared model")
    if measured_device not in measured.devices:
        raise ValueError(f"measured cost model has no device {measured_device!r}; it has {list(measured.devices)}; "
                         "pass measured_device=")
    cpus = [d for d in platform.devices if d.kind == CPU.kind]
    if not cpus:
        raise ValueError(f"platform {platform.name!r} has no CPU to calibrate")
    target = cpus[0]
    reference = reference or host_cpu_device(1)
    ref = dataclasses.replace(reference, compute_efficiency=target.compute_efficiency,
                              memory_efficiency=target.memory_efficiency)
    load = graph_load(graph)
    measured_ms = np.asarray(measured.compute_ms)[:, measured.devices.index(measured_device)]
    roofline = roofline_ms(ref, load, reference_precision)
    usable = (load.costed & ~load.dynamic & (np.asarray(measured.fused_into) < 0) & np.isfinite(measured_ms)
              & (measured_ms > 0) & (roofline > 0))
    compute_eff, memory_eff = dict(target.compute_efficiency), dict(target.memory_efficiency)
    fitted, skipped = [], []
    for c, category in enumerate(CATEGORIES):
        nodes = usable & (load.category == c)
        if not nodes.any():
            continue
        total = float(measured_ms[nodes].sum())
        excess = total - int(nodes.sum()) * ref.launch_overhead_ms
        if excess < LAUNCH_BOUND_SHARE * total:  # tiny ops: the factor is not identifiable from launch noise
            skipped.append(category)
            continue
        scale = float(roofline[nodes].sum()) / excess
        compute_eff[category] = float(np.clip(compute_eff[category] * scale, 1e-6, 1.0))
        memory_eff[category] = float(np.clip(memory_eff[category] * scale, 1e-6, 1.0))
        fitted.append(f"{category} x{scale:.2f} ({int(nodes.sum())} nodes)")
    log.info("calibrated %s on %s: %s; launch-bound, kept: %s", target.product, measured.label,
             ", ".join(fitted) or "no usable nodes", ", ".join(skipped) or "none")
    calibrated = dataclasses.replace(
        target, compute_efficiency=compute_eff, memory_efficiency=memory_eff,
        notes=f"efficiency factors calibrated on {measured.label}",
    )
    devices = tuple(calibrated if d is target else d for d in platform.devices)
    return SimPlatform(f"{platform.name}, CPU calibrated on {measured.source}", devices,
                       platform.link_latency_ms, platform.link_bandwidth, platform.notes)


__all__ = ["LAUNCH_BOUND_SHARE", "calibrate"]
