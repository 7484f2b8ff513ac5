"""The LLM objective, declared once: a :class:`Generation`'s time is its prefill plus every decode step, the decode
steps timed (or costed) at :data:`DECODE_POINTS` past lengths and interpolated (docs/llm.md, "The LLM objective").
Measured by ``devices/timing.time_generation``, judged by the verification, costed by :func:`generation_costs`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import openvino as ov

from ov_autoplace.devices.timing import LLM_INPUTS
from ov_autoplace.errors import ShapeError
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.shapes import input_name, static_clone

#: Past lengths at which a decode step is timed or costed (the first, middle and last decode step).
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
    """The past lengths of the timed decode steps, spread over ``[prompt, prompt + new - 2]`` (none for one token)."""
    steps = gen.new_tokens - 1
    points = np.linspace(0, steps - 1, min(DECODE_POINTS, steps)) if steps > 0 else ()
    return tuple(gen.prompt_tokens + int(round(p)) for p in points)


def decode_weights(gen: Generation) -> np.ndarray:
    """Weights on :func:`decode_pasts`: ``weights @ decode_ms`` sums every decode step, interpolated linearly."""
    pasts = decode_pasts(gen)
    every = np.arange(gen.prompt_tokens, gen.prompt_tokens + gen.new_tokens - 1)
    return np.array([np.interp(every, pasts, row).sum() for row in np.eye(len(pasts))])


def generation_ms(gen: Generation, prefill_ms: float, decode_ms: Sequence[float], first_ms: float | None = None) -> float:
    """The objective: a generation's time (ms) from its prefill and the decode steps at :func:`decode_pasts`; a
    measured ``first_ms`` (the first step, after the prefill) stands for that step."""
    total = float(prefill_ms + decode_weights(gen) @ np.asarray(decode_ms, dtype=np.float64))
    return total + first_ms - decode_ms[0] if first_ms is not None and len(decode_ms) else total


def generation_parts(gen: Generation, prefill_ms: float, decode_ms: Sequence[float],
                     first_ms: float | None = None) -> dict[str, float]:
    """The objective and what an app feels of it: time to first token, mean per-token latency (nan for one token)."""
    total = generation_ms(gen, prefill_ms, decode_ms, first_ms)
    steps = gen.new_tokens - 1
    return {"generation_ms": total, "ttft_ms": float(prefill_ms),
            "per_token_ms": (total - prefill_ms) / steps if steps else float("nan")}


def is_generative(model: ov.Model) -> bool:
    """Whether ``model`` is a stateful decoder: variables, ``input_ids`` of dynamic length, inputs among LLM_INPUTS."""
    ids = [p.get_partial_shape() for p in model.inputs if "input_ids" in p.get_names()]
    return (bool(model.get_variables()) and len(ids) == 1 and ids[0].rank.is_static and ids[0][-1].is_dynamic
            and all(any(n in LLM_INPUTS for n in p.get_names()) for p in model.inputs))


def decode_clone(model: ov.Model, past: int) -> ov.Model:
    """A static clone of one decode step after ``past`` tokens, for costing: each ReadValue replaced by a Parameter
    of its state at that length, named as the ReadValue (a placement's names hold); ShapeError if it does not fit."""
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


def measurable_decode_clone(model: ov.Model, past: int) -> ov.Model:
    """:func:`decode_clone` as a stateless graph that runs, for profiling: each ``Assign`` (which the CPU plugin cannot
    run once its ``ReadValue`` is a Parameter) replaced by a ``Result`` of the new state, named as the ``Assign``, so
    every node and edge keeps its name. Fed the past K/V as inputs, it times one decode step after ``past``."""
    clone = decode_clone(model, past)
    for sink in list(clone.get_sinks()):
        if sink.get_type_name() != "Assign":
            continue
        result = ov.opset13.result(sink.input_value(0))
        result.set_friendly_name(sink.get_friendly_name())
        clone.add_results([result])
        clone.remove_sink(sink)
    for variable in list(clone.get_variables()):
        clone.remove_variable(variable)
    clone.validate_nodes_and_infer_types()
    return clone


def _edges(graph) -> list[tuple]:
    return list(zip([graph.names[s] for s in graph.edge_src], [graph.names[t] for t in graph.edge_dst],
                    graph.edge_src_port.tolist(), graph.edge_dst_port.tolist()))


def generation_costs(model: ov.Model, graph, cost, gen: Generation, cost_of: Callable,
                     clone: Callable[[ov.Model, int], ov.Model] = decode_clone) -> tuple[Any, Any]:
    """``(graph, cost)`` of the prefill (a GraphArrays and its CostModel) made the whole generation's: each decode
    step of ``decode_pasts`` cloned from the dynamic ``model`` (by ``clone``: :func:`measurable_decode_clone` where
    the costs are measured) and costed by ``cost_of(graph, prepared_clone)``, its nodes matched by
    name, node costs and crossing bytes added at the weights, link latency and submodel overhead times the number of
    inferences, activations the largest. Exact, a placement's predicted latency being linear in these parts."""
    row, edge = {n: i for i, n in enumerate(graph.names)}, {e: k for k, e in enumerate(_edges(graph))}
    compute, unfused = np.array(cost.compute_ms, dtype=np.float64), np.array(cost.unfused_ms, dtype=np.float64)
    edge_bytes, out_bytes = np.asarray(graph.edge_bytes, dtype=np.float64), np.array(graph.out_bytes)
    weights = decode_weights(gen)
    spread = None if cost.compute_spread_ms is None else np.array(cost.compute_spread_ms, dtype=np.float64)
    e2e_spread = None if cost.e2e_spread_ms is None else np.array(cost.e2e_spread_ms, dtype=np.float64)
    loaded = bool(getattr(cost, "loaded", False))
    for past, weight in zip(decode_pasts(gen), weights):
        prepared = prepare_model(clone(model, past))
        g = extract_graph(prepared)
        c = cost_of(g, prepared)
        mine = np.array([i for i, n in enumerate(g.names) if n in row], dtype=np.int64)
        theirs = np.array([row[g.names[i]] for i in mine], dtype=np.int64)
        compute[theirs] += weight * np.asarray(c.compute_ms)[mine]
        unfused[theirs] += weight * np.asarray(c.unfused_ms)[mine]
        if spread is not None and c.compute_spread_ms is not None:  # measured: a step's spread adds with its weight
            spread[theirs] += weight * np.asarray(c.compute_spread_ms)[mine]
        if e2e_spread is not None and c.e2e_spread_ms is not None:
            e2e_spread += weight * np.asarray(c.e2e_spread_ms, dtype=np.float64)
        loaded |= bool(getattr(c, "loaded", False))  # a decode step measured on a loaded machine
        out_bytes[theirs] = np.maximum(out_bytes[theirs], np.asarray(g.out_bytes)[mine])
        for k, e in enumerate(_edges(g)):
            if e in edge:
                edge_bytes[edge[e]] += weight * max(float(g.edge_bytes[k]), 0.0)
    runs = 1.0 + float(weights.sum())
    edge_bytes = np.rint(edge_bytes).astype(np.int64)  # on the cost too: a strategy's provider returns only it
    return (dataclasses.replace(graph, edge_bytes=edge_bytes, out_bytes=out_bytes),
            dataclasses.replace(cost, compute_ms=compute, unfused_ms=unfused, source=f"{cost.source} x {gen}",
                                edge_bytes=edge_bytes.astype(np.float64),
                                compute_spread_ms=spread, e2e_spread_ms=e2e_spread, loaded=loaded,
                                link_latency_ms=np.asarray(cost.link_latency_ms) * runs,
                                submodel_overhead_ms=np.asarray(cost.submodel_overhead_ms) * runs))


_SHAPE_ONLY = {"Convert", "Unsqueeze", "Squeeze", "Reshape"}


def position_limit(model: ov.Model) -> tuple[int, str] | None:
    """``(rows, name)`` of a table indexed by ``position_ids`` (a Gather of a Constant, indices through shape-only
    ops: a learned position embedding, a RoPE cache); None when the graph has none (no limit is invented)."""
    frontier = [p for p in model.get_parameters() if "position_ids" in p.output(0).get_names()]
    seen: set[str] = set()
    while frontier:
        for target in (t for out in frontier.pop().outputs() for t in out.get_target_inputs()):
            op = target.get_node()
            if op.get_type_name() == "Gather" and target.get_index() == 1:
                table, axis = op.input_value(0).get_node(), op.input_value(2).get_node()
                while table.get_type_name() == "Convert":
                    table = table.input_value(0).get_node()
                if table.get_type_name() == "Constant" and axis.get_type_name() == "Constant":
                    rows = table.get_output_partial_shape(0).to_shape()[int(axis.get_data().reshape(-1)[0])]
                    return int(rows), table.get_friendly_name()
            elif op.get_type_name() in _SHAPE_ONLY and target.get_index() == 0 and op.get_friendly_name() not in seen:
                seen.add(op.get_friendly_name())
                frontier.append(op)
    return None


def declared_positions(model: Any) -> tuple[int, str] | None:
    """``(max_position_embeddings, where)`` of the ``config.json`` beside a model path, unless RoPE is scaled."""
    try:  # docs/llm.md, "The LLM objective": an ov.Model (no path), no config or a malformed one say nothing
        path = Path(model).with_name("config.json")
        config = json.loads(path.read_text())
        rows, rope = config["max_position_embeddings"], config.get("rope_scaling") or config.get("rope_parameters")
    except (TypeError, OSError, ValueError, KeyError, AttributeError):
        return None
    scaled = isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) not in (None, "default")
    ok = isinstance(rows, int) and not isinstance(rows, bool) and rows > 0 and not scaled
    return (rows, f"max_position_embeddings in {str(path)!r}") if ok else None


def check_generation(generation: Any, model: ov.Model, source: Any = None) -> Generation | None:
    """``generation=`` checked against ``model``: a stateful decoder's (``Generation()`` when None, shortened to fit
    its positions), None for another model; ShapeError for a malformed value, a model no generation drives, or
    a generation past the positions (the graph's position table, else those of ``source``, the path ``model`` was
    read from: :func:`declared_positions`, read only then)."""
    limit, generative = None, is_generative(model)
    if generative:
        table = position_limit(model)
        limit = (table[0], f"the model's position table {table[1]!r}") if table else declared_positions(source)
    if generation is None:  # our guess: never an error
        if not generative or limit is None or sum(dataclasses.astuple(Generation())) - 1 <= limit[0]:
            return Generation() if generative else None
        return Generation((limit[0] + 1) // 2, limit[0] + 1 - (limit[0] + 1) // 2)
    if isinstance(generation, (tuple, list)) and len(generation) == 2:
        generation = Generation(*generation)
    counts = dataclasses.astuple(generation) if isinstance(generation, Generation) else ()
    if not counts or not all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c >= 1 for c in counts):
        raise ShapeError(f"generation must be ov_autoplace.Generation(prompt_tokens, new_tokens) or a (prompt, new) "
                         f"tuple of ints >= 1, e.g. Generation(128, 128) or (128, 128); got {generation!r}")
    generation = Generation(*(int(c) for c in counts))
    if not generative:
        raise ShapeError(f"generation={generation} applies to a stateful decoder (KV cache in ReadValue/Assign "
                         f"variables, an input_ids of dynamic length, inputs among {list(LLM_INPUTS)}); this model "
                         f"has {len(model.get_variables())} variable(s) and inputs "
                         f"{[p.get_any_name() for p in model.inputs]}: leave generation unset to place it for "
                         "single-shot latency")
    positions = generation.prompt_tokens + generation.new_tokens - 1
    if limit is not None and positions > limit[0]:
        raise ShapeError(f"{generation} needs {positions} positions (prompt_tokens + new_tokens - 1), but "
                         f"{limit[1]} has {limit[0]}: give a generation with prompt_tokens + new_tokens <= "
                         f"{limit[0] + 1}")
    return generation


__all__ = ["DECODE_POINTS", "Generation", "check_generation", "declared_positions", "decode_clone", "decode_pasts",
           "decode_weights", "generation_costs", "generation_ms", "generation_parts", "is_generative",
           "measurable_decode_clone", "position_limit"]
