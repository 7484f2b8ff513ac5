"""Graph convolution (Kipf & Welling, ICLR 2017) with torch only: no torch-scatter, no PyG."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def gcn_norm(edge_index: Tensor, num_nodes: int) -> tuple[Tensor, Tensor, Tensor]:
    """``(row, col, weight)`` of ``D^-1/2 (A + I) D^-1/2`` with A the *undirected* simple graph of ``edge_index``.

    Both directions of every edge count once (duplicates and existing self
    loops are dropped, then one self loop per node is added), so a DAG's
    producers and consumers both reach a node. Message ``row -> col``.
    """
    src, dst = edge_index[0].long(), edge_index[1].long()
    row, col = torch.cat([src, dst]), torch.cat([dst, src])
    off = row != col
    key = torch.unique(row[off] * num_nodes + col[off])
    loops = torch.arange(num_nodes, device=edge_index.device)
    row = torch.cat([torch.div(key, num_nodes, rounding_mode="floor"), loops])
    col = torch.cat([key % num_nodes, loops])
    ones = torch.ones_like(col, dtype=torch.float)
    degree = torch.zeros(num_nodes, device=edge_index.device).index_add_(0, col, ones)
    inv_sqrt = degree.pow(-0.5)
    return row, col, inv_sqrt[row] * inv_sqrt[col]


class GCNConv(nn.Module):
    r"""``X' = D^-1/2 (A + I) D^-1/2 X W + b`` (Kipf & Welling, "Semi-Supervised Classification with
    Graph Convolutional Networks", ICLR 2017), edges taken as undirected.

    Shapes: ``x`` [num_nodes, in_channels], ``edge_index`` int [2, num_edges]
    (directed; symmetrised internally) -> [num_nodes, out_channels].
    Aggregation is ``index_add_`` over destination nodes.
    """

    def __init__(self, in_channels: int, out_channels: int, bias: bool = True) -> None:
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # Glorot, as PyG's GCNConv
        bound = math.sqrt(6.0 / (self.in_channels + self.out_channels))
        nn.init.uniform_(self.lin.weight, -bound, bound)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x: Tensor, edge_index: Tensor, norm: tuple[Tensor, Tensor, Tensor] | None = None) -> Tensor:
        """``norm``: a precomputed :func:`gcn_norm` of ``edge_index`` (saves recomputing it per layer)."""
        row, col, weight = norm if norm is not None else gcn_norm(edge_index, x.shape[0])
        h = self.lin(x)
        out = torch.zeros_like(h).index_add_(0, col, h[row] * weight.unsqueeze(-1))
        return out + self.bias if self.bias is not None else out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, bias={self.bias is not None})"
