"""Pictures of a placement: timeline, placed graph and per-device summary, as SVG, PNG and interactive HTML.

``placement_picture`` assembles the panels from a placement laid over its graph
and writes nothing; ``write_picture`` writes ``PREFIX.svg``, ``PREFIX.html``
(self-contained, interactive) and ``PREFIX.png`` (only with matplotlib, from the
``dev`` extra; without it the PNG is skipped with a message, the rest is
written). Modules: ``placed`` (submodels, transfers, the placement/model check),
``timeline`` and ``measured`` (one inference in time), ``graph_layout``
(collapsed, depth-layered graph), ``summary`` (per device), ``compare``
(several strategies side by side), ``scene`` (SVG/PNG backends), ``html_page``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Sequence

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.assignment import Placement
from ov_autoplace_lab.viz.graph_layout import MAX_BOXES, box_details, collapse, draw_graph
from ov_autoplace_lab.viz.html_page import render_html
from ov_autoplace_lab.viz.placed_graph import PlacedGraph, analyze, check_placement_matches, with_partition
from ov_autoplace_lab.viz.scene import Scene, Text, matplotlib_available, stack, to_png, to_svg
from ov_autoplace_lab.viz.summary import DeviceSummary, device_summary, draw_summary
from ov_autoplace_lab.viz.timeline import Timeline, draw_timeline, node_compute_ms, simulated_timeline

#: The testbed's two devices are the same f32 CPU when the CPU has no bf16 (this machine): say so on pictures.
SAME_DEVICE_NOTE = ("CPU and CPUF are the CPU plugin under two names; on a CPU without bf16 both are the same "
                    "f32 device, so a difference between them is noise, not a speed-up")


@dataclasses.dataclass
class PlacementPicture:
    """Everything ``show`` writes: one scene, the HTML hover data and the text printed beside it."""

    title: str
    scene: Scene
    hover: dict[str, dict]
    text_blocks: list[str]
    notes: list[str]
    timelines: list[Timeline]
    summary: DeviceSummary


def _timeline_hover(timeline: Timeline, prefix: str) -> dict[str, dict]:
    out = {}
    for bar in timeline.bars:
        out[f"sub{bar.index}"] = {"submodel": bar.index, "device": bar.device, "ms": round(bar.ms, 4),
                                  "time source": timeline.source, "nodes": bar.nodes, "main ops": bar.label,
                                  "scope": bar.scope}
    for t in timeline.transfers:
        out[f"tr{t.src}_{t.dst}"] = {"transfer": f"submodel {'input' if t.src < 0 else t.src} -> {t.dst}",
                                     "tensors": t.tensors, "bytes": t.nbytes, "ms": round(t.ms, 4)}
    out["other"] = {"other ms": round(timeline.other_ms, 4), "what": "end-to-end time outside bars and transfers"}
    return {f"{prefix}{k}": v for k, v in out.items()}


def _prefixed_keys(scene: Scene, prefix: str) -> Scene:
    for shape in scene.shapes:
        if getattr(shape, "key", ""):
            shape.key = prefix + shape.key
    return scene


def placement_picture(graph: GraphArrays, placement: Placement, *, title: str, cost: CostModel | None = None,
                      measured: Timeline | None = None, notes: Sequence[str] = (),
                      max_boxes: int = MAX_BOXES) -> PlacementPicture:
    """Assemble summary, timeline(s) and graph; ``measured`` first when given, the simulated one when ``cost`` is.

    Raises PlacementError when ``placement`` does not belong to ``graph``'s model.
    """
    placed = analyze(graph, placement)
    timelines = [t for t in (measured, simulated_timeline(placed, cost) if cost is not None else None) if t]
    if not timelines:
        raise ValueError("a picture needs a measured timeline or a cost model to simulate one")
    if measured is not None and measured.submodel_of_node is not None:  # draw the submodels HETERO really made
        placed = with_partition(placed, placement, measured.submodel_of_node)
    node_ms = node_compute_ms(Simulator(cost, graph), placed.device) if cost is not None else None
    boxes = collapse(placed, max_boxes=max_boxes)
    details = box_details(placed, boxes, node_ms)
    summary = device_summary(placed, timelines[0], placement, cost)
    header = Scene(1100, 34)
    header.add(Text(0, 22, title, size=17, bold=True))
    panels = [header, draw_summary(summary)]
    hover: dict[str, dict] = {}
    for k, timeline in enumerate(timelines):
        panels.append(_prefixed_keys(draw_timeline(timeline), f"t{k}"))
        hover.update(_timeline_hover(timeline, f"t{k}"))
    panels.append(draw_graph(placed, boxes, details, time_source="simulated on " + cost.label if cost else ""))
    hover.update({f"box{d['box']}": d for d in details})
    all_notes = list(notes)
    if {"CPU", "CPUF"} <= set(placement.devices):
        all_notes.append(SAME_DEVICE_NOTE)
    if all_notes:
        foot = Scene(1100, 16 * len(all_notes) + 4)
        for k, note in enumerate(all_notes):
            foot.add(Text(0, 12 + 16 * k, "note: " + note, size=10.5, colour="#555"))
        panels.append(foot)
    blocks = [summary.table()] + [t.summary_line() for t in timelines] + [placement.summary()]
    return PlacementPicture(title, stack(panels), hover, blocks, all_notes, timelines, summary)


def write_picture(picture: PlacementPicture, prefix: Path, *, png: bool = True) -> tuple[list[Path], str | None]:
    """Write PREFIX.svg, PREFIX.html and (with matplotlib) PREFIX.png; returns (written, why the PNG was skipped)."""
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    svg = to_svg(picture.scene)
    written = [prefix.with_suffix(".svg"), prefix.with_suffix(".html")]
    written[0].write_text(svg)
    written[1].write_text(render_html(svg, title=picture.title, hover_data=picture.hover,
                                      text_blocks=picture.text_blocks))
    skipped = None
    if png and matplotlib_available():
        to_png(picture.scene, prefix.with_suffix(".png"))
        written.append(prefix.with_suffix(".png"))
    elif png:
        skipped = "PNG skipped: matplotlib is not installed (pip install 'ov-autoplace-lab[pictures]'); SVG and HTML written"
    return written, skipped


__all__ = ["PlacedGraph", "PlacementPicture", "SAME_DEVICE_NOTE", "Timeline", "analyze", "check_placement_matches",
           "placement_picture", "write_picture"]
