"""OpenVINO's own multi-device modes, as strategies the benchmark can measure and price.

Each strategy says how OpenVINO itself compiles the model in its mode
(:meth:`openvino_compile`: the device string and properties the benchmark
compiles measured rows with) and which device each node ends up on
(:meth:`propose`, so the simulator can price the mode on simulated platforms).

* :class:`OpenVINOHeteroAutoStrategy` - ``HETERO:<devices>`` without affinities:
  HETERO's greedy rule, every node on the first device (priority order) that
  supports it.
* :class:`OpenVINOPipelineParallelStrategy` - HETERO with
  ``MODEL_DISTRIBUTION_POLICY=PIPELINE_PARALLEL``: the model is cut into
  contiguous stages by device memory.
* :class:`OpenVINOAutoStrategy` - ``AUTO``: one device for the whole model.

When ``context.core`` has the devices (the testbed), the placement is read from
OpenVINO itself (``query_model`` / ``EXECUTION_DEVICES``). Otherwise (simulated
platforms: there is no "GPU" on this machine) the rule is emulated from
``context.support`` and ``last_emulated`` is set so results can be labelled.
"""

from __future__ import annotations

import logging
from typing import Literal, Sequence

import numpy as np

from ov_autoplace.devices.kinds import CPU, GPU, kind_of
from ov_autoplace.devices.device_strings import check_devices_present
from ov_autoplace.errors import DeviceError
from ov_autoplace.graph.arrays import NodeRole
from ov_autoplace.strategies.base import PlacementContext, PlacementStrategy
from ov_autoplace.strategies.cost_based import CostProvider, resolve_cost

log = logging.getLogger(__name__)

PIPELINE_PARALLEL = {"MODEL_DISTRIBUTION_POLICY": "PIPELINE_PARALLEL"}
AUTO_LATENCY = {"PERFORMANCE_HINT": "LATENCY"}
#: HETERO's estimate of the memory a stage needs: 1.2 x its weights (hetero plugin, query_model_update).
PIPELINE_HEADROOM = 1.2


def _anchor_fill(context: PlacementContext, device: np.ndarray) -> np.ndarray:
    """Give unplaced nodes (-1) a device: a consumer's, else a producer's, else the first device.

    The legalizer re-places Parameters, Constants and Results itself; this only
    makes the array complete (HETERO's query lists them too, so this is rare).
    """
    graph = context.graph
    for i in range(graph.num_nodes - 1, -1, -1):  # reverse topological order: consumers are decided first
        if device[i] < 0:
            placed = [int(device[j]) for j in graph.successors(i) if device[j] >= 0]
            placed = placed or [int(device[j]) for j in graph.predecessors(i) if device[j] >= 0]
            device[i] = placed[0] if placed else 0
    return device


def _devices_present(core, devices: Sequence[str]) -> bool:
    """Whether every one of ``devices`` is on ``core`` (False without a core): the real compile can be asked."""
    try:
        return core is not None and check_devices_present(core, devices) is None
    except DeviceError:
        return False


def _from_query(context: PlacementContext, mapping: dict[str, str]) -> tuple[np.ndarray, int]:
    """Device index per node from a ``query_model`` result; returns (array, number of nodes it omitted)."""
    index = {name: k for k, name in enumerate(context.devices)}
    device = np.array([index.get(mapping.get(name, ""), -1) for name in context.graph.names], dtype=np.int64)
    missing = int((device < 0).sum())
    return _anchor_fill(context, device), missing


class _OpenVINOMode(PlacementStrategy):
    """Shared bookkeeping: whether the last proposal was read from OpenVINO or emulated."""

    #: True when the last propose() emulated OpenVINO's rule instead of asking OpenVINO.
    last_emulated: bool = False
    #: How the last proposal was obtained (for logs and report notes).
    last_note: str = ""

    def openvino_compile(self, devices: Sequence[str]) -> tuple[str, dict[str, str]]:
        raise NotImplementedError

    def _real(self, context: PlacementContext) -> bool:
        real = context.model is not None and _devices_present(context.core, context.devices)
        self.last_emulated = not real
        return real

    def _query(self, context: PlacementContext) -> np.ndarray:
        target, props = self.openvino_compile(context.devices)
        mapping = context.core.query_model(context.model, target, props)
        device, missing = _from_query(context, mapping)
        self.last_note = f"core.query_model({target!r}, {props}); {missing} node(s) not listed, placed beside neighbours"
        return device


class OpenVINOHeteroAutoStrategy(_OpenVINOMode):
    """HETERO without affinities: each node on the first device in priority order that supports it.

    Real: ``core.query_model(model, "HETERO:<devices>")``. Nodes the query does
    not list follow a consumer's device, else a producer's, else the first
    device (what the legalizer does with anchors). Emulated: the first
    supporting device per ``context.support`` (HETERO's documented greedy rule).
    """

    name = "OpenVINO HETERO auto"

    def openvino_compile(self, devices: Sequence[str]) -> tuple[str, dict[str, str]]:
        return "HETERO:" + ",".join(devices), {}

    def propose(self, context: PlacementContext) -> np.ndarray:
        if self._real(context):
            return self._query(context)
        self.last_note = "emulated: first device in priority order that supports each node"
        return np.argmax(context.support, axis=1).astype(np.int64)


class OpenVINOPipelineParallelStrategy(_OpenVINOMode):
    """HETERO ``MODEL_DISTRIBUTION_POLICY=PIPELINE_PARALLEL``: contiguous stages sized by device memory.

    Real: ``core.query_model`` with the policy (on the testbed both devices are
    CPUs, which HETERO assumes have enough memory, so the first takes it all).

    Emulated (the rule of the hetero plugin's ``query_model_update``, OpenVINO
    2024-2026): devices are visited in priority order; the last one takes what
    is left. A device with a known memory capacity ``M`` takes, in topological
    order, a prefix of the remaining nodes whose weights stay within a
    ``query_model_ratio`` of the remaining weights ``W``: all if ``M > W``,
    else ``M / 1.2`` bytes (HETERO budgets 1.2 x weights), or a share
    ``W * M / (memory of the remaining budgeted devices)`` when those together
    cannot hold the model and no CPU is among them. Nodes a device cannot run
    are left for the next. ``memory_rule="openvino"`` knows capacities the way
    OpenVINO does: only GPU-named devices report one (``GPU_DEVICE_TOTAL_MEM_SIZE``),
    CPU-named devices are assumed unbounded, others (NPU) report none and take
    everything they support. ``memory_rule="all"`` budgets every device by
    ``cost.device_memory_bytes``. Weights are ``cost.node_memory_bytes``;
    without a CostModel no capacity is known and, like OpenVINO, the split is
    plain HETERO greedy (everything the first device supports lands on it).
    """

    name = "OpenVINO HETERO PIPELINE_PARALLEL"

    def __init__(self, cost: CostProvider | None = None, *, memory_rule: Literal["openvino", "all"] = "openvino",
                 headroom: float = PIPELINE_HEADROOM) -> None:
        if memory_rule not in ("openvino", "all"):
            raise ValueError(f"memory_rule must be 'openvino' or 'all', got {memory_rule!r}")
        if not headroom >= 1.0:
            raise ValueError(f"headroom must be >= 1, got {headroom!r}")
        self.cost, self.memory_rule, self.headroom = cost, memory_rule, float(headroom)

    def openvino_compile(self, devices: Sequence[str]) -> tuple[str, dict[str, str]]:
        return "HETERO:" + ",".join(devices), dict(PIPELINE_PARALLEL)

    def propose(self, context: PlacementContext) -> np.ndarray:
        if self._real(context):
            return self._query(context)
        n, num_devices = context.graph.num_nodes, len(context.devices)
        if self.cost is None:
            weights, capacity = np.zeros(n), np.full(num_devices, np.inf)
        else:
            cost = resolve_cost(self.cost, context)  # not kept in last_cost: the guard must not alter OpenVINO's mode
            weights = np.maximum(np.asarray(cost.node_memory_bytes, np.float64), 0.0)
            capacity = np.asarray(cost.device_memory_bytes, np.float64).copy()
        if self.memory_rule == "openvino":
            for d, name in enumerate(context.devices):
                if kind_of(name) is not GPU:
                    capacity[d] = np.inf  # CPU: assumed to have enough; NPU and others: no capacity reported
        device = self._split(context, weights, capacity)
        stages = [context.devices[d] for d in dict.fromkeys(device[context.graph.role == NodeRole.COMPUTE].tolist())]
        self.last_note = f"emulated memory split ({self.memory_rule} capacities): stages {stages}"
        return device

    def _split(self, context: PlacementContext, weights: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        graph, support = context.graph, context.support
        compute = graph.role == NodeRole.COMPUTE
        device = np.full(graph.num_nodes, -1, dtype=np.int64)
        last = len(context.devices) - 1
        for d in range(last + 1):
            remaining = np.flatnonzero(compute & (device < 0))  # node ids are a topological order
            if remaining.size == 0:
                break
            budget = np.inf if d == last else self._budget(d, float(weights[remaining].sum()), capacity)
            used = 0.0
            for i in remaining.tolist():
                if not support[i, d]:
                    continue  # left for the next device
                if used + weights[i] > budget:
                    break  # the stage is full: the rest goes to later devices
                device[i] = d
                used += weights[i]
        stranded = compute & (device < 0)  # nothing at or after its stage runs it: the legalizer's rule
        device[stranded] = np.argmax(support[stranded], axis=1)
        return _anchor_fill(context, device)

    def _budget(self, d: int, remaining_weights: float, capacity: np.ndarray) -> float:
        """Bytes of weights device ``d`` takes (``ratio * W`` in HETERO's terms)."""
        mem = capacity[d]
        if not np.isfinite(mem) or mem > remaining_weights:
            return np.inf
        later = capacity[d:]
        budgeted = float(later[np.isfinite(later)].sum())
        if budgeted >= self.headroom * remaining_weights or np.isinf(later).any():
            return mem / self.headroom  # a later device (a CPU) can take the rest
        return remaining_weights * mem / budgeted if budgeted > 0 else 0.0

    def __repr__(self) -> str:
        return (f"OpenVINOPipelineParallelStrategy(cost={'None' if self.cost is None else type(self.cost).__name__}, "
                f"memory_rule={self.memory_rule!r}, headroom={self.headroom})")


class OpenVINOAutoStrategy(_OpenVINOMode):
    """AUTO: the whole model on the one device AUTO selects.

    Selection rule (OpenVINO docs, "Automatic Device Selection", 2025: "select
    the highest-priority device capable of supporting the given model", priority
    dGPU, then iGPU, then CPU, with NPU excluded from the *default* list unless
    named; if compiling on the selected device fails, AUTO tries the next one).
    The auto plugin's ``get_valid_device`` orders candidates dGPU > iGPU >
    other accelerators (NPU) > CPU when no order is given, and keeps the order
    of an explicit candidate list (``AUTO:CPUF,CPU`` picks CPUF on the testbed).
    ``order="default"`` (default) therefore lists the candidates in the default
    priority (:meth:`openvino_compile` -> ``AUTO:GPU,NPU,CPU`` on the laptop),
    ``order="listed"`` keeps the caller's device order.

    Real: ``core.compile_model(model, "AUTO:...", {"PERFORMANCE_HINT": "LATENCY"})``
    and ``EXECUTION_DEVICES`` (if it names several, the CPU is AUTO's start-up
    helper and the other is the choice). Emulated: the first device in that
    order whose ``context.support`` column covers every node. ``GPU`` devices
    are integrated unless named in ``discrete_gpus`` (or the core reports
    ``DEVICE_TYPE`` discrete). The choice is kept in ``last_choice``.
    """

    name = "OpenVINO AUTO"

    def __init__(self, *, order: Literal["default", "listed"] = "default", discrete_gpus: Sequence[str] = ()) -> None:
        if order not in ("default", "listed"):
            raise ValueError(f"order must be 'default' or 'listed', got {order!r}")
        self.order, self.discrete_gpus = order, tuple(discrete_gpus)
        self.last_choice: str | None = None

    def priority(self, device: str, core=None) -> int:
        """AUTO's default class of ``device``: 0 dGPU, 1 iGPU, 2 other accelerators (NPU), 3 CPU."""
        kind = kind_of(device)
        if kind is CPU:
            return 3
        if kind is GPU:
            discrete = device in self.discrete_gpus
            if core is not None and not discrete:
                try:
                    discrete = str(core.get_property(device, "DEVICE_TYPE")).lower().endswith("discrete")
                except Exception:  # noqa: BLE001 - no such device or property: integrated
                    discrete = False
            return 0 if discrete else 1
        return 2

    def candidates(self, devices: Sequence[str], core=None) -> list[str]:
        """The devices in the order AUTO tries them."""
        if self.order == "listed":
            return list(devices)
        return sorted(devices, key=lambda d: self.priority(d, core))  # stable: list order within a class

    def openvino_compile(self, devices: Sequence[str], core=None) -> tuple[str, dict[str, str]]:
        return "AUTO:" + ",".join(self.candidates(devices, core)), dict(AUTO_LATENCY)

    def propose(self, context: PlacementContext) -> np.ndarray:
        devices = list(context.devices)
        if self._real(context):
            target, props = self.openvino_compile(devices, context.core)
            compiled = context.core.compile_model(context.model, target, props)
            reported = [str(x) for x in compiled.get_property("EXECUTION_DEVICES")]
            chosen = [self._match(x, devices) for x in reported]
            chosen = [c for c in chosen if c is not None]
            if not chosen:
                raise RuntimeError(f"AUTO reported EXECUTION_DEVICES {reported}, none of {devices}")
            accel = [c for c in chosen if kind_of(c) is not CPU]
            self.last_choice = accel[0] if len(chosen) > 1 and accel else chosen[0]
            self.last_note = f"compiled {target!r} {props}: EXECUTION_DEVICES {reported}"
        else:
            order = self.candidates(devices)
            fits = [d for d in order if context.support[:, devices.index(d)].all()]
            self.last_choice = fits[0] if fits else order[0]
            self.last_note = f"emulated AUTO: tried {order}, first that runs every node: {self.last_choice}"
        log.debug("%s: %s", self.name, self.last_note)
        return np.full(context.graph.num_nodes, devices.index(self.last_choice), dtype=np.int64)

    @staticmethod
    def _match(reported: str, devices: Sequence[str]) -> str | None:
        if reported in devices:
            return reported
        base = reported.split(".")[0].strip("()")
        return base if base in devices else None

    def __repr__(self) -> str:
        return f"OpenVINOAutoStrategy(order={self.order!r}, discrete_gpus={self.discrete_gpus!r})"


__all__ = [
    "AUTO_LATENCY",
    "PIPELINE_PARALLEL",
    "OpenVINOAutoStrategy",
    "OpenVINOHeteroAutoStrategy",
    "OpenVINOPipelineParallelStrategy",
]
