"""The batched anchor fixer (``costmodel/anchors.py``) places anchors exactly as ``legalize()`` does."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.costmodel.anchors import AnchorFixer
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.placement.legalizer import legalize
from tests import synthetic_graphs as sg


def _legalized(graph, proposal, num_devices, support):
    devices = tuple(f"D{d}" for d in range(num_devices))
    placement = legalize(graph, proposal, devices, support)
    return np.array([devices.index(placement.assignment[name]) for name in graph.names])


@pytest.mark.parametrize("name", sorted(sg.PLACEMENT_GRAPHS) + ["with_if", "bool_and_string"])
def test_fix_anchors_matches_legalize(name):
    builder = getattr(sg, name)
    graph = extract_graph(prepare_model(builder()))
    rng = np.random.default_rng(11)
    support = rng.random((graph.num_nodes, 3)) < 0.7
    support[:, 0] = True  # some device always works, as the CPU does
    proposals = rng.integers(0, 3, (25, graph.num_nodes))
    for supp in (None, support):
        fixed = AnchorFixer(graph, 3, supp)(proposals)
        full = np.ones((graph.num_nodes, 3), bool) if supp is None else supp
        for proposal, row in zip(proposals, fixed):
            np.testing.assert_array_equal(row, _legalized(graph, proposal, 3, full))
