"""Critical-path-first greedy placement (in the spirit of Baechi's m-TOPO / m-ETF family), as a strategy.

The algorithm (``search/list_scheduling.py``: the critical path on one device, the rest by incremental cost,
the fastest legal candidate) works on the cost model alone.
"""

from __future__ import annotations

import numpy as np

from ov_autoplace.search.list_scheduling import critical_path_placement
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.strategies.cost_based import CostModelStrategy


class CriticalPathGreedyStrategy(CostModelStrategy):
    """Critical path on one device, the rest greedily by incremental cost."""

    name = "critical_path"

    def propose(self, context: PlacementContext) -> np.ndarray:
        return critical_path_placement(self.terms(context))


__all__ = ["CriticalPathGreedyStrategy"]
