"""The lab's strategies, selected by name through the runtime (entry-point group ``ov_autoplace.strategies``)."""

from __future__ import annotations

import pytest

import ov_autoplace
from ov_autoplace.strategies.registry import strategy_info
from ov_autoplace_lab.strategies import NAMED_SEARCH_BUDGET
from tests import synthetic_graphs as sg

pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["placeto", pytest.param("rnn_placer", marks=pytest.mark.slow),
                                  pytest.param("hsdag_paper", marks=pytest.mark.slow)])
def test_a_lab_strategy_by_name_places_a_model_with_a_measured_search(testbed, name):
    strategy = strategy_info(name).make()
    placement = ov_autoplace.place(sg.residual(), testbed.hetero, core=testbed.core, strategy=strategy)
    assert placement.strategy == strategy.name and set(placement.devices) == {"CPU", "CPUF"}
    result = strategy.last_result  # the search really measured: distinct placements compiled and timed
    assert result is not None and 0 < result.evaluated <= NAMED_SEARCH_BUDGET and result.best_row is not None
    again = ov_autoplace.place(sg.residual(), testbed.hetero, core=testbed.core, strategy=name)  # by its name
    assert again.devices == placement.devices
