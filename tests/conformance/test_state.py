"""Stateful models (ReadValue/Assign): query_state, reset_state, set_state, and the state carried across calls."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest

from tests.conformance import models

pytestmark = pytest.mark.slow


@pytest.fixture
def stateful_request(via):
    compiled = via.compile(models.stateful_model())
    return compiled, compiled.create_infer_request()


def test_state_accumulates_across_infers_and_resets(stateful_request):
    _, request = stateful_request
    step = np.array([[1, -2, 3, 0.5]], dtype=np.float32)
    for count in (1, 2, 3):
        np.testing.assert_allclose(request.infer({"data": step})[0], count * np.maximum(step, 0), rtol=1e-6)
    request.reset_state()
    np.testing.assert_allclose(request.infer({"data": step})[0], np.maximum(step, 0), rtol=1e-6)


def test_query_state_names_and_values(stateful_request):
    _, request = stateful_request
    states = request.query_state()
    assert [state.name for state in states] == ["acc"]
    request.infer({"data": np.ones((1, 4), np.float32)})
    np.testing.assert_allclose(request.query_state()[0].state.data, np.ones((1, 4)), rtol=1e-6)


def test_set_state_is_what_the_next_infer_reads(stateful_request):
    _, request = stateful_request
    state = request.query_state()[0]
    state.state = ov.Tensor(np.full((1, 4), 10, np.float32))
    np.testing.assert_allclose(request.infer({"data": np.ones((1, 4), np.float32)})[0], np.full((1, 4), 11))
    state.reset()
    np.testing.assert_allclose(request.infer({"data": np.ones((1, 4), np.float32)})[0], np.ones((1, 4)))


def test_each_request_has_its_own_state(stateful_request):
    compiled, first = stateful_request
    second = compiled.create_infer_request()
    ones = np.ones((1, 4), np.float32)
    first.infer({"data": ones})
    first.infer({"data": ones})
    np.testing.assert_allclose(second.infer({"data": ones})[0], ones)
    np.testing.assert_allclose(first.infer({"data": ones})[0], 3 * ones)


def test_compiled_model_call_keeps_state(via):
    compiled = via.compile(models.stateful_model())
    ones = np.ones((1, 4), np.float32)
    compiled(ones)
    np.testing.assert_allclose(compiled(ones)[0], 2 * ones)
