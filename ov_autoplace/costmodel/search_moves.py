"""Groups of nodes the local search moves together (``local_search.LocalSearchRefiner``'s class moves).

A profitable split of a model built from repeated layers often moves *one role
in every layer* at once (each layer alone does not pay: the transfers and the
submodel switch cost more than one layer saves). Two families of classes,
each a sorted array of positions in ``active``:

* :func:`structural_classes` - by graph structure: same op type; same op type
  with the same producer and consumer op types; two such context classes
  joined by an edge.
* :func:`repeated_layer_classes` - by name: frontends name ops after the
  module that made them (``__module.encoder.layer.3.attention.self/aten::
  transpose/Transpose_1``), and the repeated layers differ only in the digits.
  With every digit run replaced by ``#``, nodes with the same normalised name
  are one role in every layer; nodes with the same normalised *scope* (the
  module path before the first ``/``) are one module of every layer (e.g. the
  attention core's reshapes, transposes and attention of all layers, without
  its query/key/value projections, which live in submodules); nodes under the
  same normalised module prefix are a module and its submodules in every
  layer. Each scope class is also split by op type. Only names that repeat
  (a ``#`` in the prefix) make classes.
"""

from __future__ import annotations

import re

import numpy as np

from ov_autoplace.graph.arrays import GraphArrays

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
    module prefix. See the module docstring."""
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


__all__ = ["repeated_layer_classes", "structural_classes"]
