"""Everything the policy's forward pass reads, as numpy arrays (no torch).

How and why, in full: docs/architecture.md, "Module notes", ov_autoplace/policy/inputs.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.policy.boundary import BoundaryInputs, boundary_inputs
from ov_autoplace.policy.coarsen import Coarsening, chain_coarsen, preferred_device_class
from ov_autoplace.policy.features import (
    OP_VOCAB,
    POS_DIM,
    NodeFeatureConfig,
    device_features,
    group_compute_us,
    node_device_features,
    node_features,
)
from ov_autoplace.policy.graph_ops import segment_sum

COARSE_EXTRA_NAMES = ("log_member_count", "log_group_flops", "log_group_bytes")


@dataclasses.dataclass(frozen=True, eq=False)
class PolicyArrays:
    """Policy inputs for one graph and one device list. C coarse nodes, N nodes, D devices.

    ``x`` float32 [C, F + 3]; ``edge_src``/``edge_dst`` int64 [Ec] (coarse DAG
    edges); ``coarse_size`` float32 [C] (original nodes per coarse node);
    ``node_coarse`` int64 [N]; ``device_x`` float32 [D, Fd];
    ``node_device_sum`` float32 [C, D, Fnd] (sum over members);
    ``compute_us`` float32 [C, D] (sum over members, unsupported counted as
    ``features.UNSUPPORTED_US``); ``boundary``: the tensors between coarse nodes and the links' costs
    (read by a policy with ``placer_inputs="boundary"``, ``boundary.py``).
    """

    x: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    coarse_size: np.ndarray
    node_coarse: np.ndarray
    device_x: np.ndarray
    node_device_sum: np.ndarray
    compute_us: np.ndarray
    devices: tuple[str, ...]
    boundary: BoundaryInputs

    @property
    def num_nodes(self) -> int:
        return int(self.node_coarse.shape[0])

    @property
    def num_coarse(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_devices(self) -> int:
        return int(self.device_x.shape[0])

    def __repr__(self) -> str:
        return (f"PolicyArrays(num_nodes={self.num_nodes}, num_coarse={self.num_coarse}, "
                f"coarse_edges={self.edge_src.shape[0]}, features={self.x.shape[1]}, devices={list(self.devices)})")


def build_policy_arrays(graph: GraphArrays, cost: CostModel, config: NodeFeatureConfig = NodeFeatureConfig(), *,
                        vocab: tuple[str, ...] = OP_VOCAB, pos_dim: int = POS_DIM,
                        coarsening: Coarsening | None = None, coarsening_rule: str = "chain") -> PolicyArrays:
    """Features, coarsening and device inputs of ``graph`` under ``cost`` (both of the prepared model).
    ``coarsening``: a ready grouping (an ablation); else ``coarsening_rule`` (``HSDAGConfig.coarsening``)."""
    if tuple(cost.node_names) != tuple(graph.names):
        raise ValueError(
            f"the CostModel describes {cost.num_nodes} nodes that are not the {graph.num_nodes} nodes of this graph; "
            "build it for the same prepared model (ov_autoplace.model.prepare.prepare_model)")
    node_us = group_compute_us(cost, graph)
    if coarsening is not None:
        coarse = coarsening
    elif coarsening_rule == "cost_cut":
        coarse = chain_coarsen(graph, preferred_device_class(node_us))
    elif coarsening_rule == "cost_cut_fused":
        coarse = chain_coarsen(graph, preferred_device_class(node_us, cost.fused_into))
    elif coarsening_rule == "chain":
        coarse = chain_coarsen(graph)
    else:
        raise ValueError(f"unknown coarsening rule {coarsening_rule!r}; expected chain, cost_cut or cost_cut_fused")
    group, num = coarse.group_of_node, coarse.num_groups
    count = coarse.member_count.astype(np.float64)

    feats = node_features(graph, config, vocab=vocab, pos_dim=pos_dim).astype(np.float64)
    mean = segment_sum(feats, group, num) / count[:, None]
    extra = np.zeros((num, len(COARSE_EXTRA_NAMES)))
    extra[:, 0] = np.log1p(count)
    if config.use_op_cost:
        extra[:, 1] = np.log1p(segment_sum(np.maximum(graph.flops, 0.0), group, num)) / 10.0
        extra[:, 2] = np.log1p(segment_sum(np.maximum(graph.out_bytes, 0).astype(np.float64), group, num)) / 10.0

    nd = node_device_features(cost, graph).astype(np.float64)
    return PolicyArrays(
        x=np.concatenate([mean, extra], axis=1).astype(np.float32),
        edge_src=coarse.edge_src.astype(np.int64),
        edge_dst=coarse.edge_dst.astype(np.int64),
        coarse_size=count.astype(np.float32),
        node_coarse=group.astype(np.int64),
        device_x=device_features(cost, graph),
        node_device_sum=segment_sum(nd, group, num).astype(np.float32),
        compute_us=segment_sum(node_us, group, num).astype(np.float32),
        devices=tuple(cost.devices),
        boundary=boundary_inputs(graph, cost, group),
    )


__all__ = ["COARSE_EXTRA_NAMES", "PolicyArrays", "build_policy_arrays"]
