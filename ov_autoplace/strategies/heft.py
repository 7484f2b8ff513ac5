"""HEFT (Topcuoglu et al., 2002) adapted to HETERO's sequential submodels, as a strategy.

The algorithm works on the cost model alone and lives there (``search/list_scheduling.py``), so the exact
optimum's fallback uses it without importing the strategies.
"""

from __future__ import annotations

import numpy as np

from ov_autoplace.search.list_scheduling import heft_placement
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.strategies.cost_based import CostModelStrategy


class HeftStrategy(CostModelStrategy):
    """HEFT under HETERO's sequential execution: rank order, least incremental cost."""

    name = "heft"

    def propose(self, context: PlacementContext) -> np.ndarray:
        return heft_placement(self.terms(context))


__all__ = ["HeftStrategy"]
