"""The RNN-based placer of Mirhoseini et al., ICML 2017, as a budgeted :class:`LearnedSearch`.

"Device Placement Optimization with Reinforcement Learning" places a graph's
ops with a sequence-to-sequence model: an LSTM encoder reads the ops in
topological order, an LSTM decoder with content-based attention emits one
device per op, each step fed the previous step's device, and the policy is
trained with REINFORCE on ``R = sqrt(runtime)`` minus a moving-average
baseline. For large graphs the paper places *co-location groups*; here the
groups are :func:`~ov_autoplace.policy.coarsen.chain_coarsen`'s (what the
legalizer places as a unit), ordered topologically.

Per-group input (the paper's three parts): the op type of the group's
heaviest compute member (hashed into a fixed table, so the policy's shape does
not depend on the graph), output size (log bytes leaving the group, log
flops, log member count) and adjacency (log in/out degree and a bitmap of
which of the previous/next ``ADJACENCY_WINDOW`` groups are neighbours, plus
"any farther" flags), numeric parts z-scored over the graph.

The sign matters (HSDAG's public RNN baseline got it wrong): the loss is
``mean_k (R_k - b) * log p(a_k)`` with ``R = sqrt(latency / ref)`` (``ref``:
the best finite latency of the first batch, a positive scale that leaves
the sign alone), so gradient *descent* makes faster placements likelier.
Infinite latencies cost ``failure_penalty`` times the worst finite one seen.
"""

from __future__ import annotations

import dataclasses
import heapq
import logging
import math
import zlib
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.policy.coarsen import Coarsening, chain_coarsen
from ov_autoplace_lab.baselines.search import LearnedSearch

log = logging.getLogger(__name__)

#: How many previous / next groups the adjacency bitmap covers.
ADJACENCY_WINDOW = 8


@dataclasses.dataclass(frozen=True, eq=False)
class GroupInputs:
    """The encoder's input sequence of one graph: G co-location groups in topological order.

    ``order`` int64 [G]: group id at each sequence position; ``op_ids`` int64 [G]:
    hashed op type; ``features`` float32 [G, F]; ``group_of_node`` int64 [N].
    """

    order: np.ndarray
    op_ids: np.ndarray
    features: np.ndarray
    group_of_node: np.ndarray

    @property
    def num_groups(self) -> int:
        return int(self.order.shape[0])

    def proposals(self, actions: np.ndarray) -> np.ndarray:
        """Node proposals [K, N] of per-position devices ``actions`` [K, G]."""
        group_devices = np.empty_like(actions)
        group_devices[:, self.order] = actions
        return group_devices[:, self.group_of_node]


def topological_group_order(coarsening: Coarsening) -> np.ndarray:
    """Group ids [G] in a topological order of the group DAG (ties and cycles broken by lowest id)."""
    g, src, dst = coarsening.num_groups, coarsening.edge_src, coarsening.edge_dst
    if np.all(src < dst):
        return np.arange(g, dtype=np.int64)  # root order already is topological
    indeg = np.bincount(dst, minlength=g)
    succ: list[list[int]] = [[] for _ in range(g)]
    for s, t in zip(src.tolist(), dst.tolist()):
        succ[s].append(t)
    ready = [i for i in range(g) if indeg[i] == 0]
    heapq.heapify(ready)
    done, order = np.zeros(g, dtype=bool), []
    while len(order) < g:
        if not ready:  # a cycle (followers can close one): release the lowest remaining id
            heapq.heappush(ready, int(np.flatnonzero(~done)[0]))
        i = heapq.heappop(ready)
        if done[i]:
            continue
        done[i] = True
        order.append(i)
        for t in succ[i]:
            indeg[t] -= 1
            if indeg[t] == 0 and not done[t]:
                heapq.heappush(ready, t)
    return np.asarray(order, dtype=np.int64)


def build_group_inputs(graph: GraphArrays, coarsening: Coarsening | None = None, *,
                       op_buckets: int = 128) -> GroupInputs:
    """Per-group op type, output size and adjacency features (see the module docstring)."""
    c = chain_coarsen(graph) if coarsening is None else coarsening
    g, gon = c.num_groups, c.group_of_node
    order = topological_group_order(c)
    position = np.empty(g, dtype=np.int64)
    position[order] = np.arange(g)
    n = graph.num_nodes
    flops = np.maximum(graph.flops, 0.0)
    compute = graph.role == NodeRole.COMPUTE
    # op type: the heaviest compute member (lowest id on ties), else the group's first node
    score = np.where(compute, flops, -1.0)
    by = np.lexsort((np.arange(n), -score, gon))
    _, first = np.unique(gon[by], return_index=True)
    rep = by[first]
    op_ids = np.array([zlib.crc32(graph.op_types[i].encode()) % op_buckets for i in rep.tolist()], dtype=np.int64)
    # output size: bytes of the distinct members whose output leaves the group, flops, members
    src, dst = graph.edge_src.astype(np.int64), graph.edge_dst.astype(np.int64)
    leaving = np.unique(src[gon[src] != gon[dst]])
    out_bytes = np.bincount(gon[leaving], weights=np.maximum(graph.out_bytes[leaving], 0), minlength=g)
    numeric = [np.log1p(out_bytes), np.log1p(np.bincount(gon, weights=flops, minlength=g)),
               np.log1p(c.member_count)]
    # adjacency: degrees and which nearby positions are predecessors / successors
    ps, pd = position[c.edge_src], position[c.edge_dst]
    numeric += [np.log1p(np.bincount(pd, minlength=g)), np.log1p(np.bincount(ps, minlength=g))]
    numeric = np.stack(numeric, axis=1)
    numeric = (numeric - numeric.mean(0)) / np.maximum(numeric.std(0), 1.0)
    w = ADJACENCY_WINDOW
    bits = np.zeros((g, 2 * w + 2), dtype=np.float64)
    offset = pd - ps  # > 0 in a topological order (except for broken cycles)
    near = (offset >= 1) & (offset <= w)
    bits[pd[near], offset[near] - 1] = 1.0  # predecessor `offset` positions back
    bits[ps[near], w + offset[near] - 1] = 1.0  # successor `offset` positions ahead
    far = ~near
    bits[pd[far], 2 * w] = 1.0
    bits[ps[far], 2 * w + 1] = 1.0
    features = np.concatenate([numeric[order], bits[order]], axis=1).astype(np.float32)
    return GroupInputs(order=order, op_ids=op_ids[order], features=features, group_of_node=gon.astype(np.int64))


class RNNPlacerPolicy(nn.Module):
    """Seq2seq LSTM placer with attention (Mirhoseini et al., ICML 2017, Sec. 2 and Fig. 1).

    Shapes: G groups (topological order), F features, K samples, D devices, H ``hidden``.

    * encoder: ``x = W_in [emb_op(op_ids); features]`` [G, H] -> LSTM -> ``e`` [G, H]
      (bidirectional: H/2 per direction); its final state starts the decoder.
    * decoder step t: input ``[emb_dev(a_{t-1}); e_t]`` [K, E_d + H] (``a_{-1}`` a start
      token) -> LSTMCell -> ``h_t`` [K, H]; Luong "general" attention
      ``alpha = softmax(h_t W_a e^T)`` [K, G], ``c_t = alpha e`` [K, H];
      ``logits = W_o tanh(W_c [h_t; c_t])`` [K, D].

    Feeding ``e_t`` beside the previous device tells the decoder which group it
    places (the attention alone would have to find it). The parts of the cell's
    input projection that do not depend on the decoder state are computed once
    before the loop (same numbers as calling ``self.decoder``; tested).
    """

    def __init__(self, num_devices: int, num_features: int, *, hidden: int = 64, op_buckets: int = 128,
                 op_dim: int = 16, device_dim: int = 16, bidirectional: bool = False) -> None:
        super().__init__()
        if num_devices < 1 or hidden < 2 or (bidirectional and hidden % 2):
            raise ValueError(f"need num_devices >= 1 and hidden >= 2 (even if bidirectional), got "
                             f"num_devices={num_devices}, hidden={hidden}, bidirectional={bidirectional}")
        self.num_devices, self.hidden, self.bidirectional = num_devices, hidden, bidirectional
        self.op_embed = nn.Embedding(op_buckets, op_dim)
        self.input = nn.Linear(op_dim + num_features, hidden)
        self.encoder = nn.LSTM(hidden, hidden // 2 if bidirectional else hidden, batch_first=True,
                               bidirectional=bidirectional)
        self.device_embed = nn.Embedding(num_devices + 1, device_dim)  # index D = start token
        self.decoder = nn.LSTMCell(device_dim + hidden, hidden)
        self.attend = nn.Linear(hidden, hidden, bias=False)
        self.combine = nn.Linear(2 * hidden, hidden)
        self.out = nn.Linear(hidden, num_devices)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for m in (self.op_embed, self.input, self.encoder, self.device_embed, self.decoder, self.attend,
                  self.combine):
            m.reset_parameters()
        nn.init.normal_(self.out.weight, std=0.01)  # a near-uniform first policy explores
        nn.init.zeros_(self.out.bias)

    def forward(self, op_ids: torch.Tensor, features: torch.Tensor, *, actions: torch.Tensor | None = None,
                num_samples: int = 1, greedy: bool = False,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Decode K placements of the G groups.

        ``op_ids`` int64 [G], ``features`` float [G, F]. With ``actions`` [K, G]
        the decoder is teacher-forced (scores them); else K = ``num_samples``
        are sampled autoregressively (Gumbel-max, noise drawn once from
        ``generator``), or decoded greedily (argmax, K = 1 unless ``num_samples``).
        Returns ``(actions [K, G] int64, log_probs [K, G], entropy [K, G])``.
        """
        x = torch.tanh(self.input(torch.cat([self.op_embed(op_ids), features], dim=1)))
        enc, (hn, cn) = self.encoder(x[None])
        enc = enc[0]  # [G, H]
        g, hid, dd = enc.shape[0], self.hidden, self.device_embed.embedding_dim
        k = num_samples if actions is None else int(actions.shape[0])
        h = hn.transpose(0, 1).reshape(1, hid).expand(k, hid)
        c = cn.transpose(0, 1).reshape(1, hid).expand(k, hid)
        # Everything that does not depend on the decoder state is projected once, outside the loop:
        # LSTMCell input gates split into the device part (a [D+1, 4H] table) and the e_t part ([G, 4H]).
        cell = self.decoder
        dev_gates = self.device_embed.weight @ cell.weight_ih[:, :dd].T + cell.bias_ih + cell.bias_hh
        enc_gates = enc @ cell.weight_ih[:, dd:].T
        w_hh = cell.weight_hh.T
        keys = self.attend(enc).T  # [H, G]
        w_ch, ctx_proj = self.combine.weight[:, :hid].T, enc @ self.combine.weight[:, hid:].T  # [H, H], [G, H]
        if actions is None and not greedy:  # Gumbel-max sampling: one noise draw, deterministic per generator
            u = torch.rand((k, g, self.num_devices), generator=generator).clamp_(1e-12, 1.0 - 1e-7)
            noise = -torch.log(-torch.log(u))
        prev = torch.full((k,), self.num_devices, dtype=torch.long)
        chosen, logits_all = [], []
        for t in range(g):
            gates = torch.addmm(enc_gates[t] + dev_gates[prev], h, w_hh)
            i, f, z, o = gates.chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(z)
            h = torch.sigmoid(o) * torch.tanh(c)
            alpha = torch.softmax(h @ keys, dim=1)  # [K, G]
            logits = self.out(torch.tanh(torch.addmm(self.combine.bias + alpha @ ctx_proj, h, w_ch)))  # [K, D]
            if actions is not None:
                a = actions[:, t]
            elif greedy:
                a = logits.detach().argmax(dim=1)
            else:
                a = (logits.detach() + noise[:, t]).argmax(dim=1)
            chosen.append(a)
            logits_all.append(logits)
            prev = a
        chosen_t = torch.stack(chosen, 1)
        logp = torch.log_softmax(torch.stack(logits_all, 1), dim=2)  # [K, G, D]
        entropy = -(logp.exp() * logp).sum(dim=2)
        return chosen_t, logp.gather(2, chosen_t[:, :, None])[:, :, 0], entropy

    def __repr__(self) -> str:
        return (f"RNNPlacerPolicy(devices={self.num_devices}, hidden={self.hidden}, "
                f"bidirectional={self.bidirectional})")


class RNNPlacerSearch(LearnedSearch):
    """REINFORCE on an :class:`RNNPlacerPolicy`, K samples per step, one ``env.evaluate`` call per step.

    Stops at the sample budget, out of time, after ``max_steps`` steps (default
    ``10 * ceil(budget / samples_per_step) + 10``) or after ``patience`` steps
    in a row without a new distinct placement (a converged policy only
    repeats memoised ones). ``entropy_coef`` (default 0: the paper has none)
    adds ``coef * mean per-group entropy`` as a bonus. After :meth:`explore`,
    ``policy`` and ``inputs`` hold the trained policy and its input sequence.
    ``num_threads``: torch's intra-op threads during :meth:`explore` (restored
    after; the decoder's tiny sequential ops run several times faster on one
    thread than on two busy ones), None to leave torch's setting alone.
    """

    name = "RNN placer"

    def __init__(self, *, hidden: int = 64, samples_per_step: int = 4, lr: float = 1e-2,
                 baseline_decay: float = 0.9, entropy_coef: float = 0.0, grad_clip: float = 1.0,
                 failure_penalty: float = 3.0, max_steps: int | None = None, patience: int = 10,
                 bidirectional: bool = False, op_buckets: int = 128, num_threads: int | None = 1) -> None:
        if samples_per_step < 1 or lr <= 0 or not 0 <= baseline_decay < 1 or failure_penalty < 1:
            raise ValueError(f"need samples_per_step >= 1, lr > 0, 0 <= baseline_decay < 1, failure_penalty >= 1; "
                             f"got {samples_per_step}, {lr}, {baseline_decay}, {failure_penalty}")
        self.hidden, self.samples_per_step, self.lr = hidden, samples_per_step, lr
        self.baseline_decay, self.entropy_coef, self.grad_clip = baseline_decay, entropy_coef, grad_clip
        self.failure_penalty, self.max_steps, self.patience = failure_penalty, max_steps, patience
        self.bidirectional, self.op_buckets, self.num_threads = bidirectional, op_buckets, num_threads
        self.policy: RNNPlacerPolicy | None = None
        self.inputs: GroupInputs | None = None

    def make_policy(self, inputs: GroupInputs, num_devices: int, seed: int) -> RNNPlacerPolicy:
        """The initial policy of a run with ``seed`` (leaves torch's global RNG alone)."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return RNNPlacerPolicy(num_devices, inputs.features.shape[1], hidden=self.hidden,
                                   op_buckets=self.op_buckets, bidirectional=self.bidirectional)

    def explore(self, env, *, budget_samples: int, seed: int, out_of_time: Callable[[], bool]) -> list[str]:
        threads = torch.get_num_threads()
        if self.num_threads:
            torch.set_num_threads(self.num_threads)
        try:
            return self._explore(env, budget_samples, seed, out_of_time)
        finally:
            torch.set_num_threads(threads)

    def _explore(self, env, budget_samples: int, seed: int, out_of_time: Callable[[], bool]) -> list[str]:
        inputs = self.inputs = build_group_inputs(env.graph, op_buckets=self.op_buckets)
        policy = self.policy = self.make_policy(inputs, len(env.devices), seed)
        op_ids, feats = torch.from_numpy(inputs.op_ids), torch.from_numpy(inputs.features)
        opt = torch.optim.Adam(policy.parameters(), lr=self.lr)
        gen = torch.Generator().manual_seed(seed)
        k_max = self.samples_per_step
        max_steps = self.max_steps or 10 * math.ceil(budget_samples / k_max) + 10
        ref = baseline = None
        worst, steps, stale = 0.0, 0, 0
        while env.num_evaluated < budget_samples and steps < max_steps and stale < self.patience and not out_of_time():
            k = min(k_max, budget_samples - env.num_evaluated)
            actions, log_probs, entropy = policy(op_ids, feats, num_samples=k, generator=gen)
            before = env.num_evaluated
            ms = np.asarray(env.evaluate(inputs.proposals(actions.numpy())), dtype=np.float64)
            stale = stale + 1 if env.num_evaluated == before else 0
            steps += 1
            finite = np.isfinite(ms)
            if not finite.any() and ref is None:
                continue  # nothing to compare yet
            if finite.any():
                worst = max(worst, float(ms[finite].max()))
                ref = ref or float(ms[finite].min())
            reward = np.sqrt(np.where(finite, ms, self.failure_penalty * worst) / ref)  # lower is better
            baseline = float(reward.mean()) if baseline is None else baseline
            advantage = torch.as_tensor(reward - baseline, dtype=torch.float32)
            loss = (advantage * log_probs.sum(1)).mean() - self.entropy_coef * entropy.mean()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), self.grad_clip)
            opt.step()
            baseline = self.baseline_decay * baseline + (1 - self.baseline_decay) * float(reward.mean())
            log.debug("step %d: %d samples, mean %.4f ms, best %.4f ms, evaluated %d", steps, k,
                      float(np.mean(ms)), env.best_ms, env.num_evaluated)
        return [f"{steps} steps of up to {k_max} samples over {inputs.num_groups} co-location groups",
                (f"hidden={self.hidden}, lr={self.lr}, baseline_decay={self.baseline_decay}, "
                 f"entropy_coef={self.entropy_coef}, R=sqrt(latency)")]

    def __repr__(self) -> str:
        return (f"RNNPlacerSearch(hidden={self.hidden}, samples_per_step={self.samples_per_step}, lr={self.lr}, "
                f"baseline_decay={self.baseline_decay}, entropy_coef={self.entropy_coef}, "
                f"bidirectional={self.bidirectional})")


__all__ = ["ADJACENCY_WINDOW", "GroupInputs", "RNNPlacerPolicy", "RNNPlacerSearch", "build_group_inputs",
           "topological_group_order"]
