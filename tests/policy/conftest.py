"""Fixtures of the policy tests; the stand-in CostModel they price on is ``tests/stand_in_costs.py``."""

from __future__ import annotations

import pytest

from tests import synthetic_graphs
from tests.stand_in_costs import prepared_graph


@pytest.fixture(scope="session")
def synthetic_prepared() -> dict[str, tuple]:
    """name -> (prepared ov.Model, GraphArrays) of every ``PLACEMENT_GRAPHS`` model."""
    return {name: prepared_graph(build()) for name, build in synthetic_graphs.PLACEMENT_GRAPHS.items()}


@pytest.fixture(scope="session")
def bert_prepared():
    """(prepared ov.Model, GraphArrays) of the zoo's BERT-base."""
    from tests.conftest import zoo_available

    if not zoo_available():
        pytest.skip("zoo extras not installed: pip install -e '.[zoo]'")
    from ov_autoplace_lab import models as zoo

    return prepared_graph(zoo.load("bert_base"))
