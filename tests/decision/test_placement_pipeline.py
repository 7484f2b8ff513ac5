"""The one path a proposal takes to a placement (decision/placement_pipeline.py): under memory caps, a split fitted
by moving bytes is searched again by latency from where it fits."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.decision.placement_pipeline import fit_to_caps, refined_fit
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.placement.legalizer import legalize, query_support
from tests import synthetic_graphs as sg
from tests.search.test_memory_fit import BLOCKS, _capacity_for, _cost


@pytest.fixture(scope="module")
def chain(testbed):
    model = prepare_model(sg.long_chain(BLOCKS))
    graph = extract_graph(model)
    return graph, query_support(testbed.core, model, graph, testbed.devices), testbed.devices


def test_a_fitting_split_with_more_than_it_needs_on_the_slow_device_is_searched_to_a_faster_fit(chain):
    graph, support, devices = chain
    cost = _cost(graph, devices, capacity=[_capacity_for(graph, devices, BLOCKS - 2), np.inf])
    simulator = Simulator(cost, graph)
    half = np.array([1 if i >= graph.num_nodes // 2 else 0 for i in range(graph.num_nodes)])
    slow = legalize(graph, half, devices, support, strategy="half")  # fits: half the MatMuls on the slow device
    row = slow.device_indices(graph.names, devices)
    assert simulator.memory_ok(row) and np.unique(row[simulator.active]).size == 2
    faster = refined_fit(slow, graph, cost, support, pins=(), max_submodels=8)
    fast = faster.device_indices(graph.names, devices)
    assert simulator.memory_ok(fast) and simulator.feasible_ms(fast) < simulator.feasible_ms(row)
    assert (fast[simulator.active] == 1).sum() < (row[simulator.active] == 1).sum()
    assert any(note.startswith("local search:") for note in faster.notes)
    one = legalize(graph, np.zeros(graph.num_nodes, np.int64), devices, support, strategy="one")
    roomy = _cost(graph, devices, capacity=[np.inf, np.inf])
    assert refined_fit(one, graph, roomy, support, pins=(), max_submodels=8) is one  # one device: as is



def test_the_memory_path_fits_every_start_and_annotates_only_the_proposals(chain):
    """``fit_to_caps`` fits the proposal (everything on the capped fast device) and HEFT's, keeps the fastest within
    the caps, and calls ``annotate`` (the policy's search notes, logged by the profile path) on the proposal's
    placement only: HEFT's start did not come from that search (before, its note was logged once per start)."""
    graph, support, devices = chain
    cost = _cost(graph, devices, capacity=[_capacity_for(graph, devices, BLOCKS - 2), np.inf])
    simulator = Simulator(cost, graph)
    annotated = []
    placement = fit_to_caps(graph, np.zeros(graph.num_nodes, np.int64), devices, support, cost=cost, strategy="test",
                            max_submodels=8, annotate=annotated.append)
    row = placement.device_indices(graph.names, devices)
    assert simulator.memory_ok(row) and np.unique(row[simulator.active]).size == 2
    assert len(annotated) == 1
