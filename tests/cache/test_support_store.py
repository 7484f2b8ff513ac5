"""The stored support matrix: equal to query_model's, read back on a hit, damaged files re-queried."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.legalizer import query_support
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.cache.support_store import device_support
from tests import synthetic_graphs as sg
from tests.damaged_files import damage_json


@pytest.fixture(scope="module")
def prepared_graph():
    prepared = prepare_model(sg.attention_like())
    return prepared, extract_graph(prepared)


def test_stored_support_equals_the_query(testbed, tmp_path, prepared_graph, monkeypatch):
    prepared, graph = prepared_graph
    expected = query_support(testbed.core, prepared, graph, testbed.devices)
    first = device_support(testbed.core, prepared, graph, testbed.devices, tmp_path)
    np.testing.assert_array_equal(first, expected)
    (path,) = tmp_path.glob("support-*.json")

    def no_query(*args, **kwargs):
        raise AssertionError("a stored support matrix must not be queried again")

    monkeypatch.setattr("ov_autoplace.cache.support_store.query_support", no_query)
    np.testing.assert_array_equal(device_support(testbed.core, prepared, graph, testbed.devices, tmp_path), expected)


@pytest.mark.parametrize("kind", ["truncated", "nested_deeply", "wrong_field_types", "directory", "wrong_rows"])
def test_damaged_support_file_is_queried_again_and_rewritten(testbed, tmp_path, prepared_graph, caplog, kind):
    prepared, graph = prepared_graph
    expected = device_support(testbed.core, prepared, graph, testbed.devices, tmp_path)
    (path,) = tmp_path.glob("support-*.json")
    if kind == "wrong_rows":
        path.write_text(path.read_text().replace('"10"', '"1x"').replace('"11"', '"1"'))
    else:
        damage_json(path, kind)
    with caplog.at_level(logging.WARNING):
        again = device_support(testbed.core, prepared, graph, testbed.devices, tmp_path)
    np.testing.assert_array_equal(again, expected)
    # damaged content is "corrupt"; a directory in the file's place is refused unread (model/loading.py)
    assert "corrupt" in caplog.text or ("refused" in caplog.text and "is a directory" in caplog.text)
    assert path.is_file() and "support" in path.name
