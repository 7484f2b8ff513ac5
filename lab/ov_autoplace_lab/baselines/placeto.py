"""Placeto (Addanki et al., NeurIPS 2019) as a budgeted :class:`LearnedSearch`.

Placeto casts placement as an MDP that *improves* a placement: an episode visits the graph's groups one at a time and
a policy picks each one's device from a message-passing embedding of the *current* placement (parents, children and
the parallel nodes), trained with REINFORCE. This reproduction visits chain groups in chunks, starts each episode from
the best placement so far, rewards only an episode's final placement (each evaluation counts against the budget; on
devices it is a compile) and biases an untrained policy toward few changes per episode. Where it differs from the
paper, point by point: docs/results.md, "Placeto as reproduced here".
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from ov_autoplace.graph.arrays import NodeRole
from ov_autoplace.policy.coarsen import Coarsening, chain_coarsen
from ov_autoplace_lab.baselines.search import LearnedSearch

log = logging.getLogger(__name__)


def group_topological_order(coarse: Coarsening) -> np.ndarray:
    """Group ids [G] in a topological order of the group DAG (Kahn, lowest id first; deterministic)."""
    g = coarse.num_groups
    children = [[] for _ in range(g)]
    indeg = np.zeros(g, dtype=np.int64)
    for s, d in zip(coarse.edge_src.tolist(), coarse.edge_dst.tolist()):
        children[s].append(d)
        indeg[d] += 1
    ready = [v for v in range(g) if indeg[v] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        v = heapq.heappop(ready)
        order.append(v)
        for c in children[v]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(ready, c)
    if len(order) < g:  # a cycle (not expected: contracting chains keeps a DAG); keep the rest in id order
        seen = set(order)
        order += [v for v in range(g) if v not in seen]
    return np.asarray(order, dtype=np.int64)


def parallel_matrix(coarse: Coarsening, order: np.ndarray) -> np.ndarray:
    """Row-normalised float32 [G, G]: row v averages the groups neither ancestor nor descendant of v."""
    g = coarse.num_groups
    parents = [[] for _ in range(g)]
    for s, d in zip(coarse.edge_src.tolist(), coarse.edge_dst.tolist()):
        parents[d].append(s)
    anc = np.zeros((g, g), dtype=bool)  # anc[v, u]: u is an ancestor of v
    for v in order.tolist():
        if parents[v]:
            p = np.asarray(parents[v])
            anc[v] = anc[p].any(axis=0)
            anc[v, p] = True
    par = ~(anc | anc.T | np.eye(g, dtype=bool))
    return (par / np.maximum(par.sum(1, keepdims=True), 1)).astype(np.float32)


class PlacetoGraph:
    """What an episode needs of one environment's graph, at group granularity.

    ``static`` float32 [G, 3D+2] (docs/results.md, "Placeto as reproduced here"), ``allowed`` bool [G, D]
    (every compute member supported), ``order`` int64 [G], ``edge_src``/``edge_dst``
    int64 [Eg], ``parallel`` float32 [G, G] or None (approximated), ``group_of_node`` [N].
    """

    def __init__(self, env, *, parallel_exact_max: int = 1024) -> None:
        graph, cost = env.graph, env.cost
        coarse = chain_coarsen(graph)
        self.coarse, self.num_groups, self.num_devices = coarse, coarse.num_groups, len(env.devices)
        self.group_of_node = coarse.group_of_node
        g, d, gid = coarse.num_groups, len(env.devices), coarse.group_of_node
        compute = graph.role == NodeRole.COMPUTE
        ms = np.where(compute[:, None], np.asarray(cost.compute_ms, dtype=np.float64), 0.0)
        bad = ~np.isfinite(ms) | (compute[:, None] & ~np.asarray(env.support, dtype=bool))
        unsupported = np.zeros((g, d), dtype=bool)
        np.logical_or.at(unsupported, gid, bad)
        total = np.zeros((g, d))
        np.add.at(total, gid, np.where(bad, 0.0, ms))
        logc = np.log1p(total)
        finite = logc[~unsupported]
        mu, sd = (finite.mean(), finite.std() + 1e-6) if finite.size else (0.0, 1.0)
        z = np.where(unsupported, 0.0, (logc - mu) / sd)
        best = np.where(unsupported, np.inf, logc).min(1, keepdims=True)
        excess = np.where(unsupported, 5.0, logc - np.where(np.isfinite(best), best, 0.0))
        src, dst = graph.edge_src.astype(np.int64), graph.edge_dst.astype(np.int64)
        leaving = np.zeros(graph.num_nodes, dtype=bool)
        leaving[src[gid[src] != gid[dst]]] = True
        out_bytes = np.bincount(gid, weights=np.where(leaving, np.maximum(graph.out_bytes, 0), 0), minlength=g)

        def zscore(x: np.ndarray) -> np.ndarray:
            return (x - x.mean()) / (x.std() + 1e-6)

        self.static = np.concatenate([z, excess, unsupported, zscore(np.log1p(out_bytes))[:, None],
                                      zscore(np.log1p(coarse.member_count))[:, None]], axis=1).astype(np.float32)
        self.allowed = ~unsupported
        self.allowed[~self.allowed.any(1)] = True  # nowhere supported: let the legalizer decide
        self.order = group_topological_order(coarse)
        self.edge_src, self.edge_dst = torch.from_numpy(coarse.edge_src), torch.from_numpy(coarse.edge_dst)
        self.parallel = (torch.from_numpy(parallel_matrix(coarse, self.order)) if g <= parallel_exact_max else None)

    @property
    def num_features(self) -> int:
        return self.static.shape[1] + self.num_devices + 2

    def features(self, placement: np.ndarray, current: np.ndarray, visited: np.ndarray) -> np.ndarray:
        """float32 [G, F] of the state: static features, placement one-hot [G] -> [G, D], the two flags."""
        onehot = np.eye(self.num_devices, dtype=np.float32)[placement]
        return np.concatenate([self.static, onehot, current[:, None], visited[:, None]], axis=1, dtype=np.float32)

    def group_placement(self, row: np.ndarray) -> np.ndarray:
        """Device per group [G] of a node row [N]: the majority device of the group's members."""
        counts = np.zeros((self.num_groups, self.num_devices), dtype=np.int64)
        np.add.at(counts, (self.group_of_node, np.asarray(row, dtype=np.int64)), 1)
        return counts.argmax(1)

    def node_row(self, placement: np.ndarray) -> np.ndarray:
        """A proposal [N]: every node on its group's device."""
        return np.asarray(placement, dtype=np.int64)[self.group_of_node]

    def __repr__(self) -> str:
        return (f"PlacetoGraph(groups={self.num_groups}, edges={self.coarse.num_edges}, devices={self.num_devices}, "
                f"parallel={'exact' if self.parallel is not None else 'approx'})")


class PlacetoPolicy(nn.Module):
    """Placeto's graph embedding + per-node device classifier (Addanki et al., NeurIPS 2019, Sec. 3).

    ``h0 = relu(W x)``; ``rounds`` times ``up_v = relu(U [h0_v, mean_{u in parents(v)} relu(M up_u)])``,
    likewise ``down`` over children; ``par_v = mean_{u parallel to v} relu(P [up_u, down_u])``;
    ``logits_v = head([up_v, down_v, par_v]) + keep_bias * onehot(current device of v)``, unsupported
    devices masked to -inf. Shapes: S states, G groups, F features, H hidden, D devices.
    """

    def __init__(self, num_features: int, num_devices: int, *, hidden: int = 32, rounds: int = 3,
                 keep_bias: float = 0.0) -> None:
        super().__init__()
        if num_features < 1 or num_devices < 1 or hidden < 1 or rounds < 0:
            raise ValueError(f"need num_features, num_devices, hidden >= 1 and rounds >= 0; got "
                             f"{num_features}, {num_devices}, {hidden}, {rounds}")
        self.num_devices, self.hidden, self.rounds = num_devices, hidden, rounds
        self.embed = nn.Linear(num_features, hidden)
        self.up_msg, self.up_upd = nn.Linear(hidden, hidden), nn.Linear(2 * hidden, hidden)
        self.down_msg, self.down_upd = nn.Linear(hidden, hidden), nn.Linear(2 * hidden, hidden)
        self.par = nn.Linear(2 * hidden, hidden)
        self.head = nn.Sequential(nn.Linear(3 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, num_devices))
        self.register_buffer("keep_bias", torch.tensor(float(keep_bias)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Linear):
                m.reset_parameters()
        nn.init.normal_(self.head[-1].weight, std=0.01)  # start near the exploration prior
        nn.init.zeros_(self.head[-1].bias)

    def _propagate(self, h0: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, msg: nn.Linear,
                   upd: nn.Linear) -> torch.Tensor:
        """``rounds`` of mean aggregation along ``src -> dst`` edges: [S, G, H] -> [S, G, H]."""
        deg = torch.zeros(h0.shape[1], dtype=h0.dtype).index_add_(0, dst, torch.ones_like(dst, dtype=h0.dtype))
        h = h0
        for _ in range(self.rounds):
            agg = torch.zeros_like(h0).index_add_(1, dst, torch.relu(msg(h))[:, src]) / deg.clamp(min=1)[:, None]
            h = torch.relu(upd(torch.cat([h0, agg], dim=-1)))
        return h

    def forward(self, features: torch.Tensor, placement: torch.Tensor, edge_src: torch.Tensor,
                edge_dst: torch.Tensor, parallel: torch.Tensor | None = None,
                allowed: torch.Tensor | None = None) -> torch.Tensor:
        """Device logits [S, G, D] of features [S, G, F] with current placement [S, G] (int64 device ids),
        group edges ``edge_src``/``edge_dst`` [E], ``parallel`` [G, G] row-normalised (None: mean of all
        other groups) and ``allowed`` bool [G, D]."""
        h0 = torch.relu(self.embed(features))
        up = self._propagate(h0, edge_src, edge_dst, self.up_msg, self.up_upd)
        down = self._propagate(h0, edge_dst, edge_src, self.down_msg, self.down_upd)
        p = torch.relu(self.par(torch.cat([up, down], dim=-1)))
        g = p.shape[1]
        par = parallel @ p if parallel is not None else (p.sum(1, keepdim=True) - p) / max(g - 1, 1)
        logits = self.head(torch.cat([up, down, par], dim=-1))
        logits = logits + self.keep_bias * nn.functional.one_hot(placement, self.num_devices).to(logits.dtype)
        return logits if allowed is None else logits.masked_fill(~allowed, float("-inf"))

    def extra_repr(self) -> str:
        return f"devices={self.num_devices}, hidden={self.hidden}, rounds={self.rounds}"


def keep_bias_for(num_groups: int, num_devices: int, init_changes: float | None) -> float:
    """The current-device logit bonus making an untrained policy change ~``init_changes`` of ``num_groups``."""
    if init_changes is None or num_devices < 2:
        return 0.0
    p_change = min(init_changes / max(num_groups, 1), (num_devices - 1) / num_devices)
    return float(math.log((1 - p_change) * (num_devices - 1) / p_change))


class PlacetoSearch(LearnedSearch):
    """Placeto's episodes + REINFORCE within a budget of distinct evaluated placements.

    One episode = one proposal evaluated (docs/results.md, "Placeto as reproduced here"); at most
    ``max_episodes_factor * budget`` episodes, and none after ``patience``
    episodes in a row without a new distinct placement, since a proposal may
    legalise to a placement already seen (free, not counted; a converged
    policy only repeats its best). After :meth:`explore`,
    ``policy`` and ``graph`` hold the trained policy and its :class:`PlacetoGraph`.
    """

    name = "Placeto"

    def __init__(self, *, hidden: int = 32, rounds: int = 3, lr: float = 1e-2, baseline_decay: float = 0.9,
                 entropy_coef: float = 0.0, grad_clip: float = 1.0, max_forwards: int = 32,
                 init_changes: float | None = 4.0, max_episodes_factor: int = 4, parallel_exact_max: int = 1024,
                 failure_penalty: float = 1.0, patience: int = 50, threads: int | None = 1) -> None:
        if lr <= 0 or not 0 <= baseline_decay < 1 or min(max_forwards, max_episodes_factor, patience) < 1:
            raise ValueError(f"need lr > 0, 0 <= baseline_decay < 1, max_forwards, max_episodes_factor, patience >= 1; "
                             f"got {lr}, {baseline_decay}, {max_forwards}, {max_episodes_factor}, {patience}")
        if init_changes is not None and init_changes <= 0:
            raise ValueError(f"init_changes must be > 0 or None, got {init_changes}")
        self.hidden, self.rounds, self.lr, self.baseline_decay = hidden, rounds, lr, baseline_decay
        self.entropy_coef, self.grad_clip, self.max_forwards = entropy_coef, grad_clip, max_forwards
        self.init_changes, self.max_episodes_factor = init_changes, max_episodes_factor
        self.parallel_exact_max, self.failure_penalty, self.threads = parallel_exact_max, failure_penalty, threads
        self.patience = patience
        self.policy: PlacetoPolicy | None = None
        self.graph: PlacetoGraph | None = None

    def make_policy(self, graph: PlacetoGraph, seed: int) -> PlacetoPolicy:
        """The initial policy of a run with ``seed`` (leaves torch's global RNG alone)."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return PlacetoPolicy(graph.num_features, graph.num_devices, hidden=self.hidden, rounds=self.rounds,
                                 keep_bias=keep_bias_for(graph.num_groups, graph.num_devices, self.init_changes))

    def logits(self, policy: PlacetoPolicy, graph: PlacetoGraph, states: np.ndarray,
               placements: np.ndarray) -> torch.Tensor:
        """Logits [S, G, D] of states [S, G, F] with placements [S, G]."""
        return policy(torch.from_numpy(states), torch.from_numpy(placements), graph.edge_src, graph.edge_dst,
                      graph.parallel, torch.from_numpy(graph.allowed))

    def episode_loss(self, policy: PlacetoPolicy, graph: PlacetoGraph, states: np.ndarray, placements: np.ndarray,
                     currents: np.ndarray, final: np.ndarray, advantage: float) -> torch.Tensor:
        """REINFORCE loss of one episode (minimised): ``-advantage * sum_t log p(a_t | s_t) / G`` minus the
        entropy bonus; ``advantage > 0`` (faster than the baseline) makes the episode's actions likelier."""
        logp = torch.log_softmax(self.logits(policy, graph, states, placements), -1)
        actions = torch.from_numpy(final)[None, :, None].expand(len(states), -1, 1)
        mask = torch.from_numpy(currents)
        chosen = logp.gather(-1, actions)[..., 0].masked_fill(~mask, 0.0).sum() / graph.num_groups
        probs = logp.exp()
        entropy = -(probs * logp.masked_fill(probs == 0, 0.0)).sum(-1)[mask].mean()
        return -advantage * chosen - self.entropy_coef * entropy

    @torch.no_grad()
    def rollout(self, policy: PlacetoPolicy, graph: PlacetoGraph, start: np.ndarray,
                gen: torch.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One episode from ``start`` [G]: (final placement [G], states [S, G, F], placements [S, G],
        current masks [S, G] bool); the action of step s is the final device of its current groups."""
        g = graph.num_groups
        chunk = math.ceil(g / self.max_forwards)
        placement, visited = start.astype(np.int64).copy(), np.zeros(g, dtype=np.float32)
        states, placements, currents = [], [], []
        for k in range(0, g, chunk):
            groups = graph.order[k:k + chunk]
            current = np.zeros(g, dtype=np.float32)
            current[groups] = 1.0
            x = graph.features(placement, current, visited)
            logits = self.logits(policy, graph, x[None], placement[None])[0, groups]
            actions = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)[:, 0].numpy()
            states.append(x), placements.append(placement.copy()), currents.append(current > 0)
            placement[groups] = actions
            visited[groups] = 1.0
        return placement, np.stack(states), np.stack(placements), np.stack(currents)

    def explore(self, env, *, budget_samples: int, seed: int, out_of_time: Callable[[], bool]) -> list[str]:
        threads = torch.get_num_threads()
        if self.threads is not None:
            torch.set_num_threads(self.threads)  # tiny tensors: extra threads only add spin-waits
        try:
            return self._explore(env, budget_samples, seed, out_of_time)
        finally:
            torch.set_num_threads(threads)

    def _explore(self, env, budget_samples: int, seed: int, out_of_time: Callable[[], bool]) -> list[str]:
        graph = self.graph = PlacetoGraph(env, parallel_exact_max=self.parallel_exact_max)
        policy = self.policy = self.make_policy(graph, seed)
        opt = torch.optim.Adam(policy.parameters(), lr=self.lr)
        gen = torch.Generator().manual_seed(seed)
        single = np.asarray(env.single_device_ms(), dtype=np.float64)  # uncounted
        first = int(np.argmin(np.where(np.isfinite(single), single, np.inf))) if np.isfinite(single).any() else 0
        if env.num_evaluated < budget_samples and not out_of_time():  # the start placement is a sample
            start_ms = float(env.evaluate(np.full(env.num_nodes, first, dtype=np.int64)))
        else:
            start_ms = float(single[first])
        baseline = None
        worst, episodes, stale = (start_ms if math.isfinite(start_ms) else 0.0), 0, 0
        while (env.num_evaluated < budget_samples and episodes < self.max_episodes_factor * budget_samples
               and stale < self.patience and not out_of_time()):
            start = (graph.group_placement(env.best_placement) if env.best_placement is not None
                     else np.full(graph.num_groups, first, dtype=np.int64))
            final, states, placements, currents = self.rollout(policy, graph, start, gen)
            before = env.num_evaluated
            ms = float(env.evaluate(graph.node_row(final)))
            episodes, stale = episodes + 1, (stale + 1 if env.num_evaluated == before else 0)
            if math.isfinite(ms):
                worst = max(worst, ms)
            elif worst == 0.0:
                continue  # nothing finite to compare a failure with yet
            reward = -math.log(ms if math.isfinite(ms) else worst * math.exp(self.failure_penalty))
            baseline = reward if baseline is None else baseline
            loss = self.episode_loss(policy, graph, states, placements, currents, final, reward - baseline)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), self.grad_clip)
            opt.step()
            baseline = self.baseline_decay * baseline + (1 - self.baseline_decay) * reward
            log.debug("episode %d: %.4f ms, best %.4f ms, evaluated %d", episodes, ms, env.best_ms,
                      env.num_evaluated)
        chunk = math.ceil(graph.num_groups / self.max_forwards)
        stop = ("budget" if env.num_evaluated >= budget_samples else "patience" if stale >= self.patience
                else "time" if out_of_time() else "episode cap")
        return [(f"{episodes} episodes over {graph.num_groups} groups ({chunk} per step, "
                 f"{math.ceil(graph.num_groups / chunk)} steps per episode), one evaluation each, start "
                 f"{env.devices[first]}-only then the best so far; stopped by {stop}"),
                (f"hidden={self.hidden}, rounds={self.rounds}, lr={self.lr}, baseline_decay={self.baseline_decay}, "
                 f"entropy_coef={self.entropy_coef}, keep_bias={float(policy.keep_bias):.3f} "
                 f"(init_changes={self.init_changes}), parallel={'exact' if graph.parallel is not None else 'approx'}, "
                 "R=-log(latency)")]

    def __repr__(self) -> str:
        return (f"PlacetoSearch(hidden={self.hidden}, rounds={self.rounds}, lr={self.lr}, "
                f"baseline_decay={self.baseline_decay}, entropy_coef={self.entropy_coef}, "
                f"max_forwards={self.max_forwards}, init_changes={self.init_changes}, patience={self.patience})")


__all__ = ["PlacetoGraph", "PlacetoPolicy", "PlacetoSearch", "group_topological_order", "keep_bias_for",
           "parallel_matrix"]
