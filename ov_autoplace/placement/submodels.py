"""The submodels HETERO compiles for a placement: same-device groups with no cycle between them.

How and why, in full: docs/architecture.md, "Module notes", ov_autoplace/placement/submodels.py.
"""

from __future__ import annotations

import dataclasses
import heapq
import threading
import weakref

import numpy as np

from ov_autoplace._native_loader import load_native
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.graph.components import component_roots, reach


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    @classmethod
    def from_roots(cls, roots) -> "_UnionFind":
        """The sets whose lowest member every node points at (``component_roots``): what unions that keep the
        smaller root would have made, without a Python call per edge."""
        uf = cls.__new__(cls)
        uf.parent = np.asarray(roots).tolist()
        return uf

    def roots(self) -> np.ndarray:
        """int64 [n]: every node's root (pointer jumping over the parent array, vectorised)."""
        parent = np.asarray(self.parent, dtype=np.int64)
        while True:
            up = parent[parent]
            if (up == parent).all():
                return parent
            parent = up

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
    return _UnionFind.from_roots(island_roots(graph, device, active))


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
    consumers: list[list[int]]  # per node, the destinations of its output edges in edge order
    is_result: list[bool]
    to_result: np.ndarray  # int64: the edges into a Result


def _make_edge_lists(graph: GraphArrays) -> EdgeLists:
    consumers: list[list[int]] = [[] for _ in range(graph.num_nodes)]
    for a, b in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()):
        consumers[a].append(b)
    own = np.isin(graph.role, (NodeRole.PARAMETER, NodeRole.CONSTANT)).astype(np.int64)
    return EdgeLists(src=np.ascontiguousarray(graph.edge_src, np.int64),
                     dst=np.ascontiguousarray(graph.edge_dst, np.int64),
                     own=own, consumers=consumers, is_result=(graph.role == NodeRole.RESULT).tolist(),
                     to_result=np.flatnonzero(graph.role[graph.edge_dst] == NodeRole.RESULT))


_EDGE_LISTS: "weakref.WeakKeyDictionary[GraphArrays, EdgeLists]" = weakref.WeakKeyDictionary()
_EDGE_LISTS_LOCK = threading.Lock()


def edge_lists(graph: GraphArrays) -> EdgeLists:
    """``graph``'s :class:`EdgeLists`, made at the first call and kept as long as the graph object lives."""
    with _EDGE_LISTS_LOCK:
        known = _EDGE_LISTS.get(graph)
    if known is None:
        known = _make_edge_lists(graph)
        with _EDGE_LISTS_LOCK:
            known = _EDGE_LISTS.setdefault(graph, known)
    return known


def _components(n: int, src, dst, cut) -> _UnionFind:
    """Nodes joined by every edge that is not ``cut`` (edge indices)."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    keep = np.ones(src.size, bool)
    keep[np.fromiter(cut, np.int64, len(cut))] = False
    return _UnionFind.from_roots(component_roots(n, src[keep], dst[keep]))


def _device_cut(graph: GraphArrays, dev: list[int]) -> tuple[list[int], set[int]]:
    """(the devices with every Result on its producer's, as HETERO runs it; the edges between two devices)."""
    device = np.array(dev, dtype=np.int64)
    into = edge_lists(graph).to_result
    device[graph.edge_dst[into]] = device[graph.edge_src[into]]  # a Result runs where its producer does
    return device.tolist(), set(np.flatnonzero(device[graph.edge_src] != device[graph.edge_dst]).tolist())


def _hetero_split(graph: GraphArrays, dev: list[int]) -> _UnionFind:
    """The parts HETERO compiles, found as OpenVINO 2026.4's hetero SubgraphCollector finds them (module
    docstring): edges between devices are cut; then, while it adds cuts, every node that depends on a cut
    edge leaving its own part (a cycle) has those of its input edges cut whose source depends on the part's
    cut inputs the cycle came through. The rounds run in C++ (``_native.hetero_split``): docs/architecture.md,
    "Computing the split"."""
    lists = edge_lists(graph)
    dev, cut = _device_cut(graph, dev)
    first = _components(graph.num_nodes, graph.edge_src, graph.edge_dst, cut)
    if not cut:
        return first  # one device: nothing leaves a part, so there is no cycle to split
    return _UnionFind.from_roots(load_native().hetero_split(lists.src, lists.dst, lists.own,
                                                            np.asarray(first.parent, np.int64),
                                                            np.array(sorted(cut), np.int64)))


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
    root = _hetero_split(graph, dev.tolist()).roots()
    root.setflags(write=False)
    with _SPLITS_LOCK:
        known[key] = root
        while len(known) > _SPLITS_PER_GRAPH:
            del known[next(iter(known))]
    return root


def hetero_part_roots(graph: GraphArrays, device: np.ndarray) -> np.ndarray:
    """Every node's part root under HETERO's split of ``device`` (index per node, every node placed; read only)."""
    return _remembered_split(graph, np.asarray(device, np.int64))


def _stage_groups(src: np.ndarray, dst: np.ndarray, dev: np.ndarray, n: int) -> _UnionFind:
    """Same-device neighbours of equal *stage* (the most device changes on a path reaching a node): every edge
    between two groups goes to a higher stage or stays on one device, so the groups can always be ordered."""
    stage, device = [0] * n, dev.tolist()
    for s, t in zip(src.tolist(), dst.tolist()):  # edges are listed by destination in topological order
        reached = stage[s] + (device[s] != device[t])
        if reached > stage[t]:
            stage[t] = reached
    level = np.asarray(stage)
    joined = (dev[src] == dev[dst]) & (level[src] == level[dst])
    return _UnionFind.from_roots(component_roots(n, src[joined], dst[joined]))


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
    module notes (docs/architecture.md). Should the split leave a cycle (not seen; HETERO itself would then refuse
    to compile), the stage groups, which never have one, are returned instead."""
    return _partition(graph, device, active, count_islands(graph, device, active))


def _partition(graph: GraphArrays, device: np.ndarray, active: np.ndarray, islands: int) -> SubmodelPartition:
    n = graph.num_nodes
    dev = np.asarray(device, dtype=np.int64)
    act = np.asarray(active, dtype=bool)
    keep = act[graph.edge_src] & act[graph.edge_dst]
    src, dst = graph.edge_src[keep], graph.edge_dst[keep]
    nodes = np.flatnonzero(act)
    root = _remembered_split(graph, dev)
    found = _execution_order(root, src, dst, nodes)
    if found is None:
        root = _stage_groups(src, dst, dev, n).roots()
        found = _execution_order(root, src, dst, nodes)
        assert found is not None  # stages increase along every edge between groups
    roots, position = found
    submodel = np.full(n, -1, dtype=np.int64)
    submodel[nodes] = position[np.searchsorted(roots, root[nodes])]
    sub_device = np.zeros(roots.size, dtype=np.int64)
    sub_device[position] = dev[roots]
    return SubmodelPartition(submodel=submodel, device=sub_device, islands=islands)


def count_joined_parts(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> int:
    """HETERO's parts before it splits any cycle (step 1 of the module notes, docs/architecture.md), over the
    ``active`` nodes: a lower bound of :func:`count_hetero_submodels` (step 2 only adds cuts; the stage groups it may fall back
    to are finer still) for the cost of one union-find. Unlike :func:`count_islands` it is one bound: islands
    that share a Parameter or Constant are one part, so a placement can have more islands than submodels."""
    _, cut = _device_cut(graph, np.asarray(device).tolist())
    root = _components(graph.num_nodes, graph.edge_src, graph.edge_dst, cut).roots()
    return int(np.unique(root[np.asarray(active, bool)]).size)


def count_hetero_submodels(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> int:
    """The number of submodels HETERO compiles for ``device`` (index per node, every node placed) over the
    ``active`` nodes. Zero or one island is that many submodels, without the split (which costs several
    times the island count: it runs on every legalize)."""
    islands = count_islands(graph, device, active)
    return islands if islands <= 1 else _partition(graph, device, active, islands).num_submodels


def _cycle_through(graph: GraphArrays, device: np.ndarray, param: int) -> bool:
    """Whether a reader of ``param`` on another device leads back into the part ``param`` joins on its own, the parts
    split as HETERO splits the other cycles (the Parameters' edges to other devices left out)."""
    src, dst = graph.edge_src, graph.edge_dst
    keep = ~((graph.role[src] == NodeRole.PARAMETER) & (device[src] != device[dst]))
    inner = dataclasses.replace(graph, edge_src=src[keep], edge_dst=dst[keep], edge_src_port=graph.edge_src_port[keep],
                                edge_dst_port=graph.edge_dst_port[keep], edge_bytes=graph.edge_bytes[keep])
    part = hetero_part_roots(inner, device)
    readers = graph.successors(param)
    away = readers[device[readers] != device[param]].tolist()
    return bool(away) and bool((reach(graph.num_nodes, graph.successors_csr, away) & (part == part[param])).any())


def keep_parameters_off_cycles(graph: GraphArrays, device: np.ndarray) -> int:
    """In place: each Parameter read on several devices goes to one where none of its readers elsewhere leads back
    into the part it joins (where every device has a way back it stays); how many moved. Why: docs/architecture.md,
    "Module notes"."""
    moved = 0
    for p in np.flatnonzero(graph.role == NodeRole.PARAMETER).tolist():
        places = np.unique(device[graph.successors(p)]).tolist()
        if len(places) < 2 or not _cycle_through(graph, device, p):
            continue
        own = device[p]
        for d in places:
            device[p] = d
            if not _cycle_through(graph, device, p):
                moved += 1
                break
        else:
            device[p] = own
    return moved


__all__ = ["EdgeLists", "SubmodelPartition", "count_hetero_submodels", "count_islands", "count_joined_parts",
           "edge_lists", "hetero_part_roots", "island_roots", "island_sets", "keep_parameters_off_cycles",
           "submodel_partition"]
