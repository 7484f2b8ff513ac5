"""The submodels HETERO compiles for a placement: same-device groups with no cycle between them.

How and why, in full: docs/architecture.md, "Module notes", ov_autoplace/placement/submodels.py.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import threading
import weakref

import numpy as np

from ov_autoplace._native_loader import load_native
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.graph.components import component_roots


class _UnionFind:
    def __init__(self, roots) -> None:
        """The sets whose lowest member every node points at (``component_roots``): what unions that keep the
        smaller root would have made, without a Python call per edge."""
        self.parent = np.asarray(roots).tolist()

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> int:
        """Joins the sets of ``a`` and ``b``; the smaller root stays the root (roots are lowest members)."""
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            ra, rb = min(ra, rb), max(ra, rb)
            self.parent[rb] = ra
        return ra


def island_roots(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Every node's island root (the lowest member of its :func:`island_sets` component; an inactive node its own)."""
    src, dst = graph.edge_src, graph.edge_dst
    device, active = np.asarray(device), np.asarray(active, bool)
    joined = active[src] & active[dst] & (device[src] == device[dst])
    return component_roots(graph.num_nodes, src[joined], dst[joined])


def island_sets(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> _UnionFind:
    """Connected components of active nodes joined by same-device edges (cycles through other devices kept)."""
    return _UnionFind(island_roots(graph, device, active))


def count_islands(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> int:
    """Same-device islands: a lower bound on the submodels (what the batched simulator counts)."""
    return int(np.unique(island_roots(graph, device, active)[np.asarray(active, bool)]).size)


@dataclasses.dataclass(frozen=True)
class SubmodelPartition:
    """``submodel[i]``: the submodel of node ``i`` in execution (topological) order, -1 for inactive nodes."""

    submodel: np.ndarray  # int64 [N]
    device: np.ndarray  # int64 [num_submodels], each submodel's device
    islands: int  # connected same-device islands of active nodes (count_islands)

    @property
    def num_submodels(self) -> int:
        return int(self.device.size)

    def per_device(self, num_devices: int) -> np.ndarray:
        return np.bincount(self.device, minlength=num_devices)


@dataclasses.dataclass(frozen=True, eq=False)
class EdgeLists:
    """One graph's edges as the split and the legalizer walk them (made once per graph object, :func:`edge_lists`):
    rebuilding them was a good part of every split, and a legalize with priced merges splits once per move."""

    src: np.ndarray  # int64 [E], for the native split
    dst: np.ndarray
    own: np.ndarray  # int64 [N]: 1 for a graph input (Parameter, Constant), a part's input to HETERO too
    to_result: np.ndarray  # int64: the edges into a Result
    single: np.ndarray  # int64 [E]: 1 where the edge's source output has no other reader
    readers: np.ndarray  # int64 [N]: each node's readers that are not Results

    @functools.cached_property
    def is_result(self) -> list[bool]:
        """Per node, whether it is a Result (what the edges into a Result end at)."""
        is_result = np.zeros(self.own.size, bool)
        is_result[self.dst[self.to_result]] = True
        return is_result.tolist()

    @functools.cached_property
    def consumers(self) -> list[list[int]]:
        """Per node, the destinations of its output edges in edge order."""
        consumers: list[list[int]] = [[] for _ in range(self.own.size)]
        for a, b in zip(self.src.tolist(), self.dst.tolist()):
            consumers[a].append(b)
        return consumers


def _make_edge_lists(src: np.ndarray, dst: np.ndarray, port: np.ndarray, role: np.ndarray) -> EdgeLists:
    src, dst = np.ascontiguousarray(src, np.int64), np.ascontiguousarray(dst, np.int64)
    _, which, count = np.unique(src * (int(port.max(initial=0)) + 1) + port, return_inverse=True, return_counts=True)
    to_result = np.flatnonzero(role[dst] == NodeRole.RESULT)
    return EdgeLists(src, dst, np.isin(role, (NodeRole.PARAMETER, NodeRole.CONSTANT)).astype(np.int64), to_result,
                     (count[which] == 1).astype(np.int64), np.bincount(np.delete(src, to_result), minlength=role.size))


_EDGE_LISTS: "weakref.WeakKeyDictionary[GraphArrays, EdgeLists]" = weakref.WeakKeyDictionary()
_EDGE_LISTS_LOCK = threading.Lock()


def edge_lists(graph: GraphArrays) -> EdgeLists:
    """``graph``'s :class:`EdgeLists`, made at the first call and kept as long as the graph object lives."""
    with _EDGE_LISTS_LOCK:
        known = _EDGE_LISTS.get(graph)
    if known is None:
        known = _make_edge_lists(graph.edge_src, graph.edge_dst, graph.edge_src_port, graph.role)
        with _EDGE_LISTS_LOCK:
            known = _EDGE_LISTS.setdefault(graph, known)
    return known


def _as_applied(graph: GraphArrays, dev) -> tuple[int, EdgeLists, np.ndarray, np.ndarray]:
    """(nodes, edges, devices, each node's id there) of ``graph`` as ``Placement.apply`` hands it to HETERO: a
    Constant read on another device has a copy there that its readers on that device share (``_split_constant``),
    right after it in the order; a Result runs where its producer does."""
    device, src, dst, n = np.array(dev, np.int64), graph.edge_src, graph.edge_dst, graph.num_nodes
    lists = edge_lists(graph)
    device[dst[lists.to_result]] = device[src[lists.to_result]]
    moved = (graph.role[src] == NodeRole.CONSTANT) & (device[src] != device[dst])
    if not moved.any():
        return n, lists, device, np.arange(n)
    kinds = device.max() + 1
    pairs, which = np.unique(src[moved] * kinds + device[dst[moved]], return_inverse=True)  # (Constant, device)
    const = pairs // kinds
    at = np.arange(n) + np.concatenate([[0], np.cumsum(np.bincount(const, minlength=n))[:-1]])
    copy = at[const] + 1 + np.arange(pairs.size) - np.searchsorted(const, const)
    total = n + pairs.size
    placed, own, readers = (np.zeros(total, a.dtype) for a in (device, lists.own, lists.readers))
    placed[at], placed[copy] = device, pairs % kinds
    own[at], own[copy], readers[at], readers[copy] = lists.own, 1, lists.readers, np.bincount(which)
    np.subtract.at(readers, at[src[moved]], 1)
    read = at[src]
    read[moved] = copy[which]
    # ``single`` as it was: the rounds read it only for a source that is not a graph input, which a copy is
    copied = EdgeLists(read, at[dst], own, lists.to_result, lists.single, readers)
    return total, copied, placed, at


def _hetero_split(graph: GraphArrays, dev: list[int]) -> np.ndarray:
    """Every node's part root (its part's lowest node) in the split HETERO 2026.4 compiles for ``dev``, on the model
    as applied: docs/architecture.md, "Submodels" and "Computing the split" (in C++)."""
    n, lists, device, at = _as_applied(graph, dev)
    cut = np.flatnonzero(device[lists.src] != device[lists.dst])
    part = load_native().hetero_split(lists.src, lists.dst, lists.own, cut, lists.single, lists.readers)[at]
    if at.size == n:
        return part
    low = np.full(n, n)  # each part by its lowest node of the graph
    np.minimum.at(low, part, np.arange(graph.num_nodes))
    return low[part]


#: Splits remembered per graph (weakly: a graph's entries go with it): one legalize + guard asks for the same
#: placement's split up to five times (the bound's check, the priced merges, the guard's reference). Enough of
#: them that the priced merges' one split per move (up to ~20) does not push out the support-forced placement's,
#: which the guard's reference asks for again; an entry is one int64 per node.
_SPLITS: "weakref.WeakKeyDictionary[GraphArrays, dict[bytes, np.ndarray]]" = weakref.WeakKeyDictionary()
_SPLITS_PER_GRAPH = 32
_SPLITS_LOCK = threading.Lock()


def _remembered_split(graph: GraphArrays, dev: np.ndarray) -> np.ndarray:
    """Every node's part root under :func:`_hetero_split` of ``dev`` (int64 [N]), remembered for the last few
    placements of ``graph`` (read only: the array is not writeable)."""
    key = dev.tobytes()
    with _SPLITS_LOCK:
        known = _SPLITS.setdefault(graph, {})
        if key in known:
            return known[key]
    root = _hetero_split(graph, dev.tolist())
    root.setflags(write=False)
    with _SPLITS_LOCK:
        known[key] = root
        while len(known) > _SPLITS_PER_GRAPH:
            del known[next(iter(known))]
    return root


def hetero_part_roots(graph: GraphArrays, device: np.ndarray) -> np.ndarray:
    """Every node's part root under HETERO's split of ``device`` (index per node, every node placed; read only)."""
    return _remembered_split(graph, np.asarray(device, np.int64))


def _execution_order(root: np.ndarray, src: np.ndarray, dst: np.ndarray,
                     nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(the parts' roots ascending, each part's position in a topological order of the parts: Kahn, lowest root
    first among the ready ones); None on a cycle. ``root``: every node's part root; ``src``, ``dst``: the edges
    between the ``nodes`` placed. The edges between parts are found in numpy; Kahn walks the few parts."""
    roots = np.unique(root[nodes])
    a, b = root[src], root[dst]
    between = a != b
    pairs = np.unique(np.searchsorted(roots, a[between]) * roots.size + np.searchsorted(roots, b[between]))
    pa, pb = (pairs // max(roots.size, 1)).tolist(), (pairs % max(roots.size, 1)).tolist()
    succ: list[list[int]] = [[] for _ in range(roots.size)]
    indegree = [0] * roots.size
    for x, y in zip(pa, pb):
        succ[x].append(y)
        indegree[y] += 1
    ready = [k for k in range(roots.size) if indegree[k] == 0]  # part indices ascend as their roots do
    heapq.heapify(ready)
    position, placed = np.zeros(roots.size, dtype=np.int64), 0
    while ready:
        k = heapq.heappop(ready)
        position[k] = placed
        placed += 1
        for y in succ[k]:
            indegree[y] -= 1
            if indegree[y] == 0:
                heapq.heappush(ready, y)
    return (roots, position) if placed == roots.size else None


def submodel_partition(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> SubmodelPartition:
    """HETERO's submodels for ``device`` (index per node, every node placed) over the ``active`` nodes; see the
    module notes (docs/architecture.md)."""
    return _partition(graph, device, active, count_islands(graph, device, active))


def _as_placed(graph: GraphArrays, device) -> np.ndarray:
    """``device`` with every Parameter where ``Placement.apply`` puts it (:func:`move_parameters_to_fewest_parts`):
    the counts are of what HETERO compiles."""
    dev = np.array(device, dtype=np.int64)
    move_parameters_to_fewest_parts(graph, dev)
    return dev


def _partition(graph: GraphArrays, device: np.ndarray, active: np.ndarray, islands: int) -> SubmodelPartition:
    n = graph.num_nodes
    dev = _as_placed(graph, device)
    act = np.asarray(active, dtype=bool)
    keep = act[graph.edge_src] & act[graph.edge_dst]
    src, dst = graph.edge_src[keep], graph.edge_dst[keep]
    nodes = np.flatnonzero(act)
    root = _remembered_split(graph, dev)
    found = _execution_order(root, src, dst, nodes)
    assert found is not None  # the split leaves no cycle between its parts (its last step cuts them)
    roots, position = found
    submodel = np.full(n, -1, dtype=np.int64)
    submodel[nodes] = position[np.searchsorted(roots, root[nodes])]
    sub_device = np.zeros(roots.size, dtype=np.int64)
    sub_device[position] = dev[roots]
    return SubmodelPartition(submodel=submodel, device=sub_device, islands=islands)


def count_joined_parts(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> int:
    """HETERO's parts before it splits any cycle, over the ``active`` nodes: a lower bound of
    :func:`count_hetero_submodels` for the cost of one union-find (module notes, docs/architecture.md)."""
    n, lists, device, at = _as_applied(graph, device)
    parameter = np.zeros(n, bool)
    parameter[at[graph.role == NodeRole.PARAMETER]] = True
    read = parameter[lists.src]  # the edges out of a Parameter
    joined = (device[lists.src] == device[lists.dst]) & ~read
    readers = lists.dst[read]  # each joined to the first reader of its Parameter on its device
    _, first, which = np.unique(lists.src[read] * (device.max() + 1) + device[readers], return_index=True,
                                return_inverse=True)
    root = component_roots(n, np.concatenate([lists.src[joined], readers[first][which]]),
                           np.concatenate([lists.dst[joined], readers]))
    return int(np.unique(root[at][np.asarray(active, bool)]).size)


def count_hetero_submodels(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> int:
    """The number of submodels HETERO compiles for ``device`` (index per node, every node placed) over the
    ``active`` nodes. Zero or one island is that many submodels, without the split (which costs several
    times the island count: it runs on every legalize)."""
    islands = count_islands(graph, device, active)
    return islands if islands <= 1 else _partition(graph, device, active, islands).num_submodels


def move_parameters_to_fewest_parts(graph: GraphArrays, device: np.ndarray) -> int:
    """In place: each Parameter read on a device other than its own goes to the device of its readers where HETERO's
    split has the fewest parts (it stays on a tie); how many moved. Why: docs/architecture.md, "Module notes"."""
    counted = graph.role != NodeRole.CONSTANT
    moved = 0
    for p in np.flatnonzero(graph.role == NodeRole.PARAMETER).tolist():
        own = int(device[p])
        places = np.unique(device[graph.successors(p)]).tolist()
        if set(places) <= {own}:
            continue
        parts = []
        for d in [own] + [d for d in places if d != own]:
            device[p] = d
            parts.append((np.unique(hetero_part_roots(graph, device)[counted]).size, d != own, d))
        device[p] = min(parts)[2]
        moved += int(device[p]) != own
    return moved


__all__ = ["EdgeLists", "SubmodelPartition", "count_hetero_submodels", "count_islands", "count_joined_parts",
           "edge_lists", "hetero_part_roots", "island_roots", "island_sets", "move_parameters_to_fewest_parts",
           "submodel_partition"]
