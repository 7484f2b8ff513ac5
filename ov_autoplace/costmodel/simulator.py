"""Predict placement latencies from a :class:`CostModel`, thousands of placements at a time.

More: docs/architecture.md, "Module notes", simulator.py.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.placement.legalizer import constant_subgraph_mask
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.islands import IslandLabeller

log = logging.getLogger(__name__)

#: Transfers are tabulated over (producer device, set of consumer devices): 2**D codes per device.
MAX_DEVICES = 8


def _segment_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Start offsets of the runs of equal values in a sorted key array."""
    if sorted_keys.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))


@dataclasses.dataclass(frozen=True)
class SimulationBreakdown:
    """Where one placement's predicted latency goes. ``label`` says simulated or measured."""

    label: str
    devices: tuple[str, ...]
    total_ms: float
    compute_ms: float
    transfer_ms: float
    overhead_ms: float
    compute_ms_per_device: dict[str, float]
    compute_nodes_per_device: dict[str, int]
    submodels_per_device: dict[str, int]
    num_submodels: int
    cut_edges: int  # counted transfers: (producer output, consumer device) pairs
    transfer_bytes: int
    resident_bytes_per_device: dict[str, int]
    memory_ok: bool

    def summary(self) -> str:
        lines = [
            f"Predicted latency {self.total_ms:.3f} ms [{self.label}]",
            f"  compute {self.compute_ms:.3f} ms, transfers {self.transfer_ms:.3f} ms "
            f"({self.cut_edges} cut, {self.transfer_bytes / 1e6:.2f} MB), "
            f"submodel overhead {self.overhead_ms:.3f} ms ({self.num_submodels} submodels)",
        ]
        for d in self.devices:
            lines.append(
                f"  {d:<8} {self.compute_nodes_per_device[d]:>5} nodes  {self.compute_ms_per_device[d]:9.3f} ms  "
                f"{self.submodels_per_device[d]:>3} submodels  "
                f"{self.resident_bytes_per_device[d] / 1e6:9.1f} MB resident"
            )
        if not self.memory_ok:
            lines.append("  WARNING: some device exceeds its memory capacity")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


class Simulator:
    """Vectorised latency prediction for placements of one graph under one cost model."""

    def __init__(self, cost: CostModel, graph: GraphArrays) -> None:
        if tuple(cost.node_names) != tuple(graph.names):
            raise ValueError(
                f"cost model nodes do not match the graph: cost model has {cost.num_nodes} nodes, graph "
                f"{graph.num_nodes}; build the cost model for this exact prepared model (prepare_model(model))"
            )
        self.cost, self.graph = cost, graph
        n, num_devices = graph.num_nodes, len(cost.devices)
        self.num_nodes, self.num_devices = n, num_devices
        role = np.asarray(graph.role)
        compute = role == NodeRole.COMPUTE
        follower = constant_subgraph_mask(graph)  # Constants and pure-constant compute nodes
        self.active = compute & ~follower
        src, dst = np.asarray(graph.edge_src, np.int64), np.asarray(graph.edge_dst, np.int64)
        self._init_compute(cost, compute)
        self._init_transfers(cost, graph, follower, role, src, dst)
        self._init_components(src, dst)
        self._init_memory(cost, graph, follower, role, src, dst)
        log.debug("simulator for %d nodes (%d active, %d output groups) on %s [%s]", n, self._active_idx.size,
                  self._group_src.size, list(cost.devices), cost.label)

    # ---- precomputation -------------------------------------------------------------------------
    def _init_compute(self, cost: CostModel, compute: np.ndarray) -> None:
        fused_into = np.asarray(cost.fused_into, np.int64)
        members = np.flatnonzero(compute & (fused_into >= 0))
        targets = fused_into[members]
        if members.size and (targets.max() >= self.num_nodes or (targets == members).any()):
            raise ValueError("CostModel.fused_into must hold node indices other than the node itself, or -1")
        involved = np.union1d(members, targets)
        plain = np.setdiff1d(np.flatnonzero(compute), involved)
        d_count = self.num_devices
        # row-major [nodes, D] tables read with a flat index node_position * D + device
        self._plain = plain
        self._plain_ms_flat = np.ascontiguousarray(cost.compute_ms[plain], np.float64).reshape(-1)
        self._plain_base = (np.arange(plain.size) * d_count).astype(np.int32)
        self._involved = involved
        self._involved_fused_flat = np.ascontiguousarray(cost.compute_ms[involved], np.float64).reshape(-1)
        self._involved_unfused_flat = np.ascontiguousarray(cost.unfused_ms[involved], np.float64).reshape(-1)
        self._involved_base = (np.arange(involved.size) * d_count).astype(np.int32)
        pos = np.full(self.num_nodes, -1, np.int64)
        pos[involved] = np.arange(involved.size)
        self._members, self._member_targets = members, targets
        self._member_pos = pos[members]
        order = np.argsort(pos[targets], kind="stable")
        self._target_order = order
        sorted_pos = pos[targets][order]
        starts = _segment_starts(sorted_pos)
        self._target_starts = starts
        self._target_pos = sorted_pos[starts] if starts.size else np.zeros(0, np.int64)

    def _init_transfers(self, cost, graph, follower, role, src, dst) -> None:
        keep = ~follower[src] & (role[dst] != NodeRole.RESULT)
        src_port = np.asarray(graph.edge_src_port, np.int64)[keep]
        e_src, e_dst = src[keep], dst[keep]
        nbytes = np.maximum(np.asarray(cost.bytes_on(graph), np.int64)[keep], 0)
        key = e_src * (int(src_port.max(initial=0)) + 1) + src_port
        order = np.argsort(key, kind="stable")
        starts = _segment_starts(key[order])
        self._edge_dst = e_dst[order]
        self._group_starts = starts
        self._groups_are_single = starts.size == order.size
        self._group_src = e_src[order][starts]
        self._group_bytes = nbytes[order][starts].astype(np.float64)
        # A group's cost depends only on (producer device s, set m of consumer devices), so it is
        # tabulated per group over the code s * 2**D + m (bit d of m: some consumer on device d).
        d_count = self.num_devices
        if d_count > MAX_DEVICES:
            raise ValueError(f"the simulator handles at most {MAX_DEVICES} devices, the cost model has {d_count}")
        lat, per_byte = np.asarray(cost.link_latency_ms), np.asarray(cost.link_ms_per_byte)
        width = 1 << d_count
        table = np.zeros((self._group_src.size, d_count, width))
        for s_dev in range(d_count):
            for d in range(d_count):
                if d == s_dev:
                    continue
                link = lat[s_dev, d] + self._group_bytes * per_byte[s_dev, d]  # [G]
                has_d = (np.arange(width) >> d) & 1  # [width]
                table[:, s_dev, :] += link[:, None] * has_d[None, :]
        self._code_width = width
        self._group_table = table.reshape(-1)
        self._group_base = (np.arange(self._group_src.size) * d_count * width).astype(np.int32)

    def _init_components(self, src, dst) -> None:
        active_idx = np.flatnonzero(self.active)
        local = np.full(self.num_nodes, -1, np.int64)
        local[active_idx] = np.arange(active_idx.size)
        both = self.active[src] & self.active[dst]
        self._active_idx = active_idx
        self._islands = IslandLabeller(active_idx.size, local[src[both]], local[dst[both]])

    def _init_memory(self, cost, graph, follower, role, src, dst) -> None:
        # Weights: node_memory_bytes of the nodes on a device. The profiler and the simulated platforms
        # put a Constant's bytes on each compute node that reads it (a shared Constant is duplicated per
        # device by Placement.apply, so per-consumer accounting is the conservative reading).
        self._mem_bytes = np.asarray(cost.node_memory_bytes, np.float64)
        # Activations: the largest output of a node that runs each inference (not weights).
        holders = (role != NodeRole.CONSTANT) & (role != NodeRole.RESULT) & ~follower
        self._act_nodes = np.flatnonzero(holders)
        self._act_bytes = np.maximum(np.asarray(graph.out_bytes, np.float64)[self._act_nodes], 0.0)

    # ---- evaluation -----------------------------------------------------------------------------
    def _as_batch(self, placements: np.ndarray) -> tuple[np.ndarray, bool]:
        arr = np.asarray(placements)
        single = arr.ndim == 1
        if single:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.num_nodes:
            raise PlacementError(
                f"placements must have shape [P, {self.num_nodes}] or [{self.num_nodes}], got {np.shape(placements)}"
            )
        if not np.issubdtype(arr.dtype, np.integer):
            raise PlacementError(f"placements must be integer device indices, got dtype {arr.dtype}")
        if arr.size and (arr.min() < 0 or arr.max() >= self.num_devices):
            raise PlacementError(
                f"placements hold device indices {int(arr.min())}..{int(arr.max())}; "
                f"expected 0..{self.num_devices - 1} for devices {list(self.cost.devices)}"
            )
        return arr.astype(np.int8, copy=False), single  # small ints: fewer bytes per gather

    def _node_compute(self, dev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-node compute cost: ([P, plain nodes], [P, fusion-involved nodes])."""
        plain = np.take(self._plain_ms_flat, dev[:, self._plain] + self._plain_base)
        if not self._involved.size:
            return plain, np.zeros((dev.shape[0], 0))
        dev_inv = dev[:, self._involved]
        cut = dev[:, self._members] != dev[:, self._member_targets]  # [P, F]
        unfused = np.zeros(dev_inv.shape, bool)
        unfused[:, self._member_pos] = cut  # a member away from its absorber runs on its own...
        # ...and the absorber loses the discount when any of its members is away
        unfused[:, self._target_pos] |= np.logical_or.reduceat(cut[:, self._target_order], self._target_starts,
                                                               axis=1)
        idx = dev_inv + self._involved_base
        fused_ms, unfused_ms = np.take(self._involved_fused_flat, idx), np.take(self._involved_unfused_flat, idx)
        return plain, np.where(unfused, unfused_ms, fused_ms)

    def compute_ms(self, dev: np.ndarray) -> np.ndarray:
        """Compute time [P] of validated placements ``dev`` [P, N]."""
        plain, involved = self._node_compute(dev)
        return plain.sum(axis=1) + involved.sum(axis=1)

    def _transfer_codes(self, dev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(producer device [P, G], consumer-device bit set [P, G]) of every output group."""
        consumers = np.left_shift(np.uint8(1), dev[:, self._edge_dst].astype(np.uint8))
        if not self._groups_are_single and consumers.shape[1]:
            consumers = np.bitwise_or.reduceat(consumers, self._group_starts, axis=1)
        return dev[:, self._group_src], consumers

    def transfer_ms(self, dev: np.ndarray) -> np.ndarray:
        """Transfer time [P] of validated placements."""
        src_dev, consumers = self._transfer_codes(dev)
        idx = src_dev.astype(np.int32) * self._code_width + consumers + self._group_base
        return np.take(self._group_table, idx).sum(axis=1)

    def _components(self, dev: np.ndarray):
        """Label the same-device islands of active nodes of every placement.

        Returns (component -> placement index, component -> device), one entry per component.
        """
        return self._islands(dev[:, self._active_idx])

    def num_submodels(self, placements: np.ndarray) -> np.ndarray | int:
        """Same-device islands per placement (``submodels.count_islands``), the priced submodel count."""
        dev, single = self._as_batch(placements)
        comp_block, _ = self._components(dev)
        counts = np.bincount(comp_block, minlength=dev.shape[0])
        return int(counts[0]) if single else counts

    def overhead_ms(self, dev: np.ndarray) -> np.ndarray:
        """Submodel overhead [P] of validated placements: one ``submodel_overhead_ms[d]`` per island on d."""
        comp_block, comp_device = self._components(dev)
        overhead = np.asarray(self.cost.submodel_overhead_ms, np.float64)[comp_device]
        return np.bincount(comp_block, weights=overhead, minlength=dev.shape[0])

    def resident_bytes(self, dev: np.ndarray) -> np.ndarray:
        """Resident bytes [P, D]: weights of the nodes on each device plus its largest activation."""
        out = np.zeros((dev.shape[0], self.num_devices))
        for d in range(self.num_devices):
            here = dev == d
            out[:, d] = here @ self._mem_bytes
            if self._act_nodes.size:
                out[:, d] += np.where(here[:, self._act_nodes], self._act_bytes, 0.0).max(axis=1)
        return out

    def memory_ok(self, placements: np.ndarray) -> np.ndarray | bool:
        """True where every device's resident bytes fit in ``device_memory_bytes``."""
        dev, single = self._as_batch(placements)
        ok = (self.resident_bytes(dev) <= np.asarray(self.cost.device_memory_bytes)[None, :]).all(axis=1)
        return bool(ok[0]) if single else ok

    def latency_and_submodels(self, placements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predicted latency [P] and submodel count [P] of legal placements [P, N], islands labelled once."""
        dev, _ = self._as_batch(placements)
        comp_block, comp_device = self._components(dev)
        overhead = np.bincount(comp_block, weights=np.asarray(self.cost.submodel_overhead_ms, np.float64)[comp_device],
                               minlength=dev.shape[0])
        return self.compute_ms(dev) + self.transfer_ms(dev) + overhead, np.bincount(comp_block, minlength=dev.shape[0])

    def __call__(self, placements: np.ndarray) -> np.ndarray | float:
        """Predicted latency in ms: [P] for [P, N] placements, a float for one [N] placement."""
        dev, single = self._as_batch(placements)
        total = self.compute_ms(dev) + self.transfer_ms(dev) + self.overhead_ms(dev)
        return float(total[0]) if single else total

    def feasible_ms(self, placements: np.ndarray) -> np.ndarray | float:
        """:meth:`__call__`'s ms where the placement can run: inf where a device's memory overflows (or the time is
        not finite), so a search or a score compares feasible placements only. Where no device has a finite
        memory (most platforms) the memory pass is skipped: nothing can overflow, and training calls this per batch."""
        ms = np.atleast_1d(np.asarray(self(placements), np.float64))
        ok = np.isfinite(ms)
        if np.isfinite(np.asarray(self.cost.device_memory_bytes, np.float64)).any():
            ok &= np.atleast_1d(self.memory_ok(placements))
        out = np.where(ok, ms, np.inf)
        return float(out[0]) if np.ndim(placements) == 1 else out

    def breakdown(self, placement: np.ndarray) -> SimulationBreakdown:
        """Compute / transfer / overhead split of one placement, per device, for summaries."""
        dev, _ = self._as_batch(placement)
        if dev.shape[0] != 1:
            raise PlacementError(f"breakdown takes one placement of shape [{self.num_nodes}], "
                                 f"got {np.shape(placement)}")
        names, d_count = self.cost.devices, self.num_devices
        per_node = np.zeros(self.num_nodes)
        plain, involved = self._node_compute(dev)
        per_node[self._plain], per_node[self._involved] = plain[0], involved[0]
        compute_nodes = np.flatnonzero(np.asarray(self.graph.role) == NodeRole.COMPUTE)
        on = [dev[0, compute_nodes] == d for d in range(d_count)]
        src_dev, consumers = self._transfer_codes(dev)
        away = consumers[0] & ~np.left_shift(np.uint8(1), src_dev[0].astype(np.uint8))  # consumer devices != producer's
        sends = sum(((away >> d) & 1).astype(np.int64) for d in range(d_count))  # [G]
        comp_block, comp_device = self._components(dev)
        sub_dev = np.bincount(comp_device, minlength=d_count)
        resident = self.resident_bytes(dev)[0]
        compute, transfer = float(per_node.sum()), float(self.transfer_ms(dev)[0])
        overhead = float(np.asarray(self.cost.submodel_overhead_ms, np.float64)[comp_device].sum())
        return SimulationBreakdown(
            label=self.cost.label,
            devices=tuple(names),
            total_ms=compute + transfer + overhead,
            compute_ms=compute,
            transfer_ms=transfer,
            overhead_ms=overhead,
            compute_ms_per_device={names[d]: float(per_node[compute_nodes][on[d]].sum()) for d in range(d_count)},
            compute_nodes_per_device={names[d]: int(on[d].sum()) for d in range(d_count)},
            submodels_per_device={names[d]: int(sub_dev[d]) for d in range(d_count)},
            num_submodels=int(comp_block.size),
            cut_edges=int(sends.sum()),
            transfer_bytes=int((sends * self._group_bytes).sum()),
            resident_bytes_per_device={names[d]: int(resident[d]) for d in range(d_count)},
            memory_ok=bool((resident <= np.asarray(self.cost.device_memory_bytes)).all()),
        )


def memory_ok(cost: CostModel, graph: GraphArrays, placements: np.ndarray) -> np.ndarray | bool:
    """True where every device's resident bytes (weights + largest activation) fit its capacity."""
    return Simulator(cost, graph).memory_ok(placements)


__all__ = ["SimulationBreakdown", "Simulator", "memory_ok"]
