"""The submodel merge stays bounded on a recurrent graph (issue 22: an unrolled GRU held ``legalize`` > 8 min).

Speed numbers live in the report / benchmarks, not here: these tests bound the *work* (HETERO splits computed)
and check the result, never a time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.placement import merge_to_bound, submodels
from ov_autoplace.placement.legalizer import constant_subgraph_mask, legalize
from ov_autoplace.placement.submodels import submodel_partition
from ov_autoplace_lab.training.graph_family import build

DEVICES = ("GPU", "CPU")


@pytest.fixture(scope="module")
def gru():
    """The 1,737-node unrolled GRU of issue 22; every node supported on both devices."""
    graph = extract_graph(prepare_model(build(8, "state_space")))
    return graph, np.ones((graph.num_nodes, 2), bool)


@pytest.fixture
def split_calls(monkeypatch):
    calls = []
    real = submodels._hetero_split

    def counted(graph, dev):
        calls.append(1)
        return real(graph, dev)

    monkeypatch.setattr(submodels, "_hetero_split", counted)
    return calls


def test_over_budget_the_merge_halves_islands_with_few_splits(gru, split_calls, monkeypatch):
    graph, support = gru
    monkeypatch.setattr(merge_to_bound, "MERGE_BUDGET_NODE_MOVES", 0)  # over budget at once: the fallback path alone
    proposal = (np.arange(graph.num_nodes) // 4) % 2  # 480 submodels; within budget 107 splits
    placement = legalize(graph, proposal, DEVICES, support, max_submodels=8)
    assert placement.num_submodels <= 8
    assert any("budget" in note for note in placement.notes), placement.notes
    # the count before merging, the effective bound, one partition, then one count per halving of the islands
    assert len(split_calls) <= 3 + math.ceil(math.log2(graph.num_nodes)), len(split_calls)
    device = np.array([DEVICES.index(placement.assignment[n]) for n in graph.names])
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    assert submodel_partition(graph, device, active).num_submodels == placement.num_submodels


def test_within_budget_the_merge_moves_single_submodels_and_says_nothing(gru, split_calls, monkeypatch):
    graph, support = gru
    monkeypatch.setattr(merge_to_bound, "MERGE_BUDGET_NODE_MOVES", math.inf)
    proposal = (np.arange(graph.num_nodes) // 16) % 2  # 121 submodels before the merge
    placement = legalize(graph, proposal, DEVICES, support, max_submodels=8)
    assert placement.num_submodels <= 8
    assert not any("budget" in note for note in placement.notes), placement.notes
    assert len(split_calls) > 3  # the one-at-a-time moves ran, each priced by a split
