"""A picture of a placed graph: groups of nodes coloured by device.

Hand-written SVG (no graphviz, no plotting stack at run time): the graph is
drawn as a layered DAG, one box per group (a chain of nodes merged by chain
coarsening), left to right by longest-path depth, coloured by the device the
group's compute nodes run on, with cut edges drawn thicker. The HTML page is
self-contained (the SVG inline, a legend, a per-device table and the
latencies); PNG goes through matplotlib when it is installed.
"""

from __future__ import annotations

import dataclasses
import html
from pathlib import Path
from typing import Sequence

import numpy as np

from .graph import GraphArrays, NodeRole
from .placement import Placement

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
_BOX, _GAP_X, _GAP_Y, _MARGIN = 16, 30, 22, 40


@dataclasses.dataclass(frozen=True)
class Drawing:
    """A layered layout of the compute groups: where each box goes and its colour."""

    layer: np.ndarray  # column of each group (longest-path depth)
    row: np.ndarray  # row within its column
    device: np.ndarray  # device index of each group
    edges: list[tuple[int, int]]  # deduped group -> group edges
    members: list[list[str]]  # "name (OpType)" of each group's compute nodes
    devices: tuple[str, ...]

    @property
    def num_groups(self) -> int:
        return len(self.layer)


def layout(graph: GraphArrays, placement: Placement, group_of_node: np.ndarray | None = None) -> Drawing:
    """Lay out the compute groups left to right; Parameters/Constants/Results are not drawn."""
    compute = np.flatnonzero(graph.role == NodeRole.COMPUTE)
    groups = np.arange(graph.num_nodes) if group_of_node is None else np.asarray(group_of_node)
    keep, sub = np.unique(groups[compute], return_inverse=True)
    group = -np.ones(graph.num_nodes, dtype=np.int64)
    group[compute] = sub  # 0..G-1 in order of the groups' first nodes, i.e. topological
    a, b = group[graph.edge_src], group[graph.edge_dst]
    edges = sorted({(int(x), int(y)) for x, y in zip(a, b) if x >= 0 and y >= 0 and x != y})
    layer = np.zeros(len(keep), dtype=np.int64)
    for _ in range(max(1, len(keep))):  # longest path; one sweep when numbering is topological
        changed = False
        for x, y in edges:
            if layer[y] < layer[x] + 1:
                layer[y], changed = layer[x] + 1, True
        if not changed:
            break
    row = np.zeros(len(keep), dtype=np.int64)
    for depth in np.unique(layer):
        members = np.flatnonzero(layer == depth)
        row[members] = np.arange(len(members))
    device_index = {d: k for k, d in enumerate(placement.devices)}
    device = np.zeros(len(keep), dtype=np.int64)
    names: list[list[str]] = [[] for _ in keep]
    for i in compute:
        device[group[i]] = device_index[placement.assignment[graph.names[i]]]
        names[group[i]].append(f"{graph.names[i]} ({graph.op_types[i]})")
    return Drawing(layer, row, device, edges, names, placement.devices)


def placement_svg(drawing: Drawing, *, title: str) -> str:
    """The drawing as an SVG document (string); hover a box for its nodes."""
    cols = int(drawing.layer.max()) + 1 if drawing.num_groups else 1
    rows = int(drawing.row.max()) + 1 if drawing.num_groups else 1
    width, height = _MARGIN * 2 + cols * _GAP_X, _MARGIN * 2 + 40 + rows * _GAP_Y

    def xy(g: int) -> tuple[float, float]:
        return _MARGIN + drawing.layer[g] * _GAP_X, _MARGIN + 40 + drawing.row[g] * _GAP_Y

    def colour(k: int) -> str:
        return PALETTE[k % len(PALETTE)]

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="{_MARGIN}" y="20" font-size="14">{html.escape(title)}</text>']
    x0 = _MARGIN
    for k, device in enumerate(drawing.devices):  # legend
        parts.append(f'<rect x="{x0}" y="28" width="10" height="10" fill="{colour(k)}"/>'
                     f'<text x="{x0 + 14}" y="37">{html.escape(device)}</text>')
        x0 += 24 + 8 * len(device)
    parts.append(f'<text x="{x0 + 10}" y="37" fill="#d00">red: cut edge (tensor crosses devices)</text>')
    for a, b in drawing.edges:
        (xa, ya), (xb, yb) = xy(a), xy(b)
        cut = drawing.device[a] != drawing.device[b]
        parts.append(f'<line x1="{xa + _BOX}" y1="{ya + _BOX / 2}" x2="{xb}" y2="{yb + _BOX / 2}" '
                     f'stroke="{"#d00" if cut else "#bbb"}" stroke-width="{2 if cut else 0.7}"/>')
    for g in range(drawing.num_groups):
        x, y = xy(g)
        tip = html.escape(f"{drawing.devices[drawing.device[g]]}: " + "; ".join(drawing.members[g][:12]))
        parts.append(f'<rect x="{x}" y="{y}" width="{_BOX}" height="{_BOX}" rx="3" '
                     f'fill="{colour(drawing.device[g])}"><title>{tip}</title></rect>')
    parts.append("</svg>")
    return "\n".join(parts)


def placement_html(svg: str, placement: Placement, *, title: str, extra_lines: Sequence[str] = ()) -> str:
    """A self-contained page: the SVG, the summary and the per-device counts."""
    rows = "".join(f"<tr><td>{html.escape(d)}</td><td>{n}</td></tr>" for d, n in placement.counts_per_device().items())
    summary = html.escape(placement.summary())
    extra = "".join(f"<p>{html.escape(line)}</p>" for line in extra_lines)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
            f"<body style='font-family:sans-serif'><h1>{html.escape(title)}</h1>"
            f"<table border='1' cellpadding='4'><tr><th>device</th><th>compute nodes</th></tr>{rows}</table>"
            f"{extra}<pre>{summary}</pre><div style='overflow-x:auto'>{svg}</div></body></html>")


def write_png(drawing: Drawing, path: str | Path, *, title: str) -> None:
    """Render the drawing with matplotlib (an optional dependency) to PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is in the dev extra
        raise ImportError("PNG output needs matplotlib: pip install 'ov_autoplace[dev]' (SVG/HTML need nothing)") from exc
    cols, rows = int(drawing.layer.max()) + 1, int(drawing.row.max()) + 1
    fig, ax = plt.subplots(figsize=(min(40, 2 + 0.25 * cols), min(20, 2 + 0.3 * rows)))
    for a, b in drawing.edges:
        cut = drawing.device[a] != drawing.device[b]
        ax.plot([drawing.layer[a], drawing.layer[b]], [-drawing.row[a], -drawing.row[b]],
                color="#d00" if cut else "#bbb", lw=1.5 if cut else 0.5, zorder=1)
    for k, device in enumerate(drawing.devices):
        on = drawing.device == k
        ax.scatter(drawing.layer[on], -drawing.row[on], s=30, marker="s", color=PALETTE[k % len(PALETTE)],
                   label=device, zorder=2)
    ax.set_title(title)
    ax.legend(loc="upper right")
    ax.axis("off")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


__all__ = ["Drawing", "layout", "placement_html", "placement_svg", "write_png"]
