"""The LLM objective in a cost model: one CostModel (and graph) whose latency is a whole generation's.

A placement's predicted latency is linear in its parts (``cost_model.py``: compute per node, bytes and a latency
per crossing, an overhead per submodel), so a generation (``model/generation.py``: the prefill plus the decode
steps, as weights on a few decode shapes) is costed exactly by summing the parts with the objective's weights:
each decode step's static clone (``decode_clone``) is costed like the prefill's, its nodes matched by name, and

* ``compute_ms`` / ``unfused_ms``: the prefill's plus ``weight *`` each decode clone's;
* ``edge_bytes``: the same sum (a tensor crossing devices crosses at every step);
* link latency and submodel overhead: times the number of inferences (``1 + sum(weights)``);
* ``out_bytes`` (activation memory): the largest over the shapes.

Nodes only the prefill has (the state's initializers) keep their prefill cost; nodes only a decode clone has
(its folded shapes) are left out: shape arithmetic, no measurable time.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np
import openvino as ov

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.graph.arrays import GraphArrays, extract_graph
from ov_autoplace.model.generation import Generation, decode_clone, decode_pasts, decode_weights
from ov_autoplace.model.prepare import prepare_model


def _edge_keys(graph: GraphArrays) -> list[tuple]:
    names = graph.names
    return [(names[s], names[t], int(ps), int(pd)) for s, t, ps, pd in
            zip(graph.edge_src, graph.edge_dst, graph.edge_src_port, graph.edge_dst_port)]


def mix_costs(graph: GraphArrays, cost: CostModel, decodes: list[tuple[GraphArrays, CostModel]],
              weights) -> tuple[GraphArrays, CostModel]:
    """``(graph, cost)`` of the prefill with the decode shapes ``decodes`` added at ``weights`` (module doc)."""
    row = {name: i for i, name in enumerate(graph.names)}
    edge = {key: k for k, key in enumerate(_edge_keys(graph))}
    compute, unfused = np.array(cost.compute_ms, dtype=np.float64), np.array(cost.unfused_ms, dtype=np.float64)
    edge_bytes = np.asarray(graph.edge_bytes, dtype=np.float64).copy()
    out_bytes = np.asarray(graph.out_bytes).copy()
    for (g, c), weight in zip(decodes, weights):
        pairs = [(i, row[n]) for i, n in enumerate(g.names) if n in row]
        mine, theirs = np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64)
        compute[theirs] += weight * np.asarray(c.compute_ms)[mine]
        unfused[theirs] += weight * np.asarray(c.unfused_ms)[mine]
        out_bytes[theirs] = np.maximum(out_bytes[theirs], np.asarray(g.out_bytes)[mine])
        for k, key in enumerate(_edge_keys(g)):
            if key in edge:
                edge_bytes[edge[key]] += weight * max(float(g.edge_bytes[k]), 0.0)
    steps = 1.0 + float(np.sum(weights))
    mixed_graph = dataclasses.replace(graph, edge_bytes=np.rint(edge_bytes).astype(np.int64), out_bytes=out_bytes)
    mixed = dataclasses.replace(cost, compute_ms=compute, unfused_ms=unfused,
                                link_latency_ms=np.asarray(cost.link_latency_ms) * steps,
                                submodel_overhead_ms=np.asarray(cost.submodel_overhead_ms) * steps,
                                source=f"{cost.source}, a generation of {steps:.0f} inferences")
    return mixed_graph, mixed


def generation_costs(model: ov.Model, graph: GraphArrays, cost: CostModel, generation: Generation,
                     cost_of: Callable[[GraphArrays], CostModel]) -> tuple[GraphArrays, CostModel]:
    """``(graph, cost)`` of ``model``'s prefill (``graph``, ``cost``) made a whole ``generation``'s: each decode
    step of ``decode_pasts`` cloned from the dynamic ``model``, prepared and costed by ``cost_of``."""
    decodes = []
    for past in decode_pasts(generation):
        g = extract_graph(prepare_model(decode_clone(model, past)))
        decodes.append((g, cost_of(g)))
    return mix_costs(graph, cost, decodes, decode_weights(generation))


__all__ = ["generation_costs", "mix_costs"]
