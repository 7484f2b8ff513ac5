"""Stateful decoders built with OpenVINO opsets, shaped like optimum-intel's exports, at chosen sizes.

optimum-intel exports a causal LM as one stateful graph: inputs ``input_ids``, ``attention_mask``,
``position_ids`` (``[?, ?]`` i64) and ``beam_idx`` (``[?]`` i32), output ``logits`` (``[?, ?, vocab]``), and per
layer two variables (its K and V cache, ``[?, kv_heads, ?, head_size]`` f32) read by a ``ReadValue`` whose
initializer is an empty cache of the input's batch, reordered by a ``Gather`` on ``beam_idx``, extended by a
``Concat`` with the new keys/values and written back by an ``Assign``; attention is one
``ScaledDotProductAttention`` per layer, its mask built once from ``attention_mask`` and ``position_ids``
(``Range``, ``LessEqual``, ``BitwiseAnd``, ``Select``). The builder here makes that graph directly, so the
simulated platforms (``benchmarks/bench_platforms.py --models decoders``) and the fast tests get decoders of any
size without torch or optimum-intel; ``tests/models/test_decoder_models.py`` compares its op types with an
optimum-intel export of the same geometry (slow, in the LLM venv).

Two families:

* ``llama``: RMSNorm, rotary position embedding, grouped-query attention (``kv_heads < heads``), SwiGLU MLP,
  no biases, untied head.
* ``qwen2``: the Llama geometry with biased Q/K/V projections and Qwen2's larger RoPE base.

Weights are random (seeded) f32: placement sees topology, shapes and bytes, not trained values.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import openvino as ov
from openvino import opset13 as ops
from openvino.op.util import Variable, VariableInfo


@dataclasses.dataclass(frozen=True)
class DecoderSpec:
    """A decoder's geometry: ``family`` (``llama`` or ``qwen2``) and its sizes."""

    family: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    max_positions: int = 2048

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads

    def parameters(self) -> int:
        """Weights in the graph (embedding, per layer attention + MLP + norms, final norm, head)."""
        kv = self.kv_heads * self.head_size
        attn = 2 * self.hidden * self.hidden + 2 * self.hidden * kv + (self.hidden + 2 * kv
                                                                      if self.family == "qwen2" else 0)
        layer = attn + 3 * self.hidden * self.intermediate + 2 * self.hidden
        return 2 * self.vocab * self.hidden + self.layers * layer + self.hidden


#: The decoders of the simulated headroom rows: three sizes per family; the largest (about 75 M parameters, 0.3 GB
#: in f32) does not fit ``small_memory``'s 0.25 GB GPU. Sizes scaled down from the families' small models (the
#: head sizes and group ratios kept) so the exact reference (MILP) still runs on every row.
DECODERS = {
    "llama_dec_s": DecoderSpec("llama", layers=4, hidden=256, heads=8, kv_heads=4, intermediate=688, vocab=8000),
    "llama_dec_m": DecoderSpec("llama", layers=6, hidden=512, heads=8, kv_heads=4, intermediate=1376, vocab=16000),
    "llama_dec_l": DecoderSpec("llama", layers=8, hidden=768, heads=12, kv_heads=4, intermediate=2048, vocab=16000),
    "qwen2_dec_s": DecoderSpec("qwen2", layers=4, hidden=256, heads=8, kv_heads=2, intermediate=704, vocab=8000),
    "qwen2_dec_m": DecoderSpec("qwen2", layers=6, hidden=448, heads=7, kv_heads=1, intermediate=1216, vocab=16000),
    "qwen2_dec_l": DecoderSpec("qwen2", layers=8, hidden=896, heads=14, kv_heads=2, intermediate=2432,
                               vocab=8000),
}
#: The model set ``bench_platforms.py --models decoders`` runs.
DECODER_SET = tuple(DECODERS)
#: A decoder small enough for fast tests (compiles and generates in well under a second).
TINY = DecoderSpec("llama", layers=2, hidden=32, heads=4, kv_heads=2, intermediate=64, vocab=97, max_positions=256)

_ROPE_BASE = {"llama": 10000.0, "qwen2": 1000000.0}
_EPS = 1e-6


class _Weights:
    """Seeded random f32 constants, named after the weight they stand for."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, shape, name: str, scale: float = 0.02, ones: bool = False):
        data = (np.ones(shape, np.float32) if ones
                else (scale * self.rng.standard_normal(shape, dtype=np.float32)))
        const = ops.constant(data)
        const.set_friendly_name(name)
        return const


def _i64(values) -> ov.Node:
    return ops.constant(np.array(values, np.int64))


def _rms_norm(x, weight):
    # as torch's RMSNorm converts: x * 1 / sqrt(mean(x^2) + eps) * weight
    mean = ops.reduce_mean(ops.power(x, ops.constant(np.float32(2))), _i64([-1]), keep_dims=True)
    inv = ops.divide(ops.constant(np.float32(1)), ops.sqrt(ops.add(mean, ops.constant(np.float32(_EPS)))))
    return ops.multiply(weight, ops.multiply(x, inv))


def _rotate(x, cos, sin, half: int):
    """x * cos + rotate_half(x) * sin, x ``[B, heads, S, head_size]``."""
    first = ops.slice(x, _i64([0]), _i64([half]), _i64([1]), _i64([3]))
    second = ops.slice(x, _i64([half]), _i64([2 ** 62]), _i64([1]), _i64([3]))
    rotated = ops.concat([ops.multiply(second, ops.constant(np.float32(-1))), first], 3)
    return ops.add(ops.multiply(x, cos), ops.multiply(rotated, sin))


def build_decoder(spec: DecoderSpec, *, seed: int = 0, name: str | None = None) -> ov.Model:
    """The stateful decoder of ``spec`` (module doc), random weights from ``seed``."""
    w = _Weights(seed)
    hd, kv, half = spec.head_size, spec.kv_heads * spec.head_size, spec.head_size // 2
    ids = ops.parameter([-1, -1], np.int64, name="input_ids")
    mask = ops.parameter([-1, -1], np.int64, name="attention_mask")
    pos = ops.parameter([-1, -1], np.int64, name="position_ids")
    beam = ops.parameter([-1], np.int32, name="beam_idx")
    for p, n in ((ids, "input_ids"), (mask, "attention_mask"), (pos, "position_ids"), (beam, "beam_idx")):
        p.output(0).get_tensor().set_names({n})

    h = ops.gather(w((spec.vocab, spec.hidden), "model.embed_tokens.weight"), ids, _i64(0))
    batch = ops.gather(ops.shape_of(ids), _i64([0]), _i64(0))
    seq = ops.gather(ops.shape_of(ids), _i64([1]), _i64(0))

    # RoPE tables from position_ids, shared by every layer: [B, 1, S, head_size]
    inv_freq = 1.0 / (_ROPE_BASE[spec.family] ** (np.arange(0, hd, 2, dtype=np.float32) / hd))
    freqs = ops.transpose(ops.matmul(ops.constant(inv_freq.reshape(1, half, 1)),  # as transformers: a MatMul
                                     ops.unsqueeze(ops.convert(pos, np.float32), _i64(1)), False, False),
                          _i64([0, 2, 1]))
    angles = ops.unsqueeze(ops.concat([freqs, freqs], -1), _i64(1))
    cos, sin = ops.cos(angles), ops.sin(angles)

    # the attention mask, shared by every layer: key k is visible to query q when k <= position(q) and
    # attention_mask[k] is set; [B, 1, S, L] of 0 / -inf
    total = ops.gather(ops.shape_of(mask), _i64(1), _i64(0))
    keys = ops.range(_i64(0), total, _i64(1), ov.Type.i64)
    causal = ops.less_equal(ops.reshape(keys, _i64([1, 1, -1]), False), ops.unsqueeze(pos, _i64(-1)))
    allowed = ops.bitwise_and(causal, ops.unsqueeze(ops.convert(mask, ov.Type.boolean), _i64(1)))
    bias = ops.unsqueeze(ops.select(allowed, ops.constant(np.float32(0)), ops.constant(np.float32(-np.inf))),
                         _i64(1))

    # an empty cache of the input's batch, its length a computed 0 (as optimum-intel's exports)
    empty = ops.multiply(seq, _i64([0]))
    init = ops.broadcast(ops.constant(np.float32(0)),
                         ops.concat([batch, _i64([spec.kv_heads]), empty, _i64([hd])], 0))
    assigns = []
    for layer in range(spec.layers):
        p = f"model.layers.{layer}"
        x = _rms_norm(h, w((spec.hidden,), f"{p}.input_layernorm.weight", ones=True))

        def proj(width: int, what: str, bias: bool):
            out = ops.matmul(x, w((width, spec.hidden), f"{p}.self_attn.{what}.weight"), False, True)
            return ops.add(out, w((width,), f"{p}.self_attn.{what}.bias")) if bias else out

        def heads(t, count: int):
            return ops.transpose(ops.reshape(t, _i64([0, 0, count, hd]), True), _i64([0, 2, 1, 3]))

        biased = spec.family == "qwen2"
        q = _rotate(heads(proj(spec.hidden, "q_proj", biased), spec.heads), cos, sin, half)
        k = _rotate(heads(proj(kv, "k_proj", biased), spec.kv_heads), cos, sin, half)
        v = heads(proj(kv, "v_proj", biased), spec.kv_heads)
        present = []
        for what, new in (("key", k), ("value", v)):
            info = VariableInfo()
            info.data_shape = ov.PartialShape([-1, spec.kv_heads, -1, hd])
            info.data_type = ov.Type.f32
            info.variable_id = f"past_key_values.{layer}.{what}present.{layer}.{what}"
            var = Variable(info)
            cache = ops.concat([ops.gather(ops.read_value(init, var), beam, _i64(0)), new], 2)
            assigns.append(ops.assign(cache, var))
            present.append(cache)
        groups = spec.heads // spec.kv_heads
        if groups > 1:  # grouped-query attention: each KV head serves `groups` query heads
            present = [ops.reshape(ops.broadcast(ops.unsqueeze(c, _i64(2)),
                                                 ops.concat([batch, _i64([spec.kv_heads, groups]),
                                                             ops.gather(ops.shape_of(c), _i64([2]), _i64(0)),
                                                             _i64([hd])], 0)),
                                   _i64([0, spec.heads, -1, hd]), True) for c in present]
        attn = ops.scaled_dot_product_attention(q, present[0], present[1], bias,
                                                ops.constant(np.float32(1.0 / np.sqrt(hd))), causal=False)
        attn = ops.reshape(ops.transpose(attn, _i64([0, 2, 1, 3])), _i64([0, 0, spec.hidden]), True)
        h = ops.add(h, ops.matmul(attn, w((spec.hidden, spec.hidden), f"{p}.self_attn.o_proj.weight"), False, True))
        x = _rms_norm(h, w((spec.hidden,), f"{p}.post_attention_layernorm.weight", ones=True))
        gate = ops.matmul(x, w((spec.intermediate, spec.hidden), f"{p}.mlp.gate_proj.weight"), False, True)
        up = ops.matmul(x, w((spec.intermediate, spec.hidden), f"{p}.mlp.up_proj.weight"), False, True)
        down = ops.matmul(ops.multiply(ops.swish(gate), up),
                          w((spec.hidden, spec.intermediate), f"{p}.mlp.down_proj.weight"), False, True)
        h = ops.add(h, down)
    h = _rms_norm(h, w((spec.hidden,), "model.norm.weight", ones=True))
    logits = ops.matmul(h, w((spec.vocab, spec.hidden), "lm_head.weight"), False, True)
    logits.output(0).get_tensor().set_names({"logits"})
    out = ops.result(logits)
    model = ov.Model([out], assigns, [ids, mask, pos, beam], name or f"{spec.family}_decoder")
    # OpenVINO names an unnamed op from a process-wide counter: two builds of one spec would name their nodes
    # apart, and a placement (or the decode clones generation_costs matches by name) would not carry over
    for k, op in enumerate(model.get_ordered_ops()):
        if re.fullmatch(rf"{op.get_type_name()}_\d+", op.get_friendly_name()):
            op.set_friendly_name(f"{op.get_type_name()}_{k}")
    model.set_rt_info(str(spec.max_positions), "max_position_embeddings")
    return model


def load_decoder(name: str, *, seed: int = 0) -> ov.Model:
    """The decoder ``name`` of :data:`DECODERS` (ValueError naming the choices otherwise)."""
    if name not in DECODERS:
        raise ValueError(f"unknown decoder {name!r}; choose from {list(DECODERS)}")
    return build_decoder(DECODERS[name], seed=seed, name=name)


__all__ = ["DECODERS", "DECODER_SET", "DecoderSpec", "TINY", "build_decoder", "load_decoder"]
