"""The HSDAG placement policy (Duan et al., NeurIPS 2024, arXiv 2405.14185) in torch, for training.

Forward pass (steps 3-4 of the paper; steps 1-2 are ``extract_graph`` and
``inputs.build_policy_arrays``)::

    coarse features x [C, F]  --Linear+ReLU-->  [C, H]
      --L x GCNConv (ReLU between)-->  z [C, H]                   (chain-coarsened graph)
      --GraphParsingPool-->  groups of coarse nodes, h [G, H]     (learned number of groups)
      --DevicePlacer(h, device features, group x device costs)-->  logits [G, D]

With ``placer_inputs="boundary"`` the placer also reads what moving each
group trades against its compute gain (``ov_autoplace.policy.boundary``) and the mean
group embedding; with ``placer_passes`` > 1 it scores the groups again, each pass
pricing the moves with the neighbours where the previous pass's greedy choice put them.

The GCN runs on the chain-coarsened graph (``coarsen.chain_coarsen``): a
coarse node's features are the mean of its members' node features plus
log member count, log total FLOPs and log total bytes (``inputs``), and its
per-device inputs are sums over members, so the placer sees exact means and
totals over the original nodes of each learned group.

A node's device is its group's device (:func:`to_node_placement`). Before
training, call :meth:`HSDAGPolicy.calibrate_merging` once (data-dependent
initialisation of the merge threshold). The torch-free twin is
:mod:`ov_autoplace.policy.numpy_policy`; the weights move between them with
:mod:`ov_autoplace.policy.policy_file`.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.policy.boundary import BoundaryInputs, GroupBoundary
from ov_autoplace.policy.config import HSDAGConfig
from ov_autoplace.policy.features import NodeFeatureConfig
from ov_autoplace.policy.inputs import PolicyArrays, build_policy_arrays
from ov_autoplace_lab.hsdag_torch.layers import DevicePlacer, GCNConv, GraphParsingPool, gcn_norm


@dataclasses.dataclass
class PolicyInputs:
    """:class:`~ov_autoplace.policy.inputs.PolicyArrays` as tensors (same fields, same shapes)."""

    x: Tensor
    edge_index: Tensor
    coarse_size: Tensor
    node_coarse: Tensor
    device_x: Tensor
    node_device_sum: Tensor
    compute_us: Tensor
    devices: tuple[str, ...]
    boundary: BoundaryInputs  # numpy: read after the (discrete) pooling, no gradient flows through it

    @classmethod
    def from_arrays(cls, arrays: PolicyArrays, device: str | torch.device = "cpu") -> "PolicyInputs":
        t = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(device)  # noqa: E731
        return cls(x=t(arrays.x), edge_index=t(np.stack([arrays.edge_src, arrays.edge_dst])),
                   coarse_size=t(arrays.coarse_size), node_coarse=t(arrays.node_coarse), device_x=t(arrays.device_x),
                   node_device_sum=t(arrays.node_device_sum), compute_us=t(arrays.compute_us), devices=arrays.devices,
                   boundary=arrays.boundary)

    @classmethod
    def from_graph(cls, graph: GraphArrays, cost: CostModel, feature_config: NodeFeatureConfig | None = None, *,
                   config: HSDAGConfig = HSDAGConfig(), device: str | torch.device = "cpu") -> "PolicyInputs":
        """Features and coarsening of ``graph`` (ablation switches: ``feature_config``, else ``config``'s)."""
        arrays = build_policy_arrays(graph, cost, feature_config or config.feature_config, vocab=config.vocab,
                                     pos_dim=config.pos_dim, coarsening_rule=config.coarsening)
        return cls.from_arrays(arrays, device)

    @property
    def num_nodes(self) -> int:
        return int(self.node_coarse.shape[0])

    @property
    def num_devices(self) -> int:
        return int(self.device_x.shape[0])


@dataclasses.dataclass
class PolicyOutput:
    """``logits`` [G, D]; ``node_group`` int64 [N] (original node -> group); ``edge_logits``: the
    graph-parsing scores of each pooling iteration, ``levels`` the coarse-node edges they score (for diagnostics
    or regularisers: ``imitation.grouping_loss``)."""

    logits: Tensor
    node_group: Tensor
    num_groups: int
    edge_logits: list[Tensor]
    pool_iterations: int
    levels: list = dataclasses.field(default_factory=list)  # ScoredLevel per entry of edge_logits


@dataclasses.dataclass
class PlacementSample:
    """``devices`` int64 [G]; ``log_prob`` and ``entropy``: sums over groups (scalars with gradients)."""

    devices: Tensor
    log_prob: Tensor
    entropy: Tensor


class HSDAGPolicy(nn.Module):
    """Input projection -> ``num_gcn_layers`` x :class:`GCNConv` -> :class:`GraphParsingPool` -> :class:`DevicePlacer`.

    ``forward(inputs) -> PolicyOutput`` with logits [G, D] for any D; see the module docstring.
    """

    def __init__(self, config: HSDAGConfig = HSDAGConfig()) -> None:
        super().__init__()
        self.config = config
        h = config.hidden
        self.input_proj = nn.Linear(config.in_features, h)
        self.convs = nn.ModuleList(GCNConv(h, h) for _ in range(config.num_gcn_layers))
        self.pool = GraphParsingPool(h, config.max_pool_iterations, config.score_threshold)
        self.placer = DevicePlacer(h, config.device_features, config.pair_features, h, config.graph_features)

    def reset_parameters(self) -> None:
        self.input_proj.reset_parameters()
        for module in (*self.convs, self.pool, self.placer):
            module.reset_parameters()

    def encode(self, inputs: PolicyInputs) -> Tensor:
        """Coarse-node embeddings [C, H]: input projection and the GCN layers."""
        if inputs.x.shape[1] != self.config.in_features:
            raise ValueError(f"inputs have {inputs.x.shape[1]} features per coarse node, the policy expects "
                             f"{self.config.in_features}; build them with the policy's config (vocab, pos_dim)")
        z = torch.relu(self.input_proj(inputs.x))
        norm = gcn_norm(inputs.edge_index, z.shape[0])
        for k, conv in enumerate(self.convs):
            z = conv(z, inputs.edge_index, norm)
            if k < len(self.convs) - 1:
                z = torch.relu(z)
        return z

    @torch.no_grad()
    def calibrate_merging(self, inputs: PolicyInputs | Sequence[PolicyInputs], edge_fraction: float = 0.3) -> float:
        """Data-dependent initialisation of the merge threshold (ActNorm-style, Kingma & Dhariwal 2018).

        Shifts the edge scorer's output bias so that ``edge_fraction`` of the
        first-level edges of ``inputs`` reach ``score_threshold``. Without it
        the initial bias alone decides whether nearly every edge or none
        merges (a coin flip per seed); with it training starts from a
        moderate grouping and learns the threshold from there. Call once,
        before training. Returns the shift applied to the bias.
        """
        if not 0.0 < edge_fraction < 1.0:
            raise ValueError(f"edge_fraction must be in (0, 1), got {edge_fraction}")
        batch = [inputs] if isinstance(inputs, PolicyInputs) else list(inputs)
        logits = torch.cat([self.pool.level_logits(self.encode(i), i.edge_index) for i in batch])
        if logits.numel() == 0:
            raise ValueError("the inputs have no edges between coarse nodes; nothing to calibrate on")
        shift = float(torch.quantile(logits.double(), 1.0 - edge_fraction)) - self.pool.threshold_logit
        self.pool.score[2].bias -= shift
        return shift

    def forward(self, inputs: PolicyInputs) -> PolicyOutput:
        pooled = self.pool(self.encode(inputs), inputs.edge_index, inputs.coarse_size)
        group, num = pooled.node_group, pooled.num_groups
        size = pooled.size
        nd_mean = _segment_sum(inputs.node_device_sum, group, num) / size[:, None, None]
        log_cost = torch.log1p(_segment_sum(inputs.compute_us, group, num)) / 10.0
        relative = log_cost - log_cost.min(dim=1, keepdim=True).values
        pair = torch.cat([nd_mean, log_cost.unsqueeze(-1), relative.unsqueeze(-1)], dim=-1)
        graph_x = pooled.x.mean(dim=0) if self.config.graph_features else None
        boundary = (GroupBoundary(inputs.boundary, group.detach().cpu().numpy(), num,
                                  inputs.compute_us.detach().cpu().numpy())
                    if self.config.placer_inputs == "boundary" else None)  # after the discrete pooling: no gradient

        def score(around: np.ndarray | None) -> Tensor:
            features = pair
            if boundary is not None:
                features = torch.cat([pair, torch.from_numpy(boundary.features(around)).to(pair.device)], dim=-1)
            return self.placer(pooled.x, inputs.device_x, features, graph_x)

        logits = score(None)
        for _ in range(self.config.placer_passes - 1):
            logits = score(logits.detach().argmax(dim=1).cpu().numpy())
        return PolicyOutput(logits=logits, node_group=group[inputs.node_coarse], num_groups=num,
                            edge_logits=pooled.edge_logits, pool_iterations=pooled.iterations, levels=pooled.levels)

    def extra_repr(self) -> str:
        c = self.config
        return (f"hidden={c.hidden}, gcn_layers={c.num_gcn_layers}, in_features={c.in_features}, "
                f"max_pool_iterations={c.max_pool_iterations}, score_threshold={c.score_threshold}")


def _segment_sum(values: Tensor, label: Tensor, num: int) -> Tensor:
    out = torch.zeros((num,) + tuple(values.shape[1:]), dtype=values.dtype, device=values.device)
    return out.index_add_(0, label, values)


def sample(output: PolicyOutput, generator: torch.Generator | None = None) -> PlacementSample:
    """Draw one device per group from ``softmax(logits)``; log-prob and entropy summed over groups."""
    log_p = torch.log_softmax(output.logits, dim=-1)
    devices = torch.multinomial(log_p.detach().exp(), 1, generator=generator).squeeze(-1)
    log_prob = log_p.gather(1, devices.unsqueeze(-1)).sum()
    entropy = -(log_p.exp() * log_p).sum()
    return PlacementSample(devices=devices, log_prob=log_prob, entropy=entropy)


def greedy(output: PolicyOutput) -> Tensor:
    """The most likely device of every group, int64 [G] (ties: lowest device index)."""
    return output.logits.argmax(dim=-1)


def to_node_placement(group_devices: Tensor | np.ndarray, node_group: Tensor | np.ndarray) -> np.ndarray:
    """Device index of every node, int64 [N] (the proposal ``legalize`` takes)."""
    g = group_devices.detach().cpu().numpy() if isinstance(group_devices, Tensor) else np.asarray(group_devices)
    n = node_group.detach().cpu().numpy() if isinstance(node_group, Tensor) else np.asarray(node_group)
    return g[n].astype(np.int64)


__all__ = ["HSDAGPolicy", "PlacementSample", "PolicyInputs", "PolicyOutput", "greedy", "sample", "to_node_placement"]
