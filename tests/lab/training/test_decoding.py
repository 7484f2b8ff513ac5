"""The policy's one pass decoded more ways and priced by the cost model (ov_autoplace_lab/training/decoding.py,
issue 22), and the HSDAG strategy that proposes the fastest of them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.search.memory_fit import legal_pricer
from ov_autoplace.graph.arrays import NodeRole
from ov_autoplace.placement.legalizer import legalize
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace_lab.training.decoding import DecodedHSDAGStrategy, offset_decodings, priced_decoding
from tests.policy.conftest import synthetic_prepared  # noqa: F401  (a fixture)
from tests.stand_in_costs import stand_in_cost_model


def test_offset_decodings_on_two_devices_are_thresholds_of_the_margin():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(40, 2))
    margin = logits[:, 1] - logits[:, 0]
    decodings = offset_decodings(logits, 100)
    greedy = logits.argmax(1)
    keys = {d.tobytes() for d in decodings}
    assert len(keys) == len(decodings) and greedy.tobytes() not in keys  # distinct, the greedy one left out
    for d in decodings:  # device 1 holds exactly the groups whose margin is above some cut
        on = margin[d == 1]
        off = margin[d == 0]
        assert on.size == 0 or off.size == 0 or on.min() > off.max()
    shares = sorted(int(d.sum()) for d in decodings)
    assert shares[0] == 0 and shares[-1] == 40  # the grid spans all on one device to all on the other
    assert len(offset_decodings(logits, 5)) == 5 and offset_decodings(logits, 0) == []


def test_offset_decodings_nearest_the_greedy_one_come_first():
    logits = np.stack([np.zeros(60), np.linspace(-3, 3, 60)], 1)  # greedy: the top 30 groups on device 1
    first = offset_decodings(logits, 8)[0]
    assert abs(int(first.sum()) - 30) <= 6  # one quantile step away, not an extreme


def test_offset_decodings_on_three_devices_use_every_device():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(30, 3))
    decodings = offset_decodings(logits, 49)
    assert 10 <= len(decodings) <= 49
    assert {int(v) for d in decodings for v in np.unique(d)} == {0, 1, 2}


def _case(synthetic_prepared, name="attention_like", devices=("CPU", "CPUF")):
    _, graph = synthetic_prepared[name]
    cost = stand_in_cost_model(graph, devices)
    return graph, cost, np.isfinite(cost.compute_ms)


def _legal(graph, cost, support, row, max_submodels, priced=False):
    placement = legalize(graph, row, cost.devices, support, max_submodels=max_submodels,
                         price=legal_pricer(cost, graph, support) if priced else None)
    return np.array([cost.devices.index(placement.assignment[n]) for n in graph.names])


@pytest.mark.parametrize("legalised", [1, 2, 64])
def test_the_kept_decoding_is_legal_priced_and_never_predicted_slower_than_the_greedy_one(synthetic_prepared,
                                                                                         legalised):
    graph, cost, support = _case(synthetic_prepared)
    rng = np.random.default_rng(0)
    node_group = np.arange(graph.num_nodes) % 12
    logits = rng.normal(size=(12, 2))
    row, report = priced_decoding(logits, node_group, graph, cost, support, 32, max_submodels=4,
                                  legalised=legalised)
    terms = CostTerms(cost, graph, support)
    assert np.array_equal(_legal(graph, cost, support, row, 4), row)  # the caller's legalize keeps it as priced
    greedy = _legal(graph, cost, support, logits.argmax(1)[node_group], 4, priced=True)  # as priced_decoding merges
    assert report.chosen_ms == pytest.approx(terms.latency_ms(row))
    assert report.chosen_ms <= report.greedy_ms == pytest.approx(terms.latency_ms(greedy))
    assert report.legalised == min(legalised, report.priced - 1) + 1 and report.priced >= 2
    assert ("greedy one kept" in report.note("x")) == (report.chosen == 0)


def test_more_legalised_decodings_are_never_predicted_slower(synthetic_prepared):
    graph, cost, support = _case(synthetic_prepared, "branching")
    node_group = np.arange(graph.num_nodes) % 9
    logits = np.random.default_rng(3).normal(size=(9, 2))
    found = [priced_decoding(logits, node_group, graph, cost, support, 16, max_submodels=6, legalised=k)[1].chosen_ms
             for k in (0, 1, 4, 16)]
    assert all(b <= a + 1e-12 for a, b in zip(found, found[1:]))


def test_a_gain_within_the_spread_of_the_move_keeps_the_greedy_placement(synthetic_prepared):
    graph, cost, support = _case(synthetic_prepared)
    node_group = np.arange(graph.num_nodes) % 12
    logits = np.random.default_rng(0).normal(size=(12, 2))
    _, quiet = priced_decoding(logits, node_group, graph, cost, support, 32, legalised=64)
    assert quiet.chosen > 0  # noise-free costs: some decoding is predicted faster
    noisy = dataclasses.replace(cost, compute_spread_ms=np.full(cost.compute_ms.shape, 1e3),
                                e2e_spread_ms=np.full(len(cost.devices), 1e3))
    row, report = priced_decoding(logits, node_group, graph, noisy, support, 32, legalised=64)
    assert report.chosen == 0 and report.chosen_ms == report.greedy_ms
    assert np.array_equal(row, _legal(graph, noisy, support, logits.argmax(1)[node_group], None))


def test_a_greedy_decoding_that_overflows_memory_competes_fitted(synthetic_prepared):
    from ov_autoplace.costmodel.simulator import Simulator

    graph, cost, support = _case(synthetic_prepared)
    node_group = np.arange(graph.num_nodes) % 12
    logits = np.stack([np.zeros(12), np.linspace(1.0, 2.0, 12)], 1)  # greedy: every group on CPUF
    everything = Simulator(cost, graph).resident_bytes(np.ones((1, graph.num_nodes), np.int64))[0, 1]
    small = dataclasses.replace(cost, device_memory_bytes=np.array([np.inf, 0.6 * everything]))
    row, report = priced_decoding(logits, node_group, graph, small, support, 8, max_submodels=4)
    assert np.isfinite(report.greedy_ms)  # without the fit the greedy placement is predicted inf
    assert Simulator(small, graph).memory_ok(row) and np.array_equal(_legal(graph, small, support, row, 4), row)
    assert report.chosen_ms <= report.greedy_ms


def test_pins_hold_in_every_decoding(synthetic_prepared):
    from ov_autoplace.placement.pins import Pin

    graph, cost, support = _case(synthetic_prepared)
    node_group = np.arange(graph.num_nodes) % 12
    logits = np.random.default_rng(0).normal(size=(12, 2))
    name = next(n for n, r in zip(graph.names, graph.role) if r == NodeRole.COMPUTE)
    pins = [Pin(device="CPUF", name=name)]
    row, _ = priced_decoding(logits, node_group, graph, cost, support, 32, pins=pins, legalised=64)
    assert cost.devices[row[graph.names.index(name)]] == "CPUF"


def test_a_negative_count_is_refused(synthetic_prepared):
    graph, cost, support = _case(synthetic_prepared)
    with pytest.raises(ValueError, match="count must be >= 0"):
        priced_decoding(np.zeros((2, 2)), np.zeros(graph.num_nodes, np.int64), graph, cost, support, -1)


@pytest.fixture(scope="module")
def policy_path(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from ov_autoplace_lab.policy_export import export_policy
    from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy

    torch.manual_seed(0)
    return export_policy(HSDAGPolicy(), tmp_path_factory.mktemp("policy") / "hsdag.npz")


def _provider(context: PlacementContext):
    return stand_in_cost_model(context.graph, ("CPUF", "NPU", "CPU"))  # other order, one extra device


def test_decodings_are_priced_beside_the_greedy_placement_and_named(synthetic_prepared, policy_path):
    prepared, graph = synthetic_prepared["attention_like"]
    support = np.ones((graph.num_nodes, 2), bool)
    context = PlacementContext(graph=graph, devices=("CPU", "CPUF"), support=support, model=prepared)
    plain = DecodedHSDAGStrategy(policy_path, _provider, decodings=0)
    decoded = DecodedHSDAGStrategy(policy_path, _provider, decodings=16, decode_options={"max_submodels": 4})
    terms = CostTerms(stand_in_cost_model(graph, ("CPU", "CPUF")), graph, support)
    greedy, proposal = plain.propose(context), decoded.propose(context)
    report = decoded.last_decoding
    assert report is not None and report.priced >= 2 and plain.last_decoding is None
    assert terms.latency_ms(proposal) == pytest.approx(report.chosen_ms) and report.chosen_ms <= report.greedy_ms
    assert report.greedy_ms >= terms.latency_ms(greedy) - 1e-9 or report.chosen == 0  # greedy priced as legalised
    assert decoded.name == "hsdag+decodings" and "decodings=16" in decoded.cache_token()
    assert decoded.cache_token() != plain.cache_token() and "decodings=16" in repr(decoded)
    refined = DecodedHSDAGStrategy(policy_path, _provider, decodings=4, refine=True)
    assert refined.name == "hsdag+decodings+local_search"


@pytest.mark.parametrize("decodings, options, message", [
    (-1, None, "decodings must be an int >= 0"), (2.5, None, "decodings must be an int >= 0"),
    (True, None, "decodings must be an int >= 0"), (4, {"bound": 8}, r"decode_options \['bound'\]")])
def test_bad_decoding_options_are_refused(policy_path, decodings, options, message):
    with pytest.raises(ValueError, match=message):
        DecodedHSDAGStrategy(policy_path, _provider, decodings=decodings, decode_options=options)
