"""GCNConv against the normalised adjacency product written out by hand."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from ov_autoplace_lab.hsdag_torch.layers.gcn_conv import GCNConv, gcn_norm  # noqa: E402


def test_matches_the_hand_computed_normalised_adjacency_on_a_path():
    # path 0 - 1 - 2 plus self loops: degrees 2, 3, 2
    a_hat = torch.tensor([
        [1 / 2, 1 / math.sqrt(6), 0.0],
        [1 / math.sqrt(6), 1 / 3, 1 / math.sqrt(6)],
        [0.0, 1 / math.sqrt(6), 1 / 2],
    ])
    torch.manual_seed(0)
    conv = GCNConv(4, 5)
    torch.nn.init.normal_(conv.bias)
    x = torch.randn(3, 4)
    expected = a_hat @ x @ conv.lin.weight.T + conv.bias
    directed = torch.tensor([[0, 1], [1, 2]])
    assert torch.allclose(conv(x, directed), expected, atol=1e-6)
    # direction, duplicates and existing self loops do not change the undirected simple graph
    messy = torch.tensor([[1, 0, 2, 1, 1], [0, 1, 1, 2, 1]])
    assert torch.allclose(conv(x, messy), expected, atol=1e-6)


def test_isolated_node_keeps_only_its_own_features():
    conv = GCNConv(3, 3, bias=False)
    x = torch.randn(4, 3)
    out = conv(x, torch.tensor([[0, 1], [1, 2]]))
    assert torch.allclose(out[3], conv.lin(x[3]), atol=1e-6)  # degree 1: weight 1/1


def test_norm_weights_and_gradients():
    row, col, weight = gcn_norm(torch.tensor([[0, 0], [1, 2]]), 3)
    dense = torch.zeros(3, 3)
    dense[row, col] = weight
    assert torch.allclose(dense, dense.T)
    assert torch.allclose(dense.diagonal(), torch.tensor([1 / 3, 1 / 2, 1 / 2]))
    conv = GCNConv(2, 2)
    x = torch.randn(3, 2, requires_grad=True)
    conv(x, torch.tensor([[0, 0], [1, 2]])).sum().backward()
    assert x.grad is not None and conv.lin.weight.grad.abs().sum() > 0
    assert "GCNConv(2, 2" in repr(conv)
