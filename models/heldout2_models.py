"""The second frozen held-out list: added after the first was read three times (its rule 4), never an edit of it.

``heldout_models.py`` holds the first list; its three readings spent it (``docs/heldout.md``, "Readings"). This
list takes its place for the readings to come, under the same rule: the names below were fixed and committed
before any evaluation on them; no training set, validation split, selection rule, tuning or threshold reads them
(``training.splits`` and ``training.targets`` refuse them by name and by fingerprint, as they refuse the first
list's); each shipped policy is evaluated on them once (``benchmarks/bench_platforms.py --models heldout2``).

The families are the issue's (classic and depthwise CNNs, a multi-branch CNN, hybrid conv-attention, a
segmentation net, encoder-decoder, encoder-only and decoder transformers, a video net), each by an architecture
that is in no earlier set, chosen for its family before any policy ran on it. Random, seeded weights from
torchvision / transformers configs (no hub); sizes kept moderate so the exact reference (MILP) can run on every row.
"""

from __future__ import annotations

from typing import Any

import openvino as ov

from ov_autoplace_lab.models.extra_models import (_FirstOutput, _torchvision, _transformers, _video, encoder_decoder,
                                                   token_decoder)


def _squeezenet1_1() -> tuple[Any, Any, dict]:
    # Classic small CNN: fire modules (a 1x1 squeeze, then 1x1 and 3x3 expand branches concatenated), no BN.
    return _torchvision("squeezenet1_1", 224)


def _regnet_x_400mf() -> tuple[Any, Any, dict]:
    # Grouped-convolution residual CNN (RegNetX: group width 16, no squeeze-excite) at 224x224.
    return _torchvision("regnet_x_400mf", 224)


def _s3d_video() -> tuple[Any, Any, dict]:
    # Video: S3D, separable 3D convs (spatial 1x3x3 then temporal 3x1x1) in Inception-style four-branch blocks,
    # 16 frames of 224x224.
    return _video("s3d", 16, 224)


def _pixels(net: Any, output: str, size: int) -> tuple[Any, Any, dict]:
    """A transformers vision network as a zoo entry: pixel_values (1, 3, size, size) -> its output ``output``."""
    import torch

    shape = (1, 3, size, size)
    return _FirstOutput(net.eval(), output), torch.randn(*shape), {"pixel_values": (shape, ov.Type.f32)}


def _mobilevit_s() -> tuple[Any, Any, dict]:
    # Hybrid conv-attention: MobileNetV2 inverted residuals, then MobileViT blocks (local conv, unfold into
    # 2x2 patches, global self-attention across patches, fold back, fuse), MobileViT-S widths at 256x256.
    torch, transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.MobileViTConfig(image_size=256)
    return _pixels(transformers.MobileViTModel(config), "last_hidden_state", 256)


def _segformer_b0() -> tuple[Any, Any, dict]:
    # Segmentation transformer: Mix Transformer B0 encoder (overlapping patch embeddings, attention with a
    # spatially reduced key/value, Mix-FFN with a depthwise conv) and the all-MLP decoder, 19 classes, 512x512.
    torch, transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.SegformerConfig(num_labels=19)
    return _pixels(transformers.SegformerForSemanticSegmentation(config), "logits", 512)


def _bart_encoder_decoder() -> tuple[Any, Any, dict]:
    # Encoder-decoder transformer of BART geometry (learned positions, post-LayerNorm, GELU), d_model 512,
    # 8 heads, 4 encoder and 4 decoder layers; one static pass: 128 source tokens, 32 target tokens, no KV cache.
    torch, transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.BartConfig(d_model=512, encoder_layers=4, decoder_layers=4, encoder_attention_heads=8,
                                     decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                                     use_cache=False, attn_implementation="sdpa")
    return encoder_decoder(transformers.BartModel(config).eval(), config.vocab_size)


def _deberta_v2_encoder() -> tuple[Any, Any, dict]:
    # Encoder-only transformer with disentangled attention (content-to-position and position-to-content terms
    # over relative positions), DeBERTa-v3-small geometry: 6 layers, hidden 768, 12 heads, 128 tokens.
    torch, transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.DebertaV2Config(num_hidden_layers=6, hidden_size=768, num_attention_heads=12,
                                          intermediate_size=3072, relative_attention=True, position_buckets=256,
                                          pos_att_type=["p2c", "c2p"], max_relative_positions=-1,
                                          position_biased_input=False, norm_rel_ebd="layer_norm",
                                          share_att_key=True, vocab_size=32000)
    return token_decoder(transformers.DebertaV2Model(config).eval(), config.vocab_size)


def _gpt_neox_decoder() -> tuple[Any, Any, dict]:
    # Decoder-only transformer with parallel attention and MLP branches (GPT-NeoX / Pythia), rotary embeddings on a
    # quarter of each head: 6 layers, hidden 512, 8 heads, one static pass of 128 tokens, no KV cache.
    torch, transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.GPTNeoXConfig(hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
                                        intermediate_size=2048, vocab_size=32000, rotary_pct=0.25,
                                        use_parallel_residual=True, use_cache=False, attn_implementation="sdpa")
    return token_decoder(transformers.GPTNeoXModel(config).eval(), config.vocab_size)


HELD_OUT2_BUILDERS = {
    "squeezenet1_1": _squeezenet1_1,
    "regnet_x_400mf": _regnet_x_400mf,
    "s3d_video": _s3d_video,
    "mobilevit_s": _mobilevit_s,
    "segformer_b0": _segformer_b0,
    "bart_encoder_decoder": _bart_encoder_decoder,
    "deberta_v2_encoder": _deberta_v2_encoder,
    "gpt_neox_decoder": _gpt_neox_decoder,
}

#: The second frozen held-out list (names as ``zoo.build`` takes them). Frozen: see the module docstring.
HELD_OUT2_FAMILIES = tuple(HELD_OUT2_BUILDERS)

#: ``training.heldout_guard.graph_fingerprint`` of each prepared graph (torch 2.14.1, torchvision 0.29.1,
#: transformers 5.25, OpenVINO 2026.4.1): a training graph with one of these is the held-out architecture under
#: another name, and ``training.targets.load_graph`` refuses it, as it refuses the first list's.
HELD_OUT2_FINGERPRINTS = {
    "squeezenet1_1": "e05279b2f2130cea",
    "regnet_x_400mf": "ad9a55a73feb2f58",
    "s3d_video": "abc7e713326da0c7",
    "mobilevit_s": "2136626682f99f5b",
    "segformer_b0": "a38b271ba3e36055",
    "bart_encoder_decoder": "b0d693d91192d569",
    "deberta_v2_encoder": "812f6b7873519b34",
    "gpt_neox_decoder": "27e3abc9445996f3",
}

#: ``training.heldout_guard.block_fingerprint`` of the same builds: the architecture at another size or depth.
HELD_OUT2_BLOCK_FINGERPRINTS = {
    "squeezenet1_1": "7b4791e2f34a5e7d",
    "regnet_x_400mf": "4616af1fc29e1a3b",
    "s3d_video": "0418cfdee648296e",
    "mobilevit_s": "99ad54660bb532c4",
    "segformer_b0": "56d7853733c18745",
    "bart_encoder_decoder": "b58f244d03b7ef52",
    "deberta_v2_encoder": "d42be1e80638af16",
    "gpt_neox_decoder": "b4929efe9982664f",
}

__all__ = ["HELD_OUT2_BLOCK_FINGERPRINTS", "HELD_OUT2_BUILDERS", "HELD_OUT2_FAMILIES", "HELD_OUT2_FINGERPRINTS"]
