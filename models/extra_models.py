"""More architectures beside the paper's three: detection, segmentation, a decoder LLM block, speech, mobile CNNs.

Each builder follows the zoo's contract (``__init__._BUILDERS``): it returns
``(torch module in eval mode, example input, {input name: (static shape, ov element type)})``,
built from a torchvision / transformers *config* with random, seeded weights
(no hub download). They are registered in the zoo's builder table, so
``zoo.build(name)`` / ``zoo.load(name)`` work for them as for the zoo; they are
kept out of ``ZOO`` so the zoo's own tests and benchmarks do not grow.
"""

from __future__ import annotations

import os
from typing import Any

import openvino as ov


def _imports():
    from ov_autoplace_lab.models._optional import optional_import as _import

    return _import("torch"), _import("torchvision")


class _FirstOutput:
    """Wraps a module whose forward returns a dict / ModelOutput, keeping one tensor (tracing wants tensors)."""

    def __new__(cls, net: Any, key: str):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.net = net

            def forward(self, *args):
                out = self.net(*args)
                return out[key] if isinstance(out, dict) else getattr(out, key)

        return Wrapped().eval()


def _torchvision(ctor: str, size: int, **kwargs: Any) -> tuple[Any, Any, dict]:
    torch, tv = _imports()
    torch.manual_seed(0)
    net = getattr(tv.models, ctor)(weights=None, **kwargs).eval()
    shape = (1, 3, size, size)
    return net, torch.randn(*shape), {"x": (shape, ov.Type.f32)}


def _mobilenet_v2() -> tuple[Any, Any, dict]:
    return _torchvision("mobilenet_v2", 224)


def _efficientnet_b0() -> tuple[Any, Any, dict]:
    return _torchvision("efficientnet_b0", 224)


def _deeplabv3_mobilenet() -> tuple[Any, Any, dict]:
    # Semantic segmentation (21 classes, 512x512): MobileNetV3 backbone, ASPP head, bilinear upsampling.
    torch, tv = _imports()
    torch.manual_seed(0)
    net = tv.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, aux_loss=False)
    shape = (1, 3, 512, 512)
    return _FirstOutput(net.eval(), "out"), torch.randn(*shape), {"x": (shape, ov.Type.f32)}


def _fcos_detector() -> tuple[Any, Any, dict]:
    # Detection: FCOS (ResNet-50 + FPN, 5 levels, 512x512) up to its class, box and centerness maps; the box
    # decoding and NMS post-processing is data-dependent Python in torchvision and does not trace statically.
    torch, tv = _imports()
    torch.manual_seed(0)
    det = tv.models.detection.fcos_resnet50_fpn(weights=None, weights_backbone=None).eval()

    class Head(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.backbone, self.head = det.backbone, det.head

        def forward(self, x):
            out = self.head(list(self.backbone(x).values()))
            return torch.cat([out["cls_logits"], out["bbox_regression"], out["bbox_ctrness"]], dim=-1)

    shape = (1, 3, 512, 512)
    return Head().eval(), torch.randn(*shape), {"x": (shape, ov.Type.f32)}


def _transformers():
    from ov_autoplace_lab.models._optional import optional_import as _import

    os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers is imported, as for bert_base
    return _import("torch"), _import("transformers")


def _video(ctor: str, frames: int, size: int) -> tuple[Any, Any, dict]:
    """A torchvision video network (``tv.models.video.<ctor>``) on one clip of ``frames`` frames of size x size."""
    torch, tv = _imports()
    torch.manual_seed(0)
    net = getattr(tv.models.video, ctor)(weights=None).eval()
    shape = (1, 3, frames, size, size)
    return net, torch.randn(*shape), {"x": (shape, ov.Type.f32)}


def _gpt2_decoder() -> tuple[Any, Any, dict]:
    # A decoder LLM block: GPT-2 (hidden 768, 12 heads) with 2 layers, causal SDPA attention, seq 128, no KV cache.
    # The attention mask is an input (as in bert_base): without it transformers looks for packed sequences with
    # torch.diff, which convert_model cannot translate.
    torch, transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, use_cache=False, attn_implementation="sdpa")
    return token_decoder(transformers.GPT2Model(config).eval(), config.vocab_size)


def token_decoder(net: Any, vocab_size: int, seq_len: int = 128) -> tuple[Any, Any, dict]:
    """A transformers decoder as a zoo entry: (input_ids, attention_mask) -> last_hidden_state, batch 1."""
    import torch

    class Decoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids, attention_mask):
            return self.net(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    seq = (1, seq_len)
    example = (torch.randint(0, vocab_size, seq, dtype=torch.int64), torch.ones(seq, dtype=torch.int64))
    return Decoder().eval(), example, {"input_ids": (seq, ov.Type.i64), "attention_mask": (seq, ov.Type.i64)}


def encoder_decoder(net: Any, vocab_size: int, src_len: int = 128, tgt_len: int = 32) -> tuple[Any, Any, dict]:
    """A transformers encoder-decoder as a zoo entry, one static pass without a KV cache: (input_ids,
    attention_mask, decoder_input_ids) -> the decoder's last_hidden_state, batch 1."""
    import torch

    class EncoderDecoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids, attention_mask, decoder_input_ids):
            return self.net(input_ids=input_ids, attention_mask=attention_mask,
                            decoder_input_ids=decoder_input_ids).last_hidden_state

    src, tgt = (1, src_len), (1, tgt_len)
    example = (torch.randint(0, vocab_size, src, dtype=torch.int64), torch.ones(src, dtype=torch.int64),
               torch.randint(0, vocab_size, tgt, dtype=torch.int64))
    return EncoderDecoder().eval(), example, {"input_ids": (src, ov.Type.i64), "attention_mask": (src, ov.Type.i64),
                                              "decoder_input_ids": (tgt, ov.Type.i64)}


def _wav2vec2_speech() -> tuple[Any, Any, dict]:
    # Speech: wav2vec 2.0 base geometry (conv feature encoder + transformer) with 4 layers, 1 s of 16 kHz audio.
    torch, transformers = _transformers()
    torch.manual_seed(0)
    config = transformers.Wav2Vec2Config(num_hidden_layers=4, attn_implementation="sdpa")
    net = _FirstOutput(transformers.Wav2Vec2Model(config).eval(), "last_hidden_state")
    shape = (1, 16000)
    return net, torch.randn(*shape), {"input_values": (shape, ov.Type.f32)}


def _resnet18() -> tuple[Any, Any, dict]:
    return _torchvision("resnet18", 224)


def _densenet121() -> tuple[Any, Any, dict]:
    return _torchvision("densenet121", 224)


def _vit_b_16() -> tuple[Any, Any, dict]:
    return _torchvision("vit_b_16", 224)


EXTRA_BUILDERS = {
    "mobilenet_v2": _mobilenet_v2,
    "efficientnet_b0": _efficientnet_b0,
    "deeplabv3_mobilenet": _deeplabv3_mobilenet,
    "fcos_detector": _fcos_detector,
    "gpt2_decoder": _gpt2_decoder,
    "wav2vec2_speech": _wav2vec2_speech,
    "vit_b_16": _vit_b_16,
    "resnet18": _resnet18,
    "densenet121": _densenet121,
}

EXTRA = tuple(EXTRA_BUILDERS)

__all__ = ["EXTRA", "EXTRA_BUILDERS"]
