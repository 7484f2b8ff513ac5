"""Cost-model heuristics: legal, never better than the exact optimum, and usable through place()."""

from __future__ import annotations

import numpy as np
import pytest

import ov_autoplace as oa
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace_lab.optimum.milp import milp_placement
from ov_autoplace_lab.optimum.strategy import OptimumStrategy
from ov_autoplace.errors import PlacementError
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.strategies.best_single import BestSingleDeviceStrategy
from ov_autoplace_lab.baselines.critical_path import CriticalPathGreedyStrategy
from ov_autoplace.strategies.heft import HeftStrategy
from tests import synthetic_graphs as sg
from tests.lab.optimum.test_exact_optimum import brute_latency, legal, random_cost, small_graph
from ov_autoplace.api import DEFAULT_MAX_SUBMODELS

HEURISTICS = (BestSingleDeviceStrategy, HeftStrategy, CriticalPathGreedyStrategy)


def context_for(graph, cost):
    return PlacementContext(graph=graph, devices=cost.devices,
                            support=np.ones((graph.num_nodes, len(cost.devices)), dtype=bool))


@pytest.mark.parametrize("num_devices,seed,memory", [(2, 0, False), (2, 1, True), (3, 2, False), (3, 3, True)])
def test_heuristics_are_legal_and_never_beat_the_optimum(num_devices, seed, memory):
    graph = small_graph(seed, 11 if num_devices == 2 else 8)
    cost = random_cost(graph, num_devices, seed, memory=memory)
    optimum = milp_placement(cost, graph, time_limit=60)
    assert optimum.optimal
    terms = CostTerms(cost, graph)
    for strategy_type in HEURISTICS:
        proposal = strategy_type(cost).propose(context_for(graph, cost))
        device, _ = legal(graph, proposal, cost.devices)
        act = terms.active
        assert terms.allowed[act, device[act]].all(), strategy_type.name  # never on a device that cannot run it
        latency = brute_latency(cost, graph, device)
        assert latency >= optimum.objective_ms * (1 - 1e-9), strategy_type.name


@pytest.mark.parametrize("seed", range(3))
def test_best_single_device_is_the_best_single_device(seed):
    graph = small_graph(seed, 10)
    cost = random_cost(graph, 3, seed, unsupported=0.0)
    strategy = BestSingleDeviceStrategy(cost)
    proposal = strategy.propose(context_for(graph, cost))
    singles = [brute_latency(cost, graph, legal(graph, np.full(graph.num_nodes, d), cost.devices)[0])
               for d in range(3)]
    assert len(set(proposal[CostTerms(cost, graph).active].tolist())) == 1
    assert int(proposal[0]) == int(np.argmin(singles))
    assert np.allclose(list(strategy.last_latencies_ms.values()), singles)


def test_best_single_device_ties_go_to_the_first_device():
    graph = small_graph(0, 8)
    cost = random_cost(graph, 2, 0, unsupported=0.0)
    same = CostModel.from_dict({
        **cost.to_dict(), "compute_ms": np.repeat(cost.compute_ms[:, :1], 2, axis=1).tolist(),
        "unfused_ms": np.repeat(cost.unfused_ms[:, :1], 2, axis=1).tolist(), "submodel_overhead_ms": [0.1, 0.1]})
    assert (BestSingleDeviceStrategy(same).propose(context_for(graph, same)) == 0).all()


def test_a_cost_model_of_another_model_is_rejected():
    graph, other = small_graph(1, 8), small_graph(2, 9)
    with pytest.raises(PlacementError, match="prepared model"):
        HeftStrategy(random_cost(other, 2, 0)).propose(context_for(graph, random_cost(graph, 2, 0)))


@pytest.mark.parametrize("strategy_type", [*HEURISTICS, OptimumStrategy])
def test_strategies_plug_into_place(testbed, strategy_type):
    """Through place() on the testbed: the cost model is built for the prepared graph place() hands over."""
    built = []

    def provider(context):
        assert tuple(context.devices) == tuple(testbed.devices)
        cost = random_cost(context.graph, len(context.devices), 7, unsupported=0.0)
        built.append(CostModel.from_dict({**cost.to_dict(), "devices": list(context.devices)}))
        return built[-1]

    strategy = strategy_type(provider)
    placement = oa.place(sg.residual(), testbed.hetero, core=testbed.core, strategy=strategy)
    assert placement.strategy == strategy.name
    assert set(placement.assignment) == set(built[-1].node_names)
    assert placement.num_submodels <= DEFAULT_MAX_SUBMODELS
    if isinstance(strategy, OptimumStrategy):  # the legalizer had nothing left to change
        assert placement.assignment == strategy.last_result.legal.assignment
