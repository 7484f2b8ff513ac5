"""Critical-path-first greedy placement (in the spirit of Baechi's m-TOPO / m-ETF family), a baseline.

The compute-weighted longest path goes on one device, the rest by the incremental cost HEFT uses
(``ov_autoplace.search.list_scheduling.IncrementalPlacer``), the fastest legal candidate kept; it works on the cost
model alone (docs/cost-model.md, "List scheduling"). The exact optimum's fallback uses it beside HEFT.
"""

from __future__ import annotations

import numpy as np

from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.search.list_scheduling import IncrementalPlacer
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.strategies.cost_based import CostModelStrategy


def critical_path(terms: CostTerms) -> list[int]:
    """Active nodes of the longest compute-weighted path, in topological order."""
    weight = np.where(terms.allowed, terms.compute_cost, np.inf).min(axis=1)
    predecessors: list[list[int]] = [[] for _ in range(terms.num_nodes)]
    for s, _, consumers in terms.outputs:
        if terms.active[s]:
            for c in consumers:
                if terms.active[c]:
                    predecessors[c].append(s)
    length = np.full(terms.num_nodes, -np.inf)
    back = np.full(terms.num_nodes, -1, dtype=np.int64)
    for i in np.flatnonzero(terms.active).tolist():  # indices are topological
        best = max(predecessors[i], key=lambda p: (length[p], -p), default=-1)
        length[i] = weight[i] + (length[best] if best >= 0 else 0.0)
        back[i] = best
    if not terms.active.any():
        return []
    path = [int(np.argmax(length))]
    while back[path[-1]] >= 0:
        path.append(int(back[path[-1]]))
    return path[::-1]


def critical_path_placement(terms: CostTerms) -> np.ndarray:
    """Critical path on one device, the rest greedily by incremental cost (docs/cost-model.md, "List scheduling")."""
    path = critical_path(terms)
    on_path = set(path)
    rest = [i for i in np.flatnonzero(terms.active).tolist() if i not in on_path]
    best, best_ms = None, np.inf
    candidates = [d for d in range(terms.num_devices) if terms.allowed[path, d].all()] or [None]
    for d in candidates:
        placer = IncrementalPlacer(terms)
        for i in path:  # on d while it fits in memory; past that, like the rest
            placer.place(i, d if d is not None and placer.fits(i, d) else placer.best_device(i))
        for i in rest:
            placer.place(i, placer.best_device(i))
        device, _ = terms.legal_devices(placer.proposal())
        latency = terms.latency_ms(device)
        if best is None or latency < best_ms:
            best, best_ms = placer.proposal(), latency
    return best


class CriticalPathGreedyStrategy(CostModelStrategy):
    """Critical path on one device, the rest greedily by incremental cost."""

    name = "critical_path"

    def propose(self, context: PlacementContext) -> np.ndarray:
        return critical_path_placement(self.terms(context))


__all__ = ["CriticalPathGreedyStrategy", "critical_path", "critical_path_placement"]
