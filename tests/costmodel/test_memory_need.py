"""What a model needs resident per node (costmodel/memory_need.py): weights, and each variable's KV cache at the
declared context, charged on its ReadValue; and the checks that no split can fit, before anything is compiled."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.costmodel.memory_need import (DEFAULT_CONTEXT_TOKENS, check_caps_hold, context_tokens, memory_need,
                                                state_bytes)
from ov_autoplace.errors import MemoryCapError
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.shapes import default_static_clone
from ov_autoplace.placement.stateful import state_groups
from tests.synthetic_graphs import stateful_layers

LAYERS, HIDDEN = 3, 16
WEIGHT = HIDDEN * HIDDEN * 4  # each layer's projection, f32


@pytest.fixture(scope="module")
def model():
    return stateful_layers(LAYERS, HIDDEN)


@pytest.fixture(scope="module")
def graph(model):
    return extract_graph(prepare_model(default_static_clone(model)[1]))


def test_each_variable_holds_its_declared_shape_at_the_context_length(model):
    # declared [1, ?, HIDDEN] f32: batch 1, the dynamic axis is the sequence
    assert state_bytes(model, 100) == {f"rv{k}": 100 * HIDDEN * 4 for k in range(LAYERS)}


def test_the_context_defaults_to_the_declared_generation_else_256_tokens(model):
    assert context_tokens(model) == DEFAULT_CONTEXT_TOKENS == 256
    assert context_tokens(model, 40) == 40
    limited = stateful_layers(1, HIDDEN)
    limited.set_rt_info(128, "max_position_embeddings")  # the model's own limit wins where it states one
    assert context_tokens(limited) == 128
    assert context_tokens(limited, 1000) == 128


def test_need_is_weights_on_their_readers_plus_the_cache_on_each_readvalue(graph, model):
    need = memory_need(graph, model, 64)
    by_name = dict(zip(graph.names, need.node_bytes.tolist()))
    for k in range(LAYERS):
        assert by_name[f"proj{k}"] == WEIGHT
        assert by_name[f"rv{k}"] == 64 * HIDDEN * 4
    kv = LAYERS * 64 * HIDDEN * 4
    assert sum(need.state.values()) == kv
    assert kv + LAYERS * WEIGHT <= need.unique_bytes < kv + LAYERS * WEIGHT + 200  # + the small index constants
    assert "KV cache" in need.describe() and "64 tokens" in need.describe()


def test_a_node_that_fits_under_no_cap_is_named_with_its_size(graph, model):
    need = memory_need(graph, model, 64)
    with pytest.raises(MemoryCapError, match=r"'rv\d'.*4.1 KB \(4096 B\).*CPU 3 KB"):
        check_caps_hold(graph, need, ("CPU", "CPUF"), [3000, 3000])


def test_a_cap_below_the_largest_weight_is_fine_where_another_device_holds_it(graph, model):
    need = memory_need(graph, model, 64)
    check_caps_hold(graph, need, ("CPU", "CPUF"), [500, np.inf])


def test_a_variable_and_its_layer_share_one_device(graph, model):
    need = memory_need(graph, model, 64)
    groups = [(g.label, g.members) for g in state_groups(graph)]
    biggest = max(float(need.node_bytes[m].sum()) for _, m in groups)
    with pytest.raises(MemoryCapError, match="share one device"):
        check_caps_hold(graph, need, ("CPU", "CPUF"), [biggest - 1] * 2, groups)


def test_caps_that_cannot_hold_the_model_say_how_much_is_missing(graph, model):
    need = memory_need(graph, model, 64)
    half = need.unique_bytes // 2 - 100
    with pytest.raises(MemoryCapError, match=r"the model needs at least .* 200 B missing"):
        check_caps_hold(graph, need, ("CPU", "CPUF"), [half, half])
