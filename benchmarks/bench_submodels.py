"""How many submodels HETERO really compiles, against the two counts this package has.

    python benchmarks/bench_submodels.py [--random 2]

For placements of BERT-base, ResNet-50 (zoo extras) and a synthetic attention
graph on the testbed (``HETERO:CPU,CPUF``), prints the same-device islands
(what the cost model prices), ``submodels.submodel_partition``'s count (what
the legalizer bounds and reports) and the number of subgraphs HETERO compiled
(read from PERF_COUNT, whose runtime node names are "subgraph<K>: ...").
Placements are legalized without a submodel bound, so they are what they
name. The structured ones move one kind of op to CPUF; the random ones put
each node on CPUF with probability p (seeded).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import ov_autoplace as oa  # noqa: E402
from ov_autoplace.graph import NodeRole  # noqa: E402
from ov_autoplace.legalize import constant_subgraph_mask, query_support  # noqa: E402
from ov_autoplace.prepare import prepare_model  # noqa: E402
from ov_autoplace.submodels import count_islands, submodel_partition  # noqa: E402
from tests import synthetic_graphs  # noqa: E402


def hetero_subgraphs(core, prepared, placement) -> int:
    compiled = oa.compile_placement(prepared, placement, {"PERF_COUNT": True}, core=core)
    request = compiled.create_infer_request()
    request.infer(oa.random_inputs(compiled))
    return len({p.node_name.partition(": ")[0] for p in request.profiling_info if ": " in p.node_name})


def rows_for(testbed, label: str, model, proposals) -> list[tuple[str, str, int, int, int]]:
    prepared = prepare_model(model)
    graph = oa.extract_graph(prepared)
    devices = list(testbed.devices)
    support = query_support(testbed.core, prepared, graph, devices)
    compute = graph.role == NodeRole.COMPUTE
    active = compute & ~(constant_subgraph_mask(graph) & compute)
    rows = []
    for name, proposal in proposals(graph):
        placement = oa.legalize(graph, proposal, devices, support, strategy="bench")
        device = np.array([devices.index(placement.assignment[n]) for n in graph.names])
        rows.append((label, name, count_islands(graph, device, active),
                     submodel_partition(graph, device, active).num_submodels,
                     hetero_subgraphs(testbed.core, prepared, placement)))
        print(f"{label:<22} {name:<28} {rows[-1][2]:>7} {rows[-1][3]:>14} {rows[-1][4]:>15}", flush=True)
    return rows


def by_name(patterns: dict[str, str]):
    return lambda g: [(k, np.array([1 if re.search(p, n) else 0 for n in g.names])) for k, p in patterns.items()]


def random_placements(count: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return lambda g: [(f"random p={p:.2f}", (rng.random(g.num_nodes) < p).astype(np.int64))
                      for p in rng.uniform(0.1, 0.5, count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=2, help="random placements per model")
    args = parser.parse_args()
    testbed = oa.make_testbed()
    print(f"{'model':<22} {'placement':<28} {'islands':>7} {'submodels.py':>14} {'HETERO compiled':>15}")
    rows = []
    try:
        from ov_autoplace import zoo

        bert = zoo.load("bert_base")
        rows += rows_for(testbed, "BERT-base", bert, by_name({
            "attention cores on CPUF": r"attention\.self", "FFNs on CPUF": r"intermediate|output\.dense",
            "odd layers on CPUF": r"layer\.\d*[13579]\."}))
        rows += rows_for(testbed, "BERT-base", bert, random_placements(args.random, 1))
        rows += rows_for(testbed, "ResNet-50", zoo.load("resnet50"), random_placements(args.random, 2))
    except ImportError as exc:
        print(f"(zoo models skipped: {exc}; pip install -e '.[zoo]')")
    softmax = (lambda g: [("softmaxes on CPUF", np.array([1 if op == "Softmax" else 0 for op in g.op_types]))])
    rows += rows_for(testbed, "attention_like, 2 lay.", synthetic_graphs.attention_like(layers=2), softmax)
    rows += rows_for(testbed, "attention_like, 2 lay.", synthetic_graphs.attention_like(layers=2),
                     random_placements(args.random, 3))
    same = sum(r[3] == r[4] for r in rows)
    print(f"\nsubmodels.py equals HETERO's count in {same} of {len(rows)} placements; islands in "
          f"{sum(r[2] == r[4] for r in rows)}; islands undercount by up to "
          f"{max(r[4] / max(r[2], 1) for r in rows):.2f}x")


if __name__ == "__main__":
    main()
