"""Connected components of an undirected graph given as edge lists (the union-find in C++), and reachability.

More: docs/architecture.md, "Module notes".
"""

from __future__ import annotations

import numpy as np

from ov_autoplace._native_loader import load_native


def component_roots(num_nodes: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Root pointers [num_nodes] (int64) of the components of the undirected graph ``(u, v)``: every node points at
    the lowest member of its component. Self-loops and repeated edges are allowed. A union-find in C++."""
    u, v = np.ascontiguousarray(u, np.int64).ravel(), np.ascontiguousarray(v, np.int64).ravel()
    if u.shape != v.shape:
        raise ValueError(f"edge endpoint lists differ in length: {u.size} and {v.size}")
    parent = np.empty(num_nodes, np.int64)
    load_native().component_roots(u, v, parent)
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
