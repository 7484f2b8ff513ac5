"""The LLM objective: what a generation costs, declared once (docs/llm.md, "The LLM objective").

A stateful decoder (an optimum-intel export: the KV cache in ReadValue/Assign variables, ``input_ids`` with a
dynamic length) is placed and verified for a :class:`Generation`: a prefill of ``prompt_tokens`` (which gives the
first token: the time to first token) and ``new_tokens - 1`` decode steps of one token each over a past growing
from ``prompt_tokens``. Its time is ::

    generation_ms = prefill_ms(prompt) + sum over past in [prompt, prompt + new - 2] of decode_ms(past)

with ``decode_ms`` measured at :data:`DECODE_POINTS` past lengths (:func:`decode_pasts`) and interpolated linearly
between them (:func:`decode_weights`: the sum as weights on the points). Every path that times an LLM (the
verification, the benchmark) combines its parts with :func:`generation_ms`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np
import openvino as ov

from ov_autoplace.devices.timing import LLM_INPUTS
from ov_autoplace.errors import ShapeError
from ov_autoplace.model.shapes import input_name, static_clone

#: Past lengths at which a decode step is timed (first, middle, last decode step of the generation).
DECODE_POINTS = 3


@dataclasses.dataclass(frozen=True)
class Generation:
    """One generation an LLM app runs: a prompt of ``prompt_tokens``, then ``new_tokens`` generated (the first by
    the prefill). A stateful decoder is placed and verified for it (default ``Generation(128, 128)``).

    Example::

        compiled = ov_autoplace.compile_model(llm, "HETERO:GPU,CPU", generation=ov_autoplace.Generation(512, 64))
        compiled = ov_autoplace.compile_model(llm, "HETERO:GPU,CPU", generation=(512, 64))  # the same
    """

    prompt_tokens: int = 128
    new_tokens: int = 128


def decode_pasts(gen: Generation) -> tuple[int, ...]:
    """The past lengths at which decode is timed: up to :data:`DECODE_POINTS`, spread over the decode steps
    (none when the prefill gives the only new token)."""
    steps = gen.new_tokens - 1
    if steps < 1:
        return ()
    points = np.linspace(0, steps - 1, min(DECODE_POINTS, steps))
    return tuple(gen.prompt_tokens + int(round(p)) for p in points)


def decode_weights(gen: Generation) -> np.ndarray:
    """Weights on :func:`decode_pasts` such that ``weights @ decode_ms`` is the sum over every decode step of
    ``decode_ms`` interpolated linearly between the points (they sum to ``new_tokens - 1``)."""
    pasts = decode_pasts(gen)
    if not pasts:
        return np.zeros(0)
    every = np.arange(gen.prompt_tokens, gen.prompt_tokens + gen.new_tokens - 1)
    basis = np.eye(len(pasts))
    return np.array([np.interp(every, pasts, basis[k]).sum() for k in range(len(pasts))])


def generation_ms(gen: Generation, prefill_ms: float, decode_ms: Sequence[float]) -> float:
    """The objective: one generation's time (ms) from its prefill and the decode times at :func:`decode_pasts`."""
    return float(prefill_ms + decode_weights(gen) @ np.asarray(decode_ms, dtype=np.float64))


def is_generative(model: ov.Model) -> bool:
    """Whether ``model`` is a stateful decoder a generation drives: variables, and inputs named as an LLM's
    (:data:`~ov_autoplace.devices.timing.LLM_INPUTS`) with ``input_ids`` of dynamic length."""
    ids = [p for p in model.inputs if "input_ids" in p.get_names()]
    return (bool(model.get_variables()) and len(ids) == 1 and ids[0].get_partial_shape().rank.is_static
            and ids[0].get_partial_shape()[-1].is_dynamic
            and all(any(n in LLM_INPUTS for n in p.get_names()) for p in model.inputs))


def decode_clone(model: ov.Model, past: int) -> ov.Model:
    """A static clone of one decode step after ``past`` tokens, for costing: each ReadValue replaced by a Parameter
    holding its state at that length (named as the ReadValue, so the placement's names hold), ``input_ids`` and
    ``position_ids`` ``[1, 1]``, ``attention_mask`` ``[1, past + 1]``, ``beam_idx`` ``[1]``. ShapeError when the
    model does not take these shapes."""
    clone = model.clone()
    states = []
    for read in [op for op in clone.get_ops() if op.get_type_name() == "ReadValue"]:
        dims = [1 if k == 0 else d.get_length() if d.is_static else past
                for k, d in enumerate(read.get_output_partial_shape(0))]
        state = ov.opset13.parameter(dims, read.get_output_element_type(0), name=read.get_friendly_name())
        read.set_friendly_name(f"{read.get_friendly_name()}/unread")  # its Assign may still depend on it
        for target in read.output(0).get_target_inputs():
            target.replace_source_output(state.output(0))
        states.append(state)
    clone.add_parameters(states)
    step = {"input_ids": [1, 1], "position_ids": [1, 1], "attention_mask": [1, past + 1], "beam_idx": [1]}
    return static_clone(clone, {input_name(p): step[input_name(p)] if input_name(p) in step else
                                list(p.get_partial_shape().to_shape()) for p in clone.inputs})


_PASS_THROUGH = {"Convert", "Unsqueeze", "Squeeze", "Reshape"}


def position_limit(model: ov.Model) -> tuple[int, str] | None:
    """``(positions, table name)`` when the graph holds a table indexed by ``position_ids`` (a learned position
    embedding, a cached RoPE table): a Gather of a Constant whose indices are ``position_ids`` through shape-only
    ops. None when there is none (RoPE computed from the ids, as Llama's is): no limit is invented."""
    start = [p for p in model.get_parameters() if "position_ids" in p.output(0).get_names()]
    frontier, seen = list(start), set()
    while frontier:
        node = frontier.pop()
        for target in (t for out in node.outputs() for t in out.get_target_inputs()):
            op = target.get_node()
            kind = op.get_type_name()
            if kind == "Gather" and target.get_index() == 1:
                table = op.input_value(0).get_node()
                while table.get_type_name() == "Convert":
                    table = table.input_value(0).get_node()
                axis = op.input_value(2).get_node()
                if table.get_type_name() == "Constant" and axis.get_type_name() == "Constant":
                    dims = list(table.get_output_partial_shape(0).to_shape())
                    return int(dims[int(axis.get_data().reshape(-1)[0])]), table.get_friendly_name()
            elif kind in _PASS_THROUGH and target.get_index() == 0 and op.get_friendly_name() not in seen:
                seen.add(op.get_friendly_name())
                frontier.append(op)
    return None


def check_generation(generation: Any, model: ov.Model) -> Generation | None:
    """``generation=`` validated against ``model``: a :class:`Generation` for a stateful decoder (the default
    ``Generation()`` when None, halved to fit a position table), None for any other model; ShapeError for a malformed value, one given for a model
    no generation drives, or a generation longer than the model's position table."""
    generative = is_generative(model)
    if generation is None:  # the default, shortened to the position table where one says so (our guess: no error)
        limit = position_limit(model) if generative else None
        if limit is None or sum(dataclasses.astuple(Generation())) - 1 <= limit[0]:
            return Generation() if generative else None
        return Generation((limit[0] + 1) // 2, limit[0] + 1 - (limit[0] + 1) // 2)
    if isinstance(generation, (tuple, list)) and len(generation) == 2:
        generation = Generation(*generation)
    counts = (generation.prompt_tokens, generation.new_tokens) if isinstance(generation, Generation) else ()
    if not counts or not all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c >= 1
                             for c in counts):
        raise ShapeError(f"generation must be ov_autoplace.Generation(prompt_tokens, new_tokens) or a (prompt, new) "
                         f"tuple of ints >= 1, e.g. Generation(128, 128) or (128, 128); got {generation!r}")
    generation = Generation(int(counts[0]), int(counts[1]))
    if not generative:
        raise ShapeError(f"generation={generation} applies to a stateful decoder (KV cache in ReadValue/Assign "
                         f"variables, an input_ids of dynamic length, inputs among {list(LLM_INPUTS)}); this model "
                         f"has {len(model.get_variables())} variable(s) and inputs "
                         f"{[p.get_any_name() for p in model.inputs]}: leave generation unset to place it for "
                         "single-shot latency")
    limit = position_limit(model)
    positions = generation.prompt_tokens + generation.new_tokens - 1
    if limit is not None and positions > limit[0]:
        raise ShapeError(f"{generation} needs {positions} positions (prompt_tokens + new_tokens - 1), but the model's "
                         f"position table {limit[1]!r} has {limit[0]}: give a generation with prompt_tokens + "
                         f"new_tokens <= {limit[0] + 1}")
    return generation


__all__ = ["DECODE_POINTS", "Generation", "check_generation", "decode_clone", "decode_pasts", "decode_weights", "generation_ms",
           "is_generative", "position_limit"]
