"""The measuring feed knows LLM conventions (devices/timing.py) and a user's sample (``inputs=``,
model/input_sample.py) is checked before anything is compiled."""

from __future__ import annotations

import numpy as np
import pytest

import ov_autoplace
from ov_autoplace.devices.timing import input_sample, is_stateful, measure_latency, random_inputs
from ov_autoplace.errors import ShapeError
from tests.synthetic_graphs import llm_like

SHAPES = {"input_ids": [4, 8], "attention_mask": [4, 8], "position_ids": [4, 8], "beam_idx": [4]}


@pytest.fixture(scope="module")
def compiled(testbed):
    model = llm_like()
    model.reshape(SHAPES)
    return testbed.core.compile_model(model, "CPU")


def test_the_feed_is_a_prefill_the_decoder_accepts(compiled):
    arrays = {port.get_any_name(): a for port, a in zip(compiled.inputs, random_inputs(compiled))}
    np.testing.assert_array_equal(arrays["beam_idx"], np.arange(4))  # a row of the batch each, never outside it
    np.testing.assert_array_equal(arrays["attention_mask"], np.ones((4, 8)))
    np.testing.assert_array_equal(arrays["position_ids"], np.tile(np.arange(8), (4, 1)))
    ids = arrays["input_ids"]
    assert ids.min() >= 0 and ids.max() < 37 and len(np.unique(ids)) > 2  # the vocabulary read from the logits


def test_a_stateful_model_is_timed_from_a_reset_state_every_run(compiled):
    assert is_stateful(compiled)
    # without a reset the second run's state (16 positions) outgrows the mask (8) and the model rejects it
    stats = measure_latency(compiled, warmup=2, iterations=4)
    assert len(stats.samples_ms) == 4 and np.all(stats.samples_ms > 0)


def test_a_sample_is_fed_where_it_fits(compiled):
    ids = np.full((4, 8), 5, dtype=np.int64)
    with input_sample({"input_ids": ids, "beam_idx": np.zeros(3, np.int32)}):  # beam_idx: not this shape
        arrays = {p.get_any_name(): a for p, a in zip(compiled.inputs, random_inputs(compiled))}
    np.testing.assert_array_equal(arrays["input_ids"], ids)
    np.testing.assert_array_equal(arrays["beam_idx"], np.arange(4))


@pytest.mark.parametrize("sample, match", [
    ({"beam_idx": np.array([0, 1, 2, 7], np.int32), "input_ids": np.zeros((4, 8), np.int64)}, r"beam_idx.*\[0, 4\)"),
    ({"input_ids": np.full((1, 8), 99, np.int64)}, r"vocabulary, \[0, 37\)"),
    ({"token_ids": np.zeros((1, 8), np.int64)}, r"not an input.*input_ids"),
    ({"input_ids": np.zeros((1, 8), np.float32)}, r"float32.*int64"),
    ({"input_ids": np.zeros(8, np.int64)}, r"input_ids.*shape"),
], ids=["beam_outside_batch", "ids_outside_vocabulary", "unknown_input", "dtype", "rank"])
def test_a_sample_the_model_rejects_is_a_shape_error_before_any_compile(testbed, sample, match, monkeypatch):
    def no_compile(*args, **kwargs):
        raise AssertionError("compiled before the sample was checked")
    monkeypatch.setattr(testbed.core, "compile_model", no_compile)
    with pytest.raises(ShapeError, match=match):
        ov_autoplace.compile_model(llm_like(), testbed.hetero, core=testbed.core, inputs=sample)


def test_a_sample_sets_the_placement_shapes(testbed):
    sample = {"input_ids": np.ones((2, 6), np.int64), "attention_mask": np.ones((2, 6), np.int64),
              "position_ids": np.tile(np.arange(6), (2, 1)), "beam_idx": np.arange(2, dtype=np.int32)}
    placement = ov_autoplace.place(llm_like(), testbed.hetero, core=testbed.core, inputs=sample)
    assert placement.devices == testbed.devices
    with pytest.raises(ShapeError, match="disagree"):
        ov_autoplace.place(llm_like(), testbed.hetero, core=testbed.core, inputs=sample,
                           shapes={"input_ids": [1, 6]})


def test_an_auto_compiled_model_is_timed_as_stateless(testbed):
    """AUTO's requests raise "Not Implemented" for query_state: measure_latency must still time such a model."""
    from ov_autoplace.devices.timing import is_stateful, measure_latency
    from tests import synthetic_graphs as sg

    compiled = testbed.core.compile_model(sg.residual(), "AUTO")
    assert not is_stateful(compiled)
    assert measure_latency(compiled, warmup=1, iterations=2).samples_ms.size == 2
