"""HSDAG step 4: a distribution over devices for every group, for any number of devices."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class DevicePlacer(nn.Module):
    r"""``logit[g, d] = w^T relu(A h_g + B f_d + C p_gd + a) + b``: an MLP over each (group, device) pair.

    ``h_g`` is the group embedding, ``f_d`` the device's features, ``p_gd`` the
    pair's features (the group's mean node-device features on d and its total
    compute on d). Equivalent to one hidden-layer MLP on their concatenation,
    computed without materialising it. Devices are scored independently by
    shared weights, so the same placer serves 1, 2 or 8 devices (Duan et al.,
    NeurIPS 2024, step 4, generalised from a fixed-size output layer).

    With ``graph_channels`` > 0 a whole-graph summary ``s`` [Cs] joins every pair's hidden layer (``+ E s``), so
    how a device's groups are scored - its threshold - can depend on the graph as a whole.

    Shapes: ``group_x`` [G, Cg], ``device_x`` [D, Cd], ``pair_x`` [G, D, Cp], ``graph_x`` [Cs] -> logits [G, D].
    """

    def __init__(self, group_channels: int, device_channels: int, pair_channels: int, hidden: int,
                 graph_channels: int = 0) -> None:
        super().__init__()
        self.group_channels, self.device_channels, self.pair_channels, self.hidden = (
            group_channels, device_channels, pair_channels, hidden)
        self.graph_channels = graph_channels
        self.lin_group = nn.Linear(group_channels, hidden)
        self.lin_device = nn.Linear(device_channels, hidden, bias=False)
        self.lin_pair = nn.Linear(pair_channels, hidden, bias=False)
        self.lin_graph = nn.Linear(graph_channels, hidden, bias=False) if graph_channels else None
        self.out = nn.Linear(hidden, 1)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for lin in (self.lin_group, self.lin_device, self.lin_pair, self.lin_graph, self.out):
            if lin is not None:
                lin.reset_parameters()

    def forward(self, group_x: Tensor, device_x: Tensor, pair_x: Tensor, graph_x: Tensor | None = None) -> Tensor:
        h = self.lin_group(group_x).unsqueeze(1) + self.lin_device(device_x).unsqueeze(0) + self.lin_pair(pair_x)
        if self.lin_graph is not None:
            if graph_x is None:
                raise ValueError("this placer reads a whole-graph summary (graph_channels > 0); pass graph_x")
            h = h + self.lin_graph(graph_x)
        return self.out(torch.relu(h)).squeeze(-1)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(group={self.group_channels}, device={self.device_channels}, "
                f"pair={self.pair_channels}, graph={self.graph_channels}, hidden={self.hidden})")
