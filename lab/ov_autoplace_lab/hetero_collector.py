"""HETERO's split as OpenVINO 2026.4 makes it, re-derived on an ``ov.Model`` whose nodes carry affinities: the lab's
reference for the runtime's mirror (``placement/submodels.py``, in C++), which follows it since ``LEGALIZER_VERSION`` 13
(``tests/placement/test_hetero_split_rounds.py`` holds the two to the same parts).

Read (not copied) from upstream ``src/plugins/hetero/src/subgraph_collector.cpp`` at the version with the
single-consumer exception and the subgraph SCC fallback (openvinotoolkit/openvino#36126). Checked against the
installed 2026.4.1 by ``benchmarks/bench_hetero_collector.py`` (its page: docs/bench/hetero-collector.md), which
compares the parts with the ones ``OPENVINO_HETERO_VISUALIZE`` dumps. The steps:

1. Boundaries: every input edge between two affinities (a Result takes its producer's), and each graph input
   (Parameter, Constant) as a boundary of its own. Parts: the nodes joined by the other edges.
2. Rounds, until none adds a boundary. Each node's dependencies are the boundaries upstream of it. A node that
   depends on a boundary leaving its own part sits on a cycle; for it, the boundaries of its part that the cycle's
   sources depend on (and those behind the boundaries that re-enter its part) are gathered, and each of its input
   edges whose source depends on one of them, and not on the node's cycle, becomes a boundary - except an edge
   that is its source output's only reader, from a source on no cycle whose own part-boundaries all come from graph
   inputs (the 2026.4 exception: ``Relu(x)`` stays with its one reader).
3. Where the exception left a cycle between parts: while the part graph has a strongly connected component of
   more than one part, one node of such a part is cut from its part (every uncut input edge becomes a boundary),
   the first by: reads a boundary from another part on a cycle; reads a source with several readers; reads no
   single-reader node of graph inputs only; is not a one-input one-reader node; fewest uncut inputs; order.
"""

from __future__ import annotations

import re
from pathlib import Path

import openvino as ov

from ov_autoplace.graph.components import component_roots


def hetero_parts(model: ov.Model) -> dict[str, int]:
    """Each node's part (friendly name -> the position of the part's first node in ``get_ordered_ops``) in the split
    HETERO 2026.4 compiles for the affinities in ``model``'s ``rt_info``."""
    ops, part, _, _ = _split(model)
    return {op.get_friendly_name(): part[v] for v, op in enumerate(ops)}


def hetero_submodels(model: ov.Model) -> int:
    """How many submodels HETERO 2026.4 compiles for ``model``'s affinities (its ``HETERO_NUMBER_OF_SUBMODELS``): the
    parts that hold a Parameter, a Result or an Assign, or read or hand on a value across a boundary (a Constant's
    aside: it is copied, not handed on). A part can hold nothing but a Parameter: a submodel all the same."""
    ops, part, boundary, inputs = _split(model)
    kinds = ("Parameter", "Result", "Assign")
    counted = {part[v] for v, op in enumerate(ops) if op.get_type_name() in kinds}
    for v, port in boundary:
        s = inputs[v][port][0] if port >= 0 else v
        if port >= 0 and part[s] != part[v] and ops[s].get_type_name() != "Constant":
            counted |= {part[s], part[v]}
    return len(counted)


def _split(model: ov.Model):
    """(ops in order, each one's part, the boundaries as (node, input port), each node's inputs as (source, output))."""
    ops = model.get_ordered_ops()
    at = {id(op): i for i, op in enumerate(ops)}
    n = len(ops)
    graph_input = [op.get_type_name() in ("Parameter", "Constant") for op in ops]
    inputs = [[(at[id(i.get_source_output().get_node())], i.get_source_output().get_index()) for i in op.inputs()]
              for op in ops]
    readers = [[len(out.get_target_inputs()) for out in op.outputs()] for op in ops]
    non_result = [sum(t.get_node().get_type_name() != "Result" for out in op.outputs() for t in out.get_target_inputs())
                  for op in ops]
    affinity = [op.get_rt_info()["affinity"].astype(str) for op in ops]
    boundary: set[tuple[int, int]] = {(v, -1) for v in range(n) if graph_input[v]}  # (node, input port); -1: itself
    for v, op in enumerate(ops):
        for port, (s, _) in enumerate(inputs[v]):
            if affinity[v] != affinity[s]:
                if op.get_type_name() == "Result":
                    affinity[v] = affinity[s]
                else:
                    boundary.add((v, port))

    def parts() -> list[int]:  # each node's part: the lowest member of its component over the uncut edges
        joined = [(s, v) for v in range(n) for port, (s, _) in enumerate(inputs[v]) if (v, port) not in boundary]
        return component_roots(n, [s for s, _ in joined], [v for _, v in joined]).tolist()

    while _round(n, inputs, readers, graph_input, boundary, parts()):
        pass
    while True:
        part = parts()
        edges = {(part[inputs[v][port][0]], part[v]) for v, port in boundary if port >= 0}
        cyclic = _on_cycles({(a, b) for a, b in edges if a != b})
        if not cyclic:
            return ops, part, boundary, inputs
        boundary |= _isolated(n, inputs, graph_input, non_result, boundary, part, cyclic)


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _round(n, inputs, readers, graph_input, boundary, part) -> bool:
    """Step 2's round on ``part``; adds to ``boundary``, True where it added one."""
    order = sorted(boundary)
    bit = {b: k for k, b in enumerate(order)}
    source = [None if port < 0 else inputs[v][port][0] for v, port in order]
    owner = [part[v] for v, _ in order]
    producer = [-1 if s is None else part[s] for s in source]
    deps = [0] * n
    for v in range(n):
        deps[v] = 1 << bit[(v, -1)] if graph_input[v] else 0
        for port, (s, _) in enumerate(inputs[v]):
            deps[v] |= deps[s] | (1 << bit[(v, port)] if (v, port) in bit else 0)
    own = [sum(1 << k for k in _bits(deps[v]) if owner[k] == part[v]) for v in range(n)]
    cycle = [sum(1 << k for k in _bits(deps[v]) if source[k] is not None and producer[k] == part[v]) for v in range(n)]
    from_inputs = [source[k] is None or graph_input[source[k]] for k in range(len(order))]
    added = False
    for v in range(n):
        if not cycle[v]:
            continue
        behind = 0
        for k in _bits(cycle[v]):
            behind |= own[source[k]]
        for k in _bits(own[v]):  # boundaries re-entering the part from another
            if source[k] is not None and producer[k] != part[v]:
                behind |= own[order[k][0]]
        for port, (s, out) in enumerate(inputs[v]):
            if (v, port) in boundary or cycle[v] & cycle[s] or not behind & own[s]:
                continue
            if (readers[s][out] == 1 and not graph_input[s] and not cycle[s]
                    and all(from_inputs[k] for k in _bits(own[s]))):
                continue  # the 2026.4 exception
            boundary.add((v, port))
            added = True
    return added


def _on_cycles(edges: set[tuple[int, int]]) -> set[int]:
    """The parts in a strongly connected component of more than one part of the graph ``edges``."""
    succ: dict[int, list[int]] = {}
    for a, b in sorted(edges):
        succ.setdefault(a, []).append(b)
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    found: set[int] = set()
    for start in sorted(succ):
        if start in index:
            continue
        work = [(start, iter(succ.get(start, [])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    members = stack[stack.index(v):]
                    del stack[stack.index(v):]
                    if len(members) > 1:
                        found.update(members)
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                work.append((w, iter(succ.get(w, []))))
            elif w in stack:
                low[v] = min(low[v], index[w])
    return found


def _isolated(n, inputs, graph_input, non_result, boundary, part, cyclic) -> set[tuple[int, int]]:
    """Step 3's cut: the uncut input edges of the first-ranked node of a part on a cycle."""
    best = None
    for v in range(n):
        if part[v] not in cyclic:
            continue
        uncut = [(port, s) for port, (s, _) in enumerate(inputs[v]) if (v, port) not in boundary]
        if not uncut:
            continue
        re_entered = any((v, port) in boundary and part[s] != part[v] and part[s] in cyclic
                         for port, (s, _) in enumerate(inputs[v]))
        shared = any(non_result[s] > 1 for _, s in uncut)
        leaf = any(not graph_input[s] and non_result[s] == 1 and all(graph_input[t] for t, _ in inputs[s])
                   for _, s in uncut)
        linear = len(uncut) == 1 and non_result[v] <= 1
        rank = (not re_entered, not shared, leaf, linear, len(uncut), v)
        if best is None or rank < best[0]:
            best = (rank, {(v, port) for port, _ in uncut})
    return best[1]


def dumped_parts(directory: str | Path) -> dict[str, int]:
    """HETERO's own parts (friendly name -> subgraph id) from the ``hetero_subgraphs_*.dot`` that a compile with
    ``OPENVINO_HETERO_VISUALIZE=1`` writes in the working ``directory`` (its graph inputs are drawn apart)."""
    found: dict[str, int] = {}
    for path in Path(directory).glob("hetero_subgraphs_*.dot"):
        for name, part in re.findall(r'label="([^"\\]+)\\n[^"]*?\\nsubgraph=(\d+)\\n', path.read_text()):
            found[name] = int(part)
    return found


def same_parts(a: dict[str, int], b: dict[str, int], names) -> bool:
    """Whether ``a`` and ``b`` group ``names`` alike (part ids aside)."""
    def groups(parts):
        by: dict[int, set[str]] = {}
        for name in names:
            by.setdefault(parts[name], set()).add(name)
        return {frozenset(g) for g in by.values()}
    return groups(a) == groups(b)


__all__ = ["dumped_parts", "hetero_parts", "hetero_submodels", "same_parts"]
