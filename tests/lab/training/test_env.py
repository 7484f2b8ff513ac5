"""SimEnv and MeasuredEnv: legal placements, distinct-placement counting, memoised measurements."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.search.memory_fit import legal_pricer
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.costmodel.anchors import AnchorFixer
from ov_autoplace.placement.legalizer import legalize
from ov_autoplace_lab.training.env import MeasuredEnv, SimEnv
from tests import synthetic_graphs
from tests.stand_in_costs import stand_in_cost_model
from tests.lab.training.conftest import sim_env


def test_sim_env_rewards_the_legal_placement_and_counts_distinct_ones(synthetic_prepared):
    env = sim_env(synthetic_prepared)
    rng = np.random.default_rng(0)
    proposals = rng.integers(0, 2, size=(6, env.num_nodes))
    proposals[3] = proposals[1]  # a repeat is not a new placement
    ms = env.evaluate(proposals)
    legal = AnchorFixer(env.graph, 2)(proposals)
    assert np.allclose(ms, Simulator(env.cost, env.graph)(legal))
    assert env.num_evaluated == len({row.tobytes() for row in legal}) == 5
    assert env.best_ms == pytest.approx(ms.min())
    assert np.array_equal(env.best_placement, legal[int(np.argmin(ms))])
    env.evaluate(proposals[:2])
    assert env.num_evaluated == 5


def test_sim_env_with_a_submodel_bound_uses_the_legalizer(synthetic_prepared):
    env = sim_env(synthetic_prepared, max_submodels=2)
    proposal = np.arange(env.num_nodes) % 2  # fragmented on purpose
    legal = env.legal_rows(proposal[None, :])[0]
    placement = legalize(env.graph, proposal, env.devices, env.support, max_submodels=2,
                         price=legal_pricer(env.cost, env.graph, env.support))
    assert [env.devices[d] for d in legal] == [placement.assignment[n] for n in env.graph.names]
    assert placement.num_submodels <= 2 and any("priced on the cost model" in n for n in placement.notes)


def test_uncounted_evaluation_and_state_round_trip(synthetic_prepared):
    env = sim_env(synthetic_prepared)
    single = env.single_device_ms()
    assert single.shape == (2,) and env.num_evaluated == 0 and env.best_placement is None
    env.evaluate(np.random.default_rng(1).integers(0, 2, size=(4, env.num_nodes)))
    state = env.state_dict()
    other = sim_env(synthetic_prepared)
    other.load_state_dict(state)
    assert other.num_evaluated == env.num_evaluated and other.best_ms == env.best_ms
    assert np.array_equal(other.best_placement, env.best_placement)


@pytest.mark.slow
def test_measured_env_compiles_each_distinct_placement_once(testbed):
    model = synthetic_graphs.residual(blocks=1)
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.model.prepare import prepare_model

    graph = extract_graph(prepare_model(model))
    env = MeasuredEnv(model, testbed.core, testbed.devices, cost=stand_in_cost_model(graph), iterations=3,
                      warmup=1, max_seconds=0.5)
    everything_on = [np.full(env.num_nodes, d) for d in (0, 1)]
    first = env.evaluate(np.stack([everything_on[0], everything_on[0], everything_on[1]]))
    assert env.num_compiles == 2 and env.num_evaluated == 2
    assert np.all(np.isfinite(first)) and np.all(first > 0) and first[0] == first[1]
    again = env.evaluate(everything_on[1])
    assert env.num_compiles == 2 and again == first[2]  # memoised: no compile, same median
    assert env.label.startswith("measured")
    placement = env.legal_placement(env.best_placement)
    assert set(placement.assignment.values()) <= set(testbed.devices)


def test_a_placement_that_compiles_but_cannot_run_is_rewarded_inf_not_a_crash(testbed, caplog, monkeypatch):
    """HETERO compiled a decoder's split that then failed at its first prefill (an eltwise shape check): the search
    strategy's whole call failed with it. Such a placement is a bad action, as one that does not compile."""
    import logging

    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.model.prepare import prepare_model

    model = synthetic_graphs.residual(blocks=1)
    env = MeasuredEnv(model, testbed.core, testbed.devices, cost=stand_in_cost_model(extract_graph(
        prepare_model(model))), iterations=2, warmup=0, max_seconds=0.2)

    def fails(*args, **kwargs):
        raise RuntimeError("Exception from src/inference/src/cpp/infer_request.cpp:224:\n"
                           "[CPU] Multiply node: Check 'input_shape[j] == 1' failed")

    monkeypatch.setattr(env, "_measure_latency", fails)
    with caplog.at_level(logging.WARNING):
        reward = env.evaluate(np.zeros(env.num_nodes, dtype=np.int64))
    assert np.isinf(reward).all() and env.num_compiles == 1
    assert "compiled but failed to run" in caplog.text and "input_shape[j] == 1" in caplog.text


def test_measured_env_rejects_a_cost_model_of_another_graph(testbed, synthetic_prepared):
    _, other = synthetic_prepared["branching"]
    with pytest.raises(Exception, match="not for this"):
        MeasuredEnv(synthetic_graphs.residual(blocks=1), testbed.core, testbed.devices,
                    cost=stand_in_cost_model(other))


def test_sim_env_marks_unsupported_nodes(synthetic_prepared):
    env = sim_env(synthetic_prepared, devices=("CPU", "NPU"))  # the stand-in NPU cannot run Softmax/MVN/Gelu
    legal = env.legal_rows(np.ones((1, env.num_nodes), dtype=np.int64))[0]
    blocked = [i for i, t in enumerate(env.graph.op_types) if t in ("Softmax", "MVN", "Gelu")]
    assert blocked and all(legal[i] == 0 for i in blocked)
    assert np.isfinite(env.evaluate(np.ones(env.num_nodes, dtype=np.int64)))
    assert isinstance(env, SimEnv)
