"""Where a strategy's CostModel comes from: measured on the devices, or simulated from specs.

A provider is a callable ``PlacementContext -> CostModel`` for the prepared
model being placed. Both providers here are deterministic given the model's
structure, the devices and their properties (the measured one is cached in
the profile store under exactly that key), so a placement cache keyed on those
plus the provider's ``repr`` stays valid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ov_autoplace.errors import DeviceError
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.measuring.generation_profile import generation_profile
from ov_autoplace.measuring.link_calibration import QUICK_LINK_CUTS, QUICK_LINK_SIZES, profile_links
from ov_autoplace.costmodel.platforms import PLATFORMS, SimPlatform
from ov_autoplace.cache.profile_store import ProfileStore
from ov_autoplace.measuring.profiler import profile_model
from ov_autoplace.costmodel.sim_costs import cost_model_for

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


class SimulatedCostProvider:
    """Costs from a simulated platform (``"paper"``, ``"laptop"`` or a SimPlatform); numbers are simulated."""

    def __init__(self, platform: str | SimPlatform, *, precision: str = "f16") -> None:
        if isinstance(platform, str):
            if platform not in PLATFORMS:
                raise DeviceError(f"unknown simulated platform {platform!r}; expected one of {sorted(PLATFORMS)}")
            platform = PLATFORMS[platform]
        self.platform, self.precision = platform, precision

    def __call__(self, context: PlacementContext) -> CostModel:
        return cost_model_for(context.graph, self.platform, precision=self.precision)

    def __repr__(self) -> str:
        return f"SimulatedCostProvider({self.platform.name!r}, precision={self.precision!r})"


__all__ = ["MeasuredCostProvider", "QUICK_LINK_CUTS", "QUICK_LINK_SIZES", "SimulatedCostProvider"]
