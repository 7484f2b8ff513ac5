"""The extra architectures share the zoo's builder table and build to static IR from configs (no hub)."""

from __future__ import annotations

import pytest

from ov_autoplace_lab import models as zoo
from ov_autoplace_lab.models.extra_models import EXTRA
from tests.models.zoo_build import built_static


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
    _, nodes = built_static(name, tmp_path, monkeypatch, min_nodes=50)
    assert zoo.info(name)["nodes"] == nodes
