"""A generation timed on a compiled stateful decoder: the parts of the LLM objective (``model/generation.py``).

One sample is what an app's generation loop runs (docs/llm.md): ``reset_state``, a prefill of the prompt (timed:
the time to first token), then a decode step of one token at each past length of ``decode_pasts`` (timed), the
state brought to that length by an untimed prefill of ``past`` tokens when the previous step left it shorter.
Every step's inputs agree with the state: ``attention_mask`` of ``past + tokens`` ones, ``position_ids``
``past .. past + tokens - 1``, ``beam_idx`` zeros (batch 1), token ids within the vocabulary.
Only ``request.infer()`` is inside the timer; the feeds are set before it.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import openvino as ov

from ov_autoplace.devices.timing import LLM_INPUTS, vocabulary_size
from ov_autoplace.model.generation import Generation, decode_pasts, generation_ms


@dataclasses.dataclass(frozen=True)
class GenerationTimes:
    """Medians (ms) of a generation's parts: the prefill and one decode step at each of ``decode_pasts``."""

    generation: Generation
    prefill_ms: float
    decode_ms: tuple[float, ...]

    @property
    def total_ms(self) -> float:
        """The objective: the whole generation's time (``model/generation.generation_ms``)."""
        return generation_ms(self.generation, self.prefill_ms, self.decode_ms)

    @property
    def per_token_ms(self) -> float:
        """Mean decode step over the generation (nan when the prefill gives the only token)."""
        steps = self.generation.new_tokens - 1
        return (self.total_ms - self.prefill_ms) / steps if steps else float("nan")

    def parts(self) -> dict[str, float]:
        return {"generation_ms": self.total_ms, "ttft_ms": self.prefill_ms, "per_token_ms": self.per_token_ms}


def set_step(request: ov.InferRequest, past: int, tokens: int, rng: np.random.Generator,
             vocabulary: int | None) -> None:
    """Set the inputs of a step feeding ``tokens`` new tokens after ``past`` (batch 1)."""
    for k, port in enumerate(request.model_inputs):
        name = next(n for n in port.get_names() if n in LLM_INPUTS)
        dtype = port.get_element_type().to_dtype()
        array = {"input_ids": lambda: rng.integers(0, vocabulary or 2, size=(1, tokens)),
                 "attention_mask": lambda: np.ones((1, past + tokens)),
                 "position_ids": lambda: np.arange(past, past + tokens)[None],
                 "beam_idx": lambda: np.zeros(1)}[name]()
        request.set_input_tensor(k, ov.Tensor(np.ascontiguousarray(array, dtype=dtype)))


def _timed(request: ov.InferRequest) -> float:
    t0 = time.perf_counter()
    request.infer()
    return 1e3 * (time.perf_counter() - t0)


def time_generation(compiled: ov.CompiledModel, generation: Generation, *, repeats: int = 1, seed: int = 0,
                    request: ov.InferRequest | None = None) -> GenerationTimes:
    """``repeats`` samples of ``generation`` on ``compiled`` (see the module doc); each part's median."""
    request = request if request is not None else compiled.create_infer_request()
    rng, vocabulary = np.random.default_rng(seed), vocabulary_size(compiled)
    prompt, pasts = generation.prompt_tokens, decode_pasts(generation)
    prefill, decode = [], [[] for _ in pasts]
    for _ in range(repeats):
        request.reset_state()
        set_step(request, 0, prompt, rng, vocabulary)
        prefill.append(_timed(request))
        length = prompt
        for k, past in enumerate(pasts):
            if past != length:
                request.reset_state()
                set_step(request, 0, past, rng, vocabulary)
                request.infer()
            set_step(request, past, 1, rng, vocabulary)
            decode[k].append(_timed(request))
            length = past + 1
    return GenerationTimes(generation, float(np.median(prefill)), tuple(float(np.median(d)) for d in decode))


__all__ = ["GenerationTimes", "set_step", "time_generation"]
