"""Latency measurement. Every latency the project reports goes through here,
and the timing loop itself runs in C++ (``_native.time_inference``) so Python
overhead is not in the samples."""

from __future__ import annotations

import dataclasses
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

    @property
    def min_ms(self) -> float:
        return float(np.min(self.samples_ms))

    def __str__(self) -> str:
        p25, p75 = self.iqr_ms
        return f"{self.median_ms:.2f} ms (IQR {p25:.2f}-{p75:.2f}, n={len(self.samples_ms)})"


def random_inputs(compiled: ov.CompiledModel, *, seed: int = 0,
                  shapes: Mapping[str, Sequence[int]] | None = None) -> list[np.ndarray]:
    """One random array per input of ``compiled`` with its static shape (or ``shapes[name]``) and dtype.

    Integer inputs get values in {0, 1}: valid token ids, token types and mask
    values for any embedding table, so BERT-like models run as in real use.
    A dynamic input needs its shape in ``shapes`` (e.g. the placement shapes).
    """
    rng = np.random.default_rng(seed)
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
        if dtype == np.bool_:
            arrays.append(rng.integers(0, 2, size=shape).astype(np.bool_))
        elif np.issubdtype(dtype, np.integer):
            arrays.append(rng.integers(0, 2, size=shape).astype(dtype))
        elif np.issubdtype(dtype, np.floating):
            arrays.append(rng.standard_normal(shape).astype(dtype))
        else:
            raise ValueError(f"input {port.get_any_name()!r} has element type {dtype}; the timer cannot feed it")
    return arrays


def measure_latency(
    compiled: ov.CompiledModel,
    inputs: Sequence[np.ndarray] | None = None,
    *,
    warmup: int = 3,
    iterations: int = 30,
    max_seconds: float = 0.0,
) -> LatencyStats:
    """Time ``compiled`` with the native timer: ``warmup`` untimed, then up to ``iterations`` timed runs."""
    arrays = list(inputs) if inputs is not None else random_inputs(compiled)
    samples = load_native().time_inference(compiled, arrays, warmup, iterations, max_seconds)
    return LatencyStats(samples_ms=np.asarray(samples))


def round_order(labels: Sequence[str], r: int) -> list[str]:
    """The order of paired round ``r``: ``labels`` rotated by ``r``, so no contender always runs first or always
    right after the same one (a fixed order once put the placed model after the f32 device every round)."""
    k = r % len(labels)
    return list(labels[k:]) + list(labels[:k])


__all__ = ["LatencyStats", "measure_latency", "random_inputs", "round_order"]
