"""Tiny decoders exported the way optimum-intel exports every causal LM (stateful: the KV cache in variables),
and the generation loop an OpenVINO app runs on them (docs/llm.md).

Random weights: logits are nearly flat, so greedy tokens can flip on a rounding between devices that compute
differently; the loop can be teacher-forced (fed the reference's tokens) so logits are compared at every step.
Exporting takes 10-100 s on the 2-core machine: the session fixture in ``tests/models/test_llm.py`` does it once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: Two families optimum-intel 2.2.0 exports stateful from a random-weight config: Llama geometry (grouped KV
#: heads, RoPE, SwiGLU) and Qwen2 (the same with biased Q/K/V projections).
FAMILIES = ("llama", "qwen2")
LAYERS = 4
#: More families at the tiny size (transformers config keys), for the stateful-splits benchmark and the tests: OPT
#: (learned positions, the embedding reading the ids through a Convert), GPTBigCode (multi-query attention, the same
#: Convert), Phi-3 (fused QKV), Mistral (sliding window of 8, shorter than the tests' prompts), GPT-2 and GPT-NeoX
#: (parallel attention and MLP), Falcon (multi-query, parallel), BLOOM (ALiBi: no ``position_ids`` input).
MORE_FAMILIES = {
    "opt": dict(vocab_size=512, hidden_size=64, ffn_dim=128, num_hidden_layers=LAYERS, num_attention_heads=4,
                max_position_embeddings=256, word_embed_proj_dim=64),
    "gpt_bigcode": dict(vocab_size=512, n_embd=64, n_layer=LAYERS, n_head=4, n_positions=256, multi_query=True),
    "phi3": dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=LAYERS,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, pad_token_id=0),
    "mistral": dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=LAYERS,
                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, sliding_window=8),
    "gpt2": dict(vocab_size=512, n_embd=64, n_layer=LAYERS, n_head=4, n_positions=256),
    "gpt_neox": dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=LAYERS,
                     num_attention_heads=4, max_position_embeddings=256),
    "falcon": dict(vocab_size=512, hidden_size=64, num_hidden_layers=LAYERS, num_attention_heads=4,
                   new_decoder_architecture=False, multi_query=True, parallel_attn=True, max_position_embeddings=256),
    "bloom": dict(vocab_size=512, hidden_size=64, n_layer=LAYERS, n_head=4),
}
_CLASSES = {"llama": "Llama", "qwen2": "Qwen2", "opt": "OPT", "gpt_bigcode": "GPTBigCode", "phi3": "Phi3",
            "mistral": "Mistral", "gpt2": "GPT2", "gpt_neox": "GPTNeoX", "falcon": "Falcon", "bloom": "Bloom"}


#: Decoder geometries (transformers config keys). ``tiny`` is the tests' (a decode step of ~0.5 ms: HETERO's fixed
#: per-infer cost and the scheduler's jitter are a large share of it); ``small`` (~42 M parameters, 168 MB in f32, a
#: decode step of several ms on 2 cores) is the smallest at which a step's work, not its call overhead, decides its
#: time, as in the 0.1-8 B models apps run; the benchmarks measure both.
SIZES = {
    "tiny": dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=LAYERS,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256),
    "small": dict(vocab_size=16384, hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
                  num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=1024),
}


def export_tiny(family: str, directory: Path) -> Path:
    """``directory/<family>``: a 4-layer decoder (vocabulary 512, hidden 64) exported by optimum-intel; returns
    the directory holding ``openvino_model.xml`` and the config ``OVModelForCausalLM.from_pretrained`` reads."""
    return export_decoder(family, directory, "tiny")


def export_decoder(family: str, directory: Path, size: str = "tiny", bits: int | None = None,
                   stateful: bool = True) -> Path:
    """``directory/<family>`` (``<family>_<size>`` for a size other than ``tiny``, ``_int<bits>`` added with
    ``bits``, ``_nonstateful`` with ``stateful=False``: the KV cache as inputs and outputs, optimum-intel's
    legacy form): a random-weight decoder of ``SIZES[size]`` exported by optimum-intel, its weights compressed to
    ``bits`` (8 or 4, asymmetric, NNCF through optimum-intel, as it compresses LLMs by default) when given; reused
    when it is there. Returns the directory holding ``openvino_model.xml`` and the config
    ``OVModelForCausalLM.from_pretrained`` reads."""
    import torch
    import transformers
    from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig

    prefix = _CLASSES[family]
    config_class, model_class = f"{prefix}Config", f"{prefix}{'LMHeadModel' if family == 'gpt2' else 'ForCausalLM'}"
    if family in MORE_FAMILIES and size != "tiny":
        raise ValueError(f"{family!r} is exported at the tiny size only (MORE_FAMILIES), not {size!r}")
    geometry = MORE_FAMILIES[family] if family in MORE_FAMILIES else SIZES[size]
    name = (family if size == "tiny" else f"{family}_{size}") + (f"_int{bits}" if bits else "") \
        + ("" if stateful else "_nonstateful")
    out = directory / name
    if (out / "openvino_model.xml").exists():
        return out
    torch.manual_seed(0)
    hf_dir = directory / f"{name}_hf"
    getattr(transformers, model_class)(getattr(transformers, config_class)(**geometry)).eval().save_pretrained(hf_dir)
    compression = OVWeightQuantizationConfig(bits=bits, sym=False, ratio=1.0, group_size=32 if bits == 4 else -1) \
        if bits else None
    OVModelForCausalLM.from_pretrained(hf_dir, export=True, stateful=stateful, compile=False,
                                       quantization_config=compression).save_pretrained(out)
    return out


def generate(compiled, prompt, steps: int, *, teacher: list[int] | None = None) -> tuple[list[int], list[np.ndarray]]:
    """Greedy generation as an OpenVINO app runs it: ``reset_state``, a prefill of the prompt (``position_ids``
    0..n-1, ``attention_mask`` of n ones, ``beam_idx`` zeros), then one token per step (``position_ids`` [past],
    ``attention_mask`` of past+1 ones). Returns the tokens (prompt included) and each step's last logits.
    ``teacher``: feed these tokens instead of the argmax (teacher forcing)."""
    request = compiled.create_infer_request()
    names = {name for port in compiled.inputs for name in port.get_names()}
    request.reset_state()
    tokens, logits = list(prompt), []
    for step in range(steps):
        new = tokens if step == 0 else tokens[-1:]
        past = len(tokens) - len(new)
        feed = {
            "input_ids": np.array([new], dtype=np.int64),
            "attention_mask": np.ones((1, len(tokens)), dtype=np.int64),
            "position_ids": np.arange(past, len(tokens), dtype=np.int64)[None],
            "beam_idx": np.zeros(1, dtype=np.int32),
        }
        result = request.infer({k: v for k, v in feed.items() if k in names})  # ALiBi models have no position_ids
        last = np.array(result["logits"][0, -1], dtype=np.float32)
        logits.append(last)
        tokens.append(int(teacher[len(tokens)]) if teacher is not None else int(np.argmax(last)))
    return tokens, logits


def window_proposal(rng: np.random.Generator, active: np.ndarray, num_nodes: int) -> np.ndarray:
    """A random proposal for two devices: one to three windows of ``active`` (node ids in topological order, 1-120
    nodes each) on device 1, the rest on device 0 (``benchmarks/bench_stateful_splits.py`` and the LLM tests)."""
    proposal = np.zeros(num_nodes, np.int64)
    for _ in range(int(rng.integers(1, 4))):
        start = int(rng.integers(0, active.size))
        proposal[active[start:start + int(rng.integers(1, 121))]] = 1
    return proposal
