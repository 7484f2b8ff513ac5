"""HSDAG step 2: per-node, per-device and per-(node, device) features, in numpy.

Three tables feed the policy: ``node_features`` (what the paper lists - op type, output shape, positional encoding,
degrees, fractal dimension - plus size, role and depth; ablated blocks are zeroed, never dropped, so one trained
policy runs under every ablation), ``device_features`` (what a device is like for this graph) and
``node_device_features`` (what node i costs on device d). Conditioning the placer on the last two, not on a fixed
device list, is what lets one set of weights place onto any number and kind of devices. Every column:
docs/policy.md, "Features".
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.graph.arrays import MAX_RANK, GraphArrays, NodeRole
from ov_autoplace.graph.op_kinds import HEAVY_OP_TYPES

#: The op types with their own one-hot column; anything else is ``other``.
#: Fixed (a trained policy's header stores the list it was trained with).
OP_VOCAB: tuple[str, ...] = (
    # graph boundary
    "Parameter", "Constant", "Result",
    # matrix engines
    "Convolution", "GroupConvolution", "ConvolutionBackpropData", "GroupConvolutionBackpropData", "MatMul",
    "Einsum", "ScaledDotProductAttention",
    # element-wise arithmetic
    "Add", "Subtract", "Multiply", "Divide", "Power", "Maximum", "Minimum", "SquaredDifference", "Sqrt", "Exp",
    "Erf", "Clamp", "Select",
    # activations
    "Relu", "PRelu", "Gelu", "Sigmoid", "Tanh", "Swish", "HSwish", "HSigmoid", "Mish", "Elu", "SoftPlus",
    # normalisation
    "MVN", "Softmax", "LogSoftmax", "NormalizeL2", "BatchNormInference",
    # pooling and reductions
    "MaxPool", "AvgPool", "AdaptiveAvgPool", "ReduceMean", "ReduceSum", "ReduceMax", "TopK",
    # data movement and views
    "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "VariadicSplit", "Gather",
    "GatherElements", "StridedSlice", "Slice", "Broadcast", "Tile", "Pad", "Interpolate", "Convert", "ShapeOf",
    # quantisation and control flow
    "FakeQuantize", "If", "Loop",
)
OTHER_OP = "other"
#: Width of the sin/cos positional encoding the policy expects (``extract_graph``'s default).
POS_DIM = 16
SHAPE_DIMS = 4
ROLE_NAMES = ("compute", "parameter", "constant", "result")

#: Stand-in for log-costs of a node a device cannot run (``compute_ms = inf``).
UNSUPPORTED_LOG_COST = 20.0
#: Per-node microseconds used for an unsupported node when costs are summed (1000 s).
UNSUPPORTED_US = 1e9

DEVICE_FEATURE_NAMES: tuple[str, ...] = (
    "log_total_compute_us",      # log1p(sum of finite compute_us over the graph) / 10
    "log_total_vs_fastest",      # log((total_d + 1) / (min over devices of total + 1))
    "log_heavy_us_per_mflop",    # log1p(median compute_us / MFLOP over heavy ops)
    "log_light_us_per_mflop",    # log1p(median compute_us / MFLOP over other compute ops)
    "unsupported_fraction",      # share of compute nodes with compute_ms = inf
    "log_link_latency_us",       # log1p(mean link latency to and from the other devices, us)
    "log_link_us_per_mb",        # log1p(mean transfer cost to and from the other devices, us per MB)
    "log_submodel_overhead_us",  # log1p(submodel_overhead_ms * 1e3)
    "log_memory_gib",            # log1p(min(capacity, 1 TiB) in GiB)
    "memory_unbounded",          # 1 when capacity is inf
    "weights_vs_memory",         # min(sum node_memory_bytes / capacity, 2)
    "simulated",                 # 1 when the CostModel is simulated
)
NODE_DEVICE_FEATURE_NAMES: tuple[str, ...] = (
    "log_compute_us",            # log1p(compute_ms * 1e3); UNSUPPORTED_LOG_COST when inf
    "log_vs_best_device",        # log_compute_us - min over devices; UNSUPPORTED_LOG_COST when inf
    "unsupported",               # 1 when compute_ms = inf
    "log_unfused_extra_us",      # log1p(max(unfused - compute, 0) * 1e3): what cutting its fusion costs
)


@dataclasses.dataclass(frozen=True)
class NodeFeatureConfig:
    """Ablation switches of :func:`node_features`; a switched-off block is zeroed, not removed."""

    use_output_shape: bool = True
    use_node_id: bool = True
    use_structural: bool = True
    use_op_cost: bool = True

    def to_dict(self) -> dict[str, bool]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "NodeFeatureConfig":
        unknown = set(data) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown NodeFeatureConfig switch(es) {sorted(unknown)}; "
                             f"known: {[f.name for f in dataclasses.fields(cls)]}")
        return cls(**data)


def node_feature_names(vocab: tuple[str, ...] = OP_VOCAB, pos_dim: int = POS_DIM) -> list[str]:
    """Column names of :func:`node_features`, in order."""
    return ([f"op={t}" for t in vocab] + [f"op={OTHER_OP}"] + [f"role={r}" for r in ROLE_NAMES]
            + [f"shape_dim[{k - SHAPE_DIMS}]" for k in range(SHAPE_DIMS)] + ["shape_rank", "shape_dynamic"]
            + ["log_bytes", "log_flops"] + [f"pos_enc[{k}]" for k in range(pos_dim)] + ["rel_position"]
            + ["log_in_degree", "log_out_degree", "rel_depth", "fractal_dim"])


def positional_encoding(positions: np.ndarray, pos_dim: int) -> np.ndarray:
    """sin/cos encoding of ``positions``, the formula of ``GraphArrays.pos_enc``."""
    if pos_dim <= 0 or pos_dim % 2:
        raise ValueError(f"pos_dim must be a positive even integer, got {pos_dim}")
    k = np.arange(pos_dim // 2, dtype=np.float64)
    angle = positions.astype(np.float64)[:, None] / np.power(10000.0, 2.0 * k / pos_dim)[None, :]
    out = np.empty((len(positions), pos_dim), dtype=np.float64)
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    return out.astype(np.float32)


def op_type_index(op_types: tuple[str, ...], vocab: tuple[str, ...] = OP_VOCAB) -> np.ndarray:
    """Column of each op type in the one-hot (``len(vocab)`` for ``other``)."""
    lookup = {t: k for k, t in enumerate(vocab)}
    other = len(vocab)
    return np.fromiter((lookup.get(t, other) for t in op_types), dtype=np.int64, count=len(op_types))


def node_features(graph: GraphArrays, config: NodeFeatureConfig = NodeFeatureConfig(), *,
                  vocab: tuple[str, ...] = OP_VOCAB, pos_dim: int = POS_DIM) -> np.ndarray:
    """float32 ``[N, F]`` node features; every column: docs/policy.md, "Features"."""
    n = graph.num_nodes
    blocks: list[np.ndarray] = []

    onehot = np.zeros((n, len(vocab) + 1), dtype=np.float32)
    onehot[np.arange(n), op_type_index(graph.op_types, vocab)] = 1.0
    blocks.append(onehot)
    roles = np.zeros((n, len(ROLE_NAMES)), dtype=np.float32)
    roles[np.arange(n), graph.role.astype(np.int64)] = 1.0
    blocks.append(roles)

    shape = np.zeros((n, SHAPE_DIMS + 2), dtype=np.float32)
    if config.use_output_shape:
        rank = graph.out_rank.astype(np.int64)
        dims = graph.out_shape  # [N, MAX_RANK], 0-padded after the rank, -1 dynamic
        for k in range(SHAPE_DIMS):  # column k holds dim (rank - SHAPE_DIMS + k)
            src = rank - SHAPE_DIMS + k
            valid = (src >= 0) & (src < MAX_RANK)
            dim = np.where(valid, dims[np.arange(n), np.clip(src, 0, MAX_RANK - 1)], 0)
            shape[:, k] = np.log1p(np.maximum(dim, 0))
        shape[:, SHAPE_DIMS] = np.maximum(rank, 0) / MAX_RANK
        dynamic = (rank < 0) | ((dims < 0) & (np.arange(MAX_RANK)[None, :] < rank[:, None])).any(axis=1)
        shape[:, SHAPE_DIMS + 1] = dynamic
    blocks.append(shape)

    size = np.zeros((n, 2), dtype=np.float32)
    if config.use_op_cost:
        size[:, 0] = np.log1p(np.maximum(graph.out_bytes, 0)) / 10.0
        size[:, 1] = np.log1p(np.maximum(graph.flops, 0.0)) / 10.0
    blocks.append(size)

    position = np.zeros((n, pos_dim + 1), dtype=np.float32)
    if config.use_node_id:
        pe = graph.pos_enc if graph.pos_dim == pos_dim else positional_encoding(graph.topo_index, pos_dim)
        position[:, :pos_dim] = pe
        position[:, pos_dim] = graph.topo_index / max(n - 1, 1)
    blocks.append(position)

    structural = np.zeros((n, 4), dtype=np.float32)
    if config.use_structural:
        structural[:, 0] = np.log1p(graph.in_degree)
        structural[:, 1] = np.log1p(graph.out_degree)
        structural[:, 2] = graph.depth / max(int(graph.depth.max(initial=0)), 1)
        structural[:, 3] = graph.fractal_dim
    blocks.append(structural)
    return np.concatenate(blocks, axis=1)


def _check_cost(cost: CostModel, graph: GraphArrays) -> None:
    if cost.num_nodes != graph.num_nodes:
        raise ValueError(f"the CostModel has {cost.num_nodes} nodes but the graph has {graph.num_nodes}; "
                         "build both from the same prepared model")


def _compute_us(cost: CostModel, graph: GraphArrays) -> tuple[np.ndarray, np.ndarray]:
    """``(compute_us [N, D] with non-compute rows 0, unsupported [N, D] bool)``."""
    compute = graph.role == NodeRole.COMPUTE
    us = np.where(compute[:, None], np.asarray(cost.compute_ms, dtype=np.float64) * 1e3, 0.0)
    unsupported = ~np.isfinite(us)
    return us, unsupported


def _median_us_per_mflop(us: np.ndarray, flops: np.ndarray, rows: np.ndarray) -> float:
    ok = rows & (flops > 0) & np.isfinite(us)
    return float(np.median(us[ok] / (flops[ok] / 1e6))) if ok.any() else 0.0


def device_features(cost: CostModel, graph: GraphArrays) -> np.ndarray:
    """float32 ``[D, Fd]`` device descriptors (columns: :data:`DEVICE_FEATURE_NAMES`)."""
    _check_cost(cost, graph)
    us, unsupported = _compute_us(cost, graph)
    num_devices = len(cost.devices)
    compute = graph.role == NodeRole.COMPUTE
    heavy = np.fromiter((t in HEAVY_OP_TYPES for t in graph.op_types), dtype=bool, count=graph.num_nodes)
    total = np.where(unsupported, 0.0, us).sum(axis=0)
    out = np.zeros((num_devices, len(DEVICE_FEATURE_NAMES)), dtype=np.float64)
    out[:, 0] = np.log1p(total) / 10.0
    out[:, 1] = np.log((total + 1.0) / (total.min() + 1.0))
    for d in range(num_devices):
        out[d, 2] = np.log1p(_median_us_per_mflop(us[:, d], graph.flops, compute & heavy))
        out[d, 3] = np.log1p(_median_us_per_mflop(us[:, d], graph.flops, compute & ~heavy))
    out[:, 4] = unsupported[compute].mean(axis=0) if compute.any() else 0.0
    if num_devices > 1:
        off = ~np.eye(num_devices, dtype=bool)
        latency = np.asarray(cost.link_latency_ms, dtype=np.float64)
        per_byte = np.asarray(cost.link_ms_per_byte, dtype=np.float64)

        def both_ways(m: np.ndarray) -> np.ndarray:  # mean over the links to and from d
            m = np.where(off, m, 0.0)
            return (m.sum(axis=1) + m.sum(axis=0)) / (2 * (num_devices - 1))

        out[:, 5] = np.log1p(both_ways(latency) * 1e3)
        out[:, 6] = np.log1p(both_ways(per_byte) * 1e6 * 1e3)
    out[:, 7] = np.log1p(np.asarray(cost.submodel_overhead_ms, dtype=np.float64) * 1e3)
    capacity = np.asarray(cost.device_memory_bytes, dtype=np.float64)
    out[:, 8] = np.log1p(np.minimum(capacity, 2.0**40) / 2.0**30)
    out[:, 9] = np.isinf(capacity)
    weights = float(np.maximum(np.asarray(cost.node_memory_bytes), 0).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        out[:, 10] = np.where(capacity > 0, np.minimum(weights / capacity, 2.0), 2.0)
    out[:, 11] = float(cost.simulated)
    return out.astype(np.float32)


def node_device_features(cost: CostModel, graph: GraphArrays) -> np.ndarray:
    """float32 ``[N, D, Fnd]`` per-(node, device) costs (columns: :data:`NODE_DEVICE_FEATURE_NAMES`)."""
    _check_cost(cost, graph)
    us, unsupported = _compute_us(cost, graph)
    compute = graph.role == NodeRole.COMPUTE
    out = np.zeros(us.shape + (len(NODE_DEVICE_FEATURE_NAMES),), dtype=np.float64)
    log_us = np.where(unsupported, UNSUPPORTED_LOG_COST, np.log1p(np.where(unsupported, 0.0, us)))
    out[..., 0] = log_us
    best = log_us.min(axis=1, keepdims=True)
    out[..., 1] = np.where(unsupported, UNSUPPORTED_LOG_COST, log_us - best)
    out[..., 2] = unsupported
    unfused = np.where(compute[:, None], np.asarray(cost.unfused_ms, dtype=np.float64) * 1e3, 0.0)
    extra = unfused - np.where(unsupported, 0.0, us)
    out[..., 3] = np.log1p(np.where(np.isfinite(extra), np.maximum(extra, 0.0), 0.0))
    return out.astype(np.float32)


def group_compute_us(cost: CostModel, graph: GraphArrays) -> np.ndarray:
    """float64 ``[N, D]`` compute microseconds, unsupported as :data:`UNSUPPORTED_US` (summable per group)."""
    us, unsupported = _compute_us(cost, graph)
    return np.where(unsupported, UNSUPPORTED_US, us)


__all__ = [
    "DEVICE_FEATURE_NAMES", "NODE_DEVICE_FEATURE_NAMES", "OP_VOCAB", "OTHER_OP", "POS_DIM", "NodeFeatureConfig",
    "device_features", "group_compute_us", "node_device_features", "node_feature_names", "node_features",
    "op_type_index", "positional_encoding",
]
