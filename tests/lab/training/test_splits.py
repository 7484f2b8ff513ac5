"""The frozen held-out architectures (models/heldout_models.py, docs/heldout.md) stay out of every set a policy is
trained, validated, selected or tuned on, and a leak is an error, not a silently contaminated evaluation."""

from __future__ import annotations

import pytest

from ov_autoplace_lab import models as zoo
from ov_autoplace_lab.models.heldout2_models import HELD_OUT2_BUILDERS, HELD_OUT2_FAMILIES
from ov_autoplace_lab.models.heldout_models import HELD_OUT_BUILDERS, HELD_OUT_FAMILIES
from ov_autoplace_lab.training import splits
from ov_autoplace_lab.training.splits import (HELD_OUT_ARCHITECTURES, VALIDATION_GRAPHS, HeldOutContamination,
                                               check_not_held_out, evaluation_specs, training_specs, unseen_specs,
                                               validation_specs)
from ov_autoplace_lab.training.targets import TargetSpec, load_graph, task_specs

#: The list as committed before its first evaluation; changing it is a new held-out set (docs/heldout.md).
FROZEN = ("efficientnet_v2_s", "mnasnet1_0", "googlenet", "maxvit_t", "lraspp_mobilenet_v3", "t5_encoder_decoder",
          "distilbert_encoder", "clip_text")


#: The second list, added when the first was spent (its third reading), committed before its first evaluation.
FROZEN2 = ("squeezenet1_1", "regnet_x_400mf", "s3d_video", "mobilevit_s", "segformer_b0", "bart_encoder_decoder",
           "deberta_v2_encoder", "gpt_neox_decoder")


def test_the_held_out_list_is_the_frozen_one_and_buildable_by_name():
    assert HELD_OUT_FAMILIES == FROZEN == tuple(HELD_OUT_BUILDERS)
    assert set(HELD_OUT_FAMILIES) <= set(zoo._BUILDERS)


def test_the_second_list_is_frozen_apart_from_every_earlier_set_and_both_lists_stay_refused():
    assert HELD_OUT2_FAMILIES == FROZEN2 == tuple(HELD_OUT2_BUILDERS) and set(FROZEN2) <= set(zoo._BUILDERS)
    assert not set(FROZEN2) & set(zoo.ALL_MODELS + zoo.UNSEEN + FROZEN + HELD_OUT_ARCHITECTURES)
    assert splits.held_out_families() == zoo.FROZEN_HELD_OUT == FROZEN + FROZEN2
    for table in (zoo.FROZEN_FINGERPRINTS, zoo.FROZEN_BLOCK_FINGERPRINTS):
        assert set(table) == set(FROZEN + FROZEN2) and len(set(table.values())) == len(table)  # no two alike
    held = {f"zoo:{m}" for m in FROZEN2}
    everything = training_specs(zoo_variants=2, family_count=2, family_variants=1, extra_family_count=10,
                                all_data=True)
    for specs in (everything, validation_specs(), evaluation_specs(), unseen_specs(zoo_variants=1)):
        assert not {s.graph for s in specs} & held
    with pytest.raises(HeldOutContamination, match="'zoo:segformer_b0' is a frozen held-out architecture"):
        load_graph("zoo:segformer_b0")
    with pytest.raises(HeldOutContamination, match="validation split"):
        check_not_held_out(task_specs(["zoo:gpt_neox_decoder", "family:1"], ["paper"], 0), "validation split")


def test_no_list_a_policy_learns_or_is_chosen_from_names_a_held_out_architecture():
    # every training set the recipe can build (--all-data included), the validation split, the headroom rows
    # (read to choose the shipped policy), the zero-shot set and the older leave-architecture-out names
    held = {f"zoo:{m}" for m in HELD_OUT_FAMILIES}
    everything = training_specs(zoo_variants=2, family_count=2, family_variants=1, extra_family_count=10,
                                all_data=True)
    for specs in (everything, training_specs(), validation_specs(), evaluation_specs(), unseen_specs(zoo_variants=1)):
        assert specs and not {s.graph for s in specs} & held
    assert not set(HELD_OUT_FAMILIES) & set(zoo.ALL_MODELS + zoo.UNSEEN + HELD_OUT_ARCHITECTURES)
    assert not set(VALIDATION_GRAPHS) & held


def test_a_held_out_architecture_that_sneaks_into_a_training_list_is_an_error(monkeypatch):
    monkeypatch.setattr(splits, "zoo_models", lambda: tuple(zoo.ALL_MODELS) + ("maxvit_t",))
    with pytest.raises(HeldOutContamination, match=r"training set names frozen held-out architectures "
                                                   r"\['zoo:maxvit_t'\].*docs/heldout.md"):
        training_specs(zoo_variants=0, family_count=1, family_variants=0)
    with pytest.raises(HeldOutContamination, match="validation split"):
        check_not_held_out(task_specs(["zoo:clip_text", "family:1"], ["paper"], 0), "validation split")
    assert isinstance(HeldOutContamination("x"), ValueError)


def test_no_target_is_generated_on_a_held_out_graph():
    # the target generator loads every graph it trains or selects on through load_graph; it refuses before building
    with pytest.raises(HeldOutContamination, match="'zoo:googlenet' is a frozen held-out architecture"):
        load_graph("zoo:googlenet")
    assert TargetSpec("zoo:googlenet", "paper", 0).model == "googlenet"


def test_a_held_out_graph_under_another_name_is_refused_by_its_fingerprint(monkeypatch):
    # a fingerprint is name-free: the prepared graph of a training family matched against a list holding it
    from ov_autoplace_lab.training import targets
    from ov_autoplace_lab.training.splits import check_graph_not_held_out, graph_fingerprint

    graph = load_graph("family:3")
    assert graph_fingerprint(graph) not in zoo.FROZEN_FINGERPRINTS.values()
    assert set(zoo.HELD_OUT_FINGERPRINTS) == set(HELD_OUT_FAMILIES)
    monkeypatch.setitem(zoo.FROZEN_FINGERPRINTS, "googlenet", graph_fingerprint(graph))
    with pytest.raises(HeldOutContamination, match="'family:3' has the fingerprint of the frozen held-out "
                                                   "architecture 'googlenet'"):
        check_graph_not_held_out("family:3", graph)
    targets.load_graph.cache_clear()  # load_graph checks every graph it builds, not only zoo names
    with pytest.raises(HeldOutContamination, match="fingerprint"):
        load_graph("family:3")
    targets.load_graph.cache_clear()


def test_a_held_out_architecture_at_another_size_or_depth_is_refused_by_its_blocks(monkeypatch):
    # the exact fingerprint holds shapes and node counts, so a resized or deepened copy passes it; the block
    # fingerprint (the set of two-step neighbourhoods of op types) does not
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.model.prepare import prepare_model
    from ov_autoplace_lab.training.heldout_guard import block_fingerprint, check_graph_not_held_out, \
        graph_fingerprint
    from tests import synthetic_graphs as sg

    def graph(model):
        return extract_graph(prepare_model(model))

    held, deeper, wider = graph(sg.attention_like(layers=2)), graph(sg.attention_like(layers=4)), \
        graph(sg.attention_like(seq=32, hidden=64))
    assert graph_fingerprint(held) not in {graph_fingerprint(deeper), graph_fingerprint(wider)}
    assert block_fingerprint(held) == block_fingerprint(deeper) == block_fingerprint(wider)
    other = {block_fingerprint(graph(m)) for m in (sg.residual(), sg.branching(), sg.dynamic_attention())}
    assert block_fingerprint(held) not in other and len(other) == 3
    assert set(zoo.HELD_OUT_BLOCK_FINGERPRINTS) == set(HELD_OUT_FAMILIES)
    assert block_fingerprint(load_graph("family:3")) not in zoo.FROZEN_BLOCK_FINGERPRINTS.values()
    monkeypatch.setitem(zoo.FROZEN_BLOCK_FINGERPRINTS, "clip_text", block_fingerprint(held))
    with pytest.raises(HeldOutContamination, match="'deeper' has the blocks of the frozen held-out architecture "
                                                   "'clip_text' .*another input size or depth"):
        check_graph_not_held_out("deeper", deeper)
