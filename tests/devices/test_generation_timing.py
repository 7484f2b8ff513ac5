"""A generation timed on a stateful decoder (devices/timing.time_generation): a prefill of the prompt, then decode
steps of one token from a state of each sampled past length, with inputs that agree with the state."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.devices.timing import set_step, time_generation
from ov_autoplace.model.generation import Generation, decode_pasts, generation_parts
from tests.synthetic_graphs import llm_like

LAYERS = 3


@pytest.fixture(scope="module")
def compiled(testbed):
    return testbed.core.compile_model(llm_like(layers=LAYERS, positions=None), "CPU")


def _input(request, name):
    return next(request.get_input_tensor(k).data for k, p in enumerate(request.model_inputs) if name in p.get_names())


@pytest.mark.parametrize("prompt, new", [(20, 30), (5, 3), (5, 2)], ids=["spread", "overlapping_windows", "one_step"])
def test_decode_runs_one_token_from_a_state_of_the_sampled_past(compiled, prompt, new):
    gen = Generation(prompt, new)
    request = compiled.create_infer_request()
    prefill, decode, first = time_generation(compiled, gen.prompt_tokens, decode_pasts(gen), repeats=2,
                                             request=request)
    last = decode_pasts(gen)[-1]  # the generation's last decode step (48 for 20 + 30)
    assert len(decode) == min(3, new - 1) and prefill > 0 and first > 0 and all(t > 0 for t in decode)
    if new == 2:  # the first decode step is the only one
        assert decode == (first,)
    # the last timed step fed one token after `last` past tokens, and left every layer's state one longer
    assert _input(request, "input_ids").shape == (1, 1)
    np.testing.assert_array_equal(_input(request, "position_ids"), [[last]])
    np.testing.assert_array_equal(_input(request, "attention_mask"), np.ones((1, last + 1)))
    assert [tuple(s.state.shape) for s in request.query_state()] == [(1, last + 1, 8)] * LAYERS
    parts = generation_parts(gen, prefill, decode, first)
    assert parts["ttft_ms"] == prefill and parts["generation_ms"] > prefill and parts["per_token_ms"] > 0
    # the first step stands for itself: the sum is the interpolated steps' with the first step's own time
    assert parts["generation_ms"] - generation_parts(gen, prefill, decode)["generation_ms"] == pytest.approx(
        first - decode[0])


def test_a_window_is_timed_after_a_one_token_step_not_after_the_chunk_before_it(compiled, monkeypatch):
    """Between windows the state is brought on by a chunk and then one untimed step of one token: a plugin's
    first one-token step after a longer one pays for the change of shape, which a generation pays once."""
    import ov_autoplace.devices.timing as timing

    fed = []
    real = timing.set_step
    monkeypatch.setattr(timing, "set_step", lambda request, past, tokens, *a: (fed.append((past, tokens)),
                                                                               real(request, past, tokens, *a))[1])
    gen = Generation(20, 30)
    time_generation(compiled, gen.prompt_tokens, decode_pasts(gen), request=compiled.create_infer_request())
    # prefill, the first step, window 1 (21-24), then to 34: a chunk of 25-32, one step at 33, window 34-37, ...
    assert fed[:6] == [(0, 20), (20, 1), (21, 1), (22, 1), (23, 1), (24, 1)]
    for k, (past, tokens) in enumerate(fed):
        if tokens > 1 and k > 0:  # every chunk after the prefill is followed by one untimed step, then the window
            assert fed[k + 1] == (past + tokens, 1) and fed[k + 2] == (past + tokens + 1, 1)


def test_a_decode_step_that_disagrees_with_the_state_is_rejected(compiled):
    """The decoder checks mask against state (as an optimum-intel export does): a feed off by one fails."""
    request = compiled.create_infer_request()
    request.reset_state()
    rng = np.random.default_rng(0)
    set_step(request, 0, 10, rng, 37)
    request.infer()
    set_step(request, 11, 1, rng, 37)  # claims a past of 11; the state holds 10
    with pytest.raises(RuntimeError):
        request.infer()
