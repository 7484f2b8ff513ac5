"""Where a training reward comes from: a placement's latency, simulated or measured.

An environment holds one graph (of the prepared model), the CostModel the
policy reads its device features from, and ``evaluate(proposals [P, N]) ->
latency ms [P]``. Proposals are device indices per node, as a strategy
proposes them; the environment makes them legal first (the legalizer's rules),
so what is rewarded is what would be compiled. Every environment counts the
*distinct* legal placements it has evaluated (``num_evaluated``): that is the
sample cost that matters on real devices.

* :class:`SimEnv` - the simulator (:class:`~ov_autoplace.costmodel.simulator.Simulator`),
  thousands of placements per second; the default for training. Without
  ``max_submodels`` proposals are legalised by the batched ``AnchorFixer``;
  with it, by ``legalize()`` itself (islands merged as ``place()`` does), memoised.
* :class:`MeasuredEnv` - real HETERO compiles timed by the native timer
  (``ov_autoplace.devices.timing.measure_latency``); seconds per placement, so every
  distinct legal placement is compiled and timed once and memoised.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import time
from typing import Callable, Iterator, Sequence

import numpy as np
import openvino as ov

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.sim_costs import simulated_support
from ov_autoplace.search.memory_fit import legal_pricer
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.costmodel.anchors import AnchorFixer
from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import GraphArrays, extract_graph
from ov_autoplace.placement.legalizer import legalize, query_support
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.model.prepare import prepare_model

log = logging.getLogger(__name__)


def placement_key(row: np.ndarray) -> int:
    """A stable 64-bit key of one legal placement (the same in every process, unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(np.ascontiguousarray(row, dtype=np.int8).tobytes(), digest_size=8).digest(),
                          "little")


class PlacementEnv:
    """Base of the environments: legalisation, distinct-placement counting and the best placement seen.

    Subclasses set ``name``, ``graph``, ``cost``, ``devices``, ``support``,
    ``label`` and implement :meth:`legal_rows` and :meth:`_latencies`.
    """

    name: str
    graph: GraphArrays
    cost: CostModel
    devices: tuple[str, ...]
    support: np.ndarray
    label: str
    max_submodels: int | None

    def __init__(self) -> None:
        self._seen: dict[int, float] = {}
        self.best_ms = float("inf")
        self.best_placement: np.ndarray | None = None  # legal device index per node
        self._listeners: list[Callable[[PlacementEnv], None]] = []

    @contextlib.contextmanager
    def listening(self, listener: Callable[[PlacementEnv], None]) -> Iterator[None]:
        """Call ``listener(env)`` after every counted :meth:`evaluate` inside the block (learning curves,
        progress bars); :meth:`evaluate_uncounted` reference runs are not reported."""
        self._listeners.append(listener)
        try:
            yield
        finally:
            self._listeners.remove(listener)

    @property
    def num_evaluated(self) -> int:
        """Distinct legal placements evaluated so far."""
        return len(self._seen)

    @property
    def num_nodes(self) -> int:
        return self.graph.num_nodes

    def legal_rows(self, proposals: np.ndarray) -> np.ndarray:
        """Legal placements [P, N] (device index per node) of proposals [P, N]."""
        raise NotImplementedError

    def _latencies(self, legal: np.ndarray, keys: list[int]) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, proposals: np.ndarray) -> np.ndarray:
        """Latency in ms [P] of proposals [P, N] (or a float for one [N] proposal), legalised first."""
        out = self._evaluate(proposals)
        for listener in self._listeners:
            listener(self)
        return out

    def _evaluate(self, proposals: np.ndarray) -> np.ndarray:
        arr = np.asarray(proposals)
        single = arr.ndim == 1
        legal = self.legal_rows(arr[None, :] if single else arr)
        keys = [placement_key(r) for r in legal]
        ms = np.asarray(self._latencies(legal, keys), dtype=np.float64)
        for k, v in zip(keys, ms.tolist()):
            self._seen.setdefault(k, v)
        best = int(np.argmin(ms))
        if ms[best] < self.best_ms:
            self.best_ms, self.best_placement = float(ms[best]), legal[best].copy()
        return float(ms[0]) if single else ms

    @functools.cached_property
    def legal_price(self):
        """``legalize(price=)`` on this environment's cost, built once: every legalization here prices its merges
        as ``place()`` prices them on the strategy's CostModel."""
        return legal_pricer(self.cost, self.graph, self.support)

    def placement(self, proposal: np.ndarray, strategy: str = "hsdag") -> Placement:
        """The legal :class:`Placement` ``place()`` would make of ``proposal`` (same legalizer, same bound, the
        bound's merges priced on ``cost`` as ``place()`` prices them on the strategy's CostModel)."""
        return legalize(self.graph, np.asarray(proposal, dtype=np.int64), self.devices, self.support,
                        max_submodels=self.max_submodels, strategy=strategy, price=self.legal_price)

    def single_device_ms(self) -> np.ndarray:
        """Latency [D] of everything on each device (the baselines a placement must beat)."""
        return np.asarray(self.evaluate_uncounted(np.repeat(np.arange(len(self.devices))[:, None],
                                                            self.num_nodes, axis=1)))

    def evaluate_uncounted(self, proposals: np.ndarray) -> np.ndarray:
        """:meth:`evaluate` without counting the placements as samples (reference baselines)."""
        seen, best = dict(self._seen), (self.best_ms, self.best_placement)
        try:
            return self._evaluate(proposals)
        finally:
            self._seen = seen  # a MeasuredEnv still keeps the timings in its own cache
            self.best_ms, self.best_placement = best

    def state_dict(self) -> dict:
        """What a checkpoint keeps of this environment (distinct placements seen, best so far)."""
        keys = np.fromiter(self._seen.keys(), dtype=np.uint64, count=len(self._seen))
        return {"seen_keys": keys, "seen_ms": np.fromiter(self._seen.values(), dtype=np.float64, count=len(keys)),
                "best_ms": self.best_ms, "best_placement": self.best_placement}

    def load_state_dict(self, state: dict) -> None:
        self._seen = {int(k): float(v) for k, v in zip(np.asarray(state["seen_keys"]).tolist(),
                                                       np.asarray(state["seen_ms"]).tolist())}
        self.best_ms = float(state["best_ms"])
        bp = state["best_placement"]
        self.best_placement = None if bp is None else np.asarray(bp, dtype=np.int64)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.name!r}, nodes={self.num_nodes}, devices={list(self.devices)}, "
                f"evaluated={self.num_evaluated}, {self.label})")


class SimEnv(PlacementEnv):
    """Rewards from the simulator under ``cost`` (labelled "simulated" when the CostModel is)."""

    def __init__(self, graph: GraphArrays, cost: CostModel, *, name: str | None = None,
                 support: np.ndarray | None = None, max_submodels: int | None = None) -> None:
        super().__init__()
        self.graph, self.cost, self.devices = graph, cost, tuple(cost.devices)
        self.name = name or f"graph[{graph.num_nodes}]"
        self.support = simulated_support(cost, graph)  # inf cost = the device cannot run it
        if support is not None:
            self.support &= np.asarray(support, dtype=bool)
        self.max_submodels = max_submodels
        self.label = cost.label
        self.simulator = Simulator(cost, graph)
        self.fixer = AnchorFixer(graph, len(self.devices), self.support)
        self._legal_memo: dict[int, np.ndarray] = {}

    def legal_rows(self, proposals: np.ndarray) -> np.ndarray:
        if self.max_submodels is None:
            return self.fixer(proposals)
        out = np.empty(proposals.shape, dtype=np.int64)
        for r, row in enumerate(proposals):
            key = placement_key(row)
            legal = self._legal_memo.get(key)
            if legal is None:
                p = self.placement(row)
                legal = self._legal_memo[key] = p.device_indices(self.graph.names, self.devices)
            out[r] = legal
        return out

    def _latencies(self, legal: np.ndarray, keys: list[int]) -> np.ndarray:
        return np.atleast_1d(self.simulator.feasible_ms(legal))  # a placement that overflows a device cannot run


class MeasuredEnv(PlacementEnv):
    """Rewards from real HETERO compiles on ``core`` over ``devices``, timed with the native timer.

    ``cost``: the CostModel the policy reads its features from; when None it
    is profiled (``costmodel.profiler.profile_model``, cached in ``store``).
    Each distinct legal placement (``legalize`` with ``max_submodels``, as
    ``place()`` does) is compiled once (``num_compiles``) and timed with
    ``warmup`` + ``iterations`` runs (at most ``max_seconds``); its median is
    memoised. A placement that fails to compile gets ``inf`` (logged).

    ``generation`` (``model/generation.Generation``) with ``dynamic_model`` (the stateful decoder ``model`` is the
    static prefill clone of): each placement is carried over to the dynamic model, compiled as ``compile_model``
    would return it, and timed on whole generations (``devices/timing.time_generation``: the prefill, the first
    step and the decode points; as many generations as ``max_seconds`` holds, 1 to ``iterations``), rewarded with
    the generation's time (``generation_ms``): what the verification then judges it on, not the prefill alone.
    """

    def __init__(self, model: ov.Model, core: ov.Core, devices: Sequence[str], *, cost: CostModel | None = None,
                 max_submodels: int | None = 8, warmup: int = 2, iterations: int = 10, max_seconds: float = 2.0,
                 name: str | None = None, store=None, generation=None, dynamic_model: ov.Model | None = None) -> None:
        super().__init__()
        from ov_autoplace.compile.placed_compile import compile_with_affinities  # not the public api: it imports this package (search)
        from ov_autoplace.devices.timing import measure_latency

        self._compile_placed, self._measure_latency = compile_with_affinities, measure_latency
        self.core, self.devices = core, tuple(devices)
        self.prepared = prepare_model(model)
        self.graph = extract_graph(self.prepared)
        self.name = name or self.prepared.get_friendly_name()
        self.support = query_support(core, self.prepared, self.graph, self.devices)
        if cost is None:
            from ov_autoplace.measuring.profiler import profile_model

            cost = profile_model(self.prepared, core, self.devices, store=store)
        if tuple(cost.node_names) != tuple(self.graph.names) or tuple(cost.devices) != self.devices:
            raise PlacementError(f"the CostModel ({cost.num_nodes} nodes on {list(cost.devices)}) is not for this "
                                 f"prepared model's {self.graph.num_nodes} nodes on {list(self.devices)}; profile it "
                                 "with ov_autoplace.measuring.profiler.profile_model(model, core, devices)")
        self.cost = cost
        self.max_submodels = max_submodels
        self.warmup, self.iterations, self.max_seconds = warmup, iterations, max_seconds
        self.label = f"measured (HETERO:{','.join(self.devices)}, native timer)"
        self.generation = generation if dynamic_model is not None else None
        self.dynamic_model = dynamic_model if generation is not None else None
        if self.generation is not None:
            self.label = (f"measured (HETERO:{','.join(self.devices)}, generations of "
                          f"{generation.prompt_tokens} + {generation.new_tokens} tokens)")
        self.num_compiles = 0
        self.compile_seconds = 0.0
        self._legal_memo: dict[int, tuple[np.ndarray, Placement]] = {}
        self._cache: dict[int, float] = {}  # legal placement key -> median ms (every placement compiled once)

    def _legal(self, row: np.ndarray) -> tuple[np.ndarray, Placement]:
        key = placement_key(row)
        hit = self._legal_memo.get(key)
        if hit is None:
            p = self.placement(row)
            hit = self._legal_memo[key] = (p.device_indices(self.graph.names, self.devices), p)
        return hit

    def legal_rows(self, proposals: np.ndarray) -> np.ndarray:
        return np.stack([self._legal(np.asarray(r, dtype=np.int64))[0] for r in proposals])

    def legal_placement(self, legal_row: np.ndarray) -> Placement:
        return self._legal(np.asarray(legal_row, dtype=np.int64))[1]

    def _latencies(self, legal: np.ndarray, keys: list[int]) -> np.ndarray:
        out = np.empty(len(keys))
        for r, key in enumerate(keys):
            if key not in self._cache:
                self._cache[key] = self._measure(legal[r])
            out[r] = self._cache[key]
        return out

    def _measure(self, legal_row: np.ndarray) -> float:
        placement = self._legal(legal_row)[1]
        start = time.perf_counter()
        try:
            model = self.prepared if self.dynamic_model is None else self.dynamic_model  # dynamic: carried over
            compiled = self._compile_placed(self.core, model, placement, placement.device_string)
        except Exception as exc:  # noqa: BLE001 - a placement HETERO rejects is a bad action, not a crash
            log.warning("placement failed to compile (%s: %s); rewarded as inf", type(exc).__name__, exc)
            return float("inf")
        finally:
            self.num_compiles += 1
            self.compile_seconds += time.perf_counter() - start
        try:  # a split HETERO compiles can still fail to run (seen: a decoder's prefill, an eltwise shape check)
            if self.generation is not None:
                return self._generation_ms(compiled)
            stats = self._measure_latency(compiled, warmup=self.warmup, iterations=self.iterations,
                                          max_seconds=self.max_seconds)
        except Exception as exc:  # noqa: BLE001 - as a compile failure: a bad action, not a crash of the search
            lines = str(exc).strip().splitlines()  # OpenVINO's last line names the failing check
            log.warning("placement compiled but failed to run (%s: %s); rewarded as inf", type(exc).__name__,
                        lines[-1] if lines else "")
            return float("inf")
        log.debug("measured placement %d: %s", self.num_compiles, stats)
        return stats.median_ms

    def _generation_ms(self, compiled: ov.CompiledModel) -> float:
        """The generation's time (ms) on ``compiled``: medians over generations from a reset, after one untimed."""
        from ov_autoplace.devices.timing import time_generation
        from ov_autoplace.model.generation import decode_pasts, generation_ms

        gen, request = self.generation, compiled.create_infer_request()
        pasts = decode_pasts(gen)
        start = time.perf_counter()
        time_generation(compiled, gen.prompt_tokens, pasts, request=request)  # warm-up, and how long one takes
        repeats = int(min(self.iterations, max(1.0, self.max_seconds / max(time.perf_counter() - start, 1e-6))))
        prefill, decode, first = time_generation(compiled, gen.prompt_tokens, pasts, repeats=repeats, request=request)
        total = generation_ms(gen, prefill, decode, first)
        log.debug("measured placement %d: generation %.3f ms (%d repeats)", self.num_compiles, total, repeats)
        return total


__all__ = ["MeasuredEnv", "PlacementEnv", "SimEnv", "placement_key"]
