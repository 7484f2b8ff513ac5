"""PERF_COUNT times of a compiled model, mapped back to the prepared model's ops (the profiler's measurement).

The rest: docs/architecture.md, "Module notes", ov_autoplace/measuring/perf_counts.py.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from typing import Sequence

import numpy as np
import openvino as ov
from openvino import opset13 as ops

from ov_autoplace.measuring.noise import measured_window, per_run_node_ms
from ov_autoplace.devices.timing import measure_latency, random_inputs
from ov_autoplace.graph.arrays import GraphArrays, NodeRole

logger = logging.getLogger(__name__)


# --- runtime graph -> prepared ops ---------------------------------------------------------------

#: Op types whose kernel absorbs fused neighbours (their runtime node's primary op).
HEAVY_OP_TYPES = frozenset({
    "Convolution", "GroupConvolution", "ConvolutionBackpropData", "GroupConvolutionBackpropData", "MatMul",
    "ScaledDotProductAttention", "Einsum", "MVN", "Softmax", "AvgPool", "MaxPool", "Interpolate", "ReduceMean",
})


@dataclasses.dataclass
class _RuntimeNode:
    name: str
    originals: list[int]  # compute nodes of the graph it names, in listed order
    producers: list[str]
    consumers: list[str] = dataclasses.field(default_factory=list)


def runtime_graph(compiled: ov.CompiledModel, index: dict[str, int]) -> dict[str, _RuntimeNode]:
    nodes: dict[str, _RuntimeNode] = {}
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        listed = info["originalLayersNames"].astype(str) if "originalLayersNames" in info else ""
        originals = [index[n] for n in (s.strip() for s in listed.split(",")) if n in index]
        producers = [op.input_value(k).get_node().get_friendly_name() for k in range(op.get_input_size())]
        nodes[op.get_friendly_name()] = _RuntimeNode(op.get_friendly_name(), originals, producers)
    for node in nodes.values():
        for p in node.producers:
            if p in nodes:
                nodes[p].consumers.append(node.name)
    return nodes


def _primary(originals: list[int], graph: GraphArrays) -> int:
    heavy = [i for i in originals if graph.op_types[i] in HEAVY_OP_TYPES]
    return heavy[0] if heavy else originals[0]


def _nearest_mapped(start: _RuntimeNode, nodes: dict[str, _RuntimeNode], direction: str) -> _RuntimeNode | None:
    """Breadth-first along consumers or producers through unmapped nodes to the first mapped one."""
    seen, frontier = {start.name}, list(getattr(start, direction))
    while frontier:
        nxt = []
        for name in frontier:
            node = nodes.get(name)
            if node is None or name in seen:
                continue
            seen.add(name)
            if node.originals:
                return node
            nxt.extend(getattr(node, direction))
        frontier = nxt
    return None


def _attach_unnamed(graph: GraphArrays, owner: dict[int, _RuntimeNode], present: np.ndarray) -> int:
    """Give compute ops no runtime node names to the runtime node of a named neighbour. More: docs/architecture.md,
    "Module notes", perf_counts.py."""
    pending = [i for i in np.flatnonzero(present & (graph.role == NodeRole.COMPUTE)) if i not in owner]
    attached = 0
    while pending:
        left = []
        for i in pending:
            near = [j for j in (*graph.successors(i).tolist(), *graph.predecessors(i).tolist()) if j in owner]
            if not near:
                left.append(i)
                continue
            node = owner[near[0]]
            node.originals.insert(0, i) if graph.op_types[i] in HEAVY_OP_TYPES else node.originals.append(i)
            owner[i] = node
            attached += 1
        if len(left) == len(pending):
            break
        pending = left
    return attached


def reports_running_average(core: ov.Core, device: str) -> bool:
    """Whether ``device``'s plugin reports each node's running average since compile (the CPU plugin does).

    Checked on OpenVINO 2026.4: a fresh ResNet-50 on CPU reports per-node
    times whose sum falls run after run towards the steady state while
    ``n * avg_n - (n-1) * avg_(n-1)`` matches each run's wall time.
    """
    try:
        return "intel_cpu" in core.get_versions(device)[device].description
    except Exception:  # noqa: BLE001 - unknown plugin: assume per-run values
        return False


def warmed_up(compiled: ov.CompiledModel, warmup: int, runs_before: int):
    """A new request of ``compiled`` run ``warmup`` times on random inputs (an LLM: each run a prefill from an empty
    state): (request, inputs, stateful, runs since compile, node times so far: none before the first run)."""
    request = compiled.create_infer_request()
    inputs = random_inputs(compiled)
    stateful = bool(request.query_state())
    for _ in range(warmup):
        if stateful:
            request.reset_state()
        request.infer(inputs)
    before = runs_before + warmup
    return request, inputs, stateful, before, (executed_ms(request) if before else {})


def profile_runs(compiled: ov.CompiledModel, warmup: int, iterations: int, running_average: bool,
                 companion: ov.CompiledModel | None = None, chunks: int = 4, *, runs_before: int = 0,
                 per_run: list | None = None):
    """Per-runtime-node time (ms per inference) over ``iterations`` profiled runs after ``warmup``; with
    ``companion``, its interleaved end-to-end samples too. The arguments and the error: docs/architecture.md,
    "Module notes"."""
    request, inputs, stateful, before, start = warmed_up(compiled, warmup, runs_before)
    runs: list[dict[str, float]] = []
    snapshots: list[dict[str, float]] = []
    e2e: list[float] = []
    chunks = max(1, min(chunks, iterations))
    for chunk in range(chunks):
        for _ in range(iterations // chunks + (chunk < iterations % chunks)):
            if stateful:
                request.reset_state()
            request.infer(inputs)
            if not running_average or per_run is not None:
                snapshots.append(executed_ms(request))
        if companion is not None:
            e2e += measure_latency(companion, inputs, warmup=warmup if chunk == 0 else 0,
                                   iterations=max(iterations, 12) // chunks).samples_ms.tolist()
    if not running_average:
        runs = snapshots
    if per_run is not None:
        per_run.extend(per_run_node_ms(start, snapshots, before, running_average))
    return window_ms(request, start, runs, before, iterations, running_average), e2e


def profiled_window(compiled: ov.CompiledModel, running_average: bool, warmup: int, iterations: int,
                    companion: ov.CompiledModel):
    """A profiled window of ``compiled`` for :func:`measured_window`, each call continuing the run count."""
    done = [0]

    def run():
        per_run: list[dict[str, float]] = []
        node_ms, e2e = profile_runs(compiled, warmup, iterations, running_average, companion=companion,
                                     runs_before=done[0], per_run=per_run)
        done[0] += warmup + iterations
        return node_ms, e2e, per_run
    return run


def executed_ms(request: ov.InferRequest) -> dict[str, float]:
    """Each executed runtime node's time (ms) as ``profiling_info`` reports it now."""
    return {p.node_name: p.real_time.total_seconds() * 1e3 for p in request.profiling_info
            if p.status == ov.ProfilingInfo.Status.EXECUTED}


def window_ms(request: ov.InferRequest, start: dict[str, float], runs: list[dict[str, float]], warmup: int,
              done: int, running_average: bool) -> dict[str, float]:
    """Per-runtime-node ms per inference over ``done`` profiled runs after ``warmup`` (see ``profile_runs``):
    from the running averages at the window's start and end, or the median of the per-run ``runs``."""
    if running_average:
        end, total = executed_ms(request), warmup + done
        return {k: max(0.0, (total * v - warmup * start.get(k, 0.0)) / done) for k, v in end.items()}
    names = sorted({n for run in runs for n in run})
    return {n: float(np.median([run.get(n, 0.0) for run in runs])) for n in names}


def map_times(compiled: ov.CompiledModel, graph: GraphArrays, node_ms: dict[str, float],
              present: np.ndarray | None = None, runs: Sequence[dict[str, float]] = ()):
    """Per-op times (ms, unscaled), per-device fusion map {i: primary}, stats, and the per-op times of each of
    ``runs`` (per-run runtime node times, ``noise.per_run_node_ms``; [len(runs), N]), from runtime node times.

    ``present``: the graph nodes the compiled model holds (default: all, the whole model). With a
    subset (ops compiled alone, not connected to each other) no unnamed op is attached to a neighbour.
    """
    whole_model = present is None
    present = np.ones(graph.num_nodes, dtype=bool) if present is None else present
    counts = Counter(graph.names)  # a duplicated friendly name cannot be mapped back
    index = {name: i for i, name in enumerate(graph.names)
             if present[i] and graph.role[i] == NodeRole.COMPUTE and counts[name] == 1}
    nodes = runtime_graph(compiled, index)
    owner: dict[int, _RuntimeNode] = {}
    for node in nodes.values():
        for i in node.originals:
            owner.setdefault(i, node)
    named = np.zeros(graph.num_nodes, dtype=bool)
    named[list(owner)] = True
    attached = _attach_unnamed(graph, owner, present) if whole_model else 0
    primary_somewhere = np.zeros(graph.num_nodes, dtype=bool)
    fused: dict[int, int] = {}
    for node in nodes.values():
        if node.originals:
            p = _primary(node.originals, graph)
            primary_somewhere[p] = True
            for i in node.originals:
                if i != p:
                    fused.setdefault(i, p)
    fused = {i: p for i, p in fused.items() if not primary_somewhere[i]}
    targets: dict[str, int | None] = {}  # runtime node -> the op that gets its time (None: spread over all)
    for name in {n for run in (node_ms, *runs) for n in run}:
        node = nodes.get(name)
        target = node if node is not None and node.originals else None
        if target is None and node is not None:
            target = _nearest_mapped(node, nodes, "consumers") or _nearest_mapped(node, nodes, "producers")
        targets[name] = None if target is None else _primary(target.originals, graph)
    times, unmapped, spread = _route(node_ms, targets, nodes, graph.num_nodes)
    run_times = np.array([_route(run, targets, nodes, graph.num_nodes)[0] for run in runs]).reshape(
        len(runs), graph.num_nodes)
    stats = dict(profiled_sum_ms=float(sum(node_ms.values())), unmapped_ms=unmapped, spread_ms=spread,
                 runtime_nodes=len(nodes), executed_nodes=len(node_ms), named_nodes=int(named.sum()),
                 attached_nodes=attached)
    return times, fused, stats, run_times


def _route(node_ms: dict[str, float], targets: dict[str, int | None], nodes: dict[str, _RuntimeNode],
           num_nodes: int) -> tuple[np.ndarray, float, float]:
    """Runtime node times given to their ops (see the module doc): per-op times, unmapped ms, spread ms."""
    times = np.zeros(num_nodes)
    unmapped = spread = 0.0
    for name, ms in node_ms.items():
        node = nodes.get(name)
        if node is None or not node.originals:
            unmapped += ms
        if targets[name] is None:
            spread += ms
        else:
            times[targets[name]] += ms
    if spread > 0:
        mapped = times.sum()
        times += spread * times / mapped if mapped > 0 else 0.0
    return times, unmapped, spread


# --- unfused cost: fused ops compiled alone --------------------------------------------------------

def _isolation_model(prepared: ov.Model, graph: GraphArrays, node_ids: Sequence[int]) -> ov.Model:
    """A model holding a copy of each listed op alone: non-Constant inputs become Parameters."""
    clone = prepared.clone()
    by_name = {op.get_friendly_name(): op for op in clone.get_ordered_ops()}
    params, results = [], []
    for i in node_ids:
        op = by_name[graph.names[i]]
        for port in op.inputs():
            source = port.get_source_output()
            if source.get_node().get_type_name() == "Constant":
                continue
            param = ops.parameter(source.get_partial_shape(), source.get_element_type())
            param.set_friendly_name(f"{graph.names[i]}/isolated_input_{port.get_index()}")
            port.replace_source_output(param.output(0))
            params.append(param)
        results.extend(ops.result(out) for out in op.outputs())
    return ov.Model(results, params, "fused_ops_isolated")


def unfused_times(core, prepared, graph, device, node_ids, warmup, iterations) -> np.ndarray | None:
    """Unscaled times of ``node_ids`` compiled alone on ``device`` (None if that model cannot run)."""
    try:
        compiled = core.compile_model(_isolation_model(prepared, graph, node_ids), device, {"PERF_COUNT": True})
        present = np.zeros(graph.num_nodes, dtype=bool)
        present[list(node_ids)] = True
        node_ms, _ = profile_runs(compiled, warmup, iterations, reports_running_average(core, device))
        times, _, _, _ = map_times(compiled, graph, node_ms, present)
    except Exception as exc:  # noqa: BLE001 - a best-effort estimate must not cost the whole profile
        logger.warning("could not run the %d fused ops alone on %s (%s: %s); their unfused cost falls back to "
                       "the device's measured ms per output byte", len(node_ids), device, type(exc).__name__, exc)
        return None
    return times[np.asarray(node_ids, dtype=np.int64)]


def ms_per_byte_fallback(times: np.ndarray, graph: GraphArrays) -> float:
    """Median ms per output byte of the light (non-heavy) ops that ran on their own."""
    light = [i for i in np.flatnonzero(times > 0) if graph.op_types[i] not in HEAVY_OP_TYPES
             and graph.out_bytes[i] > 0]
    return float(np.median(times[light] / graph.out_bytes[light])) if light else 0.0
