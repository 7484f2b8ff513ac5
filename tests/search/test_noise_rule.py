"""The noise rule: the local search, the guard and the policy's refine step keep a move only when its predicted
gain exceeds the spread of what it moves; a profile taken on a loaded machine proves no gain."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.cost_terms import CostTerms
from tests.search.test_local_search import refine_placement
from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.decision.prediction_guard import guard_placement
from ov_autoplace.placement.legalizer import legalize
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg
from tests.search.test_local_search import _legal_ms, _split_pays_cost
from tests.lab.optimum.test_exact_optimum import active_mask


@pytest.fixture(scope="module")
def chain():
    return extract_graph(prepare_model(sg.long_chain(12)))


def _with_spread(cost: CostModel, relative: float, e2e_ms: float = 0.01, **changes) -> CostModel:
    """``cost`` measured with a per-run IQR of ``relative`` times each op's time and ``e2e_ms`` end to end."""
    spread = np.where(np.isfinite(cost.compute_ms), relative * cost.compute_ms, 0.0)
    return dataclasses.replace(cost, compute_spread_ms=spread, e2e_spread_ms=np.full(len(cost.devices), e2e_ms),
                               **changes)


def _uniform_cost(graph, d0_ms: float, d1_ms: float, devices=("CPU", "CPUF")) -> CostModel:
    """Every compute node costs ``d0_ms`` / ``d1_ms``; free links and submodels (only compute decides)."""
    n = graph.num_nodes
    ms = np.where((graph.role == NodeRole.COMPUTE)[:, None], np.array([d0_ms, d1_ms])[None, :], 0.0)
    return CostModel(devices=devices, node_names=tuple(graph.names), compute_ms=ms, unfused_ms=ms.copy(),
                     fused_into=np.full(n, -1, np.int64), link_latency_ms=np.zeros((2, 2)),
                     link_ms_per_byte=np.zeros((2, 2)), submodel_overhead_ms=np.zeros(2),
                     node_memory_bytes=np.zeros(n, np.int64), device_memory_bytes=np.full(2, np.inf),
                     simulated=False, source="test: uniform costs")


def test_move_spread_is_the_moved_nodes_spread_on_both_devices_plus_the_touched_devices(chain):
    cost = _with_spread(_split_pays_cost(chain), 0.1, e2e_ms=0.5)
    terms = CostTerms(cost, chain)
    active = np.flatnonzero(active_mask(chain))
    before = np.zeros(chain.num_nodes, np.int64)
    after = before.copy()
    moved = active[[2, 5, 7]]
    after[moved] = 1
    expected = sum(cost.compute_spread_ms[i, 0] + cost.compute_spread_ms[i, 1] for i in moved) + 0.5 + 0.5
    assert terms.move_spread_ms(before, after) == pytest.approx(expected)
    assert terms.move_spread_ms(before, before) == 0.0
    # noise-free (simulated) models: no spread at all
    assert CostTerms(_split_pays_cost(chain), chain).move_spread_ms(before, after) == 0.0


def test_a_gain_inside_the_spread_is_not_taken_and_one_well_outside_it_is(chain):
    # the middle third is 10 ms a node on D0 and 0.1 ms on D1: moving it gains 9.9 ms a node (less transfers)
    start = np.zeros(chain.num_nodes, np.int64)
    inside = refine_placement(_with_spread(_split_pays_cost(chain), 1.0), chain, start)  # spread 10.1 ms a node
    assert inside.stopped in ("converged", "unproven")
    assert (inside.proposal[active_mask(chain)] == 0).all(), "a gain within the spread moved nodes"
    outside = refine_placement(_with_spread(_split_pays_cost(chain), 0.05), chain, start)  # 0.5 ms a node
    assert set(outside.proposal[active_mask(chain)].tolist()) == {0, 1}
    middle = np.flatnonzero(_split_pays_cost(chain).compute_ms[:, 0] == 10.0)
    assert (outside.proposal[middle] == 1).all()
    assert 0 < outside.spread_ms < outside.start_ms - outside.final_ms, "kept: the gain exceeds its spread"


def test_identical_devices_with_measurement_noise_keep_one_device(chain):
    # the same device measured twice: per-op times differ by noise (3 %), the per-run IQR is 5 %
    rng = np.random.default_rng(7)
    cost = _uniform_cost(chain, 1.0, 1.0)
    compute = cost.compute_ms.copy()
    compute[:, 1] *= np.exp(rng.normal(0.0, 0.03, chain.num_nodes))
    noisy = dataclasses.replace(cost, compute_ms=compute, unfused_ms=compute.copy())
    start = np.zeros(chain.num_nodes, np.int64)
    # without spreads the search takes the noise for gains (the winner's curse this rule removes)
    cursed = refine_placement(noisy, chain, start)
    assert cursed.final_ms < cursed.start_ms and len(set(cursed.proposal[active_mask(chain)].tolist())) == 2
    aware = _with_spread(noisy, 0.05, e2e_ms=0.5)
    for proposal in (start, cursed.proposal):  # from one device, and from the split the noise suggested
        result = refine_placement(aware, chain, proposal)
        assert (result.proposal[active_mask(chain)] == 0).all(), result.stopped
    assert refine_placement(aware, chain, cursed.proposal).stopped in ("unproven", "heterosplit", "rejected")


def test_a_profile_taken_on_a_loaded_machine_keeps_the_single_device(chain):
    loaded = _with_spread(_split_pays_cost(chain), 0.01, loaded=True)
    assert "loaded machine" in loaded.label
    for proposal in (np.zeros(chain.num_nodes, np.int64), np.arange(chain.num_nodes) % 2):
        result = refine_placement(loaded, chain, proposal)
        assert result.stopped == "loaded" and (result.proposal[active_mask(chain)] == 0).all()
        assert result.evaluations == 0, "nothing is searched on a loaded profile"


def _placement(graph, devices, proposal, strategy="test"):
    return legalize(graph, np.asarray(proposal, np.int64), devices, np.ones((graph.num_nodes, len(devices)), bool),
                    strategy=strategy)


def test_the_guard_keeps_a_split_only_beyond_the_spread(chain):
    devices = ("CPU", "CPUF")
    base = _split_pays_cost(chain)
    cost = dataclasses.replace(base, devices=devices)
    split = refine_placement(cost, chain, np.zeros(chain.num_nodes, np.int64)).proposal
    support = np.ones((chain.num_nodes, 2), bool)
    kept = guard_placement(_placement(chain, devices, split), chain, _with_spread(cost, 0.05), support)
    assert set(kept.assignment.values()) == {"CPU", "CPUF"} and kept.strategy == "test"
    assert any("the split cleared the spread" in note for note in kept.notes)
    within = guard_placement(_placement(chain, devices, split), chain, _with_spread(cost, 1.0), support)
    assert set(within.assignment.values()) == {"CPU"} and within.strategy == "test+guard"
    assert any("within the spread" in note for note in within.notes)
    loaded = guard_placement(_placement(chain, devices, split), chain, _with_spread(cost, 0.05, loaded=True),
                             support)
    assert set(loaded.assignment.values()) == {"CPU"} and any("loaded machine" in n for n in loaded.notes)


def test_the_guard_changes_the_single_device_only_beyond_the_spread(chain):
    support = np.ones((chain.num_nodes, 2), bool)
    cost = _uniform_cost(chain, 1.0, 0.97)  # CPUF predicted 3 % faster
    on_cpuf = np.ones(chain.num_nodes, np.int64)
    assert set(guard_placement(_placement(chain, cost.devices, on_cpuf), chain, cost, support)
               .assignment.values()) == {"CPUF"}, "noise-free: the faster device"
    noisy = guard_placement(_placement(chain, cost.devices, on_cpuf), chain, _with_spread(cost, 0.05), support)
    assert set(noisy.assignment.values()) == {"CPU"}, "3 % inside a 5 % spread: HETERO's first device stays"
    clear = _uniform_cost(chain, 1.0, 0.5)
    assert set(guard_placement(_placement(chain, clear.devices, on_cpuf), chain, _with_spread(clear, 0.05), support)
               .assignment.values()) == {"CPUF"}, "2x faster: proven"


def test_the_policy_refine_step_drops_an_unproven_split(chain):
    from ov_autoplace.policy.pretrained import PRETRAINED_POLICY
    from ov_autoplace.strategies.hsdag import HSDAGStrategy
    from ov_autoplace.strategies.base import PlacementContext

    devices = ("D0", "D1")
    context = PlacementContext(graph=chain, devices=devices, support=np.ones((chain.num_nodes, 2), bool))
    active = active_mask(chain)
    proven = HSDAGStrategy(PRETRAINED_POLICY, _with_spread(_split_pays_cost(chain), 0.05), refine=True)
    assert set(proven.propose(context)[active].tolist()) == {0, 1}, "a gain well beyond the spread: the split"
    for cost in (_with_spread(_split_pays_cost(chain), 1.0), _with_spread(_split_pays_cost(chain), 0.05, loaded=True)):
        strategy = HSDAGStrategy(PRETRAINED_POLICY, cost, refine=True)
        assert (strategy.propose(context)[active] == 0).all(), strategy.last_refine.note(cost.label)
        assert _legal_ms(cost, chain, strategy.last_refine.proposal) == pytest.approx(strategy.last_refine.final_ms)


def test_cost_model_spreads_are_checked_kept_and_reordered(chain):
    cost = _with_spread(_split_pays_cost(chain), 0.1, e2e_ms=0.3)
    again = CostModel.from_dict(cost.to_dict())
    np.testing.assert_array_equal(again.compute_spread_ms, cost.compute_spread_ms)
    np.testing.assert_array_equal(again.e2e_spread_ms, cost.e2e_spread_ms)
    assert CostModel.from_dict(_split_pays_cost(chain).to_dict()).compute_spread_ms is None
    swapped = cost.with_devices(("D1", "D0"))
    np.testing.assert_array_equal(swapped.compute_spread_ms, cost.compute_spread_ms[:, ::-1])
    np.testing.assert_array_equal(swapped.compute_ms, cost.compute_ms[:, ::-1])
    with pytest.raises(ValueError, match="compute_spread_ms must be >= 0"):
        dataclasses.replace(cost, compute_spread_ms=-cost.compute_spread_ms - 1)
    with pytest.raises(ValueError, match=r"e2e_spread_ms must have shape \(2,\)"):
        dataclasses.replace(cost, e2e_spread_ms=np.zeros(3))
