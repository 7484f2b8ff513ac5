"""Connected components of an undirected graph given as edge lists, in numpy (no scipy).

More: docs/architecture.md, "Module notes".
"""

from __future__ import annotations

import numpy as np


def component_roots(num_nodes: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Root pointers [num_nodes] of the components of the undirected graph ``(u, v)``: every node points at the
    lowest member of its component (int32 below 2**31 nodes). Self-loops and repeated edges are allowed."""
    index = np.int32 if num_nodes < 2 ** 31 - 1 else np.int64
    parent = np.arange(num_nodes, dtype=index)
    u, v = np.asarray(u, index).ravel(), np.asarray(v, index).ravel()
    if u.shape != v.shape:
        raise ValueError(f"edge endpoint lists differ in length: {u.size} and {v.size}")
    while u.size:
        pu, pv = parent[u], parent[v]  # roots: every node points at its root here
        cross = pu != pv
        if not cross.any():
            break
        u, v, pu, pv = u[cross], v[cross], pu[cross], pv[cross]  # edges inside a component are done for good
        np.minimum.at(parent, np.maximum(pu, pv), np.minimum(pu, pv))  # each root hooks onto its smallest neighbour
        # pointer jumping, only over the nodes whose grandparent differs from their parent (pointers only ever
        # decrease, so the forest is acyclic and every path halves per step)
        todo = np.flatnonzero(parent[parent] != parent).astype(index)
        while todo.size:
            parent[todo] = parent[parent[todo]]
            todo = todo[parent[parent[todo]] != parent[todo]]
    return parent


def reach(num_nodes: int, csr: tuple[np.ndarray, np.ndarray], start, through: np.ndarray | None = None) -> np.ndarray:
    """bool [num_nodes]: the nodes ``start`` reaches (itself included) along the adjacency ``csr`` (indptr, indices),
    entering only ``through``."""
    indptr, indices = csr
    seen = np.zeros(num_nodes, dtype=bool)
    stack = list(start)
    seen[stack] = True
    while stack:
        v = stack.pop()
        for w in indices[indptr[v]:indptr[v + 1]].tolist():
            if not seen[w] and (through is None or through[w]):
                seen[w] = True
                stack.append(w)
    return seen


__all__ = ["component_roots", "reach"]
