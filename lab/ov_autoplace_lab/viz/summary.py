"""The per-device summary: nodes, FLOPs and time share per device, and the latency against each single device."""

from __future__ import annotations

import dataclasses

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.graph.arrays import NodeRole
from ov_autoplace.placement.assignment import Placement
from ov_autoplace_lab.viz.placed_graph import PlacedGraph
from ov_autoplace_lab.viz.scene import Rect, Scene, Text, device_colour
from ov_autoplace_lab.viz.timeline import Timeline, node_compute_ms


@dataclasses.dataclass(frozen=True)
class DeviceRow:
    device: str
    nodes: int
    flops: float
    time_ms: float  # this device's submodel time in the timeline


@dataclasses.dataclass(frozen=True)
class DeviceSummary:
    rows: tuple[DeviceRow, ...]
    placed_ms: float
    placed_source: str  # "measured" or "simulated"
    single_ms: dict[str, float]  # whole model on one device
    single_source: str

    def table(self) -> str:
        """Plain-text table (what ``show`` prints)."""
        nodes, flops = sum(r.nodes for r in self.rows) or 1, sum(r.flops for r in self.rows) or 1.0
        busy = sum(r.time_ms for r in self.rows) or 1.0
        lines = [f"{'device':<10}{'nodes':>7}{'node %':>8}{'GFLOP':>9}{'FLOP %':>8}{'ms':>9}{'time %':>8}"]
        for r in self.rows:
            lines.append(f"{r.device:<10}{r.nodes:>7}{100 * r.nodes / nodes:>7.1f}%{r.flops / 1e9:>9.2f}"
                         f"{100 * r.flops / flops:>7.1f}%{r.time_ms:>9.2f}{100 * r.time_ms / busy:>7.1f}%")
        lines.append(f"this placement: {self.placed_ms:.2f} ms ({self.placed_source}); " + ", ".join(
            f"{d}-only {ms:.2f} ms" for d, ms in self.single_ms.items()) + f" ({self.single_source})")
        return "\n".join(lines)


def single_device_ms(sim: Simulator, device: int) -> float:
    """Predicted latency of the whole model on one device: its compute plus one submodel's overhead.

    The same number ``sim`` gives for that placement (one island, nothing crosses), without labelling
    islands.
    """
    compute = float(node_compute_ms(sim, np.full(sim.num_nodes, device, dtype=np.int64)).sum())
    return compute + (float(sim.cost.submodel_overhead_ms[device]) if sim.active.any() else 0.0)


def device_summary(placed: PlacedGraph, timeline: Timeline, placement: Placement,
                   cost: CostModel | None) -> DeviceSummary:
    """Rows from the graph and the timeline; single-device latencies measured if ``placement`` has them,
    else simulated on ``cost``."""
    graph = placed.graph
    compute = np.asarray(graph.role) == NodeRole.COMPUTE
    per_device_ms = timeline.device_ms()
    rows = []
    for k, d in enumerate(placed.devices):
        on = compute & (placed.device == k)
        rows.append(DeviceRow(d, int(on.sum()), float(np.maximum(graph.flops[on], 0).sum()), per_device_ms[d]))
    if placement.reference_latency_ms:
        single, single_source = dict(placement.reference_latency_ms), "measured"
    elif cost is not None:
        sim = Simulator(cost, graph)
        single = {d: single_device_ms(sim, k) for k, d in enumerate(placed.devices)}
        single_source = "simulated: " + cost.label
    else:
        single, single_source = {}, "not available"
    placed_source = "measured" if timeline.measured else "simulated"
    return DeviceSummary(tuple(rows), timeline.total_ms, placed_source, single, single_source)


def draw_summary(summary: DeviceSummary, *, width: float = 1100.0) -> Scene:
    """A table of the device rows beside bars comparing this placement with every single device."""
    rows = summary.rows
    height = 44 + 22 * (len(rows) + 1) + 10
    scene = Scene(width, max(height, 44 + 26 * (len(summary.single_ms) + 1) + 10))
    scene.add(Text(0, 14, "Per device", size=13, bold=True))
    headers = [("device", 0, "start"), ("nodes", 150, "end"), ("FLOPs", 230, "end"), ("time", 300, "end"),
               ("ms", 370, "end")]
    for text, x, anchor in headers:
        scene.add(Text(x + (20 if x else 0), 38, text, size=11, bold=True, anchor=anchor))
    nodes, flops = sum(r.nodes for r in rows) or 1, sum(r.flops for r in rows) or 1.0
    busy = sum(r.time_ms for r in rows) or 1.0
    for k, r in enumerate(rows):
        y = 60 + 22 * k
        scene.add(Rect(0, y - 11, 12, 12, device_colour(k)))
        cells = [(r.device, 20, "start"), (f"{r.nodes} ({100 * r.nodes / nodes:.0f} %)", 170, "end"),
                 (f"{100 * r.flops / flops:.0f} %", 250, "end"), (f"{100 * r.time_ms / busy:.0f} %", 320, "end"),
                 (f"{r.time_ms:.2f}", 390, "end")]
        for text, x, anchor in cells:
            scene.add(Text(x, y, text, size=11, anchor=anchor))
    # latency bars: this placement against each device alone
    x0, bar_w = 470, width - 470 - 150
    scene.add(Text(x0, 14, "Latency of one inference: this placement vs each device alone", size=13, bold=True))
    entries = [("this placement", summary.placed_ms, "#333333", summary.placed_source)]
    entries += [(f"{d} only", ms, device_colour(k), summary.single_source)
                for k, (d, ms) in enumerate(summary.single_ms.items())]
    top = max(ms for _, ms, _, _ in entries) or 1.0
    for k, (name, ms, colour, source) in enumerate(entries):
        y = 28 + 26 * k
        scene.add(Text(x0 + 110, y + 14, name, size=11, anchor="end", bold=k == 0))
        scene.add(Rect(x0 + 116, y + 2, bar_w * ms / top, 18, colour, hover=f"{name}: {ms:.2f} ms ({source})"))
        scene.add(Text(x0 + 120 + bar_w * ms / top, y + 15, f"{ms:.2f} ms", size=11))
    scene.add(Text(x0 + 116, 28 + 26 * len(entries) + 10, f"placement: {summary.placed_source}; single devices: "
                   f"{summary.single_source}", size=9.5, colour="#555"))
    return scene


__all__ = ["DeviceRow", "DeviceSummary", "device_summary", "draw_summary", "single_device_ms"]
