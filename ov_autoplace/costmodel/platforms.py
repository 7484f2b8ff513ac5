"""Simulated devices and platforms built from public spec sheets.

More: docs/architecture.md, "Module notes", platforms.py.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Mapping, Sequence

import numpy as np

from ov_autoplace.devices.kinds import CPU, GPU, KIND_NAMES, NPU


log = logging.getLogger(__name__)

PRECISIONS = ("f32", "f16", "bf16", "int8")
ELEMENT_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "int8": 1, "f64": 8}
FLOAT_TYPES = ("f64", "f32", "f16", "bf16")

CATEGORIES = ("conv", "matmul", "attention", "elementwise", "normalization", "pooling", "reduction",
              "data_movement", "view", "other")
MATRIX_CATEGORIES = frozenset({"conv", "matmul", "attention"})
_OP_CATEGORY = {
    **dict.fromkeys(("Convolution", "GroupConvolution", "ConvolutionBackpropData", "GroupConvolutionBackpropData",
                     "DeformableConvolution", "BinaryConvolution"), "conv"),
    **dict.fromkeys(("MatMul", "Einsum", "FullyConnected"), "matmul"),
    "ScaledDotProductAttention": "attention",
    **dict.fromkeys(("MVN", "Softmax", "LogSoftmax", "NormalizeL2", "BatchNormInference", "LRN", "GroupNormalization",
                     "RMS"), "normalization"),
    **dict.fromkeys(("MaxPool", "AvgPool", "AdaptiveAvgPool", "AdaptiveMaxPool"), "pooling"),
    **dict.fromkeys(("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                     "TopK", "ArgMax"), "reduction"),
    **dict.fromkeys(("Transpose", "Concat", "Gather", "GatherElements", "GatherND", "Split", "VariadicSplit",
                     "StridedSlice", "Slice", "Broadcast", "Tile", "Pad", "ScatterUpdate", "ScatterNDUpdate",
                     "ScatterElementsUpdate", "Interpolate", "DepthToSpace", "SpaceToDepth", "ShuffleChannels",
                     "Convert", "ShapeOf", "Range"), "data_movement"),
    **dict.fromkeys(("Reshape", "Squeeze", "Unsqueeze"), "view"),
    **dict.fromkeys(("If", "Loop", "TensorIterator", "NonMaxSuppression", "NonZero", "ROIAlign"), "other"),
}


def op_category(op_type: str) -> str:
    """Cost category of an op type; unlisted op types are element-wise (they touch each element once)."""
    return _OP_CATEGORY.get(op_type, "elementwise")


def _factors(**values: float) -> dict[str, float]:
    missing = set(CATEGORIES) - set(values)
    if missing:
        raise ValueError(f"efficiency factors missing for categories {sorted(missing)}")
    return dict(values)


@dataclasses.dataclass(frozen=True)
class SimDevice:
    """A device model from public specs. Rates in FLOP/s and bytes/s, times in ms, sizes in bytes."""

    name: str  # HETERO device name: "CPU", "GPU", "NPU"
    product: str
    kind: str  # a cost-model kind name of devices/kinds.py: "cpu" | "gpu" | "npu"
    peak_flops: Mapping[str, float]  # vector units, per precision
    matrix_peak_flops: Mapping[str, float]  # matrix units used by conv/matmul/attention, per precision
    fallback_precision: str  # what it runs when the requested precision is not native
    memory_bandwidth: float
    memory_bytes: float
    shares_host_memory: bool
    launch_overhead_ms: float
    submodel_overhead_ms: float
    host_link_bandwidth: float  # to the host CPU's memory; inf for the host CPU itself
    host_link_latency_ms: float
    compute_efficiency: Mapping[str, float]
    memory_efficiency: Mapping[str, float]
    supported_op_types: frozenset[str] | None = None  # None: every op type
    notes: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KIND_NAMES:
            raise ValueError(f"SimDevice.kind must be one of {', '.join(KIND_NAMES)}, got {self.kind!r}")
        if self.fallback_precision not in self.peak_flops:
            raise ValueError(f"{self.name}: fallback precision {self.fallback_precision!r} needs a vector peak")
        for field in ("compute_efficiency", "memory_efficiency"):
            factors = getattr(self, field)
            bad = {c: v for c, v in factors.items() if not 0.0 < v <= 1.0}
            if set(factors) != set(CATEGORIES) or bad:
                raise ValueError(
                    f"{self.name}.{field} needs a factor in (0, 1] for each of {CATEGORIES}, got {factors}")

    def precision_for(self, requested: str) -> str:
        """The precision the device runs when ``requested`` is asked for (its fallback if not native)."""
        if requested in self.peak_flops or requested in self.matrix_peak_flops:
            return requested
        return self.fallback_precision

    def peak_for(self, category: str, precision: str) -> float:
        """FLOP/s an op of ``category`` can reach at ``precision`` (already resolved by precision_for)."""
        vector = self.peak_flops.get(precision, self.peak_flops[self.fallback_precision])
        if category in MATRIX_CATEGORIES:
            return self.matrix_peak_flops.get(precision, vector)
        return vector

    def supports(self, op_type: str) -> bool:
        return self.supported_op_types is None or op_type in self.supported_op_types

    def describe(self) -> str:
        peaks = ", ".join(f"{p} {v / 1e12:.2f}" for p, v in self.peak_flops.items())
        matrix = ", ".join(f"{p} {v / 1e12:.1f}" for p, v in self.matrix_peak_flops.items()) or "none"
        link = "host" if math.isinf(self.host_link_bandwidth) else (
            f"{self.host_link_bandwidth / 1e9:.0f} GB/s + {self.host_link_latency_ms * 1e3:.0f} us to host")
        unsupported = "" if self.supported_op_types is None else f", runs {len(self.supported_op_types)} op types"
        return (f"{self.name:<4} {self.product} (simulated {self.kind}): vector TFLOP/s {peaks}; matrix {matrix}; "
                f"{self.memory_bandwidth / 1e9:.1f} GB/s memory, {self.memory_bytes / 1e9:.0f} GB; link {link}; "
                f"launch {self.launch_overhead_ms * 1e3:.1f} us, submodel {self.submodel_overhead_ms * 1e3:.0f} us"
                f"{unsupported}")


@dataclasses.dataclass(frozen=True, eq=False)
class SimPlatform:
    """Simulated devices plus the links between them (ms latency, bytes/s) and a provenance note."""

    name: str
    devices: tuple[SimDevice, ...]
    link_latency_ms: np.ndarray  # [D, D], 0 on the diagonal
    link_bandwidth: np.ndarray  # [D, D] bytes/s, inf on the diagonal
    notes: str = ""

    @classmethod
    def from_host_links(cls, name: str, devices: Sequence[SimDevice], notes: str = "") -> "SimPlatform":
        """Links from each device's host link: to the CPU directly, between two accelerators via host memory
        (latencies add, the slower bandwidth wins)."""
        n = len(devices)
        lat, bw = np.zeros((n, n)), np.full((n, n), np.inf)
        for a, da in enumerate(devices):
            for b, db in enumerate(devices):
                if a == b:
                    continue
                lat[a, b] = da.host_link_latency_ms + db.host_link_latency_ms
                bw[a, b] = min(da.host_link_bandwidth, db.host_link_bandwidth)
        return cls(name, tuple(devices), lat, bw, notes)

    @property
    def device_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.devices)

    def device(self, name: str) -> SimDevice:
        for d in self.devices:
            if d.name == name:
                return d
        raise KeyError(f"platform {self.name!r} has no device {name!r}; it has {list(self.device_names)}")

    def describe(self) -> str:
        lines = [f"Simulated platform '{self.name}' (all numbers simulated from public specs, not measured)"]
        lines += [f"  {d.describe()}" for d in self.devices]
        if self.notes:
            lines.append(f"  note: {self.notes}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()


# ---- the platforms ---------------------------------------------------------------------------------------
CPU_COMPUTE_EFFICIENCY = _factors(conv=0.55, matmul=0.6, attention=0.35, elementwise=0.25, normalization=0.15, pooling=0.2,
                        reduction=0.2, data_movement=0.2, view=1.0, other=0.15)  # estimate
CPU_MEMORY_EFFICIENCY = _factors(conv=0.6, matmul=0.6, attention=0.5, elementwise=0.7, normalization=0.5, pooling=0.6,
                       reduction=0.6, data_movement=0.4, view=1.0, other=0.4)  # estimate
_GPU_COMPUTE = _factors(conv=0.45, matmul=0.55, attention=0.35, elementwise=0.2, normalization=0.1, pooling=0.2,
                        reduction=0.15, data_movement=0.15, view=1.0, other=0.1)  # estimate
_GPU_MEMORY = _factors(conv=0.6, matmul=0.6, attention=0.5, elementwise=0.75, normalization=0.5, pooling=0.6,
                       reduction=0.5, data_movement=0.5, view=1.0, other=0.4)  # estimate
_NPU_COMPUTE = _factors(conv=0.6, matmul=0.5, attention=0.3, elementwise=0.3, normalization=0.2, pooling=0.3,
                        reduction=0.2, data_movement=0.2, view=1.0, other=0.2)  # estimate
_NPU_MEMORY = _factors(conv=0.5, matmul=0.5, attention=0.4, elementwise=0.5, normalization=0.4, pooling=0.5,
                       reduction=0.4, data_movement=0.4, view=1.0, other=0.3)  # estimate

GiB = 2**30

I9_12900K = SimDevice(
    name=CPU.name, product="Intel Core i9-12900K", kind=CPU.kind,
    # ark.intel.com: 8 P-cores (Golden Cove) + 8 E-cores, no AVX-512; P all-core turbo ~4.9 GHz (reviews).
    # OpenVINO's latency hint on hybrid CPUs uses the P-cores: 8 cores x 32 f32 FLOP/cycle (2 x 256-bit FMA)
    # x 4.9 GHz = 1.25 TFLOP/s (derived). No native f16/bf16 compute: f16 requests run f32.
    peak_flops={"f32": 8 * 32 * 4.9e9},
    # AVX-VNNI int8: 2 ports x 32 int8 MACs x 2 ops per cycle = 128 ops/cycle/core x 8 x 4.9 GHz (derived).
    matrix_peak_flops={"int8": 8 * 128 * 4.9e9},
    fallback_precision="f32",
    memory_bandwidth=76.8e9,  # ark: DDR5-4800 dual channel, max memory bandwidth 76.8 GB/s
    memory_bytes=64 * GiB,  # estimate: the paper does not state the host RAM
    shares_host_memory=True,
    launch_overhead_ms=0.002,  # estimate: CPU plugin per-node dispatch, ~2 us
    submodel_overhead_ms=0.02,  # estimate: one HETERO submodel infer request on the CPU
    host_link_bandwidth=math.inf, host_link_latency_ms=0.0,  # it is the host
    compute_efficiency=CPU_COMPUTE_EFFICIENCY, memory_efficiency=CPU_MEMORY_EFFICIENCY,
)

FLEX_170 = SimDevice(
    name=GPU.name, product="Intel Data Center GPU Flex 170", kind=GPU.kind,
    # Intel spec: 32 Xe cores (512 vector engines x 8 f32 lanes = 4096 lanes), 2.05 GHz max,
    # 16 GB GDDR6 at 576 GB/s, 150 W, PCIe 4.0 x16. f32 = 4096 x 2 x 2.05 GHz = 16.8 TFLOP/s (derived;
    # Intel quotes ~16); vector f16 at twice the f32 rate (derived).
    peak_flops={"f32": 4096 * 2 * 2.05e9, "f16": 2 * 4096 * 2 * 2.05e9},
    # XMX: 512 engines x 128 f16 FLOP/cycle x 2.05 GHz = 134 TFLOP/s f16/bf16, int8 twice that (derived
    # from unit counts and clock, same per-engine rate as the Arc A770's published 137.6 TFLOP/s at 2.1 GHz).
    matrix_peak_flops={"f16": 512 * 128 * 2.05e9, "bf16": 512 * 128 * 2.05e9, "int8": 2 * 512 * 128 * 2.05e9},
    fallback_precision="f32",
    memory_bandwidth=576e9,  # Intel spec sheet
    memory_bytes=16e9,  # Intel spec sheet: 16 GB GDDR6
    shares_host_memory=False,
    launch_overhead_ms=0.004,  # estimate: per-kernel gap in the GPU plugin's in-order queue
    submodel_overhead_ms=0.05,  # estimate: enqueue + host sync per HETERO submodel
    # PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s per direction (spec); ~25 GB/s effective and
    # ~10 us per transfer (estimate).
    host_link_bandwidth=25e9, host_link_latency_ms=0.010,
    compute_efficiency=_GPU_COMPUTE, memory_efficiency=_GPU_MEMORY,
)

PAPER_PLATFORM = SimPlatform.from_host_links(
    "paper: i9-12900K + Flex 170", (I9_12900K, FLEX_170),
    notes="the HSDAG paper's testbed (Duan et al. 2024), modelled from spec sheets",
)

CORE_ULTRA_7_155H = SimDevice(
    name=CPU.name, product="Intel Core Ultra 7 155H", kind=CPU.kind,
    # ark.intel.com: 6 P-cores (Redwood Cove, up to 4.8 GHz) + 8 E-cores + 2 LP E-cores, no AVX-512.
    # P-cores only (latency hint) at ~4.0 GHz sustained in a laptop (estimate): 6 x 32 x 4.0 GHz (derived).
    peak_flops={"f32": 6 * 32 * 4.0e9},
    matrix_peak_flops={"int8": 6 * 128 * 4.0e9},  # AVX-VNNI, as for the i9 (derived; Intel quotes ~5 TOPS CPU)
    fallback_precision="f32",
    memory_bandwidth=120e9,  # ark: LPDDR5x-7467, max memory bandwidth 120 GB/s
    memory_bytes=32 * GiB,  # estimate: a typical laptop
    shares_host_memory=True,
    launch_overhead_ms=0.002, submodel_overhead_ms=0.02,  # estimates, as for the i9
    host_link_bandwidth=math.inf, host_link_latency_ms=0.0,
    compute_efficiency=CPU_COMPUTE_EFFICIENCY, memory_efficiency=CPU_MEMORY_EFFICIENCY,
)

ARC_IGPU_155H = SimDevice(
    name=GPU.name, product="Intel Arc Graphics (Core Ultra 7 155H, Xe-LPG)", kind=GPU.kind,
    # ark: 8 Xe cores (128 vector engines x 8 f32 lanes), 2.25 GHz max; no XMX on Xe-LPG.
    # f32 = 1024 x 2 x 2.25 GHz = 4.6 TFLOP/s, f16 twice (derived); int8 via DP4a 4x f32 = 18.4 TOPS
    # (derived; Intel quotes 18 TOPS for the GPU).
    peak_flops={"f32": 1024 * 2 * 2.25e9, "f16": 2 * 1024 * 2 * 2.25e9},
    matrix_peak_flops={"int8": 4 * 1024 * 2 * 2.25e9},
    fallback_precision="f32",
    memory_bandwidth=120e9,  # shares the CPU's LPDDR5x (ark: 120 GB/s)
    memory_bytes=16 * GiB,  # estimate: about half of the shared system memory
    shares_host_memory=True,
    launch_overhead_ms=0.005, submodel_overhead_ms=0.05,  # estimates
    # Shared memory: no PCIe copy; a tensor handed over is a memory copy (~half the DRAM peak, estimate)
    # after a small sync (estimate).
    host_link_bandwidth=60e9, host_link_latency_ms=0.005,
    compute_efficiency=_GPU_COMPUTE, memory_efficiency=_GPU_MEMORY,
)

# Op types the simulated NPU runs: an estimate loosely following the NPU plugin's static-shape CNN and
# transformer support. Everything else (Gather, ShapeOf, control flow, bitwise ops, NMS, ...) is inf.
NPU_SUPPORTED_OP_TYPES = frozenset({
    "Convolution", "GroupConvolution", "ConvolutionBackpropData", "MatMul", "ScaledDotProductAttention",
    "Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum", "Power", "SquaredDifference", "Sqrt", "Exp",
    "Relu", "PRelu", "Clamp", "Sigmoid", "Tanh", "Gelu", "Swish", "HSwish", "HSigmoid", "Mish", "Elu", "Erf",
    "MVN", "Softmax", "NormalizeL2", "MaxPool", "AvgPool", "ReduceMean", "ReduceSum", "ReduceMax",
    "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "VariadicSplit", "StridedSlice", "Slice",
    "Interpolate", "Pad", "Convert", "FakeQuantize", "Tile", "Broadcast",
})

NPU_155H = SimDevice(
    name=NPU.name, product="Intel AI Boost NPU (Core Ultra 7 155H)", kind=NPU.kind,
    # Intel: 11 TOPS int8. Chips and Cheese ("Intel Meteor Lake's NPU", 2024): 2 compute tiles, 4096 int8
    # MACs/cycle. f16 at half the int8 rate: 5.7 TFLOP/s (estimate). No f32: f32 requests run f16.
    matrix_peak_flops={"int8": 11e12, "f16": 5.7e12},
    # Element-wise work runs on the SHAVE DSPs, far below the MAC array (estimate).
    peak_flops={"f16": 0.25e12},
    fallback_precision="f16",
    memory_bandwidth=60e9,  # estimate: its share of the 120 GB/s LPDDR5x
    memory_bytes=16 * GiB,  # estimate: shared system memory
    shares_host_memory=True,
    launch_overhead_ms=0.001,  # estimate: ops of one compiled blob are scheduled on the device
    submodel_overhead_ms=0.3,  # estimate: one NPU inference dispatch costs a few hundred us
    host_link_bandwidth=60e9, host_link_latency_ms=0.02,  # shared memory; estimate
    compute_efficiency=_NPU_COMPUTE, memory_efficiency=_NPU_MEMORY,
    supported_op_types=NPU_SUPPORTED_OP_TYPES,
    notes="unsupported op types and dynamic shapes cost inf",
)

LAPTOP_PLATFORM = SimPlatform.from_host_links(
    "laptop: Core Ultra 7 155H CPU + Arc iGPU + NPU", (CORE_ULTRA_7_155H, ARC_IGPU_155H, NPU_155H),
    notes="a Meteor Lake laptop; iGPU and NPU share the CPU's LPDDR5x memory",
)

PLATFORMS = {"paper": PAPER_PLATFORM, "laptop": LAPTOP_PLATFORM}


__all__ = ["CATEGORIES", "CPU_COMPUTE_EFFICIENCY", "CPU_MEMORY_EFFICIENCY", "ELEMENT_BYTES", "FLOAT_TYPES", "GiB",
           "LAPTOP_PLATFORM", "PAPER_PLATFORM", "PLATFORMS", "PRECISIONS", "SimDevice", "SimPlatform", "op_category"]
