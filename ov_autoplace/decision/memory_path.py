"""``memory_caps=``: each device's weights and KV cache kept under its cap, the split chosen by latency.

Its steps (check, place, enforce, check the compile's carry-over): docs/architecture.md, "Module notes",
ov_autoplace/decision/memory_path.py.
"""

from __future__ import annotations

import dataclasses
import logging
import types

import numpy as np
import openvino as ov

from ov_autoplace.devices.properties import with_runtime_options
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.memory_need import MemoryNeed, check_caps_hold, context_tokens, memory_need, state_bytes, \
    with_caps
from ov_autoplace.costmodel.prior_costs import prior_cost_model
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.decision.request import PlacementRequest
from ov_autoplace.devices.facts import read_device_facts
from ov_autoplace.devices.memory_caps import format_bytes
from ov_autoplace.errors import MemoryCapError
from ov_autoplace.graph.arrays import GraphArrays, NodeRole, extract_graph
from ov_autoplace.measuring.profiler import device_memory_bytes
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.placement.legalizer import query_support
from ov_autoplace.placement.stateful import state_groups

logger = logging.getLogger("ov_autoplace")


def device_caps(req: PlacementRequest) -> np.ndarray:
    """float64 [D] in ``req.devices`` order: the smaller of the user's cap and the plugin's report (inf: neither)."""
    return np.array([min(float(req.memory_caps.get(d, np.inf)), device_memory_bytes(req.core, d))
                     for d in req.devices], dtype=np.float64)


def context_of(req: PlacementRequest) -> int | None:
    """The tokens the KV cache is charged at: the declared generation's prompt + new tokens where the request
    carries one (a stateful decoder's ``generation=``), else None (``memory_need.context_tokens``' default)."""
    generation = req.generation
    return generation.prompt_tokens + generation.new_tokens if generation is not None else None


def memory_request(req: PlacementRequest, graph: GraphArrays) -> tuple[MemoryNeed, np.ndarray]:
    """``(need, caps)`` of ``graph`` (the prepared placement model) under ``req.memory_caps``; MemoryCapError when
    no split can fit (step 1 of the module doc). Cheap: sums over the graph, nothing measured."""
    need, caps = memory_need(graph, req.model, context_of(req)), device_caps(req)
    groups = [(g.label, g.members) for g in state_groups(graph)]
    check_caps_hold(graph, need, req.devices, caps, groups)
    return need, caps


def with_reported_caps(req: PlacementRequest) -> PlacementRequest:
    """``req`` with each device capped at its plugin's memory report where the plain call would put more there
    (HETERO's split: each node on the first device that runs it), else ``req`` (docs/llm.md, "Memory")."""
    reports = {d: device_memory_bytes(req.core, d) for d in req.devices if d not in req.memory_caps}
    reports = {d: r for d, r in reports.items() if np.isfinite(r)}
    if not reports:
        return req
    tokens = context_tokens(req.model, context_of(req))
    weights = sum(op.get_byte_size() for op in req.model.get_ops() if op.get_type_name() == "Constant")
    states, kv = sum(state_bytes(req.model, tokens).values()), {d: _kv_share(req, d) for d in reports}
    if all(weights + kv[d] * states <= r for d, r in reports.items()):  # the whole model fits each: no query
        return req
    try:
        prepared = prepare_model(req.placement_model)
        graph = req.placement_graph(prepared)
        need = memory_need(graph, req.model, tokens)
        on = query_support(req.core, prepared, graph, req.devices).argmax(axis=1)  # HETERO's own split
        held = dict(zip(req.devices, _held_bytes(graph, on, need.state, [kv.get(d, 0) for d in req.devices])))
    except Exception as exc:  # noqa: BLE001 - our machinery, at the door: the call goes on as OpenVINO's would
        logger.warning("%s: memory report not applied: reading the model's need failed (%s: %s)",
                       ", ".join(reports), type(exc).__name__, exc)
        return req
    over = {d: int(r) for d, r in reports.items() if held[d] > r}
    if not over:
        return req
    said = ", ".join(f"{d} reports {format_bytes(r)} of memory and the plain call puts {format_bytes(held[d])} "
                     "there" for d, r in over.items())
    capped = dataclasses.replace(req, memory_caps=types.MappingProxyType({**req.memory_caps, **over}),
                                 reported_caps=tuple(over))
    try:
        memory_request(capped, graph)
    except MemoryCapError as exc:
        if req.memory_caps:
            raise  # the caller's caps beside the report
        logger.warning("%s, and no split fits the reports (%s); compiling as plain OpenVINO would", said, exc)
        return req
    logger.info("%s (the model needs %s): placed within it, as memory_caps=%r would", said, need.describe(), over)
    return capped


def _held_bytes(graph: GraphArrays, on: np.ndarray, states, kv) -> np.ndarray:
    """Bytes [D] each device holds with ``graph``'s nodes on the device indices ``on``: the weights its nodes read,
    each Constant once per device, and ``kv[d]`` times the bytes of the ``states`` (ReadValue name -> bytes) it
    holds (its share of the KV cache as it stores it)."""
    src, dst = graph.edge_src, graph.edge_dst
    reads = (graph.role[src] == NodeRole.CONSTANT) & (graph.role[dst] == NodeRole.COMPUTE)
    index = {name: i for i, name in enumerate(graph.names)}
    held = np.zeros(len(kv))
    for d, share in enumerate(kv):
        weights = np.unique(src[reads & (on[dst] == d)])
        cache = sum(b for name, b in states.items() if name in index and on[index[name]] == d)
        held[d] = float(np.maximum(graph.out_bytes[weights], 0).sum()) + share * cache
    return held


def check_carried_within_caps(req: PlacementRequest, static: Placement, carried: Placement,
                              dynamic: ov.Model) -> None:
    """MemoryCapError when carrying ``static`` (fitted on the clone) over to the ``dynamic`` model, as the compile
    does, left a device holding more than before and more than its cap (:func:`_held_bytes`, the KV cache at its
    declared bytes; docs/llm.md, "Memory")."""
    graph = extract_graph(dynamic)
    caps, states = device_caps(req), state_bytes(req.model, context_tokens(req.model, context_of(req)))
    slot = {device: d for d, device in enumerate(req.devices)}
    ones = [1.0] * len(req.devices)
    before, after = (_held_bytes(graph, np.array([slot.get(placement.assignment.get(n, carried.assignment[n]), -1)
                                                  for n in graph.names]), states, ones)
                     for placement in (static, carried))  # a node only the dynamic model has: where it is carried
    for d, device in enumerate(req.devices):
        if after[d] > max(before[d], caps[d]):
            moved = [n for n in graph.names if carried.assignment[n] == device and static.assignment.get(n, device)
                     != device]
            raise MemoryCapError(
                f"carried over to the dynamic model, the placement moved {len(moved)} node(s) onto {device} (e.g. "
                f"{moved[:3]}), which would hold {format_bytes(after[d])} of its cap {format_bytes(caps[d])}; "
                "nothing was compiled: give the model static shapes (reshape it first) or raise the cap")


def _kv_share(req: PlacementRequest, device: str) -> float:
    """A decoder's KV cache as ``device`` will store it over its variables' declared bytes: the
    ``KV_CACHE_PRECISION`` its compile gets (the call's, else the model's runtime options:
    ``properties.with_runtime_options``), else its plugin's; 1 for any other model or where none is reported."""
    if not req.generation:
        return 1.0
    try:
        declared = max(v.get_info().data_type.size for v in req.model.get_variables())
        given = with_runtime_options(req.core, req.model, [device], req.props)
        own = given.get("DEVICE_PROPERTIES")  # a section given as text: its top level and the plugin's
        own = own.get(device, {}) if isinstance(own, dict) else {}
        value = {**given, **own}.get("KV_CACHE_PRECISION") or req.core.get_property(device, "KV_CACHE_PRECISION")
        stored = value.size if isinstance(value, ov.Type) else getattr(ov.Type, str(value).lower()).size
        return min(1.0, stored / declared)
    except Exception:  # noqa: BLE001 - no variables, no such property: the declared bytes
        return 1.0


def capped_cost(req: PlacementRequest, graph: GraphArrays, cost: CostModel | None) -> CostModel:
    """``cost`` (the strategy's; the prior's where it has none) charging the model's memory need under the caps."""
    if cost is None or tuple(cost.devices) != tuple(req.devices):
        cost = prior_costs(req, graph)
    need, caps = memory_request(req, graph)
    return with_caps(cost, need, caps)


def prior_costs(req: PlacementRequest, graph: GraphArrays) -> CostModel:
    """The prior's CostModel of ``graph`` on ``req.devices``; MemoryCapError when a device reports nothing to price."""
    prior = prior_cost_model(graph, [read_device_facts(req.core, d) for d in req.devices])
    if prior.cost is None:
        raise MemoryCapError(f"memory_caps: device(s) {list(prior.unknown)} report none of the properties the prior "
                             "prices placements with, so no split within the caps can be chosen by latency; measure "
                             "them first (`ov-autoplace profile`, or profile='now')")
    return prior.cost


def note_residency(placement: Placement, graph: GraphArrays, cost: CostModel) -> Placement:
    """``placement`` (placed within the caps, step 2) noting the bytes each device holds of its cap."""
    resident = _resident(placement, graph, cost)
    note = "memory caps: " + ", ".join(f"{d} {format_bytes(r)} of {format_bytes(c)}"
                                       for d, r, c in zip(cost.devices, resident, cost.device_memory_bytes))
    placement.notes.append(note)
    logger.info("placed within the memory caps (%s): %s; %s", cost.label, placement.counts_per_device(), note)
    return placement


def _resident(placement: Placement, graph: GraphArrays, cost: CostModel) -> np.ndarray:
    """Bytes [D] each device holds under ``placement`` as ``cost`` charges them."""
    return Simulator(cost, graph).resident_bytes(placement.device_indices(graph.names, cost.devices)[None])[0]


__all__ = ["capped_cost", "check_carried_within_caps", "context_of", "device_caps", "memory_request",
           "note_residency", "prior_costs", "with_reported_caps"]
