"""The submodels HETERO compiles for a placement: same-device groups with no cycle between them.

HETERO cuts the model at every edge between two devices and compiles each
connected same-device part as one submodel, then runs the submodels one after
another. A part that feeds another device and is fed back by it (in a
transformer: layer norm -> Q/K/V on device A, attention on B, output
projection + residual add on A again, the residual edge joining both A ends)
cannot run as one submodel, so HETERO splits it. Counting connected
same-device *islands* misses those splits: on BERT-base with the attention
cores on the second device the islands are 14 and HETERO compiles 26
(the FFNs: 25 vs 49).

:func:`submodel_partition` finds HETERO's parts the way OpenVINO 2026.4's
hetero plugin (its SubgraphCollector) does, re-derived here:

1. every edge between two devices is cut; the parts are the nodes joined by
   the remaining edges (so two same-device parts that share a Parameter or
   Constant are one part, which islands of active nodes are not);
2. while this adds cuts: a node that depends on a cut edge leaving its own
   part (a cycle through another device) has those of its input edges cut
   whose source depends on the cut inputs the cycle came through.

Checked by compiling on the testbed (``benchmarks/bench_submodels.py``; the table and the two placements where
HETERO splits more, so the count is a lower bound there: docs/architecture.md). Should the split ever leave a
cycle, the *stage* groups (same device and the same largest number of device changes on a path reaching the
node), which never have one, stand in. Inactive nodes (Parameters, Results, Constants and constant subgraphs)
are placed but carry no submodel number. The legalizer bounds this count (``max_submodels``); the simulator,
the cost terms and the MILP price same-device islands instead (:func:`count_islands`): cheaper, and mostly a
lower bound.
"""

from __future__ import annotations

import dataclasses
import heapq
import threading
import weakref

import numpy as np

from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.graph.components import component_roots


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
    """One graph's edges as the Python lists and arrays the split and the legalizer walk (made once per graph
    object, :func:`edge_lists`): rebuilding them was a good part of every split, and a legalize with priced
    merges splits once per move."""

    src: list[int]
    dst: list[int]
    in_edges: list[list[int]]  # per node, its input edges in edge order
    out_edges: list[list[int]]
    consumers: list[list[int]]  # per node, the destinations of its output edges in edge order
    producers: list[list[int]]  # per node, the sources of its input edges in edge order
    in_pairs: list[list[tuple[int, int]]]  # per node, (input edge, its source) in edge order
    own_bit: list[int]  # the graph inputs' (Parameters' and Constants') bits, in node order; 0 elsewhere
    is_result: list[bool]
    to_result: np.ndarray  # int64: the edges into a Result


def _make_edge_lists(graph: GraphArrays) -> EdgeLists:
    n, role = graph.num_nodes, graph.role.tolist()
    src, dst = graph.edge_src.tolist(), graph.edge_dst.tolist()
    in_edges: list[list[int]] = [[] for _ in range(n)]
    out_edges: list[list[int]] = [[] for _ in range(n)]
    consumers: list[list[int]] = [[] for _ in range(n)]
    producers: list[list[int]] = [[] for _ in range(n)]
    in_pairs: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for e, (a, b) in enumerate(zip(src, dst)):
        in_edges[b].append(e)
        out_edges[a].append(e)
        consumers[a].append(b)
        producers[b].append(a)
        in_pairs[b].append((e, a))
    own_bit, inputs = [0] * n, 0
    for v in range(n):
        if role[v] in (NodeRole.PARAMETER, NodeRole.CONSTANT):
            own_bit[v] = 1 << inputs
            inputs += 1
    is_result = (graph.role == NodeRole.RESULT).tolist()
    return EdgeLists(src=src, dst=dst, in_edges=in_edges, out_edges=out_edges, consumers=consumers,
                     producers=producers, in_pairs=in_pairs, own_bit=own_bit, is_result=is_result,
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
    cut inputs the cycle came through. Dependency sets are Python ints used as bitsets over the graph inputs
    and the cut edges; how ``through`` is propagated without walking bits, why a round re-examines only the parts
    the last one cut, and the kept ``sg``, ``in_bits``, ``out_bits``: docs/architecture.md, "Computing the split".
    """
    n = graph.num_nodes
    lists = edge_lists(graph)
    src, dst, in_edges, out_edges, own_bit = lists.src, lists.dst, lists.in_edges, lists.out_edges, lists.own_bit
    producers, in_pairs = lists.producers, lists.in_pairs
    dev, cut = _device_cut(graph, dev)
    first = _components(n, graph.edge_src, graph.edge_dst, cut)
    if not cut:
        return first  # one device: nothing leaves a part, so there is no cycle to split
    # Bits keep their meaning across rounds: graph inputs first, then cut edges in the order they are cut.
    edge_bit = [0] * len(src)
    in_bits, out_bits = [0] * n, [0] * n
    next_bit = sum(1 for b in own_bit if b)

    def cut_edge(e: int) -> None:
        nonlocal next_bit
        bit = edge_bit[e] = 1 << next_bit
        in_bits[dst[e]] |= bit
        out_bits[src[e]] |= bit
        next_bit += 1

    for e in sorted(cut):
        cut_edge(e)
    sg = first.parent  # every node points at its part's lowest member (component_roots)
    members: dict[int, list[int]] = {}
    for v in range(n):
        members.setdefault(sg[v], []).append(v)
    dirty = list(members)
    entered = [0] * n
    cyclic = [0] * n
    through = [0] * n
    deps = [0] * n
    changed_from = 0  # a new cut edge's bit reaches its destination and what follows it in topological order
    while True:
        walk = []
        for p in dirty:  # HETERO counts a graph input as a part's input too
            owner = leave = 0
            for v in members[p]:
                owner |= own_bit[v] | in_bits[v]
                leave |= out_bits[v]
            if leave:  # a part no cut edge leaves has no cycle through it: it cuts nothing
                walk.append((p, owner, leave))
        # Only the walked parts' nodes read ``deps``, now and in later rounds (which walk pieces of these parts
        # only), so it is kept up to date up to their last node.
        last = max((members[p][-1] for p, _, _ in walk), default=-1)
        for v in range(changed_from, last + 1):
            d = own_bit[v] | in_bits[v]
            for s in producers[v]:
                d |= deps[s]
            deps[v] = d
        added: list[int] = []
        for p, owner, leave in walk:
            # ``entered`` and ``cyclic`` are read for nodes of the part being walked only, so they are made here,
            # in the same walk as ``through`` (each reads its inputs', which come first in topological order)
            for v in members[p]:  # ascending: topological order
                dv = deps[v]
                entered[v] = dv & owner
                cyclic[v] = cv = dv & leave
                t = 0
                for e, s in in_pairs[v]:
                    if sg[s] != p:
                        t = entered[v]  # an input from another part: the whole of ``entered`` (docstring)
                        break
                    t |= through[s] | (entered[s] if edge_bit[e] else 0)
                through[v] = t
                if not cv:
                    continue
                for e, s in in_pairs[v]:
                    if not edge_bit[e] and not (cv & cyclic[s]) and (t & entered[s]):
                        added.append(e)
        if not added:
            return _UnionFind.from_roots(sg)
        touched = {sg[dst[e]] for e in added}
        changed_from = min(dst[e] for e in added)
        for e in added:
            cut.add(e)
            cut_edge(e)
        dirty = []
        for p in touched:
            nodes = members.pop(p)
            seen: set[int] = set()
            for start in nodes:  # the part's pieces: its nodes joined by the edges still uncut
                if start in seen:
                    continue
                seen.add(start)
                piece, stack = [], [start]
                while stack:
                    v = stack.pop()
                    piece.append(v)
                    for e in in_edges[v]:
                        if not edge_bit[e] and src[e] not in seen:
                            seen.add(src[e])
                            stack.append(src[e])
                    for e in out_edges[v]:
                        if not edge_bit[e] and dst[e] not in seen:
                            seen.add(dst[e])
                            stack.append(dst[e])
                for v in piece:
                    sg[v] = start  # ``nodes`` ascend, so ``start`` is the piece's lowest member
                members[start] = sorted(piece)
                dirty.append(start)


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
    module docstring. Should the split leave a cycle (not seen; HETERO itself would then refuse to compile),
    the stage groups, which never have one, are returned instead."""
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
    """HETERO's parts before it splits any cycle (step 1 of the module docstring), over the ``active`` nodes:
    a lower bound of :func:`count_hetero_submodels` (step 2 only adds cuts; the stage groups it may fall back
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


__all__ = ["EdgeLists", "SubmodelPartition", "count_hetero_submodels", "count_islands", "count_joined_parts",
           "edge_lists", "island_roots", "island_sets", "submodel_partition"]
