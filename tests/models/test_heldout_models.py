"""The frozen held-out architectures build to static IR from configs (no hub), like the zoo."""

from __future__ import annotations

import pytest

from ov_autoplace_lab import models as zoo
from tests.models.zoo_build import built_static


def test_held_out_architectures_build_by_name_but_are_no_training_or_zero_shot_model():
    assert set(zoo.HELD_OUT_FAMILIES) <= set(zoo._BUILDERS)
    assert not set(zoo.HELD_OUT_FAMILIES) & set(zoo.ALL_MODELS + zoo.UNSEEN)
    assert set(zoo.HELD_OUT2_FAMILIES) <= set(zoo._BUILDERS)
    with pytest.raises(ValueError, match="unknown zoo model 'x'.*clip_text"):
        zoo.build("x")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mnasnet1_0", "clip_text", "squeezenet1_1", "gpt_neox_decoder"])
def test_a_held_out_model_builds_to_a_static_ir(name, tmp_path, monkeypatch):
    model, _ = built_static(name, tmp_path, monkeypatch, min_nodes=90)
    # the stored fingerprint is this build's (else training's check by graph would miss a renamed copy)
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.model.prepare import prepare_model
    from ov_autoplace_lab.training.heldout_guard import block_fingerprint
    from ov_autoplace_lab.training.splits import graph_fingerprint

    graph = extract_graph(prepare_model(model))
    assert graph_fingerprint(graph) == zoo.FROZEN_FINGERPRINTS[name]
    assert block_fingerprint(graph) == zoo.FROZEN_BLOCK_FINGERPRINTS[name]
    if name != "mnasnet1_0":  # a static text export keeps its length in its constants: not resizable as it is
        return
    # at another image size the exact fingerprint is another one and the blocks are the same
    resized = model.clone()
    resized.reshape({port.get_any_name(): [d if k != len(port.get_partial_shape()) - 1 else d.get_length() // 2
                                          for k, d in enumerate(port.get_partial_shape())]
                     for port in resized.inputs})
    other = extract_graph(prepare_model(resized))
    assert graph_fingerprint(other) != graph_fingerprint(graph) and block_fingerprint(other) == block_fingerprint(graph)
