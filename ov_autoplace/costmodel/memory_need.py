"""What a model needs resident on the device that runs each node: the weights it reads and, on an LLM, each
variable's KV cache at a declared context, charged on its ReadValue (the rule: docs/llm.md, "Memory")."""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np
import openvino as ov

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.devices.memory_caps import format_bytes
from ov_autoplace.errors import MemoryCapError
from ov_autoplace.graph.arrays import GraphArrays, NodeRole

#: Positions of KV cache charged per variable when the caller declares no generation: a 128-token prompt and 128
#: new tokens, the LLM objective's default mix.
DEFAULT_CONTEXT_TOKENS = 256

_POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


def weight_bytes(graph: GraphArrays) -> np.ndarray:
    """int64 [N]: the bytes of the Constants each compute node reads (the module doc)."""
    memory = np.zeros(graph.num_nodes, dtype=np.int64)
    src, dst = graph.edge_src, graph.edge_dst
    from_const = (graph.role[src] == NodeRole.CONSTANT) & (graph.role[dst] == NodeRole.COMPUTE)
    np.add.at(memory, dst[from_const], np.maximum(graph.out_bytes[src[from_const]], 0))
    return memory


def max_positions(model: ov.Model) -> int | None:
    """The model's maximum positions where its runtime info states them (an exporter's config), else None."""
    for key in _POSITION_KEYS:
        try:
            value = int(model.get_rt_info(key).astype(str)) if model.has_rt_info(key) else 0
        except (RuntimeError, ValueError, TypeError):
            continue
        if value > 0:
            return value
    return None


def context_tokens(model: ov.Model, declared: int | None = None) -> int:
    """The context length the KV cache is charged at (the module doc): ``declared`` (prompt + new tokens), else
    :data:`DEFAULT_CONTEXT_TOKENS`, capped at the model's maximum positions."""
    tokens = int(declared) if declared else DEFAULT_CONTEXT_TOKENS
    limit = max_positions(model)
    return min(tokens, limit) if limit else tokens


def state_bytes(model: ov.Model, tokens: int) -> dict[str, int]:
    """Bytes of each variable's state at ``tokens`` positions, by its ReadValue's friendly name (the module doc)."""
    out, declared = {}, {v.get_info().variable_id: v.get_info() for v in model.get_variables()}
    for op in model.get_ordered_ops():
        if op.get_type_name() != "ReadValue":
            continue
        shape, element, info = op.get_output_partial_shape(0), op.get_output_element_type(0), declared.get(
            op.get_variable_id())
        if info is not None:
            shape = info.data_shape if info.data_shape.rank.is_static else shape
            element = info.data_type if not info.data_type.is_dynamic() else element
        if shape.rank.is_dynamic:
            continue  # nothing declared to size it by
        dims = [d.get_length() if d.is_static else (1 if axis == 0 else tokens) for axis, d in enumerate(shape)]
        size = element.size if not element.is_dynamic() else 4
        out[op.get_friendly_name()] = int(np.prod(dims, dtype=np.int64)) * int(size)
    return out


@dataclasses.dataclass(frozen=True)
class MemoryNeed:
    """Resident bytes per node of a graph (weights + KV cache), and what they are made of."""

    node_bytes: np.ndarray  # int64 [N]: weights read plus a ReadValue's KV cache
    state: Mapping[str, int]  # ReadValue name -> KV bytes
    tokens: int  # the context length the KV cache is charged at
    unique_bytes: int  # every Constant once plus the KV cache: a lower bound of what any split needs in total

    def describe(self) -> str:
        weights = self.unique_bytes - sum(self.state.values())
        kv = f" + KV cache {format_bytes(sum(self.state.values()))} ({len(self.state)} variable(s) at " \
             f"{self.tokens} tokens)" if self.state else ""
        return f"weights {format_bytes(weights)}{kv}"


def memory_need(graph: GraphArrays, model: ov.Model, tokens: int | None = None) -> MemoryNeed:
    """The :class:`MemoryNeed` of ``graph`` (the prepared placement model); ``model``: the caller's model, whose
    variables declare the KV cache's shapes. ``tokens``: the declared context (see :func:`context_tokens`)."""
    tokens = context_tokens(model, tokens)
    state = state_bytes(model, tokens) if graph.variables else {}
    need = weight_bytes(graph)
    index = {name: i for i, name in enumerate(graph.names)}
    charged = {}
    for name, nbytes in state.items():
        if name in index:
            need[index[name]] += nbytes
            charged[name] = nbytes
    feeds = np.zeros(graph.num_nodes, dtype=bool)
    feeds[graph.edge_src[graph.role[graph.edge_dst] == NodeRole.COMPUTE]] = True
    constants = (graph.role == NodeRole.CONSTANT) & feeds
    unique = int(np.maximum(graph.out_bytes[constants], 0).sum()) + sum(charged.values())
    return MemoryNeed(need, charged, tokens, unique)


def with_caps(cost: CostModel, need: MemoryNeed, caps: Sequence[float]) -> CostModel:
    """``cost`` charging ``need`` per node, each device's capacity the smaller of its own and ``caps`` (D, in
    ``cost.devices`` order; inf where uncapped)."""
    capacity = np.minimum(np.asarray(cost.device_memory_bytes, np.float64), np.asarray(caps, np.float64))
    return dataclasses.replace(cost, node_memory_bytes=need.node_bytes.astype(np.int64), device_memory_bytes=capacity,
                               source=f"{cost.source}; memory caps")


def check_caps_hold(graph: GraphArrays, need: MemoryNeed, devices: Sequence[str], caps: Sequence[float],
                    groups: Sequence[tuple[str, np.ndarray]] = ()) -> None:
    """MemoryCapError when no split can fit: the largest node (a weight, or a variable's cache with its ``groups``
    member nodes, which share one device) fits under no cap, or every device together holds less than the model.
    Cheap (sums over the graph): run before anything is profiled or compiled."""
    caps = np.asarray(caps, np.float64)
    stated = ", ".join(f"{d} {format_bytes(c)}" for d, c in zip(devices, caps) if np.isfinite(c))
    largest = float(caps.max())
    k = int(np.argmax(need.node_bytes))
    if need.node_bytes[k] > largest:
        kv = need.state.get(graph.names[k], 0)
        kind = (f"its KV cache at {need.tokens} tokens" + (" and weights" if need.node_bytes[k] > kv else "")
                if kv else "the weights it reads")
        raise MemoryCapError(
            f"node {graph.names[k]!r} alone needs {format_bytes(need.node_bytes[k])} ({kind}), more than any device "
            f"may hold (memory caps: {stated}); a node is never split across devices: raise a cap to at least "
            f"{format_bytes(need.node_bytes[k])}")
    for label, members in groups:
        total = float(need.node_bytes[members].sum())
        if total > largest:
            raise MemoryCapError(
                f"{label} and the nodes between them share one device and need {format_bytes(total)} (its KV cache "
                f"at {need.tokens} tokens and their weights), more than any device may hold (memory caps: {stated}); "
                f"raise a cap to at least {format_bytes(total)} or charge a shorter context")
    if need.unique_bytes > caps.sum():
        raise MemoryCapError(
            f"the model needs at least {format_bytes(need.unique_bytes)} ({need.describe()}) and the devices may hold "
            f"{format_bytes(caps.sum())} together (memory caps: {stated}): "
            f"{format_bytes(need.unique_bytes - caps.sum())} missing; raise the caps or add a device")


__all__ = ["DEFAULT_CONTEXT_TOKENS", "MemoryNeed", "check_caps_hold", "context_tokens", "max_positions",
           "memory_need", "state_bytes", "weight_bytes", "with_caps"]
