"""Graph parsing pooling: a learned partition, and gradients that reach the edge scorer."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ov_autoplace_lab.hsdag_torch.layers.graph_parsing_pool import GraphParsingPool  # noqa: E402


def _random_dag(n: int, extra: int, seed: int = 0) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    src = list(range(n - 1))
    dst = list(range(1, n))
    a, b = rng.integers(0, n, extra), rng.integers(0, n, extra)
    keep = a < b
    return torch.tensor([src + a[keep].tolist(), dst + b[keep].tolist()])


def _check_partition(result, n: int) -> None:
    group = result.node_group.numpy()
    assert group.shape == (n,)
    assert np.array_equal(np.unique(group), np.arange(result.num_groups))  # each node in exactly one non-empty group
    assert result.x.shape == (result.num_groups, 16)
    assert float(result.size.sum()) == pytest.approx(n)


def test_merging_gives_fewer_groups_and_a_partition():
    torch.manual_seed(0)
    pool = GraphParsingPool(16, max_iterations=3)
    with torch.no_grad():
        pool.score[2].bias.fill_(5.0)  # every edge passes the threshold
    x, edges = torch.randn(40, 16), _random_dag(40, 30)
    result = pool(x, edges, torch.ones(40))
    _check_partition(result, 40)
    assert result.num_groups < 40 and result.iterations >= 1
    src, dst = result.edge_index
    assert not (src == dst).any()


def test_nothing_merges_below_the_threshold():
    torch.manual_seed(0)
    pool = GraphParsingPool(16)
    with torch.no_grad():
        pool.score[2].bias.fill_(-50.0)
    x, edges = torch.randn(12, 16), _random_dag(12, 5)
    result = pool(x, edges, torch.ones(12))
    assert result.iterations == 0 and result.num_groups == 12
    assert torch.equal(result.node_group, torch.arange(12))
    assert torch.equal(result.x, x)  # untouched when nothing merges
    assert len(result.edge_logits) == 1  # scored once, then stopped


def test_the_threshold_is_learned_not_a_ratio():
    torch.manual_seed(0)
    pool = GraphParsingPool(16, max_iterations=1)
    x, edges = torch.randn(60, 16), _random_dag(60, 40)
    counts = []
    for bias in (-3.0, 0.0, 3.0):
        with torch.no_grad():
            pool.score[2].bias.fill_(bias)
        counts.append(pool(x, edges, torch.ones(60)).num_groups)
    assert counts[0] > counts[1] > counts[2]


def test_gradients_reach_the_edge_scorer():
    torch.manual_seed(0)
    pool = GraphParsingPool(16, max_iterations=2)
    x = torch.randn(30, 16, requires_grad=True)
    result = pool(x, _random_dag(30, 20), torch.ones(30))
    assert result.iterations >= 1
    (result.x ** 2).sum().backward()
    for name in ("score.0.weight", "score.2.weight", "score.2.bias", "phi.weight", "rho.weight"):
        grad = dict(pool.named_parameters())[name].grad
        assert grad is not None and torch.isfinite(grad).all() and grad.abs().sum() > 0, name
    assert x.grad.abs().sum() > 0


def test_no_edges_and_repr():
    pool = GraphParsingPool(16)
    result = pool(torch.randn(3, 16), torch.zeros(2, 0, dtype=torch.long), torch.ones(3))
    assert result.num_groups == 3 and result.iterations == 0 and result.edge_logits == []
    assert "GraphParsingPool(16, max_iterations=4, score_threshold=0.5)" == repr(pool)
    with pytest.raises(ValueError, match="score_threshold"):
        GraphParsingPool(16, score_threshold=1.0)
