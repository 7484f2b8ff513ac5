"""HSDAGStrategy: the exported policy behind ov_autoplace.place."""

from __future__ import annotations

import numpy as np
import pytest

import ov_autoplace
from ov_autoplace.errors import PlacementError
from ov_autoplace.policy import NumpyHSDAGPolicy
from ov_autoplace.strategies.hsdag import HSDAGStrategy
from ov_autoplace.strategies.base import PlacementContext
from tests import synthetic_graphs
from tests.stand_in_costs import stand_in_cost_model

torch = pytest.importorskip("torch")

from ov_autoplace_lab.policy_export import export_policy  # noqa: E402
from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy  # noqa: E402


@pytest.fixture(scope="module")
def policy_path(tmp_path_factory):
    torch.manual_seed(0)
    return export_policy(HSDAGPolicy(), tmp_path_factory.mktemp("policy") / "hsdag.npz")


def _provider(context: PlacementContext):
    return stand_in_cost_model(context.graph, ("CPUF", "NPU", "CPU"))  # other order, one extra device


def test_place_with_the_learned_policy(testbed, policy_path):
    strategy = HSDAGStrategy(policy_path, _provider)
    placement = ov_autoplace.place(synthetic_graphs.residual(), "HETERO:CPU,CPUF", core=testbed.core,
                                   strategy=strategy)
    # an untrained policy may lose to a single device under the stand-in costs; then the guard steps in
    assert placement.strategy in ("hsdag", "hsdag+guard")
    assert any("predicted" in note for note in placement.notes)
    assert set(placement.assignment.values()) <= {"CPU", "CPUF"}
    assert strategy.last_output is not None and strategy.last_output.logits.shape[1] == 2


def test_proposal_is_the_numpy_policy_greedy_placement(synthetic_prepared, policy_path):
    prepared, graph = synthetic_prepared["branching"]
    context = PlacementContext(graph=graph, devices=("CPU", "CPUF"), support=np.ones((graph.num_nodes, 2), bool),
                               model=prepared)
    proposal = HSDAGStrategy(policy_path, _provider).propose(context)
    direct = NumpyHSDAGPolicy.load(policy_path).place(graph, stand_in_cost_model(graph, ("CPU", "CPUF")))
    assert np.array_equal(proposal, direct)


def test_cost_model_errors_and_cache_token(synthetic_prepared, policy_path):
    prepared, graph = synthetic_prepared["branching"]
    context = PlacementContext(graph=graph, devices=("CPU", "GPU"), support=np.ones((graph.num_nodes, 2), bool))
    with pytest.raises(PlacementError, match="GPU"):
        HSDAGStrategy(policy_path, _provider).propose(context)
    with pytest.raises(TypeError, match="CostModel"):
        HSDAGStrategy(policy_path, "not a cost model")
    a, b = HSDAGStrategy(policy_path, _provider), HSDAGStrategy(NumpyHSDAGPolicy.load(policy_path), _provider)
    assert a.cache_token() == b.cache_token() and "hsdag(weights=" in a.cache_token()


def test_refine_runs_the_local_search_on_the_policy_proposal(synthetic_prepared, policy_path):
    from ov_autoplace.costmodel.cost_terms import CostTerms
    from ov_autoplace.placement.legalizer import legalize

    prepared, graph = synthetic_prepared["branching"]
    support = np.ones((graph.num_nodes, 2), bool)
    context = PlacementContext(graph=graph, devices=("CPU", "CPUF"), support=support, model=prepared)
    plain = HSDAGStrategy(policy_path, _provider)
    refined = HSDAGStrategy(policy_path, _provider, refine=True, refine_options={"max_submodels": 8})
    before, after = plain.propose(context), refined.propose(context)
    cost = refined.last_cost
    terms = CostTerms(cost, graph, support)

    def legal_ms(proposal):
        p = legalize(graph, proposal, cost.devices, support, max_submodels=8)
        return terms.latency_ms(np.array([cost.devices.index(p.assignment[n]) for n in graph.names]))

    assert legal_ms(after) <= legal_ms(before) + 1e-9
    assert refined.last_refine is not None and refined.last_refine.final_ms == pytest.approx(legal_ms(after))
    assert plain.last_refine is None and refined.name == "hsdag+local_search"
    assert refined.cache_token() != plain.cache_token() and "local_search" in refined.cache_token()
