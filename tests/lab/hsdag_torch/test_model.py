"""The torch HSDAG policy: shapes, any device count, sampling, calibration, end-to-end gradients."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ov_autoplace.policy.config import HSDAGConfig  # noqa: E402
from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy, PolicyInputs, greedy, sample, to_node_placement  # noqa: E402
from tests.stand_in_costs import stand_in_cost_model  # noqa: E402


def _policy(seed: int = 0, **config) -> HSDAGPolicy:
    torch.manual_seed(seed)
    return HSDAGPolicy(HSDAGConfig(hidden=32, **config))


@pytest.mark.parametrize("name", ["branching", "residual", "attention_like"])
def test_output_shapes_and_partition(synthetic_prepared, name):
    _, graph = synthetic_prepared[name]
    inputs = PolicyInputs.from_graph(graph, stand_in_cost_model(graph), config=HSDAGConfig(hidden=32))
    policy = _policy()
    policy.calibrate_merging(inputs)
    out = policy(inputs)
    assert out.logits.shape == (out.num_groups, 2)
    assert out.node_group.shape == (graph.num_nodes,)
    assert np.array_equal(np.unique(out.node_group.numpy()), np.arange(out.num_groups))
    assert out.num_groups <= inputs.x.shape[0] <= graph.num_nodes


def test_one_set_of_weights_places_on_two_or_three_devices(synthetic_prepared):
    _, graph = synthetic_prepared["attention_like"]
    policy = _policy()
    two = policy(PolicyInputs.from_graph(graph, stand_in_cost_model(graph, ("CPU", "CPUF")), config=policy.config))
    three = policy(PolicyInputs.from_graph(graph, stand_in_cost_model(graph, ("CPU", "CPUF", "NPU")),
                                           config=policy.config))
    assert two.logits.shape == (two.num_groups, 2) and three.logits.shape == (three.num_groups, 3)
    assert torch.equal(two.node_group, three.node_group)  # grouping does not depend on the devices
    # permuting the devices permutes the logits
    swapped = policy(PolicyInputs.from_graph(graph, stand_in_cost_model(graph, ("NPU", "CPU", "CPUF")),
                                             config=policy.config))
    assert torch.allclose(swapped.logits, three.logits[:, [2, 0, 1]], atol=1e-5)


def test_sample_greedy_and_node_placement(synthetic_prepared):
    _, graph = synthetic_prepared["residual"]
    policy = _policy()
    out = policy(PolicyInputs.from_graph(graph, stand_in_cost_model(graph), config=policy.config))
    draw = sample(out, torch.Generator().manual_seed(3))
    again = sample(out, torch.Generator().manual_seed(3))
    assert torch.equal(draw.devices, again.devices)
    log_p = torch.log_softmax(out.logits, -1)
    assert draw.log_prob.item() == pytest.approx(log_p[torch.arange(out.num_groups), draw.devices].sum().item())
    assert 0 < draw.entropy.item() <= out.num_groups * np.log(2) + 1e-5
    best = greedy(out)
    assert torch.equal(best, out.logits.argmax(-1))
    nodes = to_node_placement(best, out.node_group)
    assert nodes.shape == (graph.num_nodes,) and nodes.dtype == np.int64
    assert np.array_equal(nodes, best.numpy()[out.node_group.numpy()])


def test_calibration_sets_the_fraction_of_mergeable_edges(synthetic_prepared):
    inputs = [PolicyInputs.from_graph(g, stand_in_cost_model(g), config=HSDAGConfig(hidden=32))
              for _, g in synthetic_prepared.values()]
    policy = _policy(seed=4)
    policy.calibrate_merging(inputs, edge_fraction=0.4)
    logits = torch.cat([policy.pool.level_logits(policy.encode(i), i.edge_index) for i in inputs])
    assert (logits >= 0).float().mean().item() == pytest.approx(0.4, abs=1.5 / len(logits))


MODULES = ("input_proj", "convs.0", "convs.1", "pool.score", "pool.phi", "pool.rho", "placer")


def _grad_sums(policy) -> dict[str, float]:
    out = {}
    for prefix in MODULES:
        grads = [p.grad for n, p in policy.named_parameters() if n.startswith(prefix)]
        assert grads and all(g is not None and torch.isfinite(g).all() for g in grads), prefix
        out[prefix] = sum(float(g.abs().sum()) for g in grads)
    policy.zero_grad()
    return out


def test_gradients_reach_every_module(synthetic_prepared):
    """Every module is on the autograd path of the logits, and a REINFORCE loss gives finite gradients.

    The REINFORCE loss (a function of each group's softmax) does not change when a group's logits all move
    together, and the group embedding enters every device's logit through the same hidden units; so where the
    ReLU gates agree across devices its gradient to the encoder is exactly zero. Whether they agree depends on
    the partition, which moved with the CPU's summation order (seed 0: 7 groups on an AVX2 EPYC, 2 on an
    AVX512 Xeon, gradient 0). Connectivity is therefore checked on the logits of one device."""
    _, graph = synthetic_prepared["attention_like"]
    policy = _policy()
    inputs = PolicyInputs.from_graph(graph, stand_in_cost_model(graph), config=policy.config)
    policy.calibrate_merging(inputs, edge_fraction=0.5)
    out = policy(inputs)
    assert out.pool_iterations >= 1
    out.logits[:, 0].sum().backward(retain_graph=True)
    assert all(v > 0 for v in _grad_sums(policy).values()), "a module is cut off from the logits"
    draw = sample(out, torch.Generator().manual_seed(0))
    (-(draw.log_prob * 1.7) - 0.01 * draw.entropy).backward()
    assert _grad_sums(policy)["placer"] > 0


def test_inputs_of_another_vocabulary_are_rejected(synthetic_prepared):
    _, graph = synthetic_prepared["branching"]
    inputs = PolicyInputs.from_graph(graph, stand_in_cost_model(graph), config=HSDAGConfig(pos_dim=8))
    with pytest.raises(ValueError, match="features per coarse node"):
        _policy()(inputs)
