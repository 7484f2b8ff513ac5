"""HSDAG's pre-GNN chain collapsing: fewer, more meaningful nodes for the GCN.

The rest: docs/architecture.md, "Module notes", ov_autoplace/policy/coarsen.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.placement.legalizer import constant_subgraph_mask


@dataclasses.dataclass(frozen=True, eq=False)
class Coarsening:
    """Groups of a chain coarsening.

    ``group_of_node`` int64 [N] (groups numbered in the order of their root node: the
    first node of the chain, or the node itself for a lone one),
    ``edge_src`` / ``edge_dst`` int64 [Eg] deduplicated directed group edges
    without self loops, ``member_count`` int64 [G].
    """

    group_of_node: np.ndarray
    num_groups: int
    edge_src: np.ndarray
    edge_dst: np.ndarray
    member_count: np.ndarray

    @property
    def num_edges(self) -> int:
        return int(self.edge_src.shape[0])

    def __repr__(self) -> str:
        n = int(self.group_of_node.shape[0])
        return f"Coarsening(num_nodes={n}, num_groups={self.num_groups}, num_edges={self.num_edges})"


def resolve_roots(parent: np.ndarray) -> np.ndarray:
    """Follow ``parent`` pointers to the root of every node (parent[root] == root); the pointers must be acyclic."""
    parent = parent.copy()
    while True:
        grand = parent[parent]
        if np.array_equal(grand, parent):
            return parent
        parent = grand


def unique_pairs(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``(src, dst)`` pairs, sorted by ``(src, dst)``."""
    key = np.unique(src.astype(np.int64) * n + dst.astype(np.int64))
    return key // n, key % n


def preferred_device_class(compute_us: np.ndarray, fused_into: np.ndarray | None = None) -> np.ndarray:
    """int64 [N]: the device each node's compute is cheapest on (``compute_us`` [N, D]; ties: the lowest index).
    With ``fused_into`` (``CostModel.fused_into``) a fused node takes its fuser's class: its own compute is zero
    everywhere, and the tie alone would cut the chain inside the fused kernel."""
    cls = np.asarray(compute_us).argmin(axis=1).astype(np.int64)
    if fused_into is not None:
        fuser = np.asarray(fused_into, dtype=np.int64)
        fused = np.flatnonzero(fuser >= 0)
        cls[fused] = cls.copy()[fuser[fused]]
    return cls


def chain_coarsen(graph: GraphArrays, node_class: np.ndarray | None = None) -> Coarsening:
    """Chain-collapse ``graph`` (docs/policy.md, "Groups"); with ``node_class`` (int [N]) a chain is cut wherever
    the class of consecutive nodes changes."""
    n = graph.num_nodes
    role = graph.role
    src, dst = graph.edge_src.astype(np.int64), graph.edge_dst.astype(np.int64)
    constant_like = constant_subgraph_mask(graph)  # Constants and pure-constant compute nodes
    active = (role == NodeRole.COMPUTE) & ~constant_like
    follower = constant_like | (role == NodeRole.PARAMETER)
    parent = np.arange(n, dtype=np.int64)

    # 1. chains of active nodes: the successor points at its single predecessor
    s, t = unique_pairs(*(a[active[src] & active[dst]] for a in (src, dst)), n)
    out_count, in_count = np.bincount(s, minlength=n), np.bincount(t, minlength=n)
    merge = (out_count[s] == 1) & (in_count[t] == 1)
    if node_class is not None:
        node_class = np.asarray(node_class)
        if node_class.shape != (n,):
            raise ValueError(f"node_class must have one entry per node ({n}), got shape {node_class.shape}")
        merge &= node_class[s] == node_class[t]
    parent[t[merge]] = s[merge]

    # 2. followers point at their first non-Result consumer (edges are ordered by consumer id)
    to_consumer = follower[src] & (role[dst] != NodeRole.RESULT)
    nodes, first = np.unique(src[to_consumer], return_index=True)
    parent[nodes] = dst[to_consumer][first]

    # 3. Results point at their producer
    into_result = role[dst] == NodeRole.RESULT
    parent[dst[into_result]] = src[into_result]

    # Pointers go follower -> consumer -> ... -> active -> earlier active, Result -> producer: no cycles.
    root = resolve_roots(parent)
    roots, group_of_node = np.unique(root, return_inverse=True)
    group_of_node = group_of_node.astype(np.int64)
    num_groups = int(roots.shape[0])

    carries = ~constant_like[src]
    gs, gd = group_of_node[src[carries]], group_of_node[dst[carries]]
    between = gs != gd
    edge_src, edge_dst = unique_pairs(gs[between], gd[between], num_groups)
    return Coarsening(group_of_node=group_of_node, num_groups=num_groups, edge_src=edge_src, edge_dst=edge_dst,
                      member_count=np.bincount(group_of_node, minlength=num_groups).astype(np.int64))


__all__ = ["Coarsening", "chain_coarsen", "preferred_device_class", "resolve_roots", "unique_pairs"]
