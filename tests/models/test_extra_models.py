"""The extra architectures share the zoo's builder table and build to static IR from configs (no hub)."""

from __future__ import annotations

import pytest

from ov_autoplace_lab import models as zoo
from ov_autoplace_lab.models.extra_models import EXTRA


def test_extra_models_are_registered_beside_the_zoo():
    assert set(EXTRA) <= set(zoo.ALL_MODELS) and zoo.ALL_MODELS[:3] == zoo.ZOO
    assert len(EXTRA) >= 6
    assert {"fcos_detector", "deeplabv3_mobilenet", "gpt2_decoder", "wav2vec2_speech"} <= set(EXTRA)
    with pytest.raises(ValueError, match="unknown zoo model 'resnet9000'.*gpt2_decoder"):
        zoo.build("resnet9000")


def test_unseen_architectures_build_but_are_not_the_benchmark_set():
    # buildable by name (the zero-shot evaluation loads them) yet outside ALL_MODELS, which training reads
    assert set(zoo.UNSEEN) <= set(zoo._BUILDERS) and not set(zoo.UNSEEN) & set(zoo.ALL_MODELS)
    with pytest.raises(ValueError, match="unknown zoo model 'x'.*whisper_encoder"):
        zoo.build("x")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "gpt2_decoder", "llama_decoder"])
def test_an_extra_model_builds_to_a_static_ir(name, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setenv(zoo.ENV_VAR, str(tmp_path))
    model = zoo.load(name)
    assert all(p.get_partial_shape().is_static for p in model.inputs)
    nodes, edges = zoo.graph_counts(model)
    assert nodes > 50 and edges >= nodes - 1
    assert zoo.info(name)["nodes"] == nodes
