"""Placements on a simulated platform: every picture module can be tested without the devices it names."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.costmodel.platforms import PLATFORMS
from ov_autoplace.costmodel.sim_costs import cost_model_for
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.legalizer import legalize
from ov_autoplace.model.prepare import prepare_model


class SimCase:
    """A prepared model's graph, its simulated cost model (labelled simulated) and a way to place it."""

    def __init__(self, model, platform: str = "paper") -> None:
        self.graph = extract_graph(prepare_model(model))
        self.cost = cost_model_for(self.graph, PLATFORMS[platform])
        self.devices = tuple(self.cost.devices)

    def placement(self, proposal: np.ndarray, max_submodels: int | None = None):
        support = np.ones((self.graph.num_nodes, len(self.devices)), dtype=bool)
        return legalize(self.graph, np.asarray(proposal, dtype=np.int64), self.devices, support,
                        max_submodels=max_submodels, strategy="test")

    def alternating(self, period: int = 7, max_submodels: int | None = None):
        """Runs of ``period`` nodes (topological order) alternating between the first two devices."""
        return self.placement((np.arange(self.graph.num_nodes) // period) % 2, max_submodels)


@pytest.fixture()
def sim_case():
    return SimCase
