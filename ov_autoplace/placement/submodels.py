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

Checked by compiling on the testbed (``benchmarks/bench_submodels.py``,
tests/placement/test_submodels.py): HETERO's count in 8 of 10 placements (BERT-base
with the attention cores, the FFNs or every other layer on the second device:
26 / 49 / 13 against 14 / 25 / 8 islands; random placements of BERT-base and
ResNet-50). Where it differs HETERO splits more (a small attention graph
with only its softmaxes moved: 5 here, 10 compiled), so the count is a lower
bound there. Should the split ever leave a cycle, the *stage* groups (same
device and the same largest number of device changes on a path reaching the
node), which never have one, stand in. Inactive nodes (Parameters, Results,
Constants and constant subgraphs) are placed but carry no submodel number.

The legalizer bounds and reports this count (``max_submodels``,
``Placement.num_submodels``) and the pictures (``viz/placed.py``) draw these
submodels. The simulator, the cost terms and the MILP price same-device
islands (:func:`count_islands`; the simulator vectorised over many
placements, ``costmodel/islands.py``): cheaper, and mostly a lower bound.
"""

from __future__ import annotations

import dataclasses
import heapq
import threading
import weakref

import numpy as np

from ov_autoplace.graph.arrays import GraphArrays, NodeRole


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

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


def island_sets(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> _UnionFind:
    """Connected components of active nodes joined by same-device edges (cycles through other devices kept)."""
    uf = _UnionFind(graph.num_nodes)
    for s, t in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()):
        if active[s] and active[t] and device[s] == device[t]:
            uf.union(s, t)
    return uf


def count_islands(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> int:
    """Same-device islands: a lower bound on the submodels (what the batched simulator counts)."""
    uf = island_sets(graph, device, active)
    return len({uf.find(i) for i in np.flatnonzero(active).tolist()})


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


def _components(n: int, src: list[int], dst: list[int], cut: set[int]) -> _UnionFind:
    """Nodes joined by every edge that is not ``cut``."""
    uf = _UnionFind(n)
    for e, (s, t) in enumerate(zip(src, dst)):
        if e not in cut:
            uf.union(s, t)
    return uf


def _device_cut(graph: GraphArrays, dev: list[int]) -> tuple[list[int], set[int]]:
    """(the devices with every Result on its producer's, as HETERO runs it; the edges between two devices)."""
    role = graph.role.tolist()
    src, dst = graph.edge_src.tolist(), graph.edge_dst.tolist()
    dev = list(dev)
    for s, t in zip(src, dst):  # edges by destination in topological order
        if role[t] == NodeRole.RESULT:
            dev[t] = dev[s]  # a Result runs where its producer does
    return dev, {e for e, (s, t) in enumerate(zip(src, dst)) if dev[s] != dev[t]}


def _hetero_split(graph: GraphArrays, dev: list[int]) -> _UnionFind:
    """The parts HETERO compiles, found as OpenVINO 2026.4's hetero SubgraphCollector finds them (module
    docstring): edges between devices are cut; then, while it adds cuts, every node that depends on a cut
    edge leaving its own part (a cycle) has those of its input edges cut whose source depends on the part's
    cut inputs the cycle came through. Dependency sets are Python ints used as bitsets over the graph inputs
    and the cut edges.

    ``through`` (the part's cut inputs the cycle came through) is the union, over the cut edges ``k`` that
    ``v`` depends on, of ``entered[src k]`` for those leaving v's part and ``entered[dst k]`` for those entering
    it from another part. Each of these is a subset of ``entered[v]`` (``v`` depends on both ends of ``k``), so
    it is propagated in topological order with no walk over bits: ``entered[v]`` when an input of ``v`` comes
    from another part, else the union over v's inputs ``s`` of ``through[s]`` and, for a cut input edge (one
    that leaves the part), ``entered[s]``. And each round re-examines only the parts the previous round cut
    (a part no cut touched has the same entering and leaving edges, so the same verdicts: it cut nothing then
    and cuts nothing now). An unrolled GRU peels one time step per round; walking every bit of every part
    each round cost 0.51 s a split on its 1,737 nodes, 100+ splits in one legalize.
    """
    n, role = graph.num_nodes, graph.role.tolist()
    src, dst = graph.edge_src.tolist(), graph.edge_dst.tolist()
    in_edges: list[list[int]] = [[] for _ in range(n)]
    out_edges: list[list[int]] = [[] for _ in range(n)]
    for e, (s, t) in enumerate(zip(src, dst)):
        in_edges[t].append(e)
        out_edges[s].append(e)
    dev, cut = _device_cut(graph, dev)
    if not cut:
        return _components(n, src, dst, cut)  # one device: nothing leaves a part, so there is no cycle to split
    # Bits keep their meaning across rounds: graph inputs first, then cut edges in the order they are cut.
    own_bit = [0] * n
    inputs = 0
    for v in range(n):
        if role[v] in (NodeRole.PARAMETER, NodeRole.CONSTANT):
            own_bit[v] = 1 << inputs
            inputs += 1
    edge_bit = [0] * len(src)
    next_bit = inputs
    for e in sorted(cut):
        edge_bit[e] = 1 << next_bit
        next_bit += 1
    first = _components(n, src, dst, cut)
    sg = [first.find(i) for i in range(n)]
    members: dict[int, list[int]] = {}
    for v in range(n):
        members.setdefault(sg[v], []).append(v)
    dirty = list(members)
    entered = [0] * n
    cyclic = [0] * n
    deps = [0] * n
    changed_from = 0  # a new cut edge's bit reaches its destination and what follows it in topological order
    while True:
        for v in range(changed_from, n):
            d = own_bit[v]
            for e in in_edges[v]:
                d |= deps[src[e]] | edge_bit[e]
            deps[v] = d
        leaving = []  # a part no cut edge leaves has no cycle through it: it cuts nothing
        for p in dirty:  # HETERO counts a graph input as a part's input too
            owner = leave = 0
            for v in members[p]:
                owner |= own_bit[v]
                for e in in_edges[v]:
                    owner |= edge_bit[e]
                for e in out_edges[v]:
                    leave |= edge_bit[e]
            for v in members[p]:
                entered[v] = deps[v] & owner
                cyclic[v] = deps[v] & leave
            if leave:
                leaving.append(p)
        added: list[int] = []
        through = [0] * n
        for p in leaving:
            for v in members[p]:  # ascending: topological order
                t = 0
                for e in in_edges[v]:
                    s = src[e]
                    if sg[s] != p:
                        t = entered[v]  # an input from another part: the whole of ``entered`` (docstring)
                        break
                    t |= through[s] | (entered[s] if edge_bit[e] else 0)
                through[v] = t
                cv = cyclic[v]
                if not cv:
                    continue
                for e in in_edges[v]:
                    s = src[e]
                    if not edge_bit[e] and not (cv & cyclic[s]) and (t & entered[s]):
                        added.append(e)
        if not added:
            return _components(n, src, dst, cut)
        touched = {sg[dst[e]] for e in added}
        changed_from = min(dst[e] for e in added)
        for e in added:
            cut.add(e)
            edge_bit[e] = 1 << next_bit
            next_bit += 1
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
                    sg[v] = start
                members[start] = sorted(piece)
                dirty.append(start)


#: Splits remembered per graph (weakly: a graph's entries go with it): one legalize + guard asks for the same
#: placement's split up to five times (the bound's check, the priced merges, the guard's reference).
_SPLITS: "weakref.WeakKeyDictionary[GraphArrays, dict[bytes, _UnionFind]]" = weakref.WeakKeyDictionary()
_SPLITS_PER_GRAPH = 8
_SPLITS_LOCK = threading.Lock()


def _remembered_split(graph: GraphArrays, dev: list[int]) -> _UnionFind:
    """:func:`_hetero_split`, remembered for the last few placements of ``graph`` (the result is only read:
    ``find`` compresses paths but keeps every root)."""
    key = np.asarray(dev, dtype=np.int64).tobytes()
    with _SPLITS_LOCK:
        known = _SPLITS.setdefault(graph, {})
        if key in known:
            return known[key]
    uf = _hetero_split(graph, dev)
    with _SPLITS_LOCK:
        known[key] = uf
        while len(known) > _SPLITS_PER_GRAPH:
            del known[next(iter(known))]
    return uf


def _stage_groups(src: list[int], dst: list[int], dev: list[int], n: int) -> _UnionFind:
    """Same-device neighbours of equal *stage* (the most device changes on a path reaching a node): every edge
    between two groups goes to a higher stage or stays on one device, so the groups can always be ordered."""
    stage = [0] * n
    for s, t in zip(src, dst):  # edges are listed by destination in topological order
        stage[t] = max(stage[t], stage[s] + (dev[s] != dev[t]))
    uf = _UnionFind(n)
    for s, t in zip(src, dst):
        if dev[s] == dev[t] and stage[s] == stage[t]:
            uf.union(s, t)
    return uf


def _execution_order(uf: _UnionFind, src: list[int], dst: list[int], nodes: list[int]) -> dict[int, int] | None:
    """Part root -> position in a topological order of the parts (Kahn, lowest first node first); None on a
    cycle."""
    roots = sorted({uf.find(i) for i in nodes})
    succ: dict[int, set[int]] = {r: set() for r in roots}
    indegree = dict.fromkeys(roots, 0)
    for s, t in zip(src, dst):
        a, b = uf.find(s), uf.find(t)
        if a != b and b not in succ[a]:
            succ[a].add(b)
            indegree[b] += 1
    ready = [r for r in roots if indegree[r] == 0]
    heapq.heapify(ready)
    order: dict[int, int] = {}
    while ready:
        r = heapq.heappop(ready)
        order[r] = len(order)
        for b in succ[r]:
            indegree[b] -= 1
            if indegree[b] == 0:
                heapq.heappush(ready, b)
    return order if len(order) == len(roots) else None


def submodel_partition(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> SubmodelPartition:
    """HETERO's submodels for ``device`` (index per node, every node placed) over the ``active`` nodes; see the
    module docstring. Should the split leave a cycle (not seen; HETERO itself would then refuse to compile),
    the stage groups, which never have one, are returned instead."""
    return _partition(graph, device, active, count_islands(graph, device, active))


def _partition(graph: GraphArrays, device: np.ndarray, active: np.ndarray, islands: int) -> SubmodelPartition:
    n = graph.num_nodes
    dev = np.asarray(device).tolist()
    act = np.asarray(active, dtype=bool)
    keep = act[graph.edge_src] & act[graph.edge_dst]
    src, dst = graph.edge_src[keep].tolist(), graph.edge_dst[keep].tolist()
    nodes = np.flatnonzero(act).tolist()
    uf = _remembered_split(graph, dev)
    order = _execution_order(uf, src, dst, nodes)
    if order is None:
        uf = _stage_groups(src, dst, dev, n)
        order = _execution_order(uf, src, dst, nodes)
        assert order is not None  # stages increase along every edge between groups
    submodel = np.full(n, -1, dtype=np.int64)
    for i in nodes:
        submodel[i] = order[uf.find(i)]
    sub_device = np.zeros(len(order), dtype=np.int64)
    for r, k in order.items():
        sub_device[k] = dev[r]
    return SubmodelPartition(submodel=submodel, device=sub_device, islands=islands)


def count_joined_parts(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> int:
    """HETERO's parts before it splits any cycle (step 1 of the module docstring), over the ``active`` nodes:
    a lower bound of :func:`count_hetero_submodels` (step 2 only adds cuts; the stage groups it may fall back
    to are finer still) for the cost of one union-find. Unlike :func:`count_islands` it is one bound: islands
    that share a Parameter or Constant are one part, so a placement can have more islands than submodels."""
    _, cut = _device_cut(graph, np.asarray(device).tolist())
    uf = _components(graph.num_nodes, graph.edge_src.tolist(), graph.edge_dst.tolist(), cut)
    return len({uf.find(i) for i in np.flatnonzero(active).tolist()})


def count_hetero_submodels(graph: GraphArrays, device: np.ndarray, active: np.ndarray) -> int:
    """The number of submodels HETERO compiles for ``device`` (index per node, every node placed) over the
    ``active`` nodes. Zero or one island is that many submodels, without the split (which costs several
    times the island count: it runs on every legalize)."""
    islands = count_islands(graph, device, active)
    return islands if islands <= 1 else _partition(graph, device, active, islands).num_submodels


__all__ = ["SubmodelPartition", "count_hetero_submodels", "count_islands", "count_joined_parts", "island_sets",
           "submodel_partition"]
