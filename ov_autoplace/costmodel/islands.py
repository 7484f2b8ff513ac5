"""Same-device islands of many placements at once, in numpy (no scipy): the simulator's submodel count.

How and why, in full: docs/architecture.md, "Module notes", ov_autoplace/costmodel/islands.py.
"""

from __future__ import annotations

import numpy as np

from ov_autoplace.graph.components import component_roots


def connected_labels(num_nodes: int, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, int]:
    """``(label [num_nodes], count)`` of the undirected graph with edges ``(u[k], v[k])``; components are
    numbered 0..count-1 in the order of their lowest member. Self-loops and repeated edges are allowed."""
    parent = component_roots(num_nodes, u, v)
    is_root = parent == np.arange(num_nodes, dtype=parent.dtype)
    number = np.cumsum(is_root) - 1
    return number[parent].astype(np.int64), int(np.count_nonzero(is_root))


def _path_cover(num_nodes: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint paths over nodes 0..n-1 (topologically numbered) along edges ``src < dst``: (order [n], a
    permutation in which every path is consecutive, chained [n]: True where ``order[k]`` continues the path of
    ``order[k - 1]``)."""
    incoming: list[list[int]] = [[] for _ in range(num_nodes)]
    for s, t in zip(src.tolist(), dst.tolist()):
        incoming[t].append(s)
    successor = np.full(num_nodes, -1, np.int64)
    has_predecessor = np.zeros(num_nodes, bool)
    for t in range(num_nodes):
        for s in sorted(incoming[t]):  # the first producer whose path still ends there
            if successor[s] < 0:
                successor[s], has_predecessor[t] = t, True
                break
    order, chained = [], []
    for head in np.flatnonzero(~has_predecessor).tolist():
        node, first = head, True
        while node >= 0:
            order.append(node)
            chained.append(not first)
            node, first = int(successor[node]), False
    return np.array(order, np.int64), np.array(chained, bool)


class IslandLabeller:
    """Islands of same-device nodes of many placements of one graph.

    ``num_nodes`` nodes numbered in topological order and the edges between
    them (``src``, ``dst``; direction and repeats do not matter). Calling it
    on device indices ``[P, num_nodes]`` returns ``(island -> placement index,
    island -> device)``, in no particular order of islands.
    """

    def __init__(self, num_nodes: int, src: np.ndarray, dst: np.ndarray) -> None:
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        lo, hi = np.minimum(src, dst), np.maximum(src, dst)
        keep = lo != hi
        key = np.unique(lo[keep] * max(num_nodes, 1) + hi[keep])
        lo, hi = key // max(num_nodes, 1), key % max(num_nodes, 1)
        self.num_nodes = num_nodes
        order, chained = _path_cover(num_nodes, lo, hi)
        position = np.empty(num_nodes, np.int64)
        position[order] = np.arange(num_nodes)
        self._order, self._chained = order, chained
        self._positions = np.arange(num_nodes, dtype=np.int32)
        # edges off the paths, as positions in ``order``
        on_path = chained[position[hi]] & (order[np.maximum(position[hi] - 1, 0)] == lo)
        self._other_u, self._other_v = position[lo[~on_path]], position[hi[~on_path]]

    def __call__(self, dev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dev = np.asarray(dev)
        if dev.ndim != 2 or dev.shape[1] != self.num_nodes:
            raise ValueError(f"placements must have shape [P, {self.num_nodes}], got {dev.shape}")
        p, a = dev.shape
        if p == 0 or a == 0:
            return np.zeros(0, np.int64), np.zeros(0, dev.dtype)
        # [A, P] layout (path position, placement): the scans along the paths run over contiguous rows
        along = dev.T[self._order]
        joined = np.zeros((a, p), bool)
        np.logical_and(self._chained[1:, None], along[1:] == along[:-1], out=joined[1:])
        # every position's run start (the latest position not joined to its predecessor), then the run number
        start = np.maximum.accumulate(np.where(joined, 0, self._positions[:, None]), axis=0)
        starts = ~joined
        run_of_start = (np.cumsum(starts.ravel(), dtype=np.int32 if p * a < 2 ** 31 - 1 else np.int64) - 1)
        run = np.take_along_axis(run_of_start.reshape(a, p), start, axis=0)  # [A, P]
        run_block = np.broadcast_to(np.arange(p), (a, p))[starts]  # placement of each run
        run_device = along[starts]
        # edges off the paths that a placement keeps join runs into islands
        edge, block = np.nonzero(along[self._other_u] == along[self._other_v])
        parent = component_roots(run_block.size, run[self._other_u[edge], block], run[self._other_v[edge], block])
        roots = np.flatnonzero(parent == np.arange(parent.size, dtype=parent.dtype))  # one run per island
        return run_block[roots], run_device[roots]


__all__ = ["IslandLabeller", "connected_labels"]
