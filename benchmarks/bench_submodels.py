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
from ov_autoplace.devices.testbed import make_testbed

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import ov_autoplace as oa  # noqa: E402
from tests import synthetic_graphs  # noqa: E402
from tests.hetero_counts import compare_counts  # noqa: E402


def rows_for(testbed, label: str, model, named) -> list[tuple[str, str, int, int, int]]:
    """Prints and returns (label, placement, islands, submodels.py, HETERO) for each (name, proposal)."""
    names: list[str] = []

    def proposals(graph):
        pairs = named(graph)
        names.extend(name for name, _ in pairs)
        return [proposal for _, proposal in pairs]

    rows = [(label, name, *counts) for name, counts in zip(names, compare_counts(testbed, model, proposals))]
    for row in rows:
        print(f"{label:<22} {row[1]:<28} {row[2]:>7} {row[3]:>14} {row[4]:>15}", flush=True)
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
    testbed = make_testbed()
    print(f"{'model':<22} {'placement':<28} {'islands':>7} {'submodels.py':>14} {'HETERO compiled':>15}")
    rows = []
    try:
        from ov_autoplace_lab import models as zoo

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
