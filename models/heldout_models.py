"""The frozen held-out architectures: evaluated once per shipped policy; never trained, selected or tuned on.

The zero-shot set (``unseen_models.py``) stopped being held out when it was read to choose the shipped policy;
this list replaces it as the evidence of generalization. The rule (``docs/heldout.md``): the names below were
fixed and committed before any evaluation on them; no training set, validation split, selection rule, tuning
or threshold reads them (``training.splits`` and ``training.targets`` refuse them); each shipped policy is
evaluated on them once (``benchmarks/bench_platforms.py --models heldout``) and reported as measured; a
future policy is chosen on the validation split only, by a rule written down before its held-out rows are
read. Changing this list is a new held-out set, stated as such, never an edit of this one.

The families are those a policy trained on the project's zoo has to transfer to: depthwise / inverted-residual
CNNs with squeeze-excite, a multi-branch CNN, a hybrid conv-attention model with window and grid attention, a
segmentation net, an encoder-decoder transformer, an encoder-only transformer and a text tower. Random, seeded
weights from torchvision / transformers configs (no hub); sizes kept moderate so the exact reference (MILP) can
run on every row.
"""

from __future__ import annotations

from typing import Any

import openvino as ov

from ov_autoplace_lab.models.extra_models import (_FirstOutput, _imports, _torchvision, _transformers, encoder_decoder,
                                                   token_decoder)


def _efficientnet_v2_s() -> tuple[Any, Any, dict]:
    # Fused-MBConv then MBConv blocks (depthwise, inverted residual, squeeze-excite, SiLU) at 224x224.
    return _torchvision("efficientnet_v2_s", 224)


def _mnasnet1_0() -> tuple[Any, Any, dict]:
    # NAS-found inverted-residual CNN: 3x3 and 5x5 depthwise convs, ReLU, no SE in torchvision's version.
    return _torchvision("mnasnet1_0", 224)


def _googlenet() -> tuple[Any, Any, dict]:
    # Inception v1: four-branch blocks (1x1, 3x3, 5x5-as-3x3, pool) concatenated; aux heads off (eval graph).
    return _torchvision("googlenet", 224, aux_logits=False, init_weights=True)


def _maxvit_t() -> tuple[Any, Any, dict]:
    # Hybrid conv-attention: MBConv + block (window) attention + grid attention per stage, 224x224.
    return _torchvision("maxvit_t", 224)


def _lraspp_mobilenet_v3() -> tuple[Any, Any, dict]:
    # Semantic segmentation (21 classes, 512x512): MobileNetV3-large backbone, Lite R-ASPP head (a pooled
    # squeeze-excite-like gate on the high-level branch + a low-level branch), bilinear upsampling.
    torch, tv = _imports()
    torch.manual_seed(0)
    net = tv.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)
    shape = (1, 3, 512, 512)
    return _FirstOutput(net.eval(), "out"), torch.randn(*shape), {"x": (shape, ov.Type.f32)}


def _t5_encoder_decoder() -> tuple[Any, Any, dict]:
    # Encoder-decoder transformer of T5-small geometry (d_model 512, 8 heads, d_ff 2048, relative position bias,
    # RMS norm) with 4 encoder and 4 decoder layers; one static pass: 128 source tokens, 32 target tokens
    # (decoder self-attention causal, cross-attention over the encoder), no KV cache.
    torch, transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.T5Config(d_model=512, d_kv=64, d_ff=2048, num_layers=4, num_decoder_layers=4,
                                   num_heads=8, vocab_size=32128, use_cache=False)
    return encoder_decoder(transformers.T5Model(config).eval(), config.vocab_size)


def _distilbert_encoder() -> tuple[Any, Any, dict]:
    # Encoder-only transformer: DistilBERT geometry (6 layers, hidden 768, 12 heads, no token types), seq 128.
    torch, transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.DistilBertConfig(attn_implementation="sdpa")
    return token_decoder(transformers.DistilBertModel(config).eval(), config.vocab_size)


def _clip_text() -> tuple[Any, Any, dict]:
    # Text tower: CLIP ViT-B/32's text transformer (12 layers, width 512, 8 heads, causal mask, quick-GELU), the
    # 77-token context.
    torch, transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.CLIPTextConfig(attn_implementation="sdpa")
    return token_decoder(transformers.CLIPTextModel(config).eval(), config.vocab_size, seq_len=77)


HELD_OUT_BUILDERS = {
    "efficientnet_v2_s": _efficientnet_v2_s,
    "mnasnet1_0": _mnasnet1_0,
    "googlenet": _googlenet,
    "maxvit_t": _maxvit_t,
    "lraspp_mobilenet_v3": _lraspp_mobilenet_v3,
    "t5_encoder_decoder": _t5_encoder_decoder,
    "distilbert_encoder": _distilbert_encoder,
    "clip_text": _clip_text,
}

#: The frozen held-out architectures (names as ``zoo.build`` takes them). Frozen: see the module docstring.
HELD_OUT_FAMILIES = ("efficientnet_v2_s", "mnasnet1_0", "googlenet", "maxvit_t", "lraspp_mobilenet_v3",
                     "t5_encoder_decoder", "distilbert_encoder", "clip_text")

#: ``training.splits.graph_fingerprint`` of each prepared held-out graph (torchvision 0.29 / transformers 5.24,
#: OpenVINO 2026.4): a training graph with one of these is the held-out architecture under another name, and
#: ``training.targets.load_graph`` refuses it. A fingerprint goes stale when a builder's library changes the graph;
#: ``tests/models/test_heldout_models.py`` (slow) recomputes two of them.
HELD_OUT_FINGERPRINTS = {
    "efficientnet_v2_s": "e0834ce7f56c627d",
    "mnasnet1_0": "7cbb73a296655a5d",
    "googlenet": "a25f1730663e23cd",
    "maxvit_t": "99778d7e2078c2b7",
    "lraspp_mobilenet_v3": "cb40f991e0fcaafe",
    "t5_encoder_decoder": "51d75bcb4b6da0a3",
    "distilbert_encoder": "9e725178fda60157",
    "clip_text": "05d737820ba8b5c6",
}

#: ``training.heldout_guard.block_fingerprint`` of each prepared held-out graph (the same builds): a training graph
#: with one of these is the held-out architecture at another input size or depth, and is refused as above.
HELD_OUT_BLOCK_FINGERPRINTS = {
    "efficientnet_v2_s": "9805e35220fd7167",
    "mnasnet1_0": "842bbb96e24344e8",
    "googlenet": "5ab116f77172bdbf",
    "maxvit_t": "70bccf596d09cc18",
    "lraspp_mobilenet_v3": "7031f7ab013d3bfc",
    "t5_encoder_decoder": "f12408ba3e40ca1f",
    "distilbert_encoder": "d28b0cb141824e70",
    "clip_text": "61bb179e94ba73a2",
}

__all__ = ["HELD_OUT_BLOCK_FINGERPRINTS", "HELD_OUT_BUILDERS", "HELD_OUT_FAMILIES", "HELD_OUT_FINGERPRINTS"]
