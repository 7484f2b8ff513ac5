"""The base of the strategies that read a CostModel, and how they get one."""

from __future__ import annotations

from typing import Callable, Union

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.errors import PlacementError
from ov_autoplace.strategies.base import PlacementContext, PlacementStrategy


#: A CostModel, or a function building one for the context being placed.
CostProvider = Union[CostModel, Callable[[PlacementContext], CostModel]]


def resolve_cost(provider: CostProvider, context: PlacementContext) -> CostModel:
    """The provider's CostModel, with its device columns in the context's device order.

    Raises PlacementError when the model describes other nodes (it must be
    built for the prepared model being placed) or lacks one of the devices.
    """
    cost = provider if isinstance(provider, CostModel) else provider(context)
    if not isinstance(cost, CostModel):
        raise PlacementError(f"the cost provider returned {type(cost).__name__}, expected a CostModel")
    if tuple(cost.node_names) != tuple(context.graph.names):
        raise PlacementError(
            f"the CostModel describes {cost.num_nodes} nodes, not the {context.graph.num_nodes} of the model being "
            "placed; build it for the prepared model (ov_autoplace.model.prepare.prepare_model)")
    if tuple(cost.devices) == tuple(context.devices):
        return cost
    missing = [d for d in context.devices if d not in cost.devices]
    if missing:
        raise PlacementError(f"the CostModel has no costs for device(s) {missing}; it covers {list(cost.devices)}")
    return cost.with_devices(tuple(context.devices))  # every per-device array, the spreads included


class CostModelStrategy(PlacementStrategy):
    """Base of the strategies that read a CostModel (given, or built per context by a callable)."""

    def __init__(self, cost: CostProvider) -> None:
        if not isinstance(cost, CostModel) and not callable(cost):
            raise TypeError(f"cost must be a CostModel or a callable(PlacementContext) -> CostModel, got {type(cost)}")
        self.cost = cost

    def resolved_cost(self, context: PlacementContext) -> CostModel:
        """The CostModel for ``context`` (also kept in ``last_cost`` for the guard)."""
        self.last_cost = resolve_cost(self.cost, context)
        return self.last_cost

    def terms(self, context: PlacementContext) -> CostTerms:
        return CostTerms(self.resolved_cost(context), context.graph, context.support)


__all__ = ["CostModelStrategy", "CostProvider", "resolve_cost"]
