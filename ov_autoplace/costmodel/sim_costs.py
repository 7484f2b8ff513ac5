"""The CostModel a simulated platform implies for a graph.

Every number from here is simulated (``CostModel.simulated`` is True and
``CostModel.label`` says so).

Per-op cost of a compute node on a device: a roofline with per-category efficiency factors, fused
element-wise ops and op support; the formula and its terms are in docs/cost-model.md ("The simulated
per-op cost").
"""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np

from ov_autoplace.devices.kinds import CPU, NPU
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.placement.legalizer import constant_subgraph_mask
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.memory_need import weight_bytes
from ov_autoplace.costmodel.platforms import (
    CATEGORIES,
    CPU_COMPUTE_EFFICIENCY,
    CPU_MEMORY_EFFICIENCY,
    ELEMENT_BYTES,
    FLOAT_TYPES,
    PRECISIONS,
    GiB,
    SimDevice,
    SimPlatform,
    op_category,
)

log = logging.getLogger(__name__)


# ---- from a graph to per-node costs ---------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _GraphLoad:
    """Device-independent work of every node: FLOPs, bytes touched, category."""

    flops: np.ndarray  # [N] >= 0
    float_elements: np.ndarray  # [N] elements of floating-point tensors read + written (re-sized per precision)
    other_bytes: np.ndarray  # [N] bytes of the other (integer, boolean) tensors read + written
    category: np.ndarray  # [N] index into CATEGORIES
    costed: np.ndarray  # [N] bool: compute nodes that run each inference (not pure-constant)
    dynamic: np.ndarray  # [N] bool: FLOPs or bytes unknown (dynamic shapes)

    def bytes_at(self, precision: str) -> np.ndarray:
        return self.float_elements * ELEMENT_BYTES[precision] + self.other_bytes


def graph_load(graph: GraphArrays) -> _GraphLoad:
    n = graph.num_nodes
    # bytes per element of each node's output 0 (0: not floating point, kept at its own size)
    elem = np.array([ELEMENT_BYTES.get(t, 0) if t in FLOAT_TYPES else 0 for t in graph.out_element_type], float)
    is_float = elem > 0
    safe_elem = np.where(is_float, elem, 1.0)
    out_bytes = np.maximum(np.asarray(graph.out_bytes, np.float64), 0.0)
    edge_bytes = np.maximum(np.asarray(graph.edge_bytes, np.float64), 0.0)
    src, dst = np.asarray(graph.edge_src), np.asarray(graph.edge_dst)
    # a node touches its outputs and every input it reads (one edge per input port)
    in_float = np.bincount(dst, weights=np.where(is_float[src], edge_bytes / safe_elem[src], 0.0), minlength=n)
    in_other = np.bincount(dst, weights=np.where(is_float[src], 0.0, edge_bytes), minlength=n)
    float_elements = np.where(is_float, out_bytes / safe_elem, 0.0) + in_float
    other_bytes = np.where(is_float, 0.0, out_bytes) + in_other
    category = np.array([CATEGORIES.index(op_category(t)) for t in graph.op_types], np.int64)
    view = category == CATEGORIES.index("view")
    float_elements[view] = 0.0
    other_bytes[view] = 0.0
    role = np.asarray(graph.role)
    costed = (role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    dynamic = costed & ((np.asarray(graph.flops) < 0) | (np.asarray(graph.out_bytes) < 0)
                        | (np.bincount(dst, weights=(np.asarray(graph.edge_bytes) < 0), minlength=n) > 0))
    if dynamic.any():  # a modelling note, not a fallback: every stateful decoder's prefill clone has some (its state)
        log.info("%d node(s) have dynamic shapes: their simulated cost is the launch overhead only "
                 "(inf on devices that need static shapes)", int(dynamic.sum()))
    return _GraphLoad(np.maximum(np.asarray(graph.flops, np.float64), 0.0), float_elements, other_bytes,
                      category, costed, dynamic)


def roofline_ms(device: SimDevice, load: _GraphLoad, precision: str) -> np.ndarray:
    """The max(compute, memory) term of every node in ms, without the launch overhead."""
    prec = device.precision_for(precision)
    peak = np.array([device.peak_for(c, prec) for c in CATEGORIES])[load.category]
    ceff = np.array([device.compute_efficiency[c] for c in CATEGORIES])[load.category]
    meff = np.array([device.memory_efficiency[c] for c in CATEGORIES])[load.category]
    return 1e3 * np.maximum(load.flops / (peak * ceff), load.bytes_at(prec) / (device.memory_bandwidth * meff))


def _device_costs(device: SimDevice, graph: GraphArrays, load: _GraphLoad, precision: str) -> np.ndarray:
    """Cost in ms of every node on ``device`` (0 for nodes that do not run, inf for unsupported ones)."""
    cost = np.where(load.costed, device.launch_overhead_ms + roofline_ms(device, load, precision), 0.0)
    unsupported = np.array([not device.supports(t) for t in graph.op_types]) & load.costed
    if device.kind == NPU.kind:
        unsupported |= load.dynamic  # the NPU compiles static shapes only
    cost[unsupported] = np.inf
    return cost


FUSION_ABSORBERS = frozenset({"Convolution", "GroupConvolution", "ConvolutionBackpropData",
                              "GroupConvolutionBackpropData", "MatMul"})
FUSABLE_POST_OPS = frozenset({"Relu", "Clamp", "Sigmoid", "Tanh", "Gelu", "Swish", "HSwish", "HSigmoid", "Mish",
                              "Elu", "PRelu", "Add", "Subtract", "Multiply", "Divide", "FakeQuantize"})


def post_op_fusion(graph: GraphArrays) -> np.ndarray:
    """``fused_into`` for the plugins' post-op fusion: an element-wise op whose only non-constant input
    is the sole output use of a Convolution / MatMul (or of an op already fused into one) joins that kernel."""
    fused = np.full(graph.num_nodes, -1, np.int64)
    for i, p in post_op_inputs(graph, np.ones(graph.num_nodes, bool)):
        root = p if graph.op_types[p] in FUSION_ABSORBERS else int(fused[p])
        if root >= 0 and graph.out_degree[p] == 1:
            fused[i] = root
    return fused


def post_op_inputs(graph: GraphArrays, among: np.ndarray):
    """(node, its one non-constant input) for each FUSABLE_POST_OPS compute node of ``among``, in topological order."""
    const = constant_subgraph_mask(graph)
    for i in np.flatnonzero((np.asarray(graph.role) == NodeRole.COMPUTE) & ~const & among).tolist():
        data = [int(p) for p in graph.predecessors(i) if not const[p]] if graph.op_types[i] in FUSABLE_POST_OPS else []
        if len(data) == 1:
            yield i, data[0]


def cost_model_for(
    graph: GraphArrays,
    platform: SimPlatform,
    *,
    precision: str = "f16",
    fusion: bool = True,
) -> CostModel:
    """The simulated CostModel of ``graph`` (the prepared model's) on ``platform``. More: docs/architecture.md, "Module
    notes", sim_costs.py."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    load = graph_load(graph)
    unfused = np.stack([_device_costs(d, graph, load, precision) for d in platform.devices], axis=1)
    compute = unfused.copy()
    fused_into = post_op_fusion(graph) if fusion else np.full(graph.num_nodes, -1, np.int64)
    members = fused_into >= 0
    compute[members] = np.where(np.isfinite(unfused[members]), 0.0, np.inf)  # free inside its absorber's kernel
    with np.errstate(divide="ignore"):
        ms_per_byte = np.where(np.isinf(platform.link_bandwidth), 0.0, 1e3 / platform.link_bandwidth)
    weights = weight_bytes(graph)  # on the compute nodes that read them, as the profiler charges them
    return CostModel(
        devices=platform.device_names,
        node_names=tuple(graph.names),
        compute_ms=compute,
        unfused_ms=unfused,
        fused_into=fused_into,
        link_latency_ms=np.array(platform.link_latency_ms, np.float64),
        link_ms_per_byte=ms_per_byte,
        submodel_overhead_ms=np.array([d.submodel_overhead_ms for d in platform.devices], np.float64),
        node_memory_bytes=weights.astype(np.int64),
        device_memory_bytes=np.array([d.memory_bytes for d in platform.devices], np.float64),
        simulated=True,
        source=f"{platform.name}, {precision}",
    )


def simulated_support(cost: CostModel, graph: GraphArrays) -> np.ndarray:
    """Where there is no device to ask (simulated platforms): bool [N, D], a compute node runs on a device
    whose cost for it is finite; Parameters, Constants and Results go anywhere."""
    compute = (np.asarray(graph.role) == NodeRole.COMPUTE)[:, None]
    return np.where(compute, np.isfinite(cost.compute_ms), True)


# ---- calibration against a measured CPU -----------------------------------------------------------------


def read_host_cpu() -> tuple[str, float | None]:
    """This machine's ``/proc/cpuinfo`` text and its maximum clock in Hz from sysfs (``""`` / None where unreadable).

    The one place the host's CPU is read: a test that asserts on the prior states the CPU it assumes instead.
    """
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        text = ""
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            hz = float(f.read()) * 1e3
    except (OSError, ValueError):
        hz = None
    return text, hz


def host_cpu_device(num_threads: int = 1, name: str = CPU.name, *, cpuinfo: str | None = None) -> SimDevice:
    """A best-effort model of this machine's CPU (from :func:`read_host_cpu`; every number an estimate).

    Used as the reference of the lab's ``calibrate``: the measured costs are divided
    by what this device's roofline predicts to get efficiency factors. ``cpuinfo``: a ``/proc/cpuinfo`` text to
    read instead of the host's (its ``cpu MHz`` is then the clock).
    """
    max_hz = None
    if cpuinfo is None:
        cpuinfo, max_hz = read_host_cpu()
    first = cpuinfo.split("\n\n")[0]  # first processor only
    info = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in first.splitlines())}
    flags = set(info.get("flags", "").split())
    hz = max_hz or float(info.get("cpu MHz", 3000.0)) * 1e6
    # f32 lanes per FMA: 512-bit on Intel AVX-512 cores, 256-bit datapaths otherwise (AMD Zen 4
    # double-pumps AVX-512); two FMA ports; 2 FLOPs per FMA.
    lanes = 16 if ("avx512f" in flags and info.get("vendor_id") == "GenuineIntel") else 8 if "avx2" in flags else 4
    f32 = num_threads * lanes * 2 * 2 * hz
    peaks = {"f32": f32}
    matrix: dict[str, float] = {}
    # bf16 is a rate only with AMX: with AVX512-BF16 alone OpenVINO's bf16 ran ~2x faster than f32 on an AMD EPYC
    # and 1.6x slower on an Intel Xeon (docs/results.md), so it is modelled as f32 there: no gain either way.
    if "amx_bf16" in flags:
        peaks["bf16"] = 2 * f32
        matrix["bf16"] = num_threads * 2048 * hz  # AMX: 1024 bf16 MACs per cycle per core
        matrix["int8"] = 2 * matrix["bf16"]
    elif "avx512_vnni" in flags or "avx_vnni" in flags:
        matrix["int8"] = 4 * f32
    try:
        with open("/proc/meminfo") as f:
            mem = float(f.readline().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        mem = 16 * GiB
    return SimDevice(
        name=name, product=f"{info.get('model name', 'host CPU')} x{num_threads} thread(s)", kind=CPU.kind,
        peak_flops=peaks, matrix_peak_flops=matrix, fallback_precision="f32",
        memory_bandwidth=min(num_threads * 12e9, 60e9),  # estimate: ~12 GB/s per busy core
        memory_bytes=mem, shares_host_memory=True, launch_overhead_ms=0.002, submodel_overhead_ms=0.02,
        host_link_bandwidth=math.inf, host_link_latency_ms=0.0,
        compute_efficiency=CPU_COMPUTE_EFFICIENCY, memory_efficiency=CPU_MEMORY_EFFICIENCY,
        notes="estimated from /proc/cpuinfo",
    )


__all__ = ["cost_model_for", "graph_load", "host_cpu_device", "post_op_fusion", "read_host_cpu", "roofline_ms",
           "simulated_support"]
