"""How much of each frozen held-out graph a policy has already seen: its neighbourhoods found in the graphs the
shipped recipe trains, validates and is gated on.

    python benchmarks/bench_heldout_overlap.py [--markdown docs/bench/heldout-overlap.md]

docs/heldout.md says in words what each held-out architecture shares with the sets a policy has seen ("lraspp's
MobileNetV3 backbone is also deeplabv3_mobilenet's"); this puts a number on it. A graph's neighbourhoods are
``training.heldout_guard.neighbourhood_labels``: each node's op type and output type with those of its inputs and
outputs, one or two steps out (Weisfeiler-Lehman labels, free of names, shapes and depth; two steps is what the
block fingerprint hashes). For each held-out graph the page gives the share of its distinct neighbourhoods that
occur in the closest single seen graph (which one), and in any seen graph at all. The seen graphs are those of
hsdag_v4's recipe (``benchmarks/pretrain.py``: the zoo with ``--all-data``, ``family:0-29``, ten seeds of every
extra and wider kind, whose targets were generated; the validation split is among them) and the zero-shot set,
whose rows were read when v3 and v4 were shipped. As a yardstick, every zoo training graph against the other seen
graphs, leaving out itself: what "the same family" reads like among graphs the project calls different
architectures. And a near-duplicate the block fingerprint misses: a held-out graph with every activation of one kind
swapped for another (ReLU for Swish, GELU for ReLU), against the graph as built.

No policy runs and no latency is computed: nothing here reads a held-out row (docs/heldout.md, rule 2).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table  # noqa: E402
from ov_autoplace.graph.arrays import extract_graph  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace_lab import models as zoo  # noqa: E402
from ov_autoplace_lab.training.heldout_guard import neighbourhood_labels  # noqa: E402
from ov_autoplace_lab.training.splits import training_specs  # noqa: E402
from ov_autoplace_lab.training.targets import load_graph  # noqa: E402

STEPS = (1, 2)
#: Held-out graphs whose activations the near-duplicate section swaps: (graph, op type, what replaces it).
SWAPS = (("mnasnet1_0", "Relu", "Swish"), ("squeezenet1_1", "Relu", "Swish"), ("distilbert_encoder", "Gelu", "Relu"))


def seen_graphs() -> list[str]:
    """The graphs of hsdag_v4's target set (training and validation) and the zero-shot set (module doc)."""
    specs = training_specs(extra_family_count=10, all_data=True, wider_family_count=10)
    return list(dict.fromkeys(s.graph for s in specs)) + [f"zoo:{m}" for m in zoo.UNSEEN]


def labels_of(graph) -> dict[int, set[str]]:
    return {steps: neighbourhood_labels(graph, steps) for steps in STEPS}


def overlap(target: dict[int, set[str]], seen: dict[str, dict[int, set[str]]], skip: str | None = None) -> dict:
    """Per step count: the share of ``target``'s labels in the closest seen graph (and its name), and in all of them."""
    out = {}
    for steps in STEPS:
        mine = target[steps]
        shares = {name: len(mine & labels[steps]) / len(mine) for name, labels in seen.items() if name != skip}
        closest = max(shares, key=shares.get)
        union = set().union(*(labels[steps] for name, labels in seen.items() if name != skip))
        out[steps] = {"labels": len(mine), "closest": closest, "closest_share": shares[closest],
                      "any_share": len(mine & union) / len(mine)}
    return out


def swapped(model, op_type: str, replacement: str):
    """``model`` with every ``op_type`` node replaced by a ``replacement`` of the same input (in place), and how
    many were."""
    import openvino.opset13 as ops

    make = {"Swish": ops.swish, "Relu": ops.relu}[replacement]
    count = 0
    for op in list(model.get_ordered_ops()):
        if op.get_type_name() == op_type:
            op.output(0).replace(make(op.input_value(0)).output(0))
            count += 1
    model.validate_nodes_and_infer_types()
    return model, count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    seen = {name: labels_of(load_graph(name)) for name in seen_graphs()}
    lists = {"first list": zoo.HELD_OUT_FAMILIES, "second list": zoo.HELD_OUT2_FAMILIES}
    held = {name: labels_of(extract_graph(prepare_model(zoo.load(name)))) for names in lists.values() for name in names}
    rows = []
    for list_name, names in lists.items():
        for name in names:
            found = overlap(held[name], seen)
            rows.append([list_name, name, *(f"{found[s]['closest_share']:.2f} ({found[s]['closest']}), "
                                            f"any {found[s]['any_share']:.2f} of {found[s]['labels']}"
                                            for s in STEPS)])
    yard = {name: overlap(labels, seen, skip=name) for name, labels in seen.items()
            if name.startswith("zoo:") and name[4:] not in zoo.UNSEEN}
    yard_rows = [[name[4:], *(f"{found[s]['closest_share']:.2f} ({found[s]['closest']})" for s in STEPS)]
                 for name, found in sorted(yard.items(), key=lambda kv: -kv[1][2]["closest_share"])]
    swap_rows = []
    for name, op_type, replacement in SWAPS:
        model, count = swapped(zoo.load(name), op_type, replacement)
        found = overlap(labels_of(extract_graph(prepare_model(model))), {name: held[name]})
        swap_rows.append([name, f"{count} {op_type} -> {replacement}",
                          *(f"{found[s]['closest_share']:.2f}" for s in STEPS)])
    lines = ["# What the held-out graphs share with the graphs a policy has seen", "",
             f"Generated by `python benchmarks/bench_heldout_overlap.py` ({time.strftime('%Y-%m-%d', time.gmtime())}, "
             f"{len(seen)} seen graphs, {time.perf_counter() - start:.0f} s). What is counted and why: the "
             "benchmark's docstring. A share is of the held-out graph's distinct neighbourhoods (op type and output "
             "type with its inputs' and outputs', one or two steps out); no policy ran and no latency was computed.",
             "", "## The held-out graphs", "",
             markdown_table(["list", "held-out graph", "one step: closest seen graph, any seen graph",
                             "two steps: closest seen graph, any seen graph"], rows), "",
             "## Yardstick: each zoo training graph against the other seen graphs", "",
             markdown_table(["zoo graph", "one step: closest other seen graph", "two steps: closest other seen graph"],
                            yard_rows), "",
             "## A near-duplicate: a held-out graph with its activations swapped, against itself as built", "",
             markdown_table(["held-out graph", "swapped", "one step", "two steps"], swap_rows), ""]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
