"""The discrete steps of graph parsing pooling, in numpy, shared by the torch and numpy policies (why shared:
docs/architecture.md, "Module notes")."""

from __future__ import annotations

import dataclasses

import numpy as np

from ov_autoplace.costmodel.islands import connected_labels


def undirected_edges(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct undirected edges ``(u, v)``, ``u < v``, self loops dropped, sorted by ``(u, v)``."""
    lo, hi = np.minimum(src, dst).astype(np.int64), np.maximum(src, dst).astype(np.int64)
    keep = lo != hi
    key = np.unique(lo[keep] * num_nodes + hi[keep])
    return key // num_nodes, key % num_nodes


def connected_components(num_nodes: int, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, int]:
    """``(label [num_nodes], count)`` of the undirected graph ``(u, v)``, components numbered by lowest member."""
    return connected_labels(num_nodes, u, v)


@dataclasses.dataclass(frozen=True, eq=False)
class ParsedGroups:
    """One graph-parsing step.

    ``label`` int64 [n]: new group of each node; ``num_groups``; ``kept`` bool [E]:
    the edges some endpoint chose; ``best_edge`` int64 [n]: each node's
    best-scoring incident edge (-1 for a node without edges); ``weight_edge``
    int64 [n]: the best-scoring kept edge touching each node (-1 for a node no
    kept edge touches). Pooling weighs a merged node by ``weight_edge``'s score
    and a node left alone by one minus ``best_edge``'s score.
    """

    label: np.ndarray
    num_groups: int
    kept: np.ndarray
    best_edge: np.ndarray
    weight_edge: np.ndarray


def parse_groups(u: np.ndarray, v: np.ndarray, logit: np.ndarray, num_nodes: int,
                 threshold_logit: float = 0.0) -> ParsedGroups | None:
    """Every node keeps its best incident edge if its logit ``>= threshold_logit``; groups = components.

    Ties between a node's edges go to the lower edge index. Returns None when
    no edge is kept (nothing merges: parsing stops).
    """
    num_edges = int(u.shape[0])
    if num_edges == 0:
        return None
    logit = np.asarray(logit, dtype=np.float32)
    ends = np.concatenate([u, v])
    eid = np.concatenate([np.arange(num_edges), np.arange(num_edges)])
    order = np.lexsort((eid, -logit[eid], ends))  # by node, then best logit, then lowest edge id
    ends_sorted, eid_sorted = ends[order], eid[order]
    first = np.ones(ends_sorted.shape[0], dtype=bool)
    first[1:] = ends_sorted[1:] != ends_sorted[:-1]
    best = eid_sorted[first]
    best_edge = np.full(num_nodes, -1, dtype=np.int64)
    best_edge[ends_sorted[first]] = best
    chosen = best[logit[best] >= threshold_logit]
    if chosen.shape[0] == 0:
        return None
    kept = np.zeros(num_edges, dtype=bool)
    kept[chosen] = True

    touched = kept[eid_sorted]
    ends_kept, eid_kept = ends_sorted[touched], eid_sorted[touched]
    first_kept = np.ones(ends_kept.shape[0], dtype=bool)
    first_kept[1:] = ends_kept[1:] != ends_kept[:-1]
    weight_edge = np.full(num_nodes, -1, dtype=np.int64)
    weight_edge[ends_kept[first_kept]] = eid_kept[first_kept]

    label, count = connected_components(num_nodes, u[kept], v[kept])
    return ParsedGroups(label=label, num_groups=count, kept=kept, best_edge=best_edge, weight_edge=weight_edge)


def segment_sum(values: np.ndarray, label: np.ndarray, num_groups: int) -> np.ndarray:
    """``out[g] = sum of values[i] with label[i] == g`` (rows in index order, like torch's ``index_add_``)."""
    out = np.zeros((num_groups,) + values.shape[1:], dtype=values.dtype)
    if label.shape[0] == 0:
        return out
    # a stable sort + reduceat is several times faster than np.add.at on 2-D rows
    order = np.argsort(label, kind="stable")
    sorted_label = label[order]
    starts = np.flatnonzero(np.r_[True, sorted_label[1:] != sorted_label[:-1]])
    out[sorted_label[starts]] = np.add.reduceat(values[order], starts, axis=0)
    return out


def pooled_edges(src: np.ndarray, dst: np.ndarray, label: np.ndarray, num_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Directed edges between different groups, deduplicated (both directions may appear)."""
    gs, gd = label[src], label[dst]
    between = gs != gd
    key = np.unique(gs[between] * num_groups + gd[between])
    return key // num_groups, key % num_groups


__all__ = ["ParsedGroups", "connected_components", "parse_groups", "pooled_edges", "segment_sum", "undirected_edges"]
