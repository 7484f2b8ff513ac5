"""Architectures no policy was trained on: the zero-shot set of the leave-architecture-out evaluation.

Training reads its graphs from ``ALL_MODELS`` (the zoo + ``extra_models``) and
the random graph families; these builders are registered in the zoo's builder
table (``zoo.build(name)`` works) but kept out of ``ALL_MODELS``, so no target,
validation row or training run has ever seen them
(``tests/lab/training/test_targets.py`` checks it). They span what a user
brings: modern CNNs (ConvNeXt's depthwise 7x7 + LayerNorm, RegNet's grouped
convs + squeeze-excite, MobileNetV3's hard-swish, ShuffleNet's channel
shuffle), a windowed vision transformer (Swin), a video CNN (3-D convs), a
decoder LLM with rotary embeddings and SwiGLU (Llama geometry) and a speech
encoder-only transformer over a mel spectrogram (Whisper geometry). Random,
seeded weights from configs; no hub.
"""

from __future__ import annotations

import functools
from typing import Any

import openvino as ov

from ov_autoplace_lab.models.extra_models import _FirstOutput, _torchvision, _transformers, _video, token_decoder


def _r3d_18_video() -> tuple[Any, Any, dict]:
    # Video classification: ResNet-3D-18 on a 16-frame 112x112 clip (the Kinetics setting of torchvision).
    return _video("r3d_18", 16, 112)


def _llama_decoder() -> tuple[Any, Any, dict]:
    # A decoder LLM block of Llama's kind: RMSNorm, rotary positions, SwiGLU MLP, grouped-query attention
    # (hidden 1024, 16 heads, 4 KV heads, 2 layers), seq 128, no KV cache; the mask is an input as for gpt2_decoder.
    torch, transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=2,
                                      num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                                      use_cache=False, attn_implementation="sdpa")
    return token_decoder(transformers.LlamaModel(config).eval(), config.vocab_size)


def _whisper_encoder() -> tuple[Any, Any, dict]:
    # Speech: Whisper-base's encoder geometry (two 1-D convs + 6 transformer layers, d_model 512) on 30 s of
    # 80-bin log-mel frames.
    torch, transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.WhisperConfig(d_model=512, encoder_layers=6, encoder_attention_heads=8,
                                        encoder_ffn_dim=2048, decoder_layers=1, decoder_attention_heads=8,
                                        decoder_ffn_dim=2048, attn_implementation="sdpa")
    encoder = transformers.WhisperModel(config).get_encoder().eval()
    shape = (1, 80, 3000)
    return _FirstOutput(encoder, "last_hidden_state"), torch.randn(*shape), {"input_features": (shape, ov.Type.f32)}


UNSEEN_BUILDERS = {
    **{name: functools.partial(_torchvision, ctor, 224) for name, ctor in (
        ("convnext_tiny", "convnext_tiny"), ("regnet_y_800mf", "regnet_y_800mf"),
        ("mobilenet_v3_large", "mobilenet_v3_large"), ("shufflenet_v2", "shufflenet_v2_x1_0"), ("swin_t", "swin_t"))},
    "r3d_18_video": _r3d_18_video,
    "llama_decoder": _llama_decoder,
    "whisper_encoder": _whisper_encoder,
}

UNSEEN = tuple(UNSEEN_BUILDERS)

__all__ = ["UNSEEN", "UNSEEN_BUILDERS"]
