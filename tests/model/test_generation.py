"""The LLM objective (model/generation.py): a generation's time as prefill + decode steps over the past, and
``generation=`` checked at the door against the model (a stateful decoder, its position table)."""

from __future__ import annotations

import json

import numpy as np
import openvino as ov
import pytest

import ov_autoplace
from ov_autoplace.call_request import build_request
from ov_autoplace.errors import ShapeError
from ov_autoplace.model.generation import (DECODE_POINTS, Generation, check_generation, declared_positions,
                                           decode_pasts, decode_weights, generation_ms, is_generative, position_limit)
from tests.synthetic_graphs import llm_like, residual


@pytest.mark.parametrize("prompt, new", [(128, 128), (8, 6), (5, 2), (5, 3), (1, 1000)])
def test_decode_points_span_the_decode_steps_and_weights_sum_every_step(prompt, new):
    gen = Generation(prompt, new)
    pasts, weights = decode_pasts(gen), decode_weights(gen)
    assert len(pasts) == min(DECODE_POINTS, new - 1) == len(weights)
    assert pasts[0] == prompt and pasts[-1] == prompt + new - 2  # the first and the last decode step
    assert weights.sum() == pytest.approx(new - 1) and np.all(weights > 0)


def test_the_objective_is_the_prefill_plus_every_decode_step_interpolated():
    gen = Generation(10, 11)  # decode steps at pasts 10..19, timed at 10, 14, 19
    assert decode_pasts(gen) == (10, 14, 19)
    decode = lambda past: 1.0 + 0.1 * past  # noqa: E731 - linear in the past: interpolation is exact
    want = 7.0 + sum(decode(p) for p in range(10, 20))
    assert generation_ms(gen, 7.0, [decode(p) for p in decode_pasts(gen)]) == pytest.approx(want)
    assert generation_ms(Generation(10, 1), 7.0, []) == 7.0  # the prefill gives the only token


def test_a_stateful_decoder_gets_the_default_generation_and_other_models_none():
    assert is_generative(llm_like(layers=3)) and not is_generative(residual())
    assert check_generation(None, llm_like(positions=None)) == Generation(128, 128)
    assert check_generation(None, residual()) is None
    assert check_generation((32, 16), llm_like()) == Generation(32, 16)
    # the default shortened to a position table of 64 rows (our guess: never an error)
    short = check_generation(None, llm_like(positions=64))
    assert short.prompt_tokens + short.new_tokens - 1 == 64


def test_the_position_table_is_read_from_the_graph_and_none_is_invented():
    assert position_limit(llm_like(positions=64))[0] == 64
    assert position_limit(llm_like(positions=None)) is None  # positions computed from the ids, as RoPE


@pytest.mark.parametrize("model, generation, match", [
    (llm_like(positions=64), (60, 10),
     r"needs 69 positions.*position table '.*' has 64.*prompt_tokens \+ new_tokens <= 65"),
    (llm_like(), (0, 5), r"ints >= 1"),
    (llm_like(), Generation(5, -1), r"ints >= 1"),
    (llm_like(), (5, True), r"ints >= 1"),
    (llm_like(), "128,128", r"Generation\(prompt_tokens, new_tokens\)"),
    (residual(), (128, 128), r"applies to a stateful decoder.*0 variable.*leave generation unset"),
], ids=["past_positions", "zero_prompt", "negative_new", "bool", "string", "not_stateful"])
def test_bad_generations_are_shape_errors_at_the_door(testbed, model, generation, match):
    with pytest.raises(ShapeError, match=match):
        ov_autoplace.compile_model(model, testbed.hetero, core=testbed.core, generation=generation)


def _export_like(directory, model, **config):
    """``model`` saved as optimum-intel saves a decoder: ``openvino_model.xml`` beside its ``config.json``."""
    directory.mkdir(exist_ok=True)
    ov.save_model(model, directory / "openvino_model.xml")
    (directory / "config.json").write_text(json.dumps({"model_type": "llama", **config}))
    return directory / "openvino_model.xml"


@pytest.mark.parametrize("config, declared", [
    ({"max_position_embeddings": 256}, 256),
    ({"max_position_embeddings": 256, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}}, 256),
    ({"max_position_embeddings": 256, "rope_scaling": None}, 256),
    ({"max_position_embeddings": 256, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, None),
    ({"max_position_embeddings": 256, "rope_scaling": {"type": "dynamic", "factor": 2.0}}, None),
    ({"max_position_embeddings": True}, None),
    ({"max_position_embeddings": "256"}, None),
    ({}, None),
], ids=["plain", "rope_default", "no_scaling", "yarn", "dynamic_old_key", "bool", "string", "absent"])
def test_a_rope_decoder_s_positions_are_read_from_its_config_unless_scaled(tmp_path, config, declared):
    """RoPE computes positions from the ids, so the graph has no table: the export's config.json says how many the
    model was made for; a scaled RoPE stretches them by rules of its own, so no limit is read from it."""
    xml = _export_like(tmp_path / "llm", llm_like(positions=None), **config)
    found = declared_positions(xml)
    assert (found[0] if found else None) == declared
    if found:
        assert str(tmp_path / "llm" / "config.json") in found[1]
    assert declared_positions(str(xml)) == found and declared_positions(llm_like(positions=None)) is None
    (tmp_path / "llm" / "config.json").write_text("{not json")
    assert declared_positions(xml) is None, "an unreadable config says nothing"


def test_a_generation_past_a_rope_decoder_s_declared_positions_is_a_shape_error_at_the_door(testbed, tmp_path):
    xml = _export_like(tmp_path / "llm", llm_like(positions=None), max_position_embeddings=40)
    with pytest.raises(ShapeError, match=r"needs 49 positions.*max_position_embeddings in '.*config.json' has 40.*"
                                         r"prompt_tokens \+ new_tokens <= 41"):
        ov_autoplace.compile_model(xml, testbed.hetero, core=testbed.core, generation=(40, 10))
    with pytest.raises(ShapeError, match="max_position_embeddings"):
        ov_autoplace.place(str(xml), testbed.hetero, core=testbed.core, generation=(40, 10))
    with pytest.raises(ShapeError, match="max_position_embeddings"):
        ov_autoplace.save_model(xml, tmp_path / "placed.xml", device_name=testbed.hetero, core=testbed.core,
                                generation=(40, 10))
    assert not (tmp_path / "placed.xml").exists(), "refused before anything is written"
    # the default generation is shortened to the declared positions, as to a table; one that fits is kept
    assert build_request(xml, testbed.hetero, core=testbed.core).generation == Generation(20, 21)
    assert build_request(xml, testbed.hetero, core=testbed.core, generation=(30, 11)).generation == Generation(30, 11)
    # the graph's own table wins over the config; a model object has no config beside it
    table = _export_like(tmp_path / "table", llm_like(positions=64), max_position_embeddings=40)
    assert build_request(table, testbed.hetero, core=testbed.core, generation=(50, 15)).generation == \
        Generation(50, 15)
    read = ov.Core().read_model(xml)  # what an app that reads the model itself hands over: no path, no limit
    assert build_request(read, testbed.hetero, core=testbed.core, generation=(40, 10)).generation == Generation(40, 10)


def test_the_request_carries_the_generation_and_places_the_prompt_s_prefill(testbed):
    req = build_request(llm_like(positions=None), testbed.hetero, core=testbed.core, generation=(48, 16))
    assert req.generation == Generation(48, 16)
    assert req.shapes["input_ids"] == [1, 48] and req.shapes["beam_idx"] == [1]
    assert build_request(residual(), testbed.hetero, core=testbed.core).generation is None


def test_the_generation_is_part_of_the_placement_cache_key(testbed, tmp_path):
    from ov_autoplace.cache.placement_cache import PlacementCache
    from ov_autoplace.graph.arrays import extract_graph

    graph = extract_graph(residual())
    cache = PlacementCache(tmp_path)
    plain = cache.key(testbed.core, graph, testbed.devices, strategy="s")
    assert "generation" not in plain  # other models keep their keys
    assert cache.key(testbed.core, graph, testbed.devices, strategy="s", generation=Generation(1, 2)) != \
        cache.key(testbed.core, graph, testbed.devices, strategy="s", generation=Generation(1, 3))
