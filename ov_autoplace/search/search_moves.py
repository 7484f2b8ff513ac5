"""The moves of the local search (``local_search.LocalSearchRefiner``): every candidate move from a placement
(:func:`candidate_moves`: island, boundary, structural-class, repeated-layer and interval moves) and the groups of
nodes it moves together (the class moves).

How and why, in full: docs/architecture.md, "Module notes", ov_autoplace/search/search_moves.py.
"""

from __future__ import annotations

import re

import numpy as np

from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.submodels import island_roots

#: Active nodes above which interval moves use fewer, larger units (and pricing smaller batches).
LARGE_GRAPH = 4096

_DIGITS = re.compile(r"\d+")
#: Separators of a module path in an op's name (PyTorch/ONNX frontends: ``a.b.0.c/aten::op/Op_1``).
_SEPARATORS = re.compile(r"[./]")


def _dedup(groups: dict[tuple, list[int]]) -> list[np.ndarray]:
    """The groups with at least two members, each member set once, in a fixed order (the search is
    deterministic)."""
    out, seen = [], set()
    for key in sorted(groups, key=repr):
        members = tuple(sorted(set(groups[key])))
        if len(members) >= 2 and members not in seen:
            seen.add(members)
            out.append(np.array(members, np.int64))
    return out


def structural_classes(graph: GraphArrays, active: np.ndarray) -> list[np.ndarray]:
    """Groups (positions in ``active``) of active nodes alike in structure, at two depths: same op type, and same
    op type with the same multiset of producer and consumer op types. Repeated layers make these the ops that
    play one role in every layer, which a profitable split often moves together."""
    types = list(graph.op_types)
    preds: list[list[str]] = [[] for _ in range(graph.num_nodes)]
    succs: list[list[str]] = [[] for _ in range(graph.num_nodes)]
    for s, t in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()):
        succs[s].append(types[t])
        preds[t].append(types[s])
    groups: dict[tuple, list[int]] = {}
    context: dict[int, tuple] = {}
    for pos, i in enumerate(active.tolist()):
        groups.setdefault(("type", types[i]), []).append(pos)
        context[i] = ("context", types[i], tuple(sorted(preds[i])), tuple(sorted(succs[i])))
        groups.setdefault(context[i], []).append(pos)
    # two context classes joined by an edge (a producer role and its consumer role, e.g. every Reshape that
    # feeds a Transpose with every such Transpose): moved together they keep their tensor on one device
    for s, t in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()):
        if s in context and t in context and context[s] != context[t]:
            groups.setdefault(("pair",) + tuple(sorted((context[s], context[t]), key=repr)), [])
    for key in [k for k in groups if k[0] == "pair"]:
        groups[key] = sorted(set(groups[key[1]]) | set(groups[key[2]]))
    return _dedup(groups)


def repeated_layer_classes(graph: GraphArrays, active: np.ndarray) -> list[np.ndarray]:
    """Groups (positions in ``active``) of active nodes that play one part in every repeated layer, by name
    with the digit runs replaced: same normalised name, same normalised scope (and op type), same normalised
    module prefix. See the module notes (docs/architecture.md)."""
    groups: dict[tuple, list[int]] = {}
    for pos, i in enumerate(active.tolist()):
        name, op = str(graph.names[i]), str(graph.op_types[i])
        normal = _DIGITS.sub("#", name)
        if normal == name:
            continue  # nothing repeats in this name
        groups.setdefault(("name", normal), []).append(pos)
        scope = normal.split("/", 1)[0]
        if "#" in scope and scope != normal:
            groups.setdefault(("scope", scope), []).append(pos)
            groups.setdefault(("scope", scope, op), []).append(pos)
        for cut in [m.start() for m in _SEPARATORS.finditer(scope)] + [len(scope)]:
            prefix = scope[:cut]
            if "#" in prefix and prefix != normal:
                groups.setdefault(("prefix", prefix), []).append(pos)
    return _dedup(groups)


def candidate_moves(search, cur: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Every move of the local search ``search`` (a ``LocalSearchRefiner``) from ``cur`` [A] as (target device, positions that move), in a fixed order (island,
    boundary, structural-class, repeated-layer, interval moves), each once; a move never puts a node where it cannot run,
    never moves a pinned node and always changes something."""
    a, num_devices = cur.size, len(search.devices)
    # per target: which nodes may move there, and which of those also run faster there than where they are
    may = [~search.locked & search.allowed[:, t] & (cur != t) for t in range(num_devices)]
    here = search.compute[np.arange(a), cur]
    faster = [may[t] & (search.compute[:, t] < here) for t in range(num_devices)]
    out: list[tuple[int, np.ndarray]] = []
    seen: set[tuple[int, bytes]] = set()

    def keep(t: int, nodes: np.ndarray) -> None:
        if nodes.size:
            key = (t, nodes.tobytes())
            if key not in seen:
                seen.add(key)
                out.append((t, nodes))

    def add(nodes: np.ndarray, t: int) -> None:
        keep(t, nodes[may[t][nodes]])

    def add_range(lo: int, hi: int, t: int) -> None:
        keep(t, np.flatnonzero(may[t][lo:hi]) + lo)

    def add_enclosed(nodes: np.ndarray, t: int) -> None:
        """``nodes`` plus the nodes the move would leave surrounded by ``t`` (every active neighbour on it):
        an op that is slower there but sits between moved ops costs two transfers if it stays."""
        if nodes.size == 0:
            return
        on_t = cur == t
        on_t[nodes] = True
        around = np.bincount(search._nb_from, weights=on_t[search._nb_to], minlength=a)
        enclosed = np.flatnonzero((around == search._degree) & (search._degree > 0) & ~on_t & may[t])
        if enclosed.size:
            keep(t, np.union1d(nodes, enclosed))

    # island moves
    full = np.zeros(search.graph.num_nodes, np.int64)
    full[search.active] = cur
    roots = island_roots(search.graph, full, search.terms.active)[search.active]
    for root in np.unique(roots):
        members = np.flatnonzero(roots == root)
        for t in range(num_devices):
            add(members, t)
    # boundary shifts (topological order of the active nodes)
    for k in np.flatnonzero(cur[1:] != cur[:-1]).tolist():
        s = 1
        while s <= a:
            add_range(k + 1, min(k + 1 + s, a), int(cur[k]))  # left device grows rightwards
            add_range(max(k + 1 - s, 0), k + 1, int(cur[k + 1]))  # right device grows leftwards
            s *= 2
    # structural classes (op type; op type and neighbours' types): the same op in every repeated layer at once
    for members in search.classes:
        for t in range(num_devices):
            add(members, t)
            add_enclosed(members[may[t][members]], t)
    # repeated layers (names equal up to their digits): one role or module of every layer at once, also with
    # only the nodes that run faster on the target (and the ones that would be left enclosed)
    for members in search.layer_classes:
        for t in range(num_devices):
            add(members, t)
            quick = members[faster[t][members]]
            keep(t, quick)
            add_enclosed(quick, t)
    # interval moves over blocks of consecutive active nodes, at every scale, in overlapping windows; each
    # also with only the nodes that run faster on the target than where they are (a window around a region
    # that pays on another device holds a few heavy ops that should stay). Windows of one node are the
    # single-node moves of small graphs.
    # (on large graphs fewer units: a round must stay a few hundred placements when each costs milliseconds)
    units = min(search.max_units, a, max(32, search.max_units * LARGE_GRAPH // max(a, 1)))
    edges = np.linspace(0, a, units + 1).round().astype(np.int64)
    fine = a <= search.max_units  # a unit is one node: windows of every length 1, 2, 3, 4, 6, 8, 12, ...
    lengths = sorted({x for p in range(int(np.log2(units)) + 1) for x in (2 ** p, 3 * 2 ** p // 2)
                      if 1 <= x <= units} | {units}, reverse=True)
    for length in lengths if fine else [x for x in lengths if x & (x - 1) == 0 or x == units]:
        stride = max(1, length // (4 if fine else 2))
        for begin in range(0, units, stride):
            stop = min(begin + length, units)
            lo, hi = int(edges[begin]), int(edges[stop])
            for t in range(num_devices):
                add_range(lo, hi, t)
                quick = np.flatnonzero(faster[t][lo:hi]) + lo
                keep(t, quick)
                add_enclosed(quick, t)
            if stop == units:
                break
    return out


def move_rows(cur: np.ndarray, moves: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """The assignments [len(moves), A] the moves lead to from ``cur``."""
    rows = np.repeat(cur[None, :], len(moves), axis=0)
    for r, (t, nodes) in enumerate(moves):
        rows[r, nodes] = t
    return rows


__all__ = ["LARGE_GRAPH", "candidate_moves", "move_rows", "repeated_layer_classes", "structural_classes"]
