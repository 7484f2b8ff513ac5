"""The benchmark's rows: every placement method behind one small interface.

A :class:`Case` is one model on one device set with its CostModel - measured
(the testbed: a profile of this model on these devices, real compiles) or
simulated (a platform's roofline CostModel, no device). A :class:`Method`
turns a case into an :class:`Outcome`: a legal :class:`Placement`, or - for
OpenVINO's own modes - also the device string and properties OpenVINO
compiles it with, plus what the method spent (distinct placements evaluated,
compiles, seconds) and, for learned methods, the learning curve. Learned
methods share one sample budget (distinct legal placements, see
``baselines.search``) and get a fresh environment each.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np
import openvino as ov

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.decision.prediction_guard import guard_placement
from ov_autoplace.search.memory_fit import legal_pricer
from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS, constant_subgraph_mask, legalize
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.placement.stateful import carried_to_dynamic
from ov_autoplace_lab.optimum.strategy import OptimumStrategy
from ov_autoplace_lab.baselines.critical_path import CriticalPathGreedyStrategy
from ov_autoplace.strategies import (HeavyOpsStrategy, HeftStrategy, PlacementContext,
                                     PlacementStrategy)

#: The legalizer's bound for every method (compile_model's default); legalize, the local search and the MILP raise it
#: to the submodels the devices' op support forces where that is more (legalize.effective_max_submodels).
MAX_SUBMODELS = DEFAULT_MAX_SUBMODELS
#: The local search's budget in the benchmark: bounded by placements priced, not by seconds, so a table does not
#: depend on how loaded the machine was (the time limit is only a safety net).
LOCAL_SEARCH_OPTIONS = {"max_submodels": MAX_SUBMODELS, "max_evaluations": 20_000, "max_seconds": 60.0}


@dataclasses.dataclass
class Case:
    """One model on one device set. ``core``/``prepared`` are None for simulated platforms."""

    model_name: str
    graph: GraphArrays
    devices: tuple[str, ...]
    support: np.ndarray
    cost: CostModel
    simulated: bool
    core: ov.Core | None = None
    prepared: ov.Model | None = None
    env_options: dict = dataclasses.field(default_factory=dict)  # MeasuredEnv timing settings
    milp_seconds: float = 10.0  # the exact optimum's solver time limit

    def context(self, seed: int = 0) -> PlacementContext:
        return PlacementContext(graph=self.graph, devices=self.devices, support=self.support, core=self.core,
                                model=self.prepared, seed=seed)

    def make_env(self):
        """A fresh environment (nothing evaluated) for one learned method."""
        from ov_autoplace_lab.training.env import MeasuredEnv, SimEnv

        if self.simulated:
            return SimEnv(self.graph, self.cost, name=self.model_name, support=self.support,
                          max_submodels=MAX_SUBMODELS)
        return MeasuredEnv(self.prepared, self.core, self.devices, cost=self.cost, max_submodels=MAX_SUBMODELS,
                           name=self.model_name, **self.env_options)

    def legal(self, proposal: np.ndarray, method: str, bound: int | None = MAX_SUBMODELS, cost=None) -> Placement:
        price = cost and legal_pricer(cost, self.graph, self.support)  # as compile_model legalizes with a CostModel
        return self.as_compiled(legalize(self.graph, np.asarray(proposal, dtype=np.int64), self.devices,
                                         self.support, max_submodels=bound, strategy=method, price=price), bound, price)

    def as_compiled(self, placement: Placement, bound: int | None = MAX_SUBMODELS, price=None) -> Placement:
        """``placement``, or on a decoder's prefill clone what compile_model compiles of it (:func:`compiled_as`):
        every method is priced on that."""
        if self.graph.dynamic is None:
            return placement
        row, moved = compiled_as(self.graph, placement.device_indices(self.graph.names, self.devices), self.devices,
                                 self.support)
        return placement if not moved else legalize(self.graph, row, self.devices, self.support, max_submodels=bound,
                                                    strategy=f"{placement.strategy} (as compiled)", price=price)


def compiled_as(graph: GraphArrays, row: np.ndarray, devices: tuple[str, ...],
                support: np.ndarray) -> tuple[np.ndarray, int]:
    """(device per node of ``graph``, how many of its active nodes that moves): ``row`` on a decoder's prefill clone
    as ``compile_model`` compiles it, carried to the dynamic model (``graph.dynamic``) as ``transfer_placement``
    carries it (by name, the dynamic model's own shape nodes with their neighbours, no submodel bound; device support
    by name, the shape nodes' everywhere), legalized there, and each clone node put on its namesake's device."""
    from ov_autoplace.placement.stateful import _dynamic_map  # rule 2's name map of the clone, made once per graph

    dynamic, row = graph.dynamic, np.asarray(row, np.int64)
    namesake = _dynamic_map(graph)[0]
    proposal = carried_to_dynamic(graph, row)
    dynamic_support = np.where((namesake >= 0)[:, None], support[np.maximum(namesake, 0)], True)
    legal = legalize(dynamic, proposal, devices, dynamic_support, max_submodels=None).device_indices(dynamic.names,
                                                                                                      devices)
    compiled = row.copy()
    compiled[namesake[namesake >= 0]] = legal[namesake >= 0]
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    return compiled, int((compiled[active] != row[active]).sum())


@dataclasses.dataclass
class Outcome:
    """What a method produced on a case and what it spent."""

    placement: Placement
    openvino_compile: tuple[str, dict] | None = None  # OpenVINO's own modes compile without affinities
    evaluated: int = 0
    compiles: int = 0
    search_s: float = 0.0
    budget: int | None = None
    curve: list[tuple[int, float]] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Method:
    """A row of the table: ``run(case, budget, seed) -> Outcome``."""

    name: str
    kind: str  # single | openvino | heuristic | optimum | learned
    run: Callable[[Case, int, int], Outcome]


def _strategy_method(name: str, kind: str, make: Callable[[Case], PlacementStrategy], *, guard: bool = False,
                     bound: int | None = MAX_SUBMODELS) -> Method:
    def run(case: Case, budget: int, seed: int) -> Outcome:
        strategy = make(case)
        start = time.perf_counter()
        proposal = strategy.propose(case.context(seed))
        # legalized as compile_model legalizes a strategy's proposal: the bound's merges priced on its CostModel
        placement = case.legal(proposal, name, bound, cost=strategy.last_cost)
        if guard and strategy.last_cost is not None:  # what compile_model does with the policy's proposal
            placement = case.as_compiled(guard_placement(placement, case.graph, strategy.last_cost, case.support,
                                                         max_submodels=bound), bound)
        notes = list(placement.notes)
        if getattr(strategy, "last_refine", None) is not None:  # the cost-model local search after the policy
            notes.append(strategy.last_refine.note(case.cost.label))
        openvino = None
        if hasattr(strategy, "openvino_compile"):
            openvino = strategy.openvino_compile(case.devices)
            notes.append(strategy.last_note)  # real OpenVINO call, or emulated from its rule (simulated devices)
        return Outcome(placement, openvino, search_s=time.perf_counter() - start, notes=notes)

    return Method(name, kind, run)


def _single(device: str) -> Method:
    def run(case: Case, budget: int, seed: int) -> Outcome:
        d = case.devices.index(device)
        return Outcome(case.legal(np.full(case.graph.num_nodes, d), f"{device} only"))

    return Method(f"{device} only", "single", run)


def _learned(name: str, make_search: Callable[[], object]) -> Method:
    def run(case: Case, budget: int, seed: int) -> Outcome:
        from ov_autoplace_lab.baselines.search import run_search

        env = case.make_env()
        result = run_search(make_search(), env, budget_samples=budget, seed=seed)
        if result.best_row is None:
            raise RuntimeError(f"{name} found no placement with a finite latency")
        placement = case.legal(result.best_row, name)
        return Outcome(placement, None, result.evaluated, getattr(env, "num_compiles", 0), result.seconds, budget,
                       result.curve, result.notes)

    return Method(name, "learned", run)


def _hsdag_one_pass(case: Case, refine: bool = False) -> PlacementStrategy:
    from ov_autoplace.api import pretrained_policy_path
    from ov_autoplace.strategies.hsdag import HSDAGStrategy

    return HSDAGStrategy(pretrained_policy_path(), case.cost, refine=refine, refine_options=LOCAL_SEARCH_OPTIONS)


def default_methods(devices: tuple[str, ...]) -> list[Method]:
    """Every row, in table order, for a device set (the first device is the accelerator by priority)."""
    from ov_autoplace_lab.baselines.hsdag_search import HSDAGFineTuneSearch, HSDAGPaperSearch
    from ov_autoplace_lab.baselines.placeto import PlacetoSearch
    from ov_autoplace_lab.baselines.rnn_placer import RNNPlacerSearch
    from ov_autoplace_lab.baselines.openvino_modes import (OpenVINOAutoStrategy, OpenVINOHeteroAutoStrategy,
                                             OpenVINOPipelineParallelStrategy)

    methods = [_single(d) for d in devices]
    methods += [
        # OpenVINO's own splits are not bounded by our legalizer's submodel limit (measured: compiled as OpenVINO does)
        _strategy_method("OpenVINO HETERO auto", "openvino", lambda c: OpenVINOHeteroAutoStrategy(), bound=None),
        _strategy_method("OpenVINO AUTO", "openvino", lambda c: OpenVINOAutoStrategy(), bound=None),
        _strategy_method("OpenVINO PIPELINE_PARALLEL", "openvino",
                         lambda c: OpenVINOPipelineParallelStrategy(c.cost), bound=None),
        _strategy_method("Heavy ops", "heuristic", lambda c: HeavyOpsStrategy()),
        _strategy_method("HEFT", "heuristic", lambda c: HeftStrategy(c.cost)),
        _strategy_method("Critical path", "heuristic", lambda c: CriticalPathGreedyStrategy(c.cost)),
        _strategy_method("Optimum (MILP)", "optimum",
                         lambda c: OptimumStrategy(c.cost, method="milp", max_submodels=MAX_SUBMODELS,
                                                   time_limit=c.milp_seconds)),
        _learned("Placeto", lambda: PlacetoSearch()),
        _learned("RNN placer", lambda: RNNPlacerSearch()),
        _learned("HSDAG (paper mode)", lambda: HSDAGPaperSearch()),
        _strategy_method("HSDAG (pretrained, one pass)", "learned", _hsdag_one_pass, guard=True),
        _learned("HSDAG (pretrained + fine-tune)", lambda: HSDAGFineTuneSearch()),
    ]
    return methods


def local_search_methods() -> list[Method]:
    """The two HSDAG rows again with the cost-model local search after the policy (``search/local_search.py``);
    the headroom table runs them beside the policy alone (``bench.headroom``)."""
    from ov_autoplace_lab.baselines.hsdag_search import HSDAGFineTuneSearch

    return [
        _strategy_method("HSDAG (pretrained, one pass) + local search", "learned",
                         lambda c: _hsdag_one_pass(c, refine=True), guard=True),
        _learned("HSDAG (pretrained + fine-tune) + local search",
                 lambda: HSDAGFineTuneSearch(refine=True, refine_options=LOCAL_SEARCH_OPTIONS)),
    ]


__all__ = ["Case", "MAX_SUBMODELS", "Method", "Outcome", "compiled_as", "default_methods", "local_search_methods"]
