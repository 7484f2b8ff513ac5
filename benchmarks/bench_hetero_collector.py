"""HETERO's own split against the lab's re-derivation of OpenVINO 2026.4's collector and the runtime's mirror.

    python benchmarks/bench_hetero_collector.py [--graphs 600] [--zoo inception_v3,fcos_detector --splits 20]
                                                [--write docs/bench/hetero-collector.md]

Each case is compiled on the testbed (``HETERO:CPU,CPUF``) with ``OPENVINO_HETERO_VISUALIZE=1``; its parts are read
from the dump and compared, node by node over the compute nodes, with ``ov_autoplace_lab.hetero_collector`` (the
2026.4 collector as read upstream) and with ``placement.submodels.hetero_part_roots`` (the mirror the legalizer
counts with). Cases: seeded random DAGs of Relu / Add nodes with random affinities
(``tests.synthetic_graphs.random_elementwise_dag``, 4-20 nodes), and the synthetic attention with its softmaxes on
``CPUF`` (1-4 layers); with ``--zoo``, random window splits of zoo models legalised with the bound of 8. Every case
is compared as ``compile_placement`` applies it (``Placement.apply``: a Constant read on another device copied
there, a Parameter moved where HETERO cuts the fewest parts). Prints per case kind how many partitions each one got
right, and HETERO's submodel count beside the lab's, the mirror's, and the placement's own (counted before it was
applied, with that Parameter's move modelled).
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import sys
import tempfile

import numpy as np
import openvino

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import ov_autoplace as oa  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402
from ov_autoplace.graph.arrays import NodeRole, extract_graph  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace.placement.assignment import Placement  # noqa: E402
from ov_autoplace.placement.legalizer import constant_subgraph_mask  # noqa: E402
from ov_autoplace.placement.submodels import count_hetero_submodels, hetero_part_roots  # noqa: E402
from ov_autoplace_lab.hetero_collector import dumped_parts, hetero_parts, hetero_submodels, same_parts  # noqa: E402
from tests import synthetic_graphs  # noqa: E402


def compare(testbed, model, dump: pathlib.Path) -> tuple[bool, bool, int, int, int]:
    """(lab's parts == HETERO's, mirror's == HETERO's, HETERO's submodel count, the lab's, the mirror's) for
    ``model`` as its affinities place it."""
    for old in dump.glob("*.dot"):
        old.unlink()
    compiled = testbed.core.compile_model(model, testbed.hetero)
    hetero = dumped_parts(dump)
    graph = extract_graph(model)
    devices = list(testbed.devices)
    by_name = {op.get_friendly_name(): op.get_rt_info()["affinity"].astype(str) for op in model.get_ops()}
    device = np.array([devices.index(by_name[name]) for name in graph.names])
    mirror = dict(zip(graph.names, hetero_part_roots(graph, device).tolist()))
    compute = {graph.names[i] for i in np.flatnonzero(graph.role == NodeRole.COMPUTE)}
    names = [name for name in hetero if name in compute]
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    return (same_parts(hetero, hetero_parts(model), names), same_parts(hetero, mirror, names),
            int(compiled.get_property("HETERO_NUMBER_OF_SUBMODELS")), hetero_submodels(model),
            count_hetero_submodels(graph, device, active))


def as_applied(testbed, model):
    """(the count of ``model``'s placement by its affinities, a Result with its producer, and the model prepared with
    that placement applied)."""
    prepared = prepare_model(model)
    on = {op.get_friendly_name(): op.get_rt_info()["affinity"].astype(str) for op in model.get_ops()}
    for result in prepared.get_results():
        on[result.get_friendly_name()] = on[result.input_value(0).get_node().get_friendly_name()]
    graph = extract_graph(prepared)
    device = np.array([list(testbed.devices).index(on[name]) for name in graph.names])
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    count = count_hetero_submodels(graph, device, active)
    Placement(on, tuple(testbed.devices), "bench", frozenset(), count).apply(prepared)
    return count, prepared


def attention_cases(testbed):
    for layers in (1, 2, 3, 4):
        model = synthetic_graphs.attention_like(layers=layers)
        placement = oa.place(model, testbed.hetero, core=testbed.core, pins={"type:Softmax": "CPUF"},
                             strategy="priority", max_submodels=None)
        prepared = prepare_model(model)
        placement.apply(prepared)
        yield f"attention_like(layers={layers}), softmaxes on CPUF", prepared


def zoo_cases(testbed, names: list[str], splits: int):
    """Per zoo model, ``splits`` random proposals of one to three windows of the topological order on ``CPUF``,
    legalised with the bound of 8 and applied to a prepared clone as ``compile_placement`` applies them."""
    from ov_autoplace.placement.legalizer import legalize, query_support
    from ov_autoplace_lab import models as zoo

    for name in names:
        prepared = prepare_model(zoo.load(name))
        graph = extract_graph(prepared)
        support = query_support(testbed.core, prepared, graph, testbed.devices)
        rng = np.random.default_rng(0)
        for k in range(splits):
            proposal = np.zeros(graph.num_nodes, np.int64)
            for _ in range(rng.integers(1, 4)):
                start = int(rng.integers(graph.num_nodes))
                proposal[start:start + int(rng.integers(1, 120))] = 1
            placement = legalize(graph, proposal, list(testbed.devices), support, max_submodels=8, strategy="random")
            applied = prepared.clone()
            placement.apply(applied)
            yield name, placement.num_submodels, applied


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=int, default=600, help="random DAGs (seeds 0..N-1)")
    parser.add_argument("--zoo", default="", help="zoo models (comma-separated) to split at random, e.g. "
                        "inception_v3,fcos_detector (their IRs are built with torch, or read from the zoo cache)")
    parser.add_argument("--splits", type=int, default=20, help="random legalised splits per zoo model")
    parser.add_argument("--write", type=pathlib.Path, help="write the results as markdown here")
    args = parser.parse_args(argv)
    testbed = make_testbed(like_for_like=True)
    dump = pathlib.Path(tempfile.mkdtemp(prefix="hetero-dump-"))
    os.environ["OPENVINO_HETERO_VISUALIZE"] = "1"
    here = os.getcwd()
    os.chdir(dump)  # the dump is written in the working directory
    try:
        rows = []
        tally = {"lab": 0, "mirror": 0, "lab count": 0, "mirror count": 0, "placement": 0, "fewer": 0}
        for seed in range(args.graphs):
            placed, applied = as_applied(testbed, synthetic_graphs.random_elementwise_dag(seed, 4 + seed % 17))
            lab, mirror, hetero, lab_count, counted = compare(testbed, applied, dump)
            tally["lab"] += lab
            tally["mirror"] += mirror
            tally["lab count"] += hetero == lab_count
            tally["mirror count"] += hetero == counted
            tally["placement"] += hetero == placed
            tally["fewer"] += hetero < placed
        if args.graphs:
            rows.append((f"random DAGs, seeds 0-{args.graphs - 1}", args.graphs, tally["lab"], tally["mirror"],
                         f"lab's = HETERO's in {tally['lab count']}, mirror's in {tally['mirror count']}; the "
                         f"placement's in {tally['placement']} (HETERO's fewer in {tally['fewer']})"))
        for label, model in attention_cases(testbed):
            lab, mirror, hetero, lab_count, counted = compare(testbed, model, dump)
            rows.append((label, 1, int(lab), int(mirror), f"HETERO {hetero}, lab {lab_count}, mirror {counted}"))
        zoo: dict[str, list] = {}
        for name, legal_count, applied in zoo_cases(testbed, [m for m in args.zoo.split(",") if m], args.splits):
            zoo.setdefault(name, []).append((compare(testbed, applied, dump), legal_count))
        for name, results in zoo.items():
            finer = [f"{legal} -> {hetero}" for (_, _, hetero, _, _), legal in results if hetero != legal]
            rows.append((f"{name}, random legalised splits (bound 8), as applied", len(results),
                         sum(r[0] for r, _ in results), sum(r[1] for r, _ in results),
                         f"lab's = HETERO's in {sum(r[2] == r[3] for r, _ in results)}; the legalizer's count "
                         f"is HETERO's in {len(results) - len(finer)}" + (f" (else {', '.join(finer)})" if finer
                                                                            else "")))
    finally:
        os.chdir(here)
    lines = ["| cases | n | lab collector = HETERO | runtime mirror = HETERO | submodel counts |", "|---|---|---|---|---|"]
    lines += [f"| {label} | {n} | {lab} | {mirror} | {counts} |" for label, n, lab, mirror, counts in rows]
    print("\n".join(lines))
    if args.write:
        head = ["# HETERO's split against the 2026.4 collector re-derived and the runtime's mirror (measured)", "",
                f"Generated by `python benchmarks/bench_hetero_collector.py --graphs {args.graphs}"
                + (f" --zoo {args.zoo} --splits {args.splits}" if args.zoo else "") + f" --write {args.write}` "
                f"({datetime.date.today()}, OpenVINO {openvino.get_version()}). Partitions compared over the compute "
                "nodes, as `OPENVINO_HETERO_VISUALIZE` dumps them; counts against `HETERO_NUMBER_OF_SUBMODELS`. Every "
                "case is compared on the model as `Placement.apply` leaves it (HETERO's input); the zoo rows give the "
                "legalizer's count of each split beside HETERO's, the DAG rows the placement's count taken before "
                "`apply`, which models `apply`'s move of a Parameter to where HETERO cuts the fewest parts.", ""]
        args.write.write_text("\n".join(head + lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
