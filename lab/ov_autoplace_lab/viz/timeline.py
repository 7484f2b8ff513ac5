"""The timeline of one inference: submodels as bars on their device's row, transfers as arrows between them.

HETERO runs submodels one after another (``CostModel``'s execution model), so
the bars follow each other on one time axis; a transfer into a submodel is
drawn just before it on the "transfers" row, with an arrow from the producing
submodel's bar, labelled with its bytes and time.

Two sources, always labelled:

* **simulated** (:func:`simulated_timeline`): every number from the simulator
  on a CostModel (per-node compute with the fusion rules, submodel overhead,
  link costs). The bars and transfers add up to ``Simulator``'s prediction.
* **measured** (:func:`ov_autoplace_lab.viz.measured.measured_timeline`): each
  bar is the sum of HETERO's ``PERF_COUNT`` times of that submodel's runtime
  nodes; the total is the measured end-to-end median. Transfers are not in
  ``PERF_COUNT``: their times come from the cost model's link calibration
  (itself measured on the devices) and say so; what is left of the end-to-end
  time is drawn as "other" (submodel switches, scheduling).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace_lab.viz.placed_graph import PlacedGraph, group_label, name_scope
from ov_autoplace_lab.viz.scene import CUT_COLOUR, Line, Rect, Scene, Text, device_colour, fit_text, short_ops, wrap_text


def node_compute_ms(simulator: Simulator, placement: np.ndarray) -> np.ndarray:
    """Compute time [N] of every node under one placement [N] (0 for non-compute nodes), fusion rules included: the
    simulator's per-node terms before it sums them (a picture's, not the runtime's, question)."""
    dev, _ = simulator._as_batch(placement)
    per_node = np.zeros(simulator.num_nodes)
    plain, involved = simulator._node_compute(dev[:1])
    per_node[simulator._plain], per_node[simulator._involved] = plain[0], involved[0]
    return per_node


# ---- the model: bars and transfers on one time axis ----------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SubmodelBar:
    index: int
    device: str
    ms: float
    start_ms: float
    nodes: int
    label: str  # main op types
    scope: str  # shared model scope of its nodes ("encoder.layer.0-11.attention"), may be empty


@dataclasses.dataclass(frozen=True)
class TransferArrow:
    src: int  # producing submodel, -1 for the model input
    dst: int
    nbytes: int
    ms: float
    start_ms: float
    tensors: int


@dataclasses.dataclass(frozen=True)
class Timeline:
    """One inference laid out in time. ``source`` says measured or simulated, and from what."""

    source: str
    measured: bool
    devices: tuple[str, ...]
    bars: tuple[SubmodelBar, ...]
    transfers: tuple[TransferArrow, ...]
    other_ms: float  # time in the total that is neither a bar nor a transfer
    total_ms: float
    #: the submodel of each node the bars stand for (measured: HETERO's own subgraphs), -1 outside submodels
    submodel_of_node: np.ndarray | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def transfer_ms(self) -> float:
        return float(sum(t.ms for t in self.transfers))

    @property
    def transfer_bytes(self) -> int:
        return int(sum(t.nbytes for t in self.transfers))

    @property
    def transfer_share(self) -> float:
        return self.transfer_ms / self.total_ms if self.total_ms > 0 else 0.0

    def device_ms(self) -> dict[str, float]:
        out = dict.fromkeys(self.devices, 0.0)
        for bar in self.bars:
            out[bar.device] += bar.ms
        return out

    def summary_line(self) -> str:
        """The line ``show`` prints above the picture, so the picture and the text agree."""
        return (f"timeline [{self.source}]: {len(self.bars)} submodel(s), {self.total_ms:.2f} ms; transfers "
                f"{self.transfer_ms:.3f} ms ({100 * self.transfer_share:.1f} %, {len(self.transfers)} tensor group(s), "
                f"{self.transfer_bytes / 1e6:.2f} MB)")


def _aggregate_transfers(placed: PlacedGraph, cost_of) -> dict[tuple[int, int], list[float]]:
    """(src submodel, dst submodel) -> [bytes, ms, count], priced by ``cost_of(transfer)``."""
    groups: dict[tuple[int, int], list[float]] = {}
    for t in placed.transfers:
        entry = groups.setdefault((t.src_submodel, t.dst_submodel), [0.0, 0.0, 0.0])
        entry[0] += t.nbytes
        entry[1] += cost_of(t)
        entry[2] += 1
    return groups


def lay_out(placed: PlacedGraph, submodel_ms: np.ndarray, transfer_cost, *, source: str, measured: bool,
            total_ms: float | None = None) -> Timeline:
    """Place bars and transfers on one time axis: into-transfers of submodel k, then k, in execution order."""
    groups = _aggregate_transfers(placed, transfer_cost)
    into: dict[int, list[tuple[int, list[float]]]] = {}
    for (src, dst), value in groups.items():
        into.setdefault(dst, []).append((src, value))
    bars, arrows, clock = [], [], 0.0
    for s in range(placed.num_submodels):
        for src, (nbytes, ms, count) in sorted(into.get(s, [])):
            arrows.append(TransferArrow(src, s, int(nbytes), float(ms), clock, int(count)))
            clock += ms
        nodes = placed.submodel_nodes(s)
        bars.append(SubmodelBar(s, placed.devices[int(placed.submodel_device[s])], float(submodel_ms[s]), clock,
                                int(nodes.size), group_label(placed.graph, nodes), name_scope(placed.graph, nodes)))
        clock += float(submodel_ms[s])
    total = clock if total_ms is None else float(total_ms)
    return Timeline(source, measured, placed.devices, tuple(bars), tuple(arrows), total - clock, total,
                    placed.submodel)


def simulated_timeline(placed: PlacedGraph, cost: CostModel) -> Timeline:
    """Every number from the simulator on ``cost`` (labelled with ``cost.label``); sums to its prediction."""
    sim = Simulator(cost, placed.graph)
    per_node = node_compute_ms(sim, placed.device)
    submodel_ms = np.zeros(placed.num_submodels)
    # compute nodes outside every submodel (constant subgraphs the legalizer keeps beside their consumers)
    # are paid by the submodel of their first consumer, as they run inside it
    owner = placed.submodel.copy()
    for s, t in zip(placed.graph.edge_src.tolist()[::-1], placed.graph.edge_dst.tolist()[::-1]):
        if owner[s] < 0 and owner[t] >= 0:
            owner[s] = owner[t]
    has_owner = owner >= 0
    np.add.at(submodel_ms, owner[has_owner], per_node[has_owner])
    submodel_ms += np.asarray(cost.submodel_overhead_ms)[placed.submodel_device]
    device = placed.device

    def price(t) -> float:
        return cost.transfer_ms(t.nbytes, int(device[t.producer]), int(placed.submodel_device[t.dst_submodel]))

    source = f"simulated: {cost.label}"
    if placed.num_submodels != placed.islands:
        source += (f"; drawn as the {placed.num_submodels} submodels HETERO compiles, priced per submodel (the "
                   f"simulator counts {placed.islands} same-device islands: HETERO splits an island that another "
                   "device feeds back and joins parts that share an input)")
    timeline = lay_out(placed, submodel_ms, price, source=source, measured=False)
    unowned = float(per_node[~has_owner].sum())
    return dataclasses.replace(timeline, other_ms=unowned, total_ms=timeline.total_ms + unowned)



# ---- drawing -----------------------------------------------------------------------------------------
_LABEL_W, _ROW_H, _BAR_H, _AXIS_H = 96, 34, 22, 26


def _ms_fmt(ms: float) -> str:
    if ms >= 10:
        return f"{ms:.1f} ms"
    return f"{ms:.2f} ms" if ms >= 0.1 else f"{ms:.3f} ms"


def _bytes_fmt(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def draw_timeline(timeline: Timeline, *, width: float = 1100.0) -> Scene:
    """The Gantt chart: one row per device, a transfers row, a time axis, and a heading with the source."""
    rows = list(timeline.devices) + ["transfers"]
    source = wrap_text(f"source: {timeline.source}", width, 10.5, max_lines=2)
    top = 26 + 14 * len(source)
    height = top + len(rows) * _ROW_H + _AXIS_H + 30
    scene = Scene(width, height)
    kind = "MEASURED" if timeline.measured else "SIMULATED"
    scene.add(Text(0, 14, f"Timeline of one inference ({kind}): {len(timeline.bars)} submodel(s) run one after "
                          f"another, total {_ms_fmt(timeline.total_ms)}; transfers {_ms_fmt(timeline.transfer_ms)} "
                          f"= {100 * timeline.transfer_share:.1f} % of the time", size=13, bold=True))
    for k, line in enumerate(source):
        scene.add(Text(0, 30 + 14 * k, line, size=10.5, colour="#555"))
    bars_end = max((b.start_ms + b.ms for b in timeline.bars), default=0.0)
    span = max(timeline.total_ms, bars_end, 1e-9)  # PERF_COUNT sums can exceed a loaded machine's median
    plot_w = width - _LABEL_W - 10
    x_of = lambda ms: _LABEL_W + plot_w * ms / span  # noqa: E731
    row_y = {name: top + k * _ROW_H for k, name in enumerate(rows)}
    for k, name in enumerate(rows):
        y = row_y[name]
        scene.add(Rect(_LABEL_W, y, plot_w, _ROW_H - 2, "#f4f4f4" if k % 2 == 0 else "#fafafa"))
        colour = device_colour(k) if name != "transfers" else CUT_COLOUR
        scene.add(Rect(4, y + 10, 10, 10, colour))
        scene.add(Text(18, y + 20, name, size=11.5, bold=True))
    for bar in timeline.bars:
        d = timeline.devices.index(bar.device)
        x0, x1, y = x_of(bar.start_ms), x_of(bar.start_ms + bar.ms), row_y[bar.device] + (_ROW_H - _BAR_H) / 2 - 1
        what = f"{bar.label}" + (f" in {bar.scope}" if bar.scope else "")
        hover = (f"submodel {bar.index} on {bar.device}: {_ms_fmt(bar.ms)} "
                 f"({'PERF_COUNT' if timeline.measured else 'simulated'}), {bar.nodes} ops: {what}")
        scene.add(Rect(x0, y, max(x1 - x0, 1.0), _BAR_H, device_colour(d), "white", hover, f"sub{bar.index}", 2))
        caption = fit_text(f"#{bar.index} {_ms_fmt(bar.ms)} {short_ops(bar.label)}", x1 - x0 - 4, 10)
        if caption:
            scene.add(Text(x0 + 3, y + 15, caption, size=10, colour="white"))
    ty = row_y["transfers"] + (_ROW_H - _BAR_H) / 2 - 1
    bar_end = {b.index: (x_of(b.start_ms + b.ms), row_y[b.device] + _ROW_H / 2) for b in timeline.bars}
    caption_end = -1e9
    for t in timeline.transfers:
        x0, x1 = x_of(t.start_ms), x_of(t.start_ms + t.ms)
        hover = (f"{t.tensors} tensor(s) submodel {'input' if t.src < 0 else t.src} -> {t.dst}: "
                 f"{_bytes_fmt(t.nbytes)}, {t.ms:.3f} ms")
        scene.add(Rect(x0, ty, max(x1 - x0, 1.5), _BAR_H, CUT_COLOUR, "none", hover, f"tr{t.src}_{t.dst}", 1))
        if t.src in bar_end:  # arrow from the producer's bar end down to the transfer, then to the consumer
            sx, sy = bar_end[t.src]
            scene.add(Line(sx, sy, x0 + 1, ty, CUT_COLOUR, 1.2, arrow=True, hover=hover))
        dst = timeline.bars[t.dst]
        scene.add(Line(x1, ty + _BAR_H / 2, x_of(dst.start_ms) + 1, row_y[dst.device] + _ROW_H / 2, CUT_COLOUR, 1.2,
                       arrow=True, hover=hover))
        caption = f"{_bytes_fmt(t.nbytes)}, {_ms_fmt(t.ms)}"
        if x0 > caption_end + 6:  # captions that would overlap the previous one are left to the hover text
            scene.add(Text(x0, ty + _BAR_H + 10, caption, size=9.5, colour=CUT_COLOUR))
            caption_end = x0 + 0.58 * 9.5 * len(caption)
    if timeline.other_ms > 0.005 * span:
        x0 = x_of(timeline.total_ms - timeline.other_ms)
        scene.add(Rect(x0, ty, x_of(timeline.total_ms) - x0, _BAR_H, "#bbbbbb", "none",
                       f"other: {_ms_fmt(timeline.other_ms)} of the end-to-end time not in any bar or transfer "
                       "(submodel switches, scheduling)", "other", 1))
    axis_y = top + len(rows) * _ROW_H + 4
    scene.add(Line(_LABEL_W, axis_y, _LABEL_W + plot_w, axis_y, "#444", 1))
    step = _nice_step(span / 8)
    tick = 0.0
    while tick <= span + 1e-9:
        x = x_of(tick)
        scene.add(Line(x, axis_y, x, axis_y + 4, "#444", 1))
        scene.add(Text(x, axis_y + 16, f"{tick:g}", size=9.5, anchor="middle"))
        tick += step
    scene.add(Text(_LABEL_W + plot_w, axis_y + 28, "time in one inference (ms)", size=10, anchor="end", colour="#555"))
    return scene


def _nice_step(raw: float) -> float:
    if raw <= 0:
        return 1.0
    magnitude = 10 ** np.floor(np.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * magnitude:
            return float(m * magnitude)
    return float(10 * magnitude)


__all__ = ["SubmodelBar", "Timeline", "TransferArrow", "draw_timeline", "lay_out", "node_compute_ms",
           "simulated_timeline"]
