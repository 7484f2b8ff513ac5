"""The timeline of one inference under a placement: submodels in HETERO's order, the transfers between them.

HETERO runs submodels one after another (``CostModel``'s execution model), so the submodels follow each other
on one time axis, each preceded by the transfers into it. :func:`simulated_timeline` prices everything with the
simulator on a CostModel (per-node compute with the fusion rules, submodel overhead, link costs); the bars and
transfers add up to ``Simulator``'s prediction. ``ov-autoplace place`` prints its :meth:`Timeline.summary_line`;
the lab draws it (``ov_autoplace_lab.viz.timeline``) and lays measured ``PERF_COUNT`` times out the same way
(:func:`lay_out`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.placement.placed_graph import PlacedGraph, group_label, name_scope


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
        """The line ``place`` and ``show`` both print, so the picture and the text agree."""
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
    per_node = sim.node_compute_ms(placed.device)
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


__all__ = ["SubmodelBar", "Timeline", "TransferArrow", "lay_out", "simulated_timeline"]
