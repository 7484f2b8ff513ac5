"""The exact optimum under a CostModel as a placement strategy."""

from __future__ import annotations

import numpy as np

from ov_autoplace.strategies.cost_based import CostModelStrategy, CostProvider
from ov_autoplace_lab.optimum.milp import milp_placement
from ov_autoplace_lab.optimum.exact_optimum import OptimumResult, min_cut_placement
from ov_autoplace.strategies.base import PlacementContext


class OptimumStrategy(CostModelStrategy):
    """Proposes the exact optimum under a CostModel.

    ``method="auto"`` uses the min cut when it is exact for the model (2
    devices, no submodel overhead, no memory limit, no submodel bound) and the
    MILP otherwise. ``max_submodels`` defaults to place()'s default bound, so
    the legalizer never has to merge islands of the optimum. The last
    OptimumResult is kept in ``last_result``. ``start`` (a device index per node) warm-starts the MILP, and
    ``random_seed`` is then HiGHS's.
    """

    name = "optimum"

    def __init__(self, cost: CostProvider, *, method: str = "auto", time_limit: float = 10.0,
                 max_submodels: int | None = 8, start: np.ndarray | None = None, random_seed: int = 0) -> None:
        super().__init__(cost)
        if method not in ("auto", "min_cut", "milp"):
            raise ValueError(f"method must be 'auto', 'min_cut' or 'milp', got {method!r}")
        self.method, self.time_limit, self.max_submodels, self.start = method, time_limit, max_submodels, start
        self.random_seed = random_seed
        self.last_result: OptimumResult | None = None

    def propose(self, context: PlacementContext) -> np.ndarray:
        cost = self.resolved_cost(context)
        min_cut_exact = (len(cost.devices) == 2 and not (cost.submodel_overhead_ms > 0).any()
                         and np.isinf(cost.device_memory_bytes).all() and self.max_submodels is None)
        if self.method == "min_cut" or (self.method == "auto" and min_cut_exact):
            result = min_cut_placement(cost, context.graph, support=context.support)
        else:
            result = milp_placement(cost, context.graph, time_limit=self.time_limit, max_submodels=self.max_submodels,
                                    support=context.support, start=self.start, random_seed=self.random_seed)
        self.last_result = result
        return result.placement

    def __repr__(self) -> str:
        return (f"OptimumStrategy(method={self.method!r}, time_limit={self.time_limit}, "
                f"max_submodels={self.max_submodels})")


def optimum_strategy(cost: CostProvider, **options) -> OptimumStrategy:
    """``OptimumStrategy(cost, **options)``: plug the exact optimum into ``ov_autoplace.place``."""
    return OptimumStrategy(cost, **options)


__all__ = ["OptimumStrategy", "optimum_strategy"]
