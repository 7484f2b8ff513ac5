"""The HSDAG policy's forward pass in numpy: what inference runs (no torch).

It mirrors :class:`~ov_autoplace_lab.hsdag_torch.model.HSDAGPolicy` operation for
operation on the weights of an exported policy (``export.load_policy_file``),
and decodes greedily (the most likely device of every group). The discrete
steps of graph parsing are literally the same code (``graph_ops``); the tests
check both forward passes agree to 1e-5 on synthetic graphs and BERT-base.
Everything is float32, like the torch model.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import hashlib
import json
from functools import cached_property
from pathlib import Path

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.policy.boundary import GroupBoundary
from ov_autoplace.policy.config import HSDAGConfig
from ov_autoplace.policy.policy_file import ExportedPolicy, PolicyFormatError, load_policy_file
from ov_autoplace.policy.features import NodeFeatureConfig
from ov_autoplace.policy.graph_ops import parse_groups, pooled_edges, segment_sum, undirected_edges
from ov_autoplace.policy.inputs import PolicyArrays, build_policy_arrays


@dataclasses.dataclass(frozen=True, eq=False)
class NumpyPolicyOutput:
    """``logits`` float32 [G, D]; ``node_group`` int64 [N]; ``pool_iterations``: iterations that merged."""

    logits: np.ndarray
    node_group: np.ndarray
    num_groups: int
    pool_iterations: int

    def greedy(self) -> np.ndarray:
        """Most likely device per group, int64 [G] (ties: lowest index, as torch's argmax)."""
        return self.logits.argmax(axis=1).astype(np.int64)

    def node_placement(self) -> np.ndarray:
        """Greedy device index of every node, int64 [N]."""
        return self.greedy()[self.node_group]


@functools.cache
def _blas_threads_setters() -> tuple:
    """Each loaded OpenBLAS's setter of the calling thread's BLAS threads (it returns the count before): numpy's,
    and any other (scipy brings its own), so which one numpy multiplies with needs no guessing."""
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.rsplit("/", 1)[-1]})
        libraries = [ctypes.CDLL(path) for path in paths]
    except OSError:
        return ()
    setter = "openblas_set_num_threads_local"
    return tuple(getattr(lib, setter) for lib in libraries if hasattr(lib, setter))


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.float32(0.0))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(np.float32)


def _standardize_edges(e: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mean = e.mean(axis=0, keepdims=True)
    var = ((e - mean) ** 2).mean(axis=0, keepdims=True)
    return (e - mean) / np.sqrt(var + np.float32(eps))


def gcn_norm(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy twin of ``layers.gcn_conv.gcn_norm``: ``(row, col, weight)`` of ``D^-1/2 (A + I) D^-1/2``."""
    row, col = np.concatenate([src, dst]).astype(np.int64), np.concatenate([dst, src]).astype(np.int64)
    off = row != col
    key = np.unique(row[off] * num_nodes + col[off])
    loops = np.arange(num_nodes, dtype=np.int64)
    row, col = np.concatenate([key // num_nodes, loops]), np.concatenate([key % num_nodes, loops])
    degree = np.bincount(col, minlength=num_nodes).astype(np.float32)
    inv_sqrt = (1.0 / np.sqrt(degree)).astype(np.float32)
    return row, col, inv_sqrt[row] * inv_sqrt[col]


class NumpyHSDAGPolicy:
    """An exported HSDAG policy, evaluated with numpy. ``NumpyHSDAGPolicy.load(path)``."""

    def __init__(self, config: HSDAGConfig, weights: dict[str, np.ndarray], header: dict | None = None) -> None:
        self.config, self.header = config, header or {}
        self.w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()}
        missing = sorted(self._required_names() - set(self.w))
        if missing:
            raise PolicyFormatError(f"policy weights lack {missing[:5]}{' ...' if len(missing) > 5 else ''}; "
                                    "export the policy again with export_policy")

    @classmethod
    def load(cls, path: str | Path) -> "NumpyHSDAGPolicy":
        exported: ExportedPolicy = load_policy_file(path)
        return cls(exported.config, exported.weights, exported.header)

    @cached_property
    def digest(self) -> str:
        """sha256 of the config and weights: identifies what this policy proposes (for placement caches)."""
        h = hashlib.sha256(json.dumps(self.config.to_dict(), sort_keys=True).encode())
        for name in sorted(self.w):
            h.update(name.encode())
            h.update(self.w[name].tobytes())
        return h.hexdigest()

    def _required_names(self) -> set[str]:
        names = {"input_proj.weight", "input_proj.bias", "pool.phi.weight", "pool.phi.bias", "pool.rho.weight",
                 "pool.rho.bias", "placer.lin_group.weight", "placer.lin_group.bias", "placer.lin_device.weight",
                 "placer.lin_pair.weight", "placer.out.weight", "placer.out.bias"}
        names |= {f"pool.score.{k}.{p}" for k in (0, 2) for p in ("weight", "bias")}
        names |= {f"convs.{k}.{p}" for k in range(self.config.num_gcn_layers) for p in ("lin.weight", "bias")}
        if self.config.graph_features:
            names.add("placer.lin_graph.weight")
        return names

    def _linear(self, x: np.ndarray, name: str, bias: bool = True) -> np.ndarray:
        y = x @ self.w[f"{name}.weight"].T
        return y + self.w[f"{name}.bias"] if bias else y

    def inputs(self, graph: GraphArrays, cost: CostModel,
               feature_config: NodeFeatureConfig | None = None) -> PolicyArrays:
        """Policy inputs of ``graph`` with this policy's vocabulary (ablation: ``feature_config``)."""
        c = self.config
        return build_policy_arrays(graph, cost, feature_config or c.feature_config, vocab=c.vocab, pos_dim=c.pos_dim,
                                   coarsening_rule=c.coarsening)

    def forward(self, arrays: PolicyArrays) -> NumpyPolicyOutput:
        # one BLAS thread, this thread's: docs/architecture.md, "Module notes", numpy_policy.py
        setters = _blas_threads_setters()
        before = [setter(1) for setter in setters]
        try:
            return self._forward(arrays)
        finally:
            for setter, count in zip(setters, before):
                setter(count)

    def _forward(self, arrays: PolicyArrays) -> NumpyPolicyOutput:
        c = self.config
        if arrays.x.shape[1] != c.in_features:
            raise ValueError(f"inputs have {arrays.x.shape[1]} features per coarse node, the policy expects "
                             f"{c.in_features}; build them with NumpyHSDAGPolicy.inputs")
        z = _relu(self._linear(arrays.x, "input_proj"))
        row, col, weight = gcn_norm(arrays.edge_src, arrays.edge_dst, z.shape[0])
        for k in range(c.num_gcn_layers):
            h = self._linear(z, f"convs.{k}.lin", bias=False)
            z = segment_sum(h[row] * weight[:, None], col, z.shape[0]) + self.w[f"convs.{k}.bias"]
            if k < c.num_gcn_layers - 1:
                z = _relu(z)

        # graph parsing pooling (layers/graph_parsing_pool.py)
        src, dst = arrays.edge_src.astype(np.int64), arrays.edge_dst.astype(np.int64)
        group = np.arange(z.shape[0], dtype=np.int64)
        size = arrays.coarse_size.astype(np.float32)
        iterations = 0
        for _ in range(c.max_pool_iterations):
            u, v = undirected_edges(src, dst, z.shape[0])
            if u.shape[0] == 0:
                break
            logit = self._linear(_relu(self._linear(_standardize_edges(z[u] * z[v]), "pool.score.0")),
                                 "pool.score.2")[:, 0]
            parsed = parse_groups(u, v, logit, z.shape[0], c.threshold_logit)
            if parsed is None:
                break
            iterations += 1
            score = _sigmoid(logit)
            alone = np.where(parsed.best_edge >= 0, np.float32(1.0) - score[np.maximum(parsed.best_edge, 0)],
                             np.float32(1.0))
            w = np.where(parsed.weight_edge >= 0, score[np.maximum(parsed.weight_edge, 0)], alone)
            k = parsed.num_groups
            total = segment_sum(_relu(self._linear(z, "pool.phi")) * w[:, None].astype(np.float32), parsed.label, k)
            count = np.bincount(parsed.label, minlength=k).astype(np.float32)
            size = segment_sum(size, parsed.label, k)
            z = _relu(self._linear(np.concatenate([total / count[:, None], np.log1p(size)[:, None]], axis=1),
                                   "pool.rho"))
            group = parsed.label[group]
            src, dst = pooled_edges(src, dst, parsed.label, k)
        num = z.shape[0]

        # device placer (layers/device_placer.py)
        nd_mean = segment_sum(arrays.node_device_sum, group, num) / size[:, None, None]
        log_cost = np.log1p(segment_sum(arrays.compute_us, group, num)) / np.float32(10.0)
        relative = log_cost - log_cost.min(axis=1, keepdims=True)
        pair = np.concatenate([nd_mean, log_cost[..., None], relative[..., None]], axis=-1)
        fixed = (self._linear(z, "placer.lin_group")[:, None, :]
                 + self._linear(arrays.device_x, "placer.lin_device", bias=False)[None, :, :])
        if c.graph_features:
            fixed = fixed + self._linear(z.mean(axis=0), "placer.lin_graph", bias=False)

        boundary = (GroupBoundary(arrays.boundary, group, num, arrays.compute_us)
                    if c.placer_inputs == "boundary" else None)

        def score(around: np.ndarray | None) -> np.ndarray:
            inputs = pair
            if boundary is not None:
                inputs = np.concatenate([pair, boundary.features(around)], axis=-1)
            hidden = fixed + self._linear(inputs, "placer.lin_pair", bias=False)
            return self._linear(_relu(hidden), "placer.out")[..., 0]

        logits = score(None)
        for _ in range(c.placer_passes - 1):
            logits = score(logits.argmax(axis=1))
        return NumpyPolicyOutput(logits=logits.astype(np.float32), node_group=group[arrays.node_coarse],
                                 num_groups=num, pool_iterations=iterations)

    __call__ = forward

    def place(self, graph: GraphArrays, cost: CostModel, feature_config: NodeFeatureConfig | None = None) -> np.ndarray:
        """Greedy device index of every node of ``graph``, int64 [N] (a proposal for ``legalize``)."""
        return self.forward(self.inputs(graph, cost, feature_config)).node_placement()

    def __repr__(self) -> str:
        c = self.config
        count = sum(int(w.size) for w in self.w.values())
        return (f"NumpyHSDAGPolicy(hidden={c.hidden}, gcn_layers={c.num_gcn_layers}, "
                f"max_pool_iterations={c.max_pool_iterations}, score_threshold={c.score_threshold}, "
                f"parameters={count})")


__all__ = ["NumpyHSDAGPolicy", "NumpyPolicyOutput", "gcn_norm"]
