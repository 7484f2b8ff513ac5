"""How the local search (``local_search.LocalSearchRefiner``) prices a batch of candidate placements, and orders them.

More: docs/architecture.md, "Module notes", search_pricing.py.
"""

from __future__ import annotations

import numpy as np

from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.costmodel.cost_model import CostModel

#: Lexicographic weights of :func:`search_score`: memory overflow, then submodels above the bound.
OVERFLOW_WEIGHT = 1e12
EXCESS_WEIGHT = 1e6
#: Node-placements (rows x nodes) priced per simulator call: bounds the memory and how long a batch runs
#: between two checks of the time budget.
BATCH_CELLS = 1_000_000

Priced = tuple[np.ndarray, np.ndarray, np.ndarray]  # latency [P], submodels above the bound [P], overflow [P]


class BatchPricer:
    """Prices assignments of the ``active`` nodes of ``graph`` under ``cost`` (simulator built on first use).

    ``anchor_support``: bool [N, D], where the anchor fixer may put a node (the search's allowed devices, and
    anywhere for non-compute nodes); ``bound``: the submodel bound the legalizer will enforce (None: unbounded).
    """

    def __init__(self, cost: CostModel, graph: GraphArrays, active: np.ndarray, anchor_support: np.ndarray,
                 bound: int | None) -> None:
        self.cost, self.graph, self.active, self.bound = cost, graph, active, bound
        self._anchor_support = anchor_support
        self._sim = None
        self._fixer = None

    def _tools(self):
        if self._sim is None:
            from ov_autoplace.costmodel.simulator import Simulator
            from ov_autoplace.costmodel.anchors import AnchorFixer

            self._sim = Simulator(self.cost, self.graph)
            self._fixer = AnchorFixer(self.graph, len(self.cost.devices), self._anchor_support)
        return self._sim, self._fixer

    def price(self, base: np.ndarray, rows: np.ndarray) -> Priced:
        """For active-node assignments ``rows`` [P, A] (the other nodes as in ``base`` [N], anchors placed like
        legalize): predicted latency [P], submodels above the bound [P] and memory overflow [P] (sum over devices
        of bytes beyond the capacity, as a fraction of it; 0 when everything fits)."""
        sim, fixer = self._tools()
        full = np.repeat(base[None, :], rows.shape[0], axis=0)
        full[:, self.active] = rows
        full = fixer(full)
        latency, submodels = sim.latency_and_submodels(full)
        excess = np.zeros(rows.shape[0]) if self.bound is None else \
            np.maximum(submodels - self.bound, 0).astype(np.float64)
        caps = np.asarray(self.cost.device_memory_bytes, np.float64)
        overflow = np.zeros(rows.shape[0])
        if np.isfinite(caps).any():
            finite = np.isfinite(caps)
            over = np.maximum(sim.resident_bytes(full)[:, finite] - caps[finite], 0.0) / np.maximum(caps[finite], 1.0)
            overflow = over.sum(axis=1)
        return latency, excess, overflow


def search_score(parts: Priced, bounded: bool) -> np.ndarray:
    """What the search minimises: memory overflow first, then (when ``bounded``) submodels above the bound,
    then latency - lexicographic through weights no latency in ms comes near."""
    latency, excess, overflow = parts
    return latency + OVERFLOW_WEIGHT * overflow + (EXCESS_WEIGHT * excess if bounded else 0.0)


def lowered(ms: float) -> float:
    """What a move must beat to count as an improvement (a relative tolerance against float noise; any finite
    latency beats an infeasible one)."""
    return ms - max(1e-12, 1e-9 * abs(ms)) if np.isfinite(ms) else np.inf


__all__ = ["BATCH_CELLS", "EXCESS_WEIGHT", "OVERFLOW_WEIGHT", "BatchPricer", "Priced", "lowered", "search_score"]
