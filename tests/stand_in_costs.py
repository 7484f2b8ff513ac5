"""A TEST-ONLY stand-in CostModel and the prepared graphs the policy tests (and a benchmark) read.

``stand_in_cost_model`` is NOT a cost model of any real device: it turns
``GraphArrays.flops`` into milliseconds with made-up throughputs so the policy
has device and node-device features to read before the profiler's measured
CostModels exist. Its ``source`` says so, and ``simulated`` is True.
"""

from __future__ import annotations

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.graph.arrays import GraphArrays, NodeRole, extract_graph
from ov_autoplace.graph.op_kinds import HEAVY_OP_TYPES
from ov_autoplace.model.prepare import prepare_model

STAND_IN_SOURCE = "TEST FIXTURE: flops-based stand-in (tests/stand_in_costs.py), not a device model"

#: name -> (heavy-op GFLOP/s, light-op G-elements/s, op types it cannot run). Made-up numbers.
STAND_IN_DEVICES = {
    "CPU": (200.0, 2.0, frozenset()),
    "CPUF": (50.0, 5.0, frozenset()),
    "NPU": (400.0, 1.0, frozenset({"Softmax", "MVN", "Gelu"})),
}


def stand_in_cost_model(graph: GraphArrays, devices: tuple[str, ...] = ("CPU", "CPUF")) -> CostModel:
    """TEST FIXTURE: a flops-based CostModel over ``devices`` (names from :data:`STAND_IN_DEVICES`)."""
    n, d = graph.num_nodes, len(devices)
    compute = graph.role == NodeRole.COMPUTE
    heavy = np.fromiter((t in HEAVY_OP_TYPES for t in graph.op_types), dtype=bool, count=n)
    flops = np.maximum(graph.flops, 0.0)
    ms = np.zeros((n, d))
    for k, name in enumerate(devices):
        heavy_rate, light_rate, unsupported = STAND_IN_DEVICES[name]
        rate = np.where(heavy, heavy_rate, light_rate) * 1e9
        ms[:, k] = np.where(compute, 0.005 + flops / rate * 1e3, 0.0)
        blocked = np.fromiter((t in unsupported for t in graph.op_types), dtype=bool, count=n) & compute
        ms[blocked, k] = np.inf
    link = np.full((d, d), 0.02)
    per_byte = np.full((d, d), 1e-7)  # 10 GB/s
    np.fill_diagonal(link, 0.0)
    np.fill_diagonal(per_byte, 0.0)
    weights = np.where(graph.role == NodeRole.CONSTANT, np.maximum(graph.out_bytes, 0), 0)
    return CostModel(
        devices=tuple(devices), node_names=graph.names, compute_ms=ms, unfused_ms=ms.copy(),
        fused_into=np.full(n, -1, dtype=np.int64), link_latency_ms=link, link_ms_per_byte=per_byte,
        submodel_overhead_ms=np.full(d, 0.05), node_memory_bytes=weights.astype(np.int64),
        device_memory_bytes=np.full(d, np.inf), simulated=True, source=STAND_IN_SOURCE)


def prepared_graph(model):
    prepared = prepare_model(model)
    return prepared, extract_graph(prepared)
