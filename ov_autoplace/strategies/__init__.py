"""Placement strategies: everything that proposes a device per node."""

from .base import PlacementContext, PlacementStrategy
from .heavy_ops import HEAVY_OP_TYPES, HeavyOpsStrategy
from .priority import DevicePriorityStrategy, SingleDeviceStrategy
from .random_strategy import RandomStrategy

__all__ = [
    "HEAVY_OP_TYPES",
    "DevicePriorityStrategy",
    "HeavyOpsStrategy",
    "PlacementContext",
    "PlacementStrategy",
    "RandomStrategy",
    "SingleDeviceStrategy",
]
