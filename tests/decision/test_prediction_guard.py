"""The guard keeps a placement only if the cost model predicts it no slower than every single device."""

import dataclasses

import numpy as np

import ov_autoplace as oa
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.decision.prediction_guard import MIN_WIN_SHARE, NOISE_FREE_MIN_GAIN, guard_placement
from ov_autoplace.placement.legalizer import legalize, query_support
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.strategies import HeftStrategy, RandomStrategy
from tests import synthetic_graphs as sg


def _cost(graph, devices, per_node_ms, link_ms=0.01):
    n, d = graph.num_nodes, len(devices)
    compute = np.where((graph.role == NodeRole.COMPUTE)[:, None], np.asarray(per_node_ms, float)[None, :], 0.0)
    return CostModel(devices=devices, node_names=graph.names, compute_ms=compute, unfused_ms=compute.copy(),
                     fused_into=np.full(n, -1), link_latency_ms=np.full((d, d), link_ms) * (1 - np.eye(d)),
                     link_ms_per_byte=np.zeros((d, d)), submodel_overhead_ms=np.full(d, 0.05),
                     node_memory_bytes=np.zeros(n, dtype=np.int64), device_memory_bytes=np.full(d, np.inf),
                     simulated=True, source="test fixture")


def test_slow_split_is_replaced_by_the_fastest_single_device(testbed):
    model = prepare_model(sg.residual())
    graph = extract_graph(model)
    support = query_support(testbed.core, model, graph, testbed.devices)
    cost = _cost(graph, testbed.devices, [1.0, 2.0])  # CPU twice as fast on every node
    proposal = np.random.default_rng(0).integers(0, 2, graph.num_nodes)
    placement = legalize(graph, proposal, testbed.devices, support, strategy="random")
    guarded = guard_placement(placement, graph, cost, support)
    assert set(guarded.assignment.values()) == {"CPU"}
    assert guarded.strategy == "random+guard" and any("guard" in n for n in guarded.notes)


def test_good_split_is_kept(testbed):
    model = prepare_model(sg.residual())
    graph = extract_graph(model)
    support = query_support(testbed.core, model, graph, testbed.devices)
    cost = _cost(graph, testbed.devices, [1.0, 1.0], link_ms=0.0)
    cost = dataclasses.replace(cost, submodel_overhead_ms=np.zeros(2))
    # Convolutions are 10x faster on CPU, everything else 10x faster on CPUF: splitting wins.
    conv = np.array([t == "Convolution" for t in graph.op_types])
    compute = cost.compute_ms.copy()
    compute[conv] = [0.1, 1.0]
    compute[~conv & (graph.role == NodeRole.COMPUTE)] = [1.0, 0.1]
    cost = dataclasses.replace(cost, compute_ms=compute, unfused_ms=compute.copy())
    proposal = np.where(conv, 0, 1)
    placement = legalize(graph, proposal, testbed.devices, support, strategy="split")
    kept = guard_placement(placement, graph, cost, support)
    assert kept is placement and len(set(kept.assignment.values())) == 2


def test_place_applies_the_guard_for_cost_model_strategies(testbed):
    model = prepare_model(sg.attention_like())
    graph = extract_graph(model)
    cost = _cost(graph, testbed.devices, [1.0, 3.0], link_ms=5.0)
    placement = oa.place(model, testbed.hetero, core=testbed.core, strategy=HeftStrategy(cost))
    assert set(placement.assignment.values()) == {"CPU"}
    # a strategy without a cost model is left alone (the heuristic's split survives)
    free = oa.place(model, testbed.hetero, core=testbed.core, strategy=RandomStrategy(seed=1), max_submodels=None)
    assert len(set(free.assignment.values())) == 2


def _first_device_lacks_convolutions():
    """A residual graph whose first device cannot run its convolutions: HETERO's plain call is a split."""
    graph = extract_graph(prepare_model(sg.residual()))
    conv = np.array([t == "Convolution" for t in graph.op_types])
    support = np.ones((graph.num_nodes, 2), dtype=bool)
    support[conv, 0] = False
    return graph, conv, support


def test_the_reference_is_hetero_split_when_the_first_device_cannot_run_everything():
    graph, conv, support = _first_device_lacks_convolutions()
    devices = ("GPU", "CPU")
    cost = _cost(graph, devices, [1.0, 3.0])  # GPU 3x faster wherever it runs
    everything_on_cpu = legalize(graph, np.ones(graph.num_nodes, np.int64), devices, support, strategy="heft")
    guarded = guard_placement(everything_on_cpu, graph, cost, support)
    # the old reference, the first device that runs every node (CPU alone), would have kept it
    placed = guarded.device_indices(graph.names, devices)
    compute = graph.role == NodeRole.COMPUTE
    assert guarded.strategy == "heft+guard" and any("HETERO's own placement" in n for n in guarded.notes)
    assert (placed[compute & conv] == 1).all() and (placed[compute & ~conv] == 0).all()


def test_a_single_device_proven_faster_than_hetero_split_is_the_reference():
    graph, conv, support = _first_device_lacks_convolutions()
    devices = ("GPU", "CPU")
    cost = _cost(graph, devices, [3.0, 1.0])  # CPU 3x faster: HETERO's split loses to CPU alone
    split = legalize(graph, np.where(conv, 1, 0), devices, support, strategy="random")
    guarded = guard_placement(split, graph, cost, support)
    assert set(guarded.assignment.values()) == {"CPU"} and guarded.strategy == "random+guard"
    # and a placement proven faster than HETERO's split is kept
    fast = dataclasses.replace(cost, link_latency_ms=np.zeros((2, 2)), submodel_overhead_ms=np.zeros(2))
    all_cpu = legalize(graph, np.ones(graph.num_nodes, np.int64), devices, support, strategy="heft")
    assert guard_placement(all_cpu, graph, fast, support) is all_cpu


def _split_gaining(graph, devices, gain: float):
    """A cost model on which convolutions on device 1 and the rest on device 0 is predicted ``gain`` (a share)
    faster than device 0 alone, and device 1 alone slower than both; no links or switches cost anything."""
    cost = _cost(graph, devices, [1.0, 1.0], link_ms=0.0)
    conv = np.array([t == "Convolution" for t in graph.op_types])
    compute = cost.compute_ms.copy()
    active = (graph.role == NodeRole.COMPUTE) & ~conv
    compute[active] = [1.0, 1.5]
    reference_ms = float(compute[conv | active, 0].sum())
    compute[conv] = [1.0, 1.0 - gain * reference_ms / conv.sum()]
    cost = dataclasses.replace(cost, compute_ms=compute, unfused_ms=compute.copy(), submodel_overhead_ms=np.zeros(2))
    return cost, np.where(conv, 1, 0)


def test_a_noise_free_model_must_predict_the_minimum_gain(testbed):
    model = prepare_model(sg.residual())
    graph = extract_graph(model)
    support = query_support(testbed.core, model, graph, testbed.devices)
    for gain in (0.5 * NOISE_FREE_MIN_GAIN, 1.5 * NOISE_FREE_MIN_GAIN):
        cost, proposal = _split_gaining(graph, testbed.devices, gain)
        split = legalize(graph, proposal, testbed.devices, support, strategy="split")
        guarded = guard_placement(split, graph, cost, support, min_win_share=0.0)  # the 2 % rule alone
        if gain < NOISE_FREE_MIN_GAIN:  # a simulated model's gain this small is within its error
            assert set(guarded.assignment.values()) == {testbed.devices[0]} and guarded.strategy == "split+guard"
            assert any("a noise-free model must predict" in n for n in guarded.notes), guarded.notes
        else:
            assert guarded is split
    # a measured model reports its spread (here none): the same small gain is proven, and kept (no risk rule)
    cost, proposal = _split_gaining(graph, testbed.devices, 0.5 * NOISE_FREE_MIN_GAIN)
    measured = dataclasses.replace(cost, simulated=False, compute_spread_ms=np.zeros_like(cost.compute_ms),
                                   e2e_spread_ms=np.zeros(2))
    split = legalize(graph, proposal, testbed.devices, support, strategy="split")
    assert guard_placement(split, graph, measured, support) is split


def test_a_noise_free_split_inside_the_models_error_is_abstained(testbed):
    """The risk rule: a split that clears the 2 % rule but whose gain the model's error (sigma 0.46 per device
    and op category) could erase falls back to the reference; one that wins under almost every perturbation is
    kept; a measured model (spreads) is not subject to it."""
    assert 0.5 < MIN_WIN_SHARE < 1.0
    model = prepare_model(sg.residual())
    graph = extract_graph(model)
    support = query_support(testbed.core, model, graph, testbed.devices)
    cost, proposal = _split_gaining(graph, testbed.devices, 3 * NOISE_FREE_MIN_GAIN)
    split = legalize(graph, proposal, testbed.devices, support, strategy="split")
    guarded = guard_placement(split, graph, cost, support)
    assert set(guarded.assignment.values()) == {testbed.devices[0]} and guarded.strategy == "split+guard"
    assert any("perturbations of the model's error" in n for n in guarded.notes), guarded.notes
    assert guard_placement(split, graph, cost, support, min_win_share=0.0) is split  # the 2 % rule alone keeps it
    measured = dataclasses.replace(cost, simulated=False, compute_spread_ms=np.zeros_like(cost.compute_ms),
                                   e2e_spread_ms=np.zeros(2))
    assert guard_placement(split, graph, measured, support) is split
    cost, proposal = _split_gaining(graph, testbed.devices, 0.6)  # convolutions 0.6 of the reference faster
    split = legalize(graph, proposal, testbed.devices, support, strategy="split")
    assert guard_placement(split, graph, cost, support) is split
