"""The CostModel's execution model made precise for exact solvers and heuristics.

More: docs/architecture.md, "Module notes", cost_terms.py.
"""


from __future__ import annotations

import numpy as np

from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.placement.legalizer import constant_subgraph_mask, legalize
from ov_autoplace.placement.submodels import island_roots
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.costmodel.cost_model import CostModel


class CostTerms:
    """The CostModel's terms indexed for solvers and heuristics (one model, one graph).

    ``placed`` nodes (active, followers, Parameters) have a device; ``outputs``
    lists every producer output that can cross (source node, bytes, consumer
    nodes); ``votes[i]`` the consumers (one per edge) that decide an anchor's
    device; ``fusion_pairs`` the (i, j) pairs the model fuses.
    """

    def __init__(self, cost: CostModel, graph: GraphArrays, support: np.ndarray | None = None) -> None:
        if tuple(cost.node_names) != tuple(graph.names):
            raise PlacementError(
                f"the CostModel describes {cost.num_nodes} nodes that do not match the graph's {graph.num_nodes} "
                "(names differ); build the CostModel for the prepared model (ov_autoplace.model.prepare.prepare_model)"
            )
        self.cost, self.graph = cost, graph
        self.num_nodes, self.num_devices = graph.num_nodes, len(cost.devices)
        role = np.asarray(graph.role)
        self.compute = role == NodeRole.COMPUTE
        self.follower = constant_subgraph_mask(graph) & self.compute
        self.active = self.compute & ~self.follower
        self.parameter = role == NodeRole.PARAMETER
        self.constant = role == NodeRole.CONSTANT
        self.result = role == NodeRole.RESULT
        self.placed = self.active | self.follower | self.parameter
        allowed = np.ones((self.num_nodes, self.num_devices), dtype=bool)
        allowed[self.compute] = np.isfinite(cost.compute_ms[self.compute])
        if support is not None:
            allowed &= np.asarray(support, dtype=bool) | ~self.compute[:, None]
        self.allowed = allowed
        nowhere = np.flatnonzero(self.compute & ~allowed.any(axis=1))
        if nowhere.size:
            raise PlacementError(
                f"{nowhere.size} compute node(s), e.g. {graph.names[nowhere[0]]!r}, have no device with a finite cost "
                f"among {list(cost.devices)}; give them a finite compute_ms on some device"
            )
        self.compute_cost = np.where(self.compute[:, None] & allowed, cost.compute_ms, 0.0)
        with np.errstate(invalid="ignore"):  # inf - inf where a device cannot run the node; masked out
            self.unfused_delta = np.where(self.compute[:, None] & allowed, cost.unfused_ms - cost.compute_ms, 0.0)
        src, dst = graph.edge_src.astype(np.int64), graph.edge_dst.astype(np.int64)
        port, nbytes = graph.edge_src_port.astype(np.int64), np.maximum(cost.bytes_on(graph), 0)
        self.edges = list(zip(src.tolist(), dst.tolist()))
        self.votes: list[list[int]] = [[] for _ in range(self.num_nodes)]
        outputs: dict[tuple[int, int], tuple[int, set[int]]] = {}
        for s, t, p, b in zip(src.tolist(), dst.tolist(), port.tolist(), nbytes.tolist()):
            if self.result[t]:
                continue
            self.votes[s].append(t)
            if self.active[s] or self.parameter[s]:  # constant-derived values stay beside their consumers
                outputs.setdefault((s, p), (b, set()))[1].add(t)
        #: (source node, bytes, sorted consumer nodes) per producer output with consumers
        self.outputs = [(s, float(b), sorted(c)) for (s, _), (b, c) in sorted(outputs.items())]
        # the same, flat (output index, source, consumer) per consumer: which outputs cross devices is found in
        # numpy, and only those are priced one by one (``breakdown``)
        self._output_of = np.array([o for o, (_, _, c) in enumerate(self.outputs) for _ in c], np.int64)
        self._output_src = np.array([s for s, _, c in self.outputs for _ in c], np.int64)
        self._output_consumer = np.array([t for _, _, c in self.outputs for t in c], np.int64)
        fused = np.asarray(cost.fused_into)
        self.fusion_pairs = [(int(i), int(fused[i])) for i in np.flatnonzero(fused >= 0)
                             if self.compute[i] and self.compute[fused[i]] and fused[i] != i]
        pairs_of: dict[int, list[tuple[int, int]]] = {}
        for pair in self.fusion_pairs:
            for k in pair:
                pairs_of.setdefault(k, []).append(pair)
        self.pairs_of = pairs_of
        self.active_edges = sorted({(min(s, t), max(s, t)) for s, t in self.edges
                                    if self.active[s] and self.active[t] and s != t})
        spread, e2e_spread = cost.spreads()
        self.spread = np.where(self.active[:, None] & allowed & np.isfinite(spread), spread, 0.0)  # [N, D]
        self.e2e_spread = e2e_spread  # [D]
        self.memory = np.asarray(cost.node_memory_bytes, dtype=np.float64)
        self.activation = np.where(self.active | self.parameter, np.maximum(graph.out_bytes, 0), 0).astype(np.float64)

    # ----------------------------------------------------------------- evaluation
    def link_ms(self, nbytes: float) -> np.ndarray:
        """[D, D] cost of moving ``nbytes`` from device a to device b (0 on the diagonal)."""
        out = self.cost.link_latency_ms + nbytes * self.cost.link_ms_per_byte
        np.fill_diagonal(out, 0.0)
        return out

    def legal_devices(self, proposal: np.ndarray, *, max_submodels: int | None = None) -> tuple[np.ndarray, Placement]:
        """Device index per node after the legalizer (anchors follow their consumers)."""
        support = self.allowed | ~self.compute[:, None]
        placement = legalize(self.graph, np.asarray(proposal, dtype=np.int64), self.cost.devices, support,
                             max_submodels=max_submodels)
        return placement.device_indices(self.graph.names, self.cost.devices), placement

    def submodels_per_device(self, device: np.ndarray) -> np.ndarray:
        roots = np.unique(island_roots(self.graph, device, self.active)[self.active])
        return np.bincount(np.asarray(device, np.int64)[roots], minlength=self.num_devices)

    def breakdown(self, device: np.ndarray) -> dict[str, float]:
        """Each term of the latency of a full placement (device per node), and memory feasibility."""
        device = np.asarray(device, dtype=np.int64)
        nodes = np.flatnonzero(self.compute)
        compute = float(self.cost.compute_ms[nodes, device[nodes]].sum())
        split = {k for i, j in self.fusion_pairs if device[i] != device[j] for k in (i, j)}
        fusion = float(sum(self.cost.unfused_ms[k, device[k]] - self.cost.compute_ms[k, device[k]] for k in split))
        transfer = 0.0
        away = device[self._output_consumer] != device[self._output_src]
        for o in np.unique(self._output_of[away]).tolist():  # the outputs some consumer of takes elsewhere, in order
            s, nbytes, consumers = self.outputs[o]
            link = self.link_ms(nbytes)
            for b in {int(device[c]) for c in consumers} - {int(device[s])}:
                transfer += link[device[s], b]
        counts = self.submodels_per_device(device)
        overhead = float(counts @ self.cost.submodel_overhead_ms)
        return {"compute": compute, "fusion": fusion, "transfer": transfer, "overhead": overhead,
                "submodels": float(counts.sum()), "memory_ok": float(self.memory_ok(device))}

    def move_spread_ms(self, before: np.ndarray, after: np.ndarray) -> float:
        """The spread of moving from placement ``before`` to ``after`` (device per node; see the module doc)."""
        return float(move_spread_ms(self.spread[self.active], self.e2e_spread,
                                    np.asarray(before, np.int64)[self.active],
                                    np.asarray(after, np.int64)[None, self.active])[0])

    def memory_ok(self, device: np.ndarray) -> bool:
        caps = np.asarray(self.cost.device_memory_bytes, dtype=np.float64)
        if np.isinf(caps).all():
            return True
        used = np.zeros(self.num_devices)
        for i in np.flatnonzero(~self.constant & ~self.result):
            used[device[i]] += self.memory[i]
        for c in np.flatnonzero(self.constant & (self.memory > 0)):
            for d in ({int(device[t]) for t in self.votes[c]} or {int(device[c])}):
                used[d] += self.memory[c]
        for d in range(self.num_devices):
            on_d = device == d
            used[d] += self.activation[on_d].max(initial=0.0)
        return bool((used <= caps).all())

    def latency_ms(self, device: np.ndarray) -> float:
        """Model latency of a full placement; ``inf`` if a node sits where it cannot run or memory overflows."""
        device = np.asarray(device, dtype=np.int64)
        if not self.allowed[np.arange(self.num_nodes), device][self.compute].all():
            return float("inf")
        terms = self.breakdown(device)
        if not terms["memory_ok"]:
            return float("inf")
        return terms["compute"] + terms["fusion"] + terms["transfer"] + terms["overhead"]


def move_spread_ms(spread: np.ndarray, e2e_spread: np.ndarray, origin: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Spread [P] of moving from ``origin`` [A] to each of ``rows`` [P, A] (device per decision variable);
    ``spread`` [A, D] is the per-node spread, ``e2e_spread`` [D] the devices'. See the module doc."""
    rows = np.asarray(rows, np.int64)
    moved = rows != origin[None, :]
    if not moved.any():
        return np.zeros(rows.shape[0])
    positions = np.arange(origin.size)
    ops = (moved * (spread[positions, origin][None, :] + spread[positions[None, :], rows])).sum(axis=1)
    touched = np.stack([(moved & ((origin == d)[None, :] | (rows == d))).any(axis=1)
                        for d in range(e2e_spread.size)], axis=1)
    return ops + touched @ e2e_spread


__all__ = ["CostTerms", "move_spread_ms"]
