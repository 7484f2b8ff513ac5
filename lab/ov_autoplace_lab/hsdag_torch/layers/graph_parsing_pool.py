"""Graph parsing pooling (Song et al., "Graph Parsing Networks", ICLR 2024), as HSDAG uses it."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch import Tensor, nn

from ov_autoplace.policy.graph_ops import parse_groups, pooled_edges, undirected_edges


def standardize_edges(e: Tensor, eps: float = 1e-5) -> Tensor:
    """Zero mean, unit variance per channel over the edges (rows) of one graph level, no learned statistics.

    GCN embeddings of neighbouring nodes share a large common component, so raw
    products ``x_u * x_v`` differ little between edges and the scorer's output
    would be decided by its bias alone (all edges merge, or none). Standardising
    keeps what distinguishes the edges of this graph; the bias then acts as the
    learned merge threshold.
    """
    mean = e.mean(dim=0, keepdim=True)
    var = ((e - mean) ** 2).mean(dim=0, keepdim=True)
    return (e - mean) / torch.sqrt(var + eps)


def decision_weights(score: Tensor, weight_edge: np.ndarray, best_edge: np.ndarray) -> Tensor:
    """Per-node confidence in its parsing decision: the score of the kept edge it merged along,
    ``1 - score`` of its best edge when it stayed alone, 1 when it has no edge."""
    merged = torch.from_numpy(weight_edge).to(score.device)
    best = torch.from_numpy(best_edge).to(score.device)
    alone = torch.where(best >= 0, 1.0 - score[best.clamp(min=0)], torch.ones_like(best, dtype=score.dtype))
    return torch.where(merged >= 0, score[merged.clamp(min=0)], alone)


@dataclasses.dataclass(frozen=True)
class ScoredLevel:
    """One scored iteration's edges: ``u``, ``v`` int64 [E] (aligned with that iteration's logits) between the
    level's nodes, and ``member`` int64 [n] mapping each input node to its node at that level (the identity at the
    first). Lets a regulariser say which input nodes an edge's merge would join."""

    u: np.ndarray
    v: np.ndarray
    member: np.ndarray


@dataclasses.dataclass
class PoolResult:
    """``node_group`` int64 [n] input node -> group (composed over iterations); ``x`` [G, C] group
    embeddings; ``edge_index`` int64 [2, Eg] pooled directed edges; ``size`` [G] summed input sizes;
    ``edge_logits``: the scored logits of each iteration (the last one merged nothing when
    parsing stopped by the threshold); ``levels``: the edges those logits score (:class:`ScoredLevel`);
    ``iterations``: how many iterations merged something."""

    node_group: Tensor
    x: Tensor
    edge_index: Tensor
    size: Tensor
    edge_logits: list[Tensor]
    iterations: int
    levels: list[ScoredLevel] = dataclasses.field(default_factory=list)

    @property
    def num_groups(self) -> int:
        return int(self.x.shape[0])


class GraphParsingPool(nn.Module):
    r"""Learned grouping: score edges, keep each node's best, pool connected components; repeat.

    Each iteration scores every edge from its endpoints' embeddings, keeps each node's best edge if it reaches
    ``score_threshold``, pools the connected components with DeepSets weighted by each node's confidence in its
    decision (what lets gradients reach the scorer through a discrete grouping), and stops when nothing merges or
    after ``max_iterations``: the learned scorer, not a ratio, sets the number of groups. Keeping and grouping run
    in numpy (``graph_ops``), the code the torch-free policy runs. Step by step: docs/policy.md, "Learned grouping".

    Shapes: ``x`` [n, C], ``edge_index`` int [2, E], ``size`` [n] -> :class:`PoolResult`.
    """

    def __init__(self, channels: int, max_iterations: int = 4, score_threshold: float = 0.5) -> None:
        super().__init__()
        if not 0.0 < score_threshold < 1.0:
            raise ValueError(f"score_threshold must be in (0, 1), got {score_threshold}")
        self.channels, self.max_iterations, self.score_threshold = channels, max_iterations, score_threshold
        self.score = nn.Sequential(nn.Linear(channels, channels), nn.ReLU(), nn.Linear(channels, 1))
        self.phi = nn.Linear(channels, channels)
        self.rho = nn.Linear(channels + 1, channels)
        self.reset_parameters()

    @property
    def threshold_logit(self) -> float:
        return float(np.log(self.score_threshold / (1.0 - self.score_threshold)))

    def reset_parameters(self) -> None:
        for lin in (self.score[0], self.score[2], self.phi, self.rho):
            lin.reset_parameters()
        nn.init.zeros_(self.score[2].bias)  # start undecided: about half the edges pass 0.5

    def edge_logits(self, x: Tensor, u: Tensor, v: Tensor) -> Tensor:
        """``MLP(standardise(x_u * x_v))``: the products are standardised per channel over this level's edges."""
        return self.score(standardize_edges(x[u] * x[v])).squeeze(-1)

    def level_logits(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """Edge logits of one level (the first, when given the input graph), in ``undirected_edges`` order."""
        src, dst = (edge_index[k].detach().cpu().numpy().astype(np.int64) for k in (0, 1))
        u, v = undirected_edges(src, dst, x.shape[0])
        return self.edge_logits(x, torch.from_numpy(u).to(x.device), torch.from_numpy(v).to(x.device))

    def forward(self, x: Tensor, edge_index: Tensor, size: Tensor) -> PoolResult:
        device = x.device
        src, dst = (edge_index[k].detach().cpu().numpy().astype(np.int64) for k in (0, 1))
        group = np.arange(x.shape[0], dtype=np.int64)
        logits_seen: list[Tensor] = []
        levels: list[ScoredLevel] = []
        iterations = 0
        for _ in range(self.max_iterations):
            u, v = undirected_edges(src, dst, x.shape[0])
            if u.shape[0] == 0:
                break
            logit = self.edge_logits(x, torch.from_numpy(u).to(device), torch.from_numpy(v).to(device))
            logits_seen.append(logit)
            levels.append(ScoredLevel(u, v, group))
            parsed = parse_groups(u, v, logit.detach().cpu().numpy(), x.shape[0], self.threshold_logit)
            if parsed is None:
                break
            iterations += 1
            w = decision_weights(torch.sigmoid(logit), parsed.weight_edge, parsed.best_edge)
            label = torch.from_numpy(parsed.label).to(device)
            k = parsed.num_groups
            total = torch.zeros(k, self.channels, dtype=x.dtype, device=device).index_add_(
                0, label, torch.relu(self.phi(x)) * w.unsqueeze(-1))
            count = torch.zeros(k, dtype=x.dtype, device=device).index_add_(0, label, torch.ones_like(w))
            size = torch.zeros(k, dtype=x.dtype, device=device).index_add_(0, label, size)
            x = torch.relu(self.rho(torch.cat([total / count.unsqueeze(-1), torch.log1p(size).unsqueeze(-1)], dim=1)))
            group = parsed.label[group]
            src, dst = pooled_edges(src, dst, parsed.label, k)
        return PoolResult(
            node_group=torch.from_numpy(group).to(device), x=x,
            edge_index=torch.from_numpy(np.stack([src, dst])).to(device), size=size,
            edge_logits=logits_seen, iterations=iterations, levels=levels)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.channels}, max_iterations={self.max_iterations}, "
                f"score_threshold={self.score_threshold})")
