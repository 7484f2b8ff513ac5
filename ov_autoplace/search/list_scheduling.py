"""List scheduling on the cost model: HEFT (Topcuoglu et al., 2002) adapted to HETERO's sequential submodels, and
the incremental placer it shares with the lab's critical-path-first baseline (docs/architecture.md, "Module notes").
"""

from __future__ import annotations

import numpy as np

from ov_autoplace.costmodel.cost_terms import CostTerms

class IncrementalPlacer:
    """Places active nodes one at a time and prices each choice exactly under the CostModel (anchors aside)."""

    def __init__(self, terms: CostTerms) -> None:
        self.terms = terms
        n, nd = terms.num_nodes, terms.num_devices
        self.device = np.full(n, -1, dtype=np.int64)
        self.total_ms = 0.0
        self.links = [terms.link_ms(nbytes) for _, nbytes, _ in terms.outputs]
        self.outputs_of: list[list[int]] = [[] for _ in range(n)]  # outputs a node produces
        self.inputs_of: list[list[int]] = [[] for _ in range(n)]  # outputs a node consumes
        for o, (s, _, consumers) in enumerate(terms.outputs):
            self.outputs_of[s].append(o)
            for c in consumers:
                self.inputs_of[c].append(o)
        self.holders: list[set[int]] = [set() for _ in terms.outputs]  # devices of placed consumers
        self.neighbours: list[list[int]] = [[] for _ in range(n)]
        for u, v in terms.active_edges:
            self.neighbours[u].append(v), self.neighbours[v].append(u)
        self.parent = list(range(n))  # union-find over placed active nodes: islands
        self.partners = {k: sorted({i if j == k else j for i, j in pairs}) for k, pairs in terms.pairs_of.items()}
        self.broken = np.zeros(n, dtype=bool)
        self.constant_inputs: list[list[int]] = [[] for _ in range(n)]
        for s, t in terms.edges:
            if terms.constant[s] and terms.memory[s] > 0 and s not in self.constant_inputs[t]:
                self.constant_inputs[t].append(s)
        self.capacity = np.asarray(terms.cost.device_memory_bytes, dtype=np.float64)
        self.weights = np.zeros(nd)
        self.largest = np.zeros(nd)
        self.constants_on: list[set[int]] = [set() for _ in range(nd)]

    def _root(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def fits(self, i: int, d: int) -> bool:
        if not np.isfinite(self.capacity[d]):
            return True
        weights = self.weights[d] + self.terms.memory[i] + sum(
            self.terms.memory[c] for c in self.constant_inputs[i] if c not in self.constants_on[d])
        return weights + max(self.largest[d], self.terms.activation[i]) <= self.capacity[d]

    def delta_ms(self, i: int, d: int) -> float:
        """What placing active node ``i`` on device ``d`` adds to the latency (inf where it cannot run)."""
        t = self.terms
        if not t.allowed[i, d]:
            return float("inf")
        cost = float(t.compute_cost[i, d])
        broken_here = False
        for g in self.partners.get(i, ()):
            if self.device[g] >= 0 and self.device[g] != d:
                broken_here = True
                if not self.broken[g]:
                    cost += float(t.unfused_delta[g, self.device[g]])
        if broken_here and not self.broken[i]:
            cost += float(t.unfused_delta[i, d])
        for o in self.inputs_of[i]:
            src = t.outputs[o][0]
            a = self.device[src]
            if a >= 0 and a != d and d not in self.holders[o]:
                cost += float(self.links[o][a, d])
        for o in self.outputs_of[i]:
            cost += float(sum(self.links[o][d, b] for b in self.holders[o] if b != d))
        islands = {self._root(j) for j in self.neighbours[i] if self.device[j] == d}
        cost += float(t.cost.submodel_overhead_ms[d]) * (1 - len(islands))
        return cost

    def best_device(self, i: int) -> int:
        """The device with the smallest incremental cost that fits in memory (any device if none fits)."""
        costs = np.array([self.delta_ms(i, d) for d in range(self.terms.num_devices)])
        fitting = np.array([self.fits(i, d) for d in range(self.terms.num_devices)])
        if (fitting & np.isfinite(costs)).any():
            costs = np.where(fitting, costs, np.inf)
        return int(np.argmin(costs))  # first minimum: ties go to the higher-priority device

    def place(self, i: int, d: int) -> None:
        t = self.terms
        self.total_ms += self.delta_ms(i, d)
        for g in self.partners.get(i, ()):
            if self.device[g] >= 0 and self.device[g] != d:
                self.broken[g] = self.broken[i] = True
        self.device[i] = d
        for o in self.inputs_of[i]:
            self.holders[o].add(d)
        for j in self.neighbours[i]:
            if self.device[j] == d:
                self.parent[self._root(j)] = self._root(i)
        new_constants = [c for c in self.constant_inputs[i] if c not in self.constants_on[d]]
        self.weights[d] += t.memory[i] + sum(t.memory[c] for c in new_constants)
        self.constants_on[d].update(self.constant_inputs[i])
        self.largest[d] = max(self.largest[d], t.activation[i])

    def proposal(self) -> np.ndarray:
        return np.where(self.device >= 0, self.device, 0)

def upward_rank(terms: CostTerms) -> np.ndarray:
    """HEFT's rank_u over active nodes: mean compute + max over successors of (mean transfer + their rank)."""
    allowed = terms.allowed
    mean_compute = np.where(allowed, terms.compute_cost, 0.0).sum(axis=1) / np.maximum(allowed.sum(axis=1), 1)
    nd = terms.num_devices
    off_diagonal = ~np.eye(nd, dtype=bool)
    rank = np.zeros(terms.num_nodes)
    successors: list[list[tuple[int, float]]] = [[] for _ in range(terms.num_nodes)]
    for s, nbytes, consumers in terms.outputs:
        mean_link = float(terms.link_ms(nbytes)[off_diagonal].mean()) if nd > 1 else 0.0
        successors[s].extend((c, mean_link) for c in consumers if terms.active[c])
    for i in range(terms.num_nodes - 1, -1, -1):  # node indices are topological
        if terms.active[i]:
            rank[i] = mean_compute[i] + max((link + rank[c] for c, link in successors[i]), default=0.0)
    return rank

def heft_placement(terms: CostTerms) -> np.ndarray:
    """HEFT under HETERO's sequential execution: rank order, least incremental cost (docs/cost-model.md, "List
    scheduling")."""
    rank = upward_rank(terms)
    order = sorted(np.flatnonzero(terms.active).tolist(), key=lambda i: (-rank[i], i))
    placer = IncrementalPlacer(terms)
    for i in order:
        placer.place(i, placer.best_device(i))
    return placer.proposal()

__all__ = ["IncrementalPlacer", "heft_placement", "upward_rank"]
