"""benchmarks/bench_heldout_overlap.py: the share of a graph's neighbourhoods found in the graphs a policy has seen,
and the seen set it reads (the recipe's graphs and the zero-shot set, never a frozen held-out one)."""

from __future__ import annotations

from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg
from tests.lab.paper_bench import bench_script


def _labels(script, model):
    return script.labels_of(extract_graph(prepare_model(model)))


def test_a_deeper_copy_shares_every_neighbourhood_and_another_architecture_fewer():
    script = bench_script("bench_heldout_overlap")
    held = _labels(script, sg.attention_like(layers=2))
    seen = {"deeper": _labels(script, sg.attention_like(layers=4)), "residual": _labels(script, sg.residual()),
            "branching": _labels(script, sg.branching())}
    found = script.overlap(held, seen)
    assert found[2]["closest"] == "deeper" and found[2]["closest_share"] == 1.0 == found[2]["any_share"]
    assert found[1]["labels"] <= found[2]["labels"]  # two steps tell more neighbourhoods apart than one
    without = script.overlap(held, seen, skip="deeper")
    assert without[2]["closest"] in {"residual", "branching"}
    assert without[2]["closest_share"] <= without[2]["any_share"] < 1.0


def test_the_seen_graphs_are_the_recipes_and_the_zero_shot_set_and_no_held_out_one():
    from ov_autoplace_lab import models as zoo
    from ov_autoplace_lab.training.splits import VALIDATION_GRAPHS

    names = bench_script("bench_heldout_overlap").seen_graphs()
    assert len(names) == len(set(names))
    assert set(VALIDATION_GRAPHS) <= set(names) and {f"zoo:{m}" for m in zoo.UNSEEN} <= set(names)
    assert {f"zoo:{m}" for m in zoo.ALL_MODELS} <= set(names)  # v4 trains --all-data
    assert not {n for n in names if n.startswith("zoo:") and n[4:] in zoo.FROZEN_HELD_OUT}


def test_a_swapped_activation_replaces_every_node_of_its_kind_and_changes_the_neighbourhoods():
    script = bench_script("bench_heldout_overlap")
    model, count = script.swapped(sg.residual(), "Relu", "Swish")
    types = [op.get_type_name() for op in model.get_ordered_ops()]
    assert count > 0 and "Relu" not in types and types.count("Swish") == count
    found = script.overlap(_labels(script, model), {"as built": _labels(script, sg.residual())})
    assert found[1]["closest_share"] < 1.0 and found[2]["closest_share"] < 1.0
