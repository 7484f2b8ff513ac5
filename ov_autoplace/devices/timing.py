"""Latency measurement. Every latency the project reports goes through here,
and the timing loop itself runs in C++ (``_native.time_inference``) so Python
overhead is not in the samples."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import time
from typing import Mapping, Sequence

import numpy as np
import openvino as ov

from ov_autoplace._native_loader import load_native


@dataclasses.dataclass(frozen=True)
class LatencyStats:
    """Samples (ms) of synchronous inferences with their median and spread."""

    samples_ms: np.ndarray

    @property
    def median_ms(self) -> float:
        return float(np.median(self.samples_ms))

    @property
    def iqr_ms(self) -> tuple[float, float]:
        p25, p75 = np.percentile(self.samples_ms, [25, 75])
        return float(p25), float(p75)

    def __str__(self) -> str:
        p25, p75 = self.iqr_ms
        return f"{self.median_ms:.2f} ms (IQR {p25:.2f}-{p75:.2f}, n={len(self.samples_ms)})"


#: The user's input sample (``compile_model(..., inputs=)``) while a call measures: name -> array.
_SAMPLE: contextvars.ContextVar[Mapping[str, np.ndarray] | None] = contextvars.ContextVar("input_sample", default=None)


@contextlib.contextmanager
def input_sample(sample: Mapping[str, np.ndarray] | None):
    """Within the block, :func:`random_inputs` feeds ``sample``'s arrays to the inputs they name and fit
    (``model/input_sample.py`` checked them). One context per call: a thread the call starts does not see it."""
    token = _SAMPLE.set(sample)
    try:
        yield
    finally:
        _SAMPLE.reset(token)


def current_sample() -> Mapping[str, np.ndarray] | None:
    """The sample of the enclosing :func:`input_sample` block (None outside one)."""
    return _SAMPLE.get()


#: Inputs named as optimum-intel names a causal LM's (and transformers' generally), fed as a generation's prefill.
LLM_INPUTS = ("input_ids", "attention_mask", "position_ids", "beam_idx")


def vocabulary_size(compiled: ov.CompiledModel | ov.Model) -> int | None:
    """The vocabulary size, read from a ``logits`` output's static last dim (None when there is none)."""
    for port in compiled.outputs:
        if "logits" in port.get_names():
            last = port.get_partial_shape()[-1] if port.get_partial_shape().rank.is_static else None
            return int(last.get_length()) if last is not None and last.is_static else None
    return None


def llm_convention(name: str, shape: tuple[int, ...], dtype, rng, vocabulary: int | None) -> np.ndarray | None:
    """An LLM input as a prefill from an empty state feeds it: ``reset_state`` comes before every run (the
    timers do it), so the past is empty and the prompt is the whole ``attention_mask``. None for other names.

    ``beam_idx`` picks rows of the batch (``[0, batch)``; the CPU plugin's fused attention rejects anything else),
    ``position_ids`` count the prompt's positions, ``attention_mask`` is all ones, ``input_ids`` are drawn from
    the vocabulary (``{0, 1}`` when it cannot be read)."""
    if name == "beam_idx":
        return np.arange(shape[0], dtype=dtype) if len(shape) == 1 else None
    if name == "position_ids":
        return np.broadcast_to(np.arange(shape[-1]), shape).astype(dtype) if shape else None
    if name == "attention_mask":
        return np.ones(shape, dtype=dtype)
    if name == "input_ids":
        return rng.integers(0, vocabulary or 2, size=shape).astype(dtype)
    return None


def is_stateful(compiled: ov.CompiledModel) -> bool:
    """Whether ``compiled`` holds state (ReadValue/Assign): then every run must start from ``reset_state``.

    AUTO's and MULTI's requests do not implement ``query_state`` ("Not Implemented"): timed as stateless, as before.
    """
    try:
        return bool(compiled.create_infer_request().query_state())
    except RuntimeError:
        return False


def random_inputs(compiled: ov.CompiledModel, *, seed: int = 0,
                  shapes: Mapping[str, Sequence[int]] | None = None) -> list[np.ndarray | ov.Tensor]:
    """One array per input of ``compiled`` with its static shape (or ``shapes[name]``, which a dynamic input needs)
    and dtype; an ``ov.Tensor`` for a bf16 input. Which values: docs/architecture.md, "Module notes", timing.py."""
    rng = np.random.default_rng(seed)
    vocabulary = vocabulary_size(compiled)
    sample = _SAMPLE.get() or {}
    arrays = []
    for port in compiled.inputs:
        pshape = port.get_partial_shape()
        given = next((shapes[n] for n in port.get_names() if shapes and n in shapes), None)
        if given is not None:
            shape = tuple(int(d) for d in given)
        elif pshape.is_dynamic:
            raise ValueError(
                f"input {port.get_any_name()!r} has dynamic shape {pshape}; pass explicit inputs or shapes= to time it"
            )
        else:
            shape = tuple(int(d) for d in pshape.to_shape())
        dtype = port.get_element_type().to_dtype()
        named = next((n for n in port.get_names() if n in LLM_INPUTS), None)
        fed = llm_convention(named, shape, dtype, rng, vocabulary) if named and np.issubdtype(dtype, np.integer) \
            else None
        given = next((sample[n] for n in port.get_names() if n in sample), None)
        bf16 = port.get_element_type() == ov.Type.bf16  # e.g. optimum's non-stateful KV cache on a bf16 CPU
        if given is not None and tuple(given.shape) == shape:
            arrays.append(_bf16_tensor(given) if bf16 else np.ascontiguousarray(given, dtype=dtype))
        elif fed is not None:
            arrays.append(np.ascontiguousarray(fed))
        elif dtype == np.bool_:
            arrays.append(rng.integers(0, 2, size=shape).astype(np.bool_))
        elif np.issubdtype(dtype, np.integer):
            arrays.append(rng.integers(0, 2, size=shape).astype(dtype))
        elif bf16:
            arrays.append(_bf16_tensor(rng.standard_normal(shape)))
        elif np.issubdtype(dtype, np.floating):
            arrays.append(rng.standard_normal(shape).astype(dtype))
        else:
            raise ValueError(f"input {port.get_any_name()!r} has element type {dtype}; the timer cannot feed it")
    return arrays


def _bf16_tensor(values: np.ndarray) -> ov.Tensor:
    """``values`` (floats) in a bf16 tensor, each truncated to bf16: numpy has no bf16, and a numpy array fed to a
    bf16 input is read as f16 numbers."""
    tensor = ov.Tensor(ov.Type.bf16, list(values.shape))
    tensor.data.view(np.uint16)[...] = np.ascontiguousarray(values, np.float32).view(np.uint32) >> 16
    return tensor


def measure_latency(
    compiled: ov.CompiledModel,
    inputs: Sequence[np.ndarray] | None = None,
    *,
    warmup: int = 3,
    iterations: int = 30,
    max_seconds: float = 0.0,
) -> LatencyStats:
    """Time ``compiled`` with the native timer: ``warmup`` untimed, then up to ``iterations`` timed runs.

    A stateful model (an LLM's KV cache) is timed run by run from a reset state: every sample is the same
    prefill, not a prompt appended to all the previous ones (which the model rejects once the state outgrows
    the mask, and which would time ever longer inferences)."""
    arrays = list(inputs) if inputs is not None else random_inputs(compiled)
    if is_stateful(compiled):
        samples = _time_stateful(compiled, arrays, warmup, iterations, max_seconds)
        return LatencyStats(samples_ms=np.asarray(samples))
    samples = load_native().time_inference(compiled, arrays, warmup, iterations, max_seconds)
    return LatencyStats(samples_ms=np.asarray(samples))


def _time_stateful(compiled: ov.CompiledModel, arrays: Sequence[np.ndarray], warmup: int, iterations: int,
                   max_seconds: float) -> list[float]:
    """The native timer's loop in Python with ``reset_state`` (untimed) before each run: the native loop cannot
    reset, and an LLM inference (milliseconds and up) dwarfs the loop's own microseconds."""
    import time

    request = compiled.create_infer_request()
    for k, array in enumerate(arrays):
        fill_input(request, k, array)
    for _ in range(warmup):
        request.reset_state()
        request.infer()
    samples, started = [], time.perf_counter()
    for _ in range(iterations):
        request.reset_state()
        t0 = time.perf_counter()
        request.infer()
        t1 = time.perf_counter()
        samples.append(1e3 * (t1 - t0))
        if max_seconds > 0 and t1 - started >= max_seconds:
            break
    return samples


def set_step(request: ov.InferRequest, past: int, tokens: int, rng, vocabulary: int | None) -> None:
    """Set the inputs of a decoder's step feeding ``tokens`` new tokens after ``past`` (batch 1): the mask covers
    past and new, positions count from ``past``, ``beam_idx`` zeros."""
    for k, port in enumerate(request.model_inputs):
        name = next(n for n in port.get_names() if n in LLM_INPUTS)
        array = {"input_ids": lambda: rng.integers(0, vocabulary or 2, size=(1, tokens)),
                 "attention_mask": lambda: np.ones((1, past + tokens)),
                 "position_ids": lambda: np.arange(past, past + tokens)[None], "beam_idx": lambda: np.zeros(1)}[name]()
        fill_input(request, k, array)


def fill_input(request: ov.InferRequest, index: int, array: np.ndarray) -> None:
    """Copy ``array`` into the request's own input tensor ``index``: bound tensors (``set_input_tensor``) of a gone
    request crashed the next one in the CPU plugin (docs/llm.md, "What measuring feeds a decoder")."""
    tensor = request.get_input_tensor(index)
    tensor.shape = array.shape
    if isinstance(array, ov.Tensor):  # bf16 (random_inputs)
        array.copy_to(tensor)
    else:
        tensor.data[...] = np.asarray(array, dtype=tensor.data.dtype)


#: Consecutive decode steps timed at each decode point (their mean is the point's sample): one step of a small
#: decoder takes about a millisecond, so a single one is mostly noise next to the prefill before it.
DECODE_WINDOW = 4


def time_generation(compiled: ov.CompiledModel, prompt: int, pasts: Sequence[int], *, repeats: int = 1,
                    seed: int = 0, request: ov.InferRequest | None = None) -> tuple[float, tuple[float, ...], float]:
    """Medians (ms) of a stateful decoder's prefill of ``prompt`` tokens and of its decode steps at ``pasts``;
    how they are timed: docs/architecture.md, "Module notes", timing.py."""
    request = request if request is not None else compiled.create_infer_request()
    rng, vocabulary = np.random.default_rng(seed), vocabulary_size(compiled)
    prefill, first, decode = [], [], [[] for _ in pasts]

    def timed(past: int, tokens: int) -> float:
        set_step(request, past, tokens, rng, vocabulary)
        t0 = time.perf_counter()
        request.infer()
        return 1e3 * (time.perf_counter() - t0)

    for _ in range(repeats):
        request.reset_state()
        prefill.append(timed(0, prompt))
        first.append(timed(prompt, 1) if pasts else float("nan"))
        length = prompt + 1
        for k, past in enumerate(pasts):
            start = max(prompt + 1, min(past, pasts[-1] - DECODE_WINDOW + 1))
            window = range(start, min(start + DECODE_WINDOW, pasts[-1] + 1))
            if not window:  # one decode step in all: the first
                decode[k].append(first[-1])
                continue
            if start < length:  # windows overlap (a short generation): from a fresh state
                request.reset_state()
                length = 0
            if start - 1 > length:  # the tokens between, as one chunk
                set_step(request, length, start - 1 - length, rng, vocabulary)
                request.infer()
            if start > length:  # one untimed one-token step: the window starts after the change of shape
                set_step(request, start - 1, 1, rng, vocabulary)
                request.infer()
            decode[k].append(float(np.mean([timed(p, 1) for p in window])))
            length = window[-1] + 1
    return float(np.median(prefill)), tuple(float(np.median(d)) for d in decode), float(np.median(first))


def round_order(labels: Sequence[str], r: int) -> list[str]:
    """The order of paired round ``r``: ``labels`` rotated by ``r``, so no contender always runs first or always
    right after the same one (a fixed order once put the placed model after the f32 device every round)."""
    k = r % len(labels)
    return list(labels[k:]) + list(labels[:k])


__all__ = ["LLM_INPUTS", "LatencyStats", "current_sample", "input_sample", "is_stateful", "llm_convention", "measure_latency", "random_inputs", "round_order",
           "DECODE_WINDOW", "fill_input", "set_step", "time_generation", "vocabulary_size"]
