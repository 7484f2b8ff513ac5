"""Where a strategy's measured CostModel comes from (simulated ones: ``costmodel/sim_costs.cost_model_for``).

A provider is a callable ``PlacementContext -> CostModel`` for the prepared
model being placed. The one here is deterministic given the model's
structure, the devices and their properties (it is cached in the profile
store under exactly that key), so a placement cache keyed on those plus the
provider's ``repr`` stays valid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.measuring.generation_profile import generation_profile
from ov_autoplace.measuring.link_calibration import QUICK_LINK_CUTS, QUICK_LINK_SIZES, profile_links
from ov_autoplace.cache.profile_store import ProfileStore
from ov_autoplace.measuring.profiler import profile_model

if TYPE_CHECKING:
    from ov_autoplace.placement.context import PlacementContext



class MeasuredCostProvider:
    """Profile the model on the context's devices (PERF_COUNT per op + a quick link calibration), cached; for a
    stateful decoder with the context's generation, the whole generation's costs (prefill + decode steps)."""

    def __init__(self, *, store: ProfileStore | None = None, iterations: int = 10, warmup: int = 2) -> None:
        self.store, self.iterations, self.warmup = store, iterations, warmup

    def __call__(self, context: PlacementContext) -> CostModel:
        if context.core is None or context.model is None:
            raise ValueError("a measured cost model needs the context's core and model")
        store = self.store if self.store is not None else ProfileStore(context.profile_dir)  # the call's root
        links = profile_links(context.core, context.devices, sizes=QUICK_LINK_SIZES, cuts=QUICK_LINK_CUTS, rounds=3,
                              seconds_per_variant=0.3, store=store)
        cost = profile_model(context.model, context.core, context.devices, warmup=self.warmup,
                             iterations=self.iterations, store=store, links=links)
        if context.generation is None or context.dynamic_model is None:
            return cost
        # a decoder: each decode step of its generation profiled too (quick profiles, stored), at the weights
        _, cost = generation_profile(context.dynamic_model, context.graph, cost, context.generation, context.core,
                                     store=store, links=links, measure=True)
        return cost

    def __repr__(self) -> str:
        return f"MeasuredCostProvider(iterations={self.iterations}, links=quick)"


__all__ = ["MeasuredCostProvider", "QUICK_LINK_CUTS", "QUICK_LINK_SIZES"]
