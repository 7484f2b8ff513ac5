"""Quantization patterns the legalizer must keep on one device.

The rest of this overview: docs/architecture.md, "Module notes".
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
import openvino as ov

from ov_autoplace.graph.arrays import GraphArrays, NodeRole

#: Element types a dequantization Convert starts from.
LOW_PRECISION_TYPES = frozenset({"i8", "u8", "i4", "u4", "i16", "u16", "nf4", "f8e4m3", "f8e5m2"})
_DEQUANT_STEPS = frozenset({"Subtract", "Multiply", "Convert"})


def quantization_groups(graph: GraphArrays, active: np.ndarray) -> list[list[int]]:
    """Sets of ``active`` node indices (2+ each) that must run on the same device, sorted by first index."""
    n = graph.num_nodes
    if not any(graph.op_types[i] in ("FakeQuantize", "Convert") for i in np.flatnonzero(active).tolist()):
        return []  # no pattern can start: skip the adjacency (the priced merges ask once per legalize, per move)
    consumers: list[list[int]] = [[] for _ in range(n)]
    producers: list[list[int]] = [[] for _ in range(n)]
    for s, t in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()):
        consumers[s].append(t)
        producers[t].append(s)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(a: int, b: int) -> None:
        parent[find(b)] = find(a)

    def fed(i: int) -> list[int]:
        return [j for j in consumers[i] if active[j] and graph.role[j] != NodeRole.RESULT]

    for i in np.flatnonzero(active).tolist():
        op = graph.op_types[i]
        if op == "FakeQuantize":
            for j in fed(i):
                join(i, j)
        elif op == "Convert" and any(graph.out_element_type[p] in LOW_PRECISION_TYPES for p in producers[i]):
            frontier = [i]  # walk the Subtract/Multiply chain, then take the op it feeds
            while frontier:
                k = frontier.pop()
                for j in fed(k):
                    join(i, j)
                    if graph.op_types[j] in _DEQUANT_STEPS:
                        frontier.append(j)
    groups: dict[int, list[int]] = {}
    for i in np.flatnonzero(active).tolist():
        groups.setdefault(find(i), []).append(i)
    return sorted((g for g in groups.values() if len(g) > 1), key=lambda g: g[0])


def keep_groups_together(graph: GraphArrays, device: np.ndarray, active: np.ndarray, support: np.ndarray,
                         locked: np.ndarray) -> int:
    """Move every quantization group onto one device in place; returns how many nodes moved.

    The target is a pinned member's device if there is one, else the device
    of the member with the most FLOPs (the quantized op), else - if some
    member cannot run there - the first device that runs the whole group.
    A group no single device can run (or pinned to two devices) is left as it is.
    """
    moved = 0
    for group in quantization_groups(graph, active):
        members = np.asarray(group)
        pinned = set(device[members[locked[members]]].tolist())
        if len(pinned) > 1:
            continue
        if pinned:
            target = pinned.pop()
        else:
            target = int(device[members[np.argmax(graph.flops[members])]])
        if not support[members, target].all():
            able = np.flatnonzero(support[members].all(axis=0))
            if pinned or able.size == 0:
                continue
            target = int(able[0])
        moved += int((device[members] != target).sum())
        device[members] = target
    return moved


def _quantized_weights(model: ov.Model) -> list[ov.Node]:
    """Constants that hold quantized weights: low-precision ones feeding a Convert, and FakeQuantize data inputs."""
    found = {}
    for op in model.get_ops():
        if op.get_type_name() != "Constant":
            continue
        consumers = [t.get_node() for t in op.output(0).get_target_inputs()]
        low = op.get_output_element_type(0).get_type_name() in LOW_PRECISION_TYPES
        if any((low and c.get_type_name() == "Convert") for c in consumers) or any(
                t.get_node().get_type_name() == "FakeQuantize" and t.get_index() == 0
                for t in op.output(0).get_target_inputs()):
            found[op.get_friendly_name()] = op
    return list(found.values())


@contextlib.contextmanager
def quantized_weights_hidden(model: ov.Model) -> Iterator[int]:
    """Within the block, quantized weight Constants are replaced by placeholder Parameters; yields their count. More:
    docs/architecture.md, "Module notes", quant_patterns.py."""
    hidden = []
    for const in _quantized_weights(model):
        placeholder = ov.op.Parameter(const.get_output_element_type(0), const.get_output_partial_shape(0))
        const.output(0).replace(placeholder.output(0))
        hidden.append((const, placeholder))
    if hidden:
        model.add_parameters([p for _, p in hidden])
    try:
        yield len(hidden)
    finally:
        for const, placeholder in hidden:
            placeholder.output(0).replace(const.output(0))
            model.remove_parameter(placeholder)


__all__ = ["LOW_PRECISION_TYPES", "keep_groups_together", "quantization_groups", "quantized_weights_hidden"]
