"""``sim_case``: a model placed on a simulated platform (tests/lab/viz/conftest.py), for the placed-graph tests."""

from tests.lab.viz.conftest import sim_case  # noqa: F401  (re-exported as a fixture)
