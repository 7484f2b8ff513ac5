"""CostModel files: a damaged one is a FileFormatError naming the file."""

from __future__ import annotations

import pytest

import ov_autoplace as oa
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.platforms import PLATFORMS
from ov_autoplace.costmodel.sim_costs import cost_model_for
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.strategies.base import PlacementContext
from tests import synthetic_graphs as sg
from tests.damaged_files import JSON_DAMAGES, damage_json

import numpy as np


@pytest.mark.parametrize("kind", sorted(JSON_DAMAGES) + ["directory"])
def test_damaged_cost_model_file_is_a_file_format_error(tmp_path, kind):
    graph = extract_graph(prepare_model(sg.residual()))
    context = PlacementContext(graph=graph, devices=("GPU", "CPU"), support=np.ones((graph.num_nodes, 2), bool))
    path = tmp_path / "cost.json"
    cost_model_for(context.graph, PLATFORMS["paper"]).save(path)
    assert set(CostModel.load(path).devices) == {"GPU", "CPU"}
    damage_json(path, kind)
    with pytest.raises(oa.FileFormatError) as info:
        CostModel.load(path)
    assert str(path) in str(info.value)
