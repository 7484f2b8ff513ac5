"""``ov-autoplace compare``: several strategies' placements of one model, placed, simulated and timed side by side.

Every strategy places the model through :func:`ov_autoplace.place` (so the
legalizer and the submodel bound apply as in ``compile_model``); each placement
is priced by the simulator on the model's measured cost model and, unless
``measure=False``, compiled by HETERO and timed together with every single
device: ``rounds`` rounds, each timing every candidate in turn with the native
timer, so machine load falls on all of them alike. A strategy that fails to
place is reported in its row (it is our machinery failing, not the user's input).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import openvino as ov

from ov_autoplace import api
from ov_autoplace.devices.targets import target_devices
from ov_autoplace.devices.timing import measure_latency, random_inputs
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.measuring.providers import MeasuredCostProvider
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.strategies.cost_based import resolve_cost

logger = logging.getLogger("ov_autoplace")


def measured_cost_model(model, placement_devices, core):
    """The measured per-op CostModel of ``model`` on the devices (profiled once, then read from the profile store);
    what ``compare`` prices its rows on and ``show`` draws with."""
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    devices = tuple(placement_devices)
    context = PlacementContext(graph=graph, devices=devices, support=np.ones((graph.num_nodes, len(devices)), bool),
                               core=core, model=prepared)
    return graph, resolve_cost(MeasuredCostProvider(), context)


@dataclasses.dataclass
class CompareRow:
    """One strategy (or one single device) in the comparison."""

    name: str
    placement: Placement | None
    device_of_active: np.ndarray | None  # device index of each active node, topological order (the strip)
    place_s: float = 0.0
    predicted_ms: float | None = None
    transfer_ms: float = 0.0
    num_submodels: int = 1
    samples_ms: np.ndarray | None = None
    error: str = ""

    @property
    def median_ms(self) -> float | None:
        return None if self.samples_ms is None or not self.samples_ms.size else float(np.median(self.samples_ms))

    @property
    def iqr_ms(self) -> tuple[float, float] | None:
        if self.samples_ms is None or not self.samples_ms.size:
            return None
        q1, q3 = np.percentile(self.samples_ms, [25, 75])
        return float(q1), float(q3)


@dataclasses.dataclass
class Comparison:
    devices: tuple[str, ...]
    rows: list[CompareRow]
    cost_label: str
    measured: bool
    runs: int

    def table(self) -> str:
        """Markdown table: one row per strategy and per single device."""
        head = ("| strategy | nodes per device | submodels | transfers ms (sim.) | predicted ms (sim.) | "
                "measured ms median [IQR] | placing s |")
        lines = [head, "|" + "---|" * 7]
        for r in self.rows:
            if r.error:
                lines.append(f"| {r.name} | failed: {r.error} | | | | | |")
                continue
            counts = ", ".join(f"{d} {n}" for d, n in r.placement.counts_per_device().items()) if r.placement else \
                "whole model"
            meas = f"{r.median_ms:.2f} [{r.iqr_ms[0]:.2f}-{r.iqr_ms[1]:.2f}]" if r.median_ms is not None else "-"
            pred = f"{r.predicted_ms:.2f}" if r.predicted_ms is not None else "-"
            lines.append(f"| {r.name} | {counts} | {r.num_submodels} | {r.transfer_ms:.3f} | {pred} | {meas} | "
                         f"{r.place_s:.2f} |")
        lines.append("")
        lines.append(f"predicted: simulator on the {self.cost_label} cost model; measured: "
                     + (f"{self.runs} runs per row, interleaved rounds, native timer" if self.measured
                        else "not run (--no-measure)"))
        if {"CPU", "CPUF"} <= set(self.devices):
            from ov_autoplace_lab.viz import SAME_DEVICE_NOTE

            lines.append("note: " + SAME_DEVICE_NOTE)
        return "\n".join(lines)


def _interleaved(compiled: list[ov.CompiledModel], inputs, runs: int, rounds: int) -> list[np.ndarray]:
    samples: list[list[float]] = [[] for _ in compiled]
    per_round = max(1, runs // rounds)
    for r in range(rounds):
        for k, c in enumerate(compiled):
            stats = measure_latency(c, inputs, warmup=3 if r == 0 else 1, iterations=per_round)
            samples[k] += stats.samples_ms.tolist()
    return [np.asarray(s) for s in samples]


def compare_strategies(model: ov.Model, device: str, *, core: ov.Core, strategies: Sequence[str], runs: int = 30,
                       rounds: int = 3, measure: bool = True, max_submodels: int | None = 8) -> Comparison:
    """Place with each strategy, simulate each, and (``measure``) time them and each single device interleaved."""
    from ov_autoplace.costmodel.simulator import Simulator
    from ov_autoplace_lab.viz.placed_graph import analyze
    from ov_autoplace_lab.viz.summary import single_device_ms
    from ov_autoplace_lab.viz.timeline import simulated_timeline

    if rounds < 1 or runs < rounds:
        raise ValueError(f"need rounds >= 1 and runs >= rounds, got runs={runs}, rounds={rounds}")
    graph, cost = measured_cost_model(model, target_devices(core, device), core)
    sim = Simulator(cost, graph)
    rows: list[CompareRow] = []
    for name in strategies:
        t0 = time.perf_counter()
        try:
            placement = api.place(model, device, core=core, strategy=name, max_submodels=max_submodels)
        except Exception as exc:  # noqa: BLE001 - one strategy failing must not cost the others' results
            logger.warning("strategy %s failed: %s: %s", name, type(exc).__name__, exc)
            rows.append(CompareRow(name, None, None, error=f"{type(exc).__name__}: {exc}"[:160]))
            continue
        placed = analyze(graph, placement)
        timeline = simulated_timeline(placed, cost)
        rows.append(CompareRow(name, placement, placed.device[np.flatnonzero(placed.active)],
                               time.perf_counter() - t0, timeline.total_ms, timeline.transfer_ms, placed.num_submodels))
    for k, d in enumerate(cost.devices):
        active = np.flatnonzero(analyze(graph, _single(graph, cost.devices, d)).active)
        rows.append(CompareRow(f"{d} only", None, np.full(active.size, k),
                               predicted_ms=single_device_ms(sim, k)))
    if measure:
        ok = [r for r in rows if not r.error]
        compiled = [api.compile_placement(model, r.placement, {"PERFORMANCE_HINT": "LATENCY"}, core=core)
                    if r.placement is not None else
                    core.compile_model(model, r.name.removesuffix(" only"), {"PERFORMANCE_HINT": "LATENCY"})
                    for r in ok]
        for r, s in zip(ok, _interleaved(compiled, random_inputs(compiled[0]), runs, rounds)):
            r.samples_ms = s
    return Comparison(tuple(cost.devices), rows, cost.label, measure, runs)


def _single(graph, devices: tuple[str, ...], device: str) -> Placement:
    return Placement({n: device for n in graph.names}, devices, f"single:{device}", frozenset(), 1)


def write_comparison(result: Comparison, prefix: Path, *, title: str, png: bool = True):
    """PREFIX.md (the table), PREFIX.svg, PREFIX.html and (with matplotlib) PREFIX.png."""
    from ov_autoplace_lab.viz.compare_picture import draw_comparison
    from ov_autoplace_lab.viz.html_page import render_html
    from ov_autoplace_lab.viz.scene import matplotlib_available, to_png, to_svg

    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    scene, hover = draw_comparison(result, title=title)
    svg = to_svg(scene)
    table = result.table()
    written = [prefix.with_suffix(".md"), prefix.with_suffix(".svg"), prefix.with_suffix(".html")]
    written[0].write_text(f"# {title}\n\n{table}\n")
    written[1].write_text(svg)
    written[2].write_text(render_html(svg, title=title, hover_data=hover, text_blocks=[table]))
    skipped = None
    if png and matplotlib_available():
        to_png(scene, prefix.with_suffix(".png"))
        written.append(prefix.with_suffix(".png"))
    elif png:
        skipped = "PNG skipped: matplotlib is not installed (pip install 'ov-autoplace-lab[pictures]'); SVG and HTML written"
    return written, skipped


__all__ = ["CompareRow", "Comparison", "compare_strategies", "write_comparison"]
