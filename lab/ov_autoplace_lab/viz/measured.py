"""The measured timeline: HETERO's own PERF_COUNT, per submodel, from a real run of the placed model.

HETERO names each profiled runtime node ``"subgraph<K>: <name>"``. The bars
are HETERO's own subgraphs: an op its PERF_COUNT names is in that subgraph, an
op it does not name (fused away) joins the subgraph of the other ops of its
island (``placed.repartition``). A runtime node naming none of the model's ops
(reorders, the Parameter/Result pairs HETERO inserts at cuts) is timed in the
subgraph most of subgraph K's named ops are in. A node PERF_COUNT reports as
not run (the CPU plugin does so when its mean reads 0 us) counts with 0 ms,
so every subgraph HETERO compiled is drawn, in HETERO's order. The end-to-end
median is timed with the native timer on the same placement compiled without
``PERF_COUNT``, interleaved with the profiled runs so both see the same load.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import openvino as ov

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.measuring.perf_counts import profile_runs, reports_running_average  # the profiler's own run protocol
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace_lab.viz.placed_graph import PlacedGraph, repartition
from ov_autoplace_lab.viz.timeline import Timeline, lay_out


def _by_subgraph(node_ms: dict[str, float]) -> dict[str, list[tuple[str, float]]]:
    by_subgraph: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for key, ms in node_ms.items():
        subgraph, sep, name = key.partition(": ")
        if not sep:  # a single-device compile has no prefix
            subgraph, name = "subgraph0", key
        by_subgraph[subgraph].append((name, ms))
    return by_subgraph


def hetero_partition(placed: PlacedGraph, node_ms: dict[str, float]) -> np.ndarray:
    """HETERO's subgraph number of each active node its PERF_COUNT names (-1 elsewhere)."""
    index = {n: i for i, n in enumerate(placed.graph.names)}
    out = np.full(placed.graph.num_nodes, -1, dtype=np.int64)
    for subgraph, entries in _by_subgraph(node_ms).items():
        number = int(subgraph.removeprefix("subgraph")) if subgraph.removeprefix("subgraph").isdigit() else -1
        for name, _ in entries:
            i = index.get(name)
            if i is not None and placed.active[i]:
                out[i] = number
    return out


def submodel_times(placed: PlacedGraph, node_ms: dict[str, float]) -> tuple[np.ndarray, int]:
    """Per-submodel ms from ``{"subgraphK: name": ms}``; returns (times, number of HETERO subgraphs seen)."""
    index = {n: i for i, n in enumerate(placed.graph.names)}
    by_subgraph = _by_subgraph(node_ms)
    times = np.zeros(placed.num_submodels)
    for entries in by_subgraph.values():
        owners = [int(placed.submodel[index[n]]) for n, _ in entries if n in index and placed.submodel[index[n]] >= 0]
        majority = Counter(owners).most_common(1)[0][0] if owners else None
        for name, ms in entries:
            i = index.get(name)
            owner = int(placed.submodel[i]) if i is not None and placed.submodel[i] >= 0 else majority
            if owner is not None:
                times[owner] += ms
    return times, len(by_subgraph)


def measured_timeline(placed: PlacedGraph, placement: Placement, model: ov.Model, core: ov.Core, *,
                      cost: CostModel | None = None, iterations: int = 20, warmup: int = 3,
                      total_ms: float | None = None) -> Timeline:
    """Run the placed model with PERF_COUNT and lay the per-submodel times out; see the module docstring.

    ``cost`` prices the transfers (its link calibration); without it transfers get 0 ms and their
    time stays inside "other". ``total_ms``: an end-to-end median already measured for this placement
    (what ``place`` printed); without it one is measured here, interleaved with the profiled runs.
    """
    prepared = prepare_model(model)
    placement.apply(prepared)
    profiled = core.compile_model(prepared, placement.device_string, {"PERF_COUNT": True})
    plain = core.compile_model(prepared, placement.device_string, {}) if total_ms is None else None
    running_average = all(reports_running_average(core, d) for d in placement.devices)
    node_ms, e2e = profile_runs(profiled, warmup, iterations, running_average, companion=plain)
    # profile_runs keeps EXECUTED nodes only, and the CPU plugin reports an op whose mean rounds to 0 us as
    # NOT_RUN: a subgraph of one such op (a lone Relu, under load) vanished from the count and its op lost its
    # place in HETERO's order. Every runtime node of every subgraph is listed before the first inference.
    for info in profiled.create_infer_request().profiling_info:
        node_ms.setdefault(info.node_name, 0.0)
    if total_ms is not None:
        e2e = [float(total_ms)]
    placed = repartition(placed, placement, hetero_partition(placed, node_ms))  # the subgraphs HETERO compiled
    times, seen = submodel_times(placed, node_ms)
    device = placed.device

    def price(t) -> float:
        if cost is None:
            return 0.0
        return cost.transfer_ms(t.nbytes, int(device[t.producer]), int(placed.submodel_device[t.dst_submodel]))

    link = "transfers from the link calibration" if cost is not None else "transfers not priced"
    source = (f"measured: PERF_COUNT per submodel over {iterations} runs ({seen} HETERO subgraph(s)), "
              + ("end-to-end median measured separately" if total_ms is not None
               else f"end-to-end median of {len(e2e)} interleaved runs") + f"; {link}")
    return lay_out(placed, times, price, source=source, measured=True, total_ms=float(np.median(e2e)))


__all__ = ["measured_timeline", "submodel_times"]
