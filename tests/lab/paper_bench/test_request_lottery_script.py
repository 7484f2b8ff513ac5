"""benchmarks/bench_request_lottery.py's arithmetic: per-token times with a known spread of compiles, of requests and
a first request's excess, read back as the three statistics; and the timing of a real decoder's requests."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lab.paper_bench import bench_script


@pytest.fixture(scope="module")
def script():
    return bench_script("bench_request_lottery")


def _times(compile_sd, request_sd, first, compiles=6, requests=4, rounds=60, seed=1):
    rng = np.random.default_rng(seed)
    effect = rng.normal(0.0, compile_sd, (compiles, 1)) + rng.normal(0.0, request_sd, (compiles, requests))
    effect[:, 0] += first
    drift = np.exp(rng.normal(0.0, 0.05, rounds))  # the machine's drift, shared by every request of a round
    return 3.0 * np.exp(effect)[:, :, None] * drift * np.exp(rng.normal(0.0, 0.01, (compiles, requests, rounds)))


def test_a_spread_of_the_requests_is_read_as_the_requests_not_the_compiles(script):
    result = script.spread_components(_times(0.0, 0.02, 0.0), draws=300)
    assert result["request_sd"][0] == pytest.approx(0.02, abs=0.006)
    assert result["compile_sd"][0] < 0.005
    assert result["later_request_sd"][0] == pytest.approx(0.02, abs=0.008)  # not the first request's alone


def test_a_spread_of_the_compiles_is_read_as_the_compiles(script):
    result = script.spread_components(_times(0.02, 0.0, 0.0), draws=300)
    assert result["compile_sd"][0] == pytest.approx(0.02, abs=0.008)
    assert result["later_request_sd"][0] < 0.006


def test_a_first_requests_excess_is_named_and_the_later_requests_read_alike(script):
    result = script.spread_components(_times(0.0, 0.0, 0.02), draws=300)
    point, lo, hi = result["first_request"]
    assert lo <= point <= hi and point == pytest.approx(0.02, abs=0.004) and lo > 0
    assert result["later_request_sd"][0] < 0.004 and result["compile_sd"][0] < 0.005


def test_the_drift_of_the_machine_cancels_in_the_rounds_reference(script):
    times = _times(0.0, 0.0, 0.0)
    times[:, :, 30:] *= 1.5  # the whole machine slower for half the run, every request alike
    effects = script.spread_components(times, draws=100)["effects"]
    assert np.abs(effects).max() < 0.01


def test_the_page_names_each_request_and_the_statistics(script):
    times = _times(0.0, 0.0, 0.02, compiles=2, requests=3, rounds=20)
    text = script.page(times, script.spread_components(times, draws=100), "# head")
    assert text.count("\n| ") == 1 + 6  # the header and 2 x 3 requests
    assert "First request's excess" in text and "Request spread without the first requests" in text


def test_a_real_decoders_requests_are_timed_each_round(script):
    import openvino as ov

    from ov_autoplace_lab.models.decoder_models import TINY, build_decoder

    model = build_decoder(TINY)
    core = ov.Core()
    compiled = [core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}) for _ in range(2)]
    vocabulary = int(model.output("logits").get_partial_shape()[-1].get_length())
    times = script.time_requests(compiled, 2, 3, 4, 3, vocabulary)
    assert times.shape == (2, 2, 3) and np.all(times > 0)
