"""Anchors placed for many proposals at once: the batched twin of ``legalize()`` (no pins, no submodel bound).

The simulator prices raw proposals; the local search, the lab's training environments and the benchmarks first
place each proposal's anchors (Parameters, Constants, pure-constant compute nodes, Results) the way the
legalizer would, vectorised over the batch: :class:`AnchorFixer`.
"""

from __future__ import annotations

import numpy as np

from ov_autoplace.errors import PlacementError, UnsupportedOpError
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.placement.legalizer import constant_subgraph_mask


class AnchorFixer:
    """The batched twin of ``legalize()`` for proposals without pins or ``max_submodels``: the same rows as
    ``legalize(graph, p, devices, support).assignment`` (its rules: docs/architecture.md, "Module notes",
    anchors.py)."""

    def __init__(self, graph: GraphArrays, num_devices: int, support: np.ndarray | None = None) -> None:
        n = graph.num_nodes
        role = np.asarray(graph.role)
        compute = role == NodeRole.COMPUTE
        self.active = compute & ~(constant_subgraph_mask(graph) & compute)
        self.num_nodes, self.num_devices = n, num_devices
        self._active_idx = np.flatnonzero(self.active)
        self._support = None
        if support is not None:
            support = np.asarray(support, bool)
            if support.shape != (n, num_devices):
                raise PlacementError(f"support must be ({n}, {num_devices}), got {support.shape}")
            nowhere = self._active_idx[~support[self._active_idx].any(axis=1)].tolist()
            if nowhere:
                listed = ", ".join(f"{graph.names[i]!r} ({graph.op_types[i]})" for i in nowhere[:10])
                raise UnsupportedOpError(
                    f"{len(nowhere)} node(s) are supported by none of the {num_devices} devices: {listed}. "
                    "Add a device that supports them (CPU runs every opset op)"
                )
            self._support = support[self._active_idx]
            self._first_supported = np.argmax(self._support, axis=1)
        src, dst = np.asarray(graph.edge_src, np.int64), np.asarray(graph.edge_dst, np.int64)
        anchor = ~self.active & (role != NodeRole.RESULT)
        voting = anchor[src] & (role[dst] != NodeRole.RESULT)
        voters: list[list[int]] = [[] for _ in range(n)]
        for s, t in zip(src[voting].tolist(), dst[voting].tolist()):
            voters[s].append(t)
        # plain lists: numpy scalars per element made this loop the slowest part of a pricer's first call
        is_anchor, levels = anchor.tolist(), [0] * n
        for i in range(n - 1, -1, -1):  # consumers come later in topological order
            if is_anchor[i]:
                levels[i] = max((levels[j] + 1 for j in voters[i] if is_anchor[j]), default=0)
        level = np.asarray(levels, np.int64)
        self._unvoted = np.flatnonzero(anchor & (np.array([len(v) for v in voters]) == 0))
        self._levels = []
        for lv in range(int(level.max(initial=0)) + 1):
            nodes = [i for i in np.flatnonzero(anchor & (level == lv)).tolist() if voters[i]]
            if nodes:
                flat = np.array([j for i in nodes for j in voters[i]], np.int64)
                starts = np.cumsum([0] + [len(voters[i]) for i in nodes[:-1]])
                self._levels.append((np.array(nodes, np.int64), flat, starts))
        results = np.flatnonzero((role == NodeRole.RESULT)[dst])
        self._result_nodes, self._result_producers = dst[results], src[results]

    def __call__(self, proposals: np.ndarray) -> np.ndarray:
        arr = np.asarray(proposals)
        single = arr.ndim == 1
        dev = np.array(arr[None, :] if single else arr, dtype=np.intp)
        if dev.ndim != 2 or dev.shape[1] != self.num_nodes:
            raise PlacementError(f"proposals must have shape [P, {self.num_nodes}], got {arr.shape}")
        act = dev[:, self._active_idx]
        if act.size and (act.min() < 0 or act.max() >= self.num_devices):
            raise PlacementError(
                f"proposals give active nodes device indices {int(act.min())}..{int(act.max())}; "
                f"expected 0..{self.num_devices - 1}"
            )
        if self._support is not None:
            ok = self._support[np.arange(self._active_idx.size), act]
            dev[:, self._active_idx] = np.where(ok, act, self._first_supported)
        dev[:, self._unvoted] = 0
        for nodes, flat, starts in self._levels:
            votes = dev[:, flat]
            counts = np.stack([np.add.reduceat((votes == d).astype(np.int32), starts, axis=1)
                               for d in range(self.num_devices)])
            dev[:, nodes] = np.argmax(counts, axis=0)  # first maximum: ties go to the lower index
        dev[:, self._result_nodes] = dev[:, self._result_producers]
        return dev[0] if single else dev
