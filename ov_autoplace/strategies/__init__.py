"""Placement strategies: everything that proposes a device per node.

Strategies that read a CostModel (best single device, HEFT, critical path,
the exact optimum) take it in their constructor, or a callable that builds it
for the context being placed.
"""

from .base import PlacementContext, PlacementStrategy
from .best_single import BestSingleDeviceStrategy
from .critical_path import CriticalPathGreedyStrategy
from .heavy_ops import HEAVY_OP_TYPES, HeavyOpsStrategy
from .heft import HeftStrategy
from .openvino_modes import OpenVINOAutoStrategy, OpenVINOHeteroAutoStrategy, OpenVINOPipelineParallelStrategy
from .optimum_strategy import OptimumStrategy
from .priority import DevicePriorityStrategy, SingleDeviceStrategy
from .random_strategy import RandomStrategy

__all__ = [
    "HEAVY_OP_TYPES",
    "BestSingleDeviceStrategy",
    "CriticalPathGreedyStrategy",
    "DevicePriorityStrategy",
    "HeavyOpsStrategy",
    "HeftStrategy",
    "OpenVINOAutoStrategy",
    "OpenVINOHeteroAutoStrategy",
    "OpenVINOPipelineParallelStrategy",
    "OptimumStrategy",
    "PlacementContext",
    "PlacementStrategy",
    "RandomStrategy",
    "SingleDeviceStrategy",
]
