"""Critical-path-first greedy placement (in the spirit of Baechi's m-TOPO / m-ETF family).

1. The critical path is the longest path through the active nodes when each
   node weighs its fastest compute time (compute-weighted depth).
2. The whole path goes on one device - splitting it would put transfers and
   submodel switches on the path every inference must walk. Every device that
   can run all of it is tried in turn (path nodes that no longer fit in its
   memory are placed like the rest).
3. The remaining active nodes are then placed in topological order, each where
   its incremental cost is smallest: compute, transfers from placed producers
   *and* to placed consumers (the path's nodes are placed already), lost
   fusion and submodel switches (``heft.IncrementalPlacer``; memory-full
   devices skipped; ties to the higher-priority device).
4. Of the completed candidates, the one whose legal placement the CostModel
   predicts fastest wins (ties to the earlier device).

Parameters and constant-subgraph nodes are left to the legalizer.
"""

from __future__ import annotations

import numpy as np

from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.strategies.cost_based import CostModelStrategy
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.strategies.heft import IncrementalPlacer


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


class CriticalPathGreedyStrategy(CostModelStrategy):
    """Critical path on one device, the rest greedily by incremental cost (module docstring)."""

    name = "critical_path"

    def propose(self, context: PlacementContext) -> np.ndarray:
        terms = self.terms(context)
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


__all__ = ["CriticalPathGreedyStrategy", "critical_path"]
