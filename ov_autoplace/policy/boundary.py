"""What moving a group off the graph's best device trades its compute gain against: its boundary.

How and why, in full: docs/architecture.md, "Module notes", ov_autoplace/policy/boundary.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.policy.graph_ops import segment_sum

BOUNDARY_FEATURE_NAMES = ("log_boundary_transfer_us", "log_net_saving_us", "net_saving_share",
                          "graph_saving_share")


@dataclasses.dataclass(frozen=True, eq=False)
class BoundaryInputs:
    """The tensors between coarse nodes and the links' costs; B tensor-edges, D devices.

    ``src``/``dst`` int64 [B]: coarse node of the producer / consumer (never equal); ``tensor`` int64 [B]: an id
    of the producing output (one tensor feeding several consumers is sent once per receiving group);
    ``nbytes`` float64 [B]; ``latency_us``/``us_per_byte`` float64 [D, D]; ``overhead_us`` float64 [D].
    """

    src: np.ndarray
    dst: np.ndarray
    tensor: np.ndarray
    nbytes: np.ndarray
    latency_us: np.ndarray
    us_per_byte: np.ndarray
    overhead_us: np.ndarray


def boundary_inputs(graph: GraphArrays, cost: CostModel, node_coarse: np.ndarray) -> BoundaryInputs:
    """The edges of ``graph`` between different coarse nodes (``node_coarse`` [N]) and ``cost``'s link terms."""
    node_coarse = np.asarray(node_coarse, np.int64)
    src, dst = graph.edge_src.astype(np.int64), graph.edge_dst.astype(np.int64)
    across = node_coarse[src] != node_coarse[dst]
    ports = int(graph.edge_src_port.max(initial=0)) + 1
    return BoundaryInputs(
        src=node_coarse[src[across]], dst=node_coarse[dst[across]],
        tensor=src[across] * ports + graph.edge_src_port[across].astype(np.int64),
        nbytes=np.maximum(graph.edge_bytes[across], 0).astype(np.float64),
        latency_us=np.asarray(cost.link_latency_ms, np.float64) * 1e3,
        us_per_byte=np.asarray(cost.link_ms_per_byte, np.float64) * 1e3,
        overhead_us=np.asarray(cost.submodel_overhead_ms, np.float64) * 1e3)


class GroupBoundary:
    """The boundary of the groups ``coarse_group`` [C] -> [0, G) makes, priced per (group, device) by
    :meth:`features`. ``coarse_us`` [C, D]: each coarse node's compute microseconds per device
    (``PolicyArrays.compute_us``). What does not depend on where the groups are - their compute, the reference
    device, the distinct tensors between them - is found once here, for every placer pass that prices them."""

    def __init__(self, inputs: BoundaryInputs, coarse_group: np.ndarray, num_groups: int,
                 coarse_us: np.ndarray) -> None:
        coarse_group = np.asarray(coarse_group, np.int64)
        self.inputs, self.num_groups = inputs, num_groups
        self.group_us = segment_sum(np.asarray(coarse_us, np.float64), coarse_group, num_groups)
        self.ref = int(self.group_us.sum(axis=0).argmin())
        self.total_us = max(float(self.group_us[:, self.ref].sum()), 1e-9)
        g_src, g_dst = coarse_group[inputs.src], coarse_group[inputs.dst]
        across = g_src != g_dst
        # one tensor reaching one group is one transfer, however many of its nodes read it
        key = np.unique(np.stack([inputs.tensor[across], g_dst[across], g_src[across]], 1), axis=0,
                        return_index=True)[1] if across.any() else np.zeros(0, np.int64)
        idx = np.flatnonzero(across)[key]
        self.nbytes, self.into, self.out_of = inputs.nbytes[idx, None], g_dst[idx], g_src[idx]

    def features(self, around: np.ndarray | None = None) -> np.ndarray:
        """float32 [G, D, 4] (:data:`BOUNDARY_FEATURE_NAMES`).

        ``around`` int [G]: the device each group is on as the move is priced (a previous pass's greedy
        placement); ``None``: every group on the reference device. A group's move is priced against its own
        device there, its neighbours staying where ``around`` puts them; a submodel's overhead counts where no
        neighbour is on ``d``.
        """
        num_groups, devices = self.group_us.shape
        on = np.full(num_groups, self.ref, np.int64) if around is None else np.asarray(around, np.int64)
        nbytes, into, out_of = self.nbytes, self.into, self.out_of
        lat, per_byte = self.inputs.latency_us, self.inputs.us_per_byte  # zero diagonals: nothing to send
        # the receiving group on d reads from its producer's device; the sending group on d writes to its consumer's
        transfer = (segment_sum(lat[on[out_of]] + nbytes * per_byte[on[out_of]], into, num_groups)
                    + segment_sum(lat[:, on[into]].T + nbytes * per_byte[:, on[into]].T, out_of, num_groups))
        neighbour_on = np.zeros((num_groups, devices), bool)
        neighbour_on[into, on[out_of]] = True
        neighbour_on[out_of, on[into]] = True
        own = np.arange(devices)[None, :] == on[:, None]
        transfer = transfer + np.where(own | neighbour_on, 0.0, self.inputs.overhead_us[None, :])
        local = self.group_us + transfer
        net = np.take_along_axis(local, on[:, None], 1) - local
        out = np.zeros((num_groups, devices, len(BOUNDARY_FEATURE_NAMES)))
        out[..., 0] = np.log1p(transfer) / 10.0
        out[..., 1] = np.sign(net) * np.log1p(np.abs(net)) / 10.0
        out[..., 2] = np.clip(10.0 * net / self.total_us, -1.0, 1.0)
        out[..., 3] = np.clip(np.maximum(net, 0.0).sum(axis=0) / self.total_us, 0.0, 2.0)[None, :]
        return out.astype(np.float32)


__all__ = ["BOUNDARY_FEATURE_NAMES", "BoundaryInputs", "GroupBoundary", "boundary_inputs"]
