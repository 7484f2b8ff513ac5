"""The placed graph, readable from 200 to 3,000+ nodes: collapsed into labelled boxes, laid out by depth.

Collapsing (fewest boxes that still show every device change):

1. chains are collapsed (HSDAG's chain coarsening: a node merges with its only
   successor when that successor has only one predecessor), split where a chain
   changes submodel;
2. while there are more than ``max_boxes`` boxes, boxes of the same submodel
   whose depth falls in the same depth band merge (bands double in width each
   round). Device changes are never merged away: a box is always one device,
   one submodel.

Layout: a box's column is its depth (longest path over box edges, in bands);
the columns wrap into lines of ``columns_per_line``, read like text, so a deep,
narrow network (BERT, ResNet) becomes a few readable lines rather than one
strip thousands of pixels long. Within a column boxes are ordered by the mean
row of their predecessors (fewer crossings). The legend sits in a header above
the first line, never over a box. Cut edges (a tensor crosses devices) are red
and thick; the rest thin grey.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np

from ov_autoplace.policy.coarsen import chain_coarsen
from ov_autoplace_lab.viz.placed_graph import PlacedGraph, group_label, name_scope
from ov_autoplace_lab.viz.scene import CUT_COLOUR, Line, Rect, Scene, Text, device_colour, fit_text, fit_text_end, short_ops

MAX_BOXES = 140


@dataclasses.dataclass(frozen=True, eq=False)
class Boxes:
    """The collapsed graph: box per active node, and per box its device, submodel, column and row."""

    box_of_node: np.ndarray  # int64 [N], -1 for nodes not drawn (Parameters, Constants, Results)
    device: np.ndarray  # int64 [B]
    submodel: np.ndarray  # int64 [B]
    column: np.ndarray  # int64 [B]
    row: np.ndarray  # int64 [B]
    edges: tuple[tuple[int, int, int], ...]  # (box a, box b, bytes)
    band: int  # depth levels per column (1: not merged beyond chains)

    @property
    def num_boxes(self) -> int:
        return int(self.device.size)


def _renumber(keys: list[tuple]) -> np.ndarray:
    index: dict[tuple, int] = {}
    return np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)


def _box_edges(placed: PlacedGraph, box_of_node: np.ndarray) -> dict[tuple[int, int], int]:
    edges: dict[tuple[int, int], int] = {}
    nbytes = np.maximum(np.asarray(placed.graph.edge_bytes), 0).tolist()
    for e, (s, t) in enumerate(zip(placed.graph.edge_src.tolist(), placed.graph.edge_dst.tolist())):
        a, b = int(box_of_node[s]), int(box_of_node[t])
        if a >= 0 and b >= 0 and a != b:
            edges[(a, b)] = edges.get((a, b), 0) + nbytes[e]
    return edges


def _depth(num: int, edges, order_key: np.ndarray) -> np.ndarray:
    """Longest-path depth of each box; boxes are visited in the order of their first node (topological)."""
    succ: dict[int, list[int]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    depth = np.zeros(num, dtype=np.int64)
    for a in np.argsort(order_key, kind="stable").tolist():
        for b in succ.get(a, ()):
            if order_key[b] > order_key[a]:  # ignore the rare back edge of a merged band
                depth[b] = max(depth[b], depth[a] + 1)
    return depth


def collapse(placed: PlacedGraph, *, max_boxes: int = MAX_BOXES) -> Boxes:
    """Chain-collapse, then merge by depth band within each submodel until at most ``max_boxes`` remain."""
    active = placed.active
    nodes = np.flatnonzero(active)
    chain = chain_coarsen(placed.graph).group_of_node
    base = np.full(placed.graph.num_nodes, -1, dtype=np.int64)
    base[nodes] = _renumber([(int(chain[i]), int(placed.submodel[i])) for i in nodes])
    first = np.full(int(base.max(initial=-1)) + 1, np.iinfo(np.int64).max)
    np.minimum.at(first, base[nodes], nodes)
    base_depth = _depth(first.size, _box_edges(placed, base), first)
    band, box = 1, base
    while True:
        box_first = np.full(int(box.max(initial=-1)) + 1, np.iinfo(np.int64).max)
        np.minimum.at(box_first, box[nodes], nodes)
        if box_first.size <= max_boxes or band > int(base_depth.max(initial=0)) + 1:
            break
        band *= 2
        box = np.full(placed.graph.num_nodes, -1, dtype=np.int64)
        box[nodes] = _renumber([(int(placed.submodel[i]), int(base_depth[base[i]]) // band) for i in nodes])
    edges = _box_edges(placed, box)
    num = box_first.size
    column = _depth(num, edges, box_first)
    device = np.zeros(num, dtype=np.int64)
    submodel = np.zeros(num, dtype=np.int64)
    device[box[nodes]] = placed.device[nodes]
    submodel[box[nodes]] = placed.submodel[nodes]
    row = _rows(column, edges, box_first)
    return Boxes(box, device, submodel, column, row, tuple((a, b, n) for (a, b), n in edges.items()), band)


def _rows(column: np.ndarray, edges, first: np.ndarray) -> np.ndarray:
    """Row of each box in its column, ordered by the mean row of its predecessors (barycentre, one sweep)."""
    preds: dict[int, list[int]] = {}
    for a, b in edges:
        preds.setdefault(b, []).append(a)
    row = np.zeros(column.size, dtype=np.int64)
    for c in range(int(column.max(initial=-1)) + 1):
        members = np.flatnonzero(column == c)
        centre = [np.mean([row[p] for p in preds.get(int(m), [])]) if preds.get(int(m)) else 0.0 for m in members]
        order = sorted(range(len(members)), key=lambda k: (centre[k], first[members[k]]))
        row[members[order]] = np.arange(len(members))
    return row


# ---- drawing -----------------------------------------------------------------------------------------
_BOX_W, _BOX_H, _GAP_X, _GAP_Y, _LINE_GAP, _HEADER = 142, 34, 22, 10, 34, 52


def box_details(placed: PlacedGraph, boxes: Boxes, node_ms: np.ndarray | None) -> list[dict]:
    """Per box: device, submodel, label, scope, ops (capped), FLOPs and time; the HTML page's hover data."""
    graph = placed.graph
    members: list[list[int]] = [[] for _ in range(boxes.num_boxes)]
    for i in np.flatnonzero(boxes.box_of_node >= 0).tolist():
        members[int(boxes.box_of_node[i])].append(i)
    out = []
    for b, idx in enumerate(members):
        arr = np.asarray(idx, dtype=np.int64)
        out.append({
            "box": b, "device": placed.devices[int(boxes.device[b])], "submodel": int(boxes.submodel[b]),
            "label": group_label(graph, arr), "scope": name_scope(graph, arr), "nodes": len(idx),
            "types": dict(Counter(graph.op_types[i] for i in idx).most_common(6)),
            "ops": [f"{graph.names[i]} ({graph.op_types[i]})" for i in idx[:25]],
            "gflops": round(float(np.maximum(graph.flops[arr], 0).sum()) / 1e9, 4),
            "ms": None if node_ms is None else round(float(node_ms[arr].sum()), 4),
        })
    return out


def draw_graph(placed: PlacedGraph, boxes: Boxes, details: list[dict], *, time_source: str = "",
               columns_per_line: int = 10) -> Scene:
    """The collapsed graph: boxes coloured by device, labelled; cut edges red; legend in the header."""
    columns = int(boxes.column.max(initial=0)) + 1
    per_line = max(1, min(columns_per_line, columns))
    lines = -(-columns // per_line)
    line_rows = [0] * lines
    for c, r in zip(boxes.column.tolist(), boxes.row.tolist()):
        line_rows[c // per_line] = max(line_rows[c // per_line], r + 1)
    line_top, y = [], _HEADER
    for rows in line_rows:
        line_top.append(y)
        y += rows * (_BOX_H + _GAP_Y) + _LINE_GAP
    width = per_line * (_BOX_W + _GAP_X) + 10
    scene = Scene(max(width, 900), y + 6)
    cuts = sum(1 for a, b, _ in boxes.edges if boxes.device[a] != boxes.device[b])
    merged = "chains collapsed" + (f", then depth bands of {boxes.band} merged per submodel" if boxes.band > 1 else "")
    scene.add(Text(0, 14, f"Graph: {int((boxes.box_of_node >= 0).sum())} compute ops in {boxes.num_boxes} boxes "
                          f"({merged}); {placed.num_submodels} submodel(s), {cuts} cut edge(s)", size=13, bold=True))
    x = 0.0
    for k, d in enumerate(placed.devices):  # the legend: a header row of its own
        scene.add(Rect(x, 24, 12, 12, device_colour(k)))
        scene.add(Text(x + 16, 34, d, size=11))
        x += 30 + 7 * len(d)
    scene.add(Line(x, 30, x + 26, 30, CUT_COLOUR, 2.5))
    scene.add(Text(x + 30, 34, "tensor crosses devices (cut)", size=11))
    x += 210
    scene.add(Text(x, 34, "read left to right, line by line; box: main op types, ops, scope" +
                   (f"; time: {time_source}" if time_source else ""), size=10, colour="#555"))

    def pos(b: int) -> tuple[float, float]:
        c = int(boxes.column[b])
        return (c % per_line) * (_BOX_W + _GAP_X), line_top[c // per_line] + int(boxes.row[b]) * (_BOX_H + _GAP_Y)

    skipped = 0
    for a, b, nbytes in sorted(boxes.edges, key=lambda e: boxes.device[e[0]] != boxes.device[e[1]]):
        (xa, ya), (xb, yb) = pos(a), pos(b)
        cut = boxes.device[a] != boxes.device[b]
        colour, w = (CUT_COLOUR, 2.5) if cut else ("#b8b8b8", 0.9)
        hover = f"{nbytes / 1e6:.3f} MB box {a} -> {b}" + (" (crosses devices)" if cut else "")
        line_a, line_b = int(boxes.column[a]) // per_line, int(boxes.column[b]) // per_line
        if line_b == line_a and xb > xa:
            scene.add(Line(xa + _BOX_W, ya + _BOX_H / 2, xb, yb + _BOX_H / 2, colour, w, hover=hover))
        elif cut or line_b == line_a + 1:  # to the next line: leave from the bottom, enter from the top
            scene.add(Line(xa + _BOX_W / 2, ya + _BOX_H, xb + _BOX_W / 2, yb, colour, w, dashed=not cut, hover=hover))
        else:  # a same-device edge skipping lines (an attention mask feeding every layer) would cross everything
            skipped += 1
    if skipped:
        scene.add(Text(0, y - 8, f"{skipped} same-device edge(s) that skip a line are not drawn (hover a box for "
                                 "its ops)", size=9.5, colour="#777"))
    for b, info in enumerate(details):
        x0, y0 = pos(b)
        hover = (f"{info['device']}, submodel {info['submodel']}: {info['nodes']} ops"
                 + (f", {info['ms']:.3f} ms" if info["ms"] is not None else "")
                 + (f", {info['scope']}" if info["scope"] else "") + "\n" + "\n".join(info["ops"][:12]))
        scene.add(Rect(x0, y0, _BOX_W, _BOX_H, device_colour(int(boxes.device[b])), "white", hover, f"box{b}", 4))
        scene.add(Text(x0 + 4, y0 + 14, fit_text(short_ops(info["label"]), _BOX_W - 8, 10.5), size=10.5,
                       colour="white", bold=True))
        count = f"{info['nodes']} op{'s' if info['nodes'] != 1 else ''}"
        scope = fit_text_end(info["scope"], _BOX_W - 12 - 6 * len(count), 9.5) if info["scope"] else ""
        scene.add(Text(x0 + 4, y0 + 28, count + (f" · {scope}" if scope else ""), size=9.5, colour="white"))
    return scene


__all__ = ["Boxes", "MAX_BOXES", "box_details", "collapse", "draw_graph"]
