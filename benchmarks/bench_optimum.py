"""Exact-optimum solver times on the zoo models, on SYNTHETIC costs.

    python benchmarks/bench_optimum.py [--models bert_base,inception_v3,resnet50] [--time-limit 10]

Until profiled costs exist, the CostModel here is a stand-in built from the
graph's FLOPs and bytes with two made-up roofline devices (an "ACCEL" with
high peak and a slow link, a "HOST" with low peak); every number it prints is
labelled "synthetic costs". Elementwise ops right after a Convolution/MatMul are
fused into it. For each model it prints, per solver (min cut: compute +
transfers only; MILP: full model, once with unbounded memory and once with the
ACCEL holding only half of the weights), the wall time, the objective, the
model's latency of the legal placement, the solver status and gap, next to the
best single device and the heuristics. Target: BERT-base MILP solved, or within
1 % gap, in <= 10 s.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ov_autoplace.costmodel.cost_model import CostModel  # noqa: E402
from ov_autoplace.costmodel.cost_terms import CostTerms  # noqa: E402
from ov_autoplace_lab.optimum.milp import milp_placement  # noqa: E402
from ov_autoplace_lab.optimum.exact_optimum import min_cut_placement  # noqa: E402
from ov_autoplace.graph.arrays import GraphArrays, NodeRole, extract_graph  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace.strategies.base import PlacementContext  # noqa: E402
from ov_autoplace.strategies.best_single import BestSingleDeviceStrategy  # noqa: E402
from ov_autoplace_lab.baselines.critical_path import CriticalPathGreedyStrategy  # noqa: E402
from ov_autoplace.strategies.heft import HeftStrategy  # noqa: E402

LABEL = "synthetic costs"
# name: (peak flop per ms, memory bytes per ms, launch ms, submodel overhead ms)
DEVICES = {"ACCEL": (2.0e10, 2.0e8, 0.010, 0.10), "HOST": (1.5e9, 6.0e7, 0.002, 0.02)}
LINK_BYTES_PER_MS, LINK_LATENCY_MS = 1.6e7, 0.02
ANCHOR_OPS = {"Convolution", "GroupConvolution", "MatMul"}
FUSABLE_OPS = {"Add", "Multiply", "Relu", "Clamp", "Gelu", "Sigmoid", "Swish", "HSwish", "Tanh", "Subtract"}


def synthetic_cost_model(graph: GraphArrays, *, accel_weight_share: float | None = None) -> CostModel:
    """Roofline costs for two made-up devices; ``accel_weight_share`` caps ACCEL memory to that share of weights."""
    n = graph.num_nodes
    compute = graph.role == NodeRole.COMPUTE
    in_bytes = np.bincount(graph.edge_dst, weights=np.maximum(graph.edge_bytes, 0), minlength=n)
    moved = in_bytes + np.maximum(graph.out_bytes, 0)
    flops = np.where(graph.flops >= 0, graph.flops, moved / 4)
    names = tuple(DEVICES)
    ms = np.zeros((n, len(names)))
    for d, (peak, bandwidth, launch, _) in enumerate(DEVICES.values()):
        ms[:, d] = np.where(compute, launch + np.maximum(flops / peak, moved / bandwidth), 0.0)
    fused_into = np.full(n, -1, dtype=np.int64)
    unfused = ms.copy()
    consumers = np.bincount(graph.edge_src, minlength=n)
    for s, t in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()):
        # an elementwise op fed by a single-consumer conv/matmul runs inside its kernel
        if graph.op_types[t] in FUSABLE_OPS and graph.op_types[s] in ANCHOR_OPS and consumers[s] == 1 \
                and fused_into[t] < 0:
            fused_into[t] = s
            ms[t] *= 0.1
            unfused[s] = ms[s] * 1.05  # the producer loses the fused epilogue
    lat = np.full((2, 2), LINK_LATENCY_MS)
    per_byte = np.full((2, 2), 1.0 / LINK_BYTES_PER_MS)
    np.fill_diagonal(lat, 0.0), np.fill_diagonal(per_byte, 0.0)
    weights = np.where(graph.role == NodeRole.CONSTANT, np.maximum(graph.out_bytes, 0), 0).astype(np.int64)
    capacity = np.full(2, np.inf)
    if accel_weight_share is not None:
        capacity[0] = accel_weight_share * weights.sum()
    return CostModel(
        devices=names, node_names=tuple(graph.names), compute_ms=ms, unfused_ms=unfused, fused_into=fused_into,
        link_latency_ms=lat, link_ms_per_byte=per_byte,
        submodel_overhead_ms=np.array([v[3] for v in DEVICES.values()]), node_memory_bytes=weights,
        device_memory_bytes=capacity, simulated=True, source="synthetic roofline (bench_optimum)")


def row(label: str, seconds: float, objective: float | None, predicted: float, status: str) -> str:
    obj = "" if objective is None else f"{objective:10.3f}"
    return f"  {label:<28} {seconds:7.2f} s  objective {obj:>10} ms  model {predicted:10.3f} ms  {status}"


def bench(model_name: str, time_limit: float) -> None:
    from ov_autoplace_lab import models as zoo

    graph = extract_graph(prepare_model(zoo.load(model_name)))
    active = int((CostTerms(synthetic_cost_model(graph), graph).active).sum())
    print(f"{model_name}: {graph.num_nodes} nodes, {active} active [{LABEL}]")
    for variant, share in (("unbounded memory", None), ("ACCEL holds 50% of weights", 0.5)):
        cost = synthetic_cost_model(graph, accel_weight_share=share)
        terms = CostTerms(cost, graph)
        print(f" {variant}:")
        if share is None:
            r = min_cut_placement(cost, graph)
            print(row("min cut (no overhead/memory)", r.wall_s, r.objective_ms, r.predicted_ms, r.status))
        for bound in (None, 8):
            r = milp_placement(cost, graph, time_limit=time_limit, max_submodels=bound)
            gap = "" if r.mip_gap is None else f" gap {r.mip_gap:.2%}"
            proof = ", proven" if r.proven else ", NOT proven (time limit, or objective != simulator by > 0.5 %)"
            print(row(f"MILP max_submodels={bound}", r.wall_s, r.objective_ms, r.predicted_ms, r.status + gap + proof)
                  + f"  {r.num_submodels} submodels")
        context = PlacementContext(graph=graph, devices=cost.devices,
                                   support=np.ones((graph.num_nodes, 2), dtype=bool))
        for strategy in (BestSingleDeviceStrategy(cost), HeftStrategy(cost), CriticalPathGreedyStrategy(cost)):
            t0 = time.perf_counter()
            proposal = strategy.propose(context)
            seconds = time.perf_counter() - t0
            device, legal = terms.legal_devices(proposal)
            latency = terms.latency_ms(device)
            print(row(strategy.name, seconds, None, latency, f"{legal.num_submodels} submodels"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="bert_base,inception_v3,resnet50")
    parser.add_argument("--time-limit", type=float, default=10.0)
    args = parser.parse_args()
    print(f"Exact optimum under a CostModel [{LABEL}: roofline devices {DEVICES}, link "
          f"{LINK_BYTES_PER_MS * 1e3 / 1e9:.0f} GB/s + {LINK_LATENCY_MS} ms]")
    for name in args.models.split(","):
        bench(name.strip(), args.time_limit)


if __name__ == "__main__":
    main()
