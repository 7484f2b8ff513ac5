"""The LLM objective in a cost model (model/generation.generation_costs): a decode step is the same graph at another
shape (model/generation.decode_clone), and the mixed costs predict a whole generation: the prefill's latency plus
each decode shape's at the objective's weights, for any placement."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.costmodel.platforms import LAPTOP_PLATFORM
from ov_autoplace.costmodel.sim_costs import cost_model_for
from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.model.generation import Generation, decode_clone, decode_pasts, decode_weights, generation_costs
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.shapes import static_clone
from tests.synthetic_graphs import llm_like

LAYERS, HIDDEN = 3, 8


def _cost(graph, prepared=None):
    return cost_model_for(graph, LAPTOP_PLATFORM, precision="f16")


@pytest.fixture(scope="module")
def decoder():
    model = llm_like(layers=LAYERS, hidden=HIDDEN, positions=None)
    prefill = extract_graph(prepare_model(static_clone(model, {"input_ids": [1, 16], "attention_mask": [1, 16],
                                                                "position_ids": [1, 16], "beam_idx": [1]})))
    return model, prefill


def test_a_decode_clone_is_one_token_over_a_state_of_the_past(decoder):
    """A clone for costing (its Assigns have no ReadValue: the CPU plugin does not run it): every shape static."""
    model, prefill = decoder
    clone = decode_clone(model, 40)
    shapes = {p.get_node().get_friendly_name(): list(p.get_partial_shape().to_shape()) for p in clone.inputs}
    assert shapes["input_ids"] == [1, 1] and shapes["attention_mask"] == [1, 41]
    states = {n: s for n, s in shapes.items() if n.startswith("ReadValue")}
    assert len(states) == LAYERS and all(s == [1, 40, HIDDEN] for s in states.values())
    assert set(states) <= set(prefill.names)  # the state keeps the ReadValue's name: the placement's names hold
    assert list(clone.output("logits").get_partial_shape().to_shape()) == [1, 1, 37]
    assert all(op.get_output_partial_shape(k).is_static for op in clone.get_ops() for k in range(op.get_output_size()))


def test_the_mixed_costs_predict_the_prefill_plus_the_weighted_decode_steps(decoder):
    model, prefill = decoder
    gen = Generation(16, 40)
    graph, cost = generation_costs(model, prefill, _cost(prefill), gen, _cost)
    decodes = [extract_graph(prepare_model(decode_clone(model, past))) for past in decode_pasts(gen)]
    compute = np.flatnonzero(prefill.role == NodeRole.COMPUTE)
    rng = np.random.default_rng(0)
    for _ in range(5):  # random placements, splits included: the mix is linear in every term
        device = np.zeros(prefill.num_nodes, dtype=np.int64)
        device[compute] = rng.integers(0, len(cost.devices), size=compute.size)
        by_name = dict(zip(prefill.names, device.tolist()))
        want = CostTerms(_cost(prefill), prefill).latency_ms(device)
        for g, w in zip(decodes, decode_weights(gen)):
            want += w * CostTerms(_cost(g), g).latency_ms(np.array([by_name.get(n, 0) for n in g.names]))
        assert CostTerms(cost, graph).latency_ms(device) == pytest.approx(want, rel=1e-3)
    # the decode steps are most of a long generation: a longer one costs more, and mostly in decode
    _, longer = generation_costs(model, prefill, _cost(prefill), Generation(16, 80), _cost)
    assert np.sum(longer.compute_ms[compute, 0]) > 1.5 * np.sum(cost.compute_ms[compute, 0])


def test_the_mixed_costs_carry_the_generations_crossing_bytes_for_a_strategy_given_only_them(decoder):
    """A strategy's cost provider returns the CostModel alone and the strategy prices it on the prefill's graph
    (``strategy="heft"`` on ``MeasuredCostProvider``): the cost carries the generation's bytes per edge, so a split is
    priced as on the generation's graph, by CostTerms and by the simulator, and not at the prefill's bytes alone."""
    from ov_autoplace.costmodel.simulator import Simulator

    model, prefill = decoder
    graph, cost = generation_costs(model, prefill, _cost(prefill), Generation(16, 40), _cost)
    np.testing.assert_array_equal(cost.edge_bytes, graph.edge_bytes)
    assert np.sum(graph.edge_bytes) > 1.5 * np.sum(np.maximum(prefill.edge_bytes, 0))  # 39 steps cross too
    compute = np.flatnonzero(prefill.role == NodeRole.COMPUTE)
    device = np.zeros(prefill.num_nodes, dtype=np.int64)
    device[compute[compute.size // 2:]] = 1  # a pipeline split: the hidden state crosses every step
    on_prefill_graph = CostTerms(cost, prefill).latency_ms(device)
    assert on_prefill_graph == pytest.approx(CostTerms(cost, graph).latency_ms(device), rel=1e-9)
    without = dataclasses.replace(cost, edge_bytes=None)  # what the strategy priced before
    assert CostTerms(without, prefill).latency_ms(device) < on_prefill_graph
    assert Simulator(cost, prefill).latency_and_submodels(device[None])[0][0] == pytest.approx(on_prefill_graph, rel=1e-6)
    with pytest.raises(ValueError, match="edge_bytes has .* entries for a graph of"):
        cost.bytes_on(extract_graph(prepare_model(decode_clone(model, 8))))
