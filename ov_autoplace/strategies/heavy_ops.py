"""A documented heuristic used until the learned policy is the default.

Matrix-heavy operations (convolutions, matrix products, attention) go to the
first listed device - by HETERO convention the accelerator the user prefers -
and everything else to the next device. The legalizer then merges the small
islands this creates, so the result is a few large submodels rather than one
switch per op.
"""

from __future__ import annotations

import numpy as np

from ov_autoplace.graph.arrays import NodeRole
from ov_autoplace.graph.op_kinds import HEAVY_OP_TYPES
from ov_autoplace.strategies.base import PlacementContext, PlacementStrategy


class HeavyOpsStrategy(PlacementStrategy):
    """Heavy op types on ``devices[0]``, the rest on ``devices[1]`` (one device: all there)."""

    name = "heavy_ops"

    def propose(self, context: PlacementContext) -> np.ndarray:
        graph = context.graph
        light_device = 1 if len(context.devices) > 1 else 0
        heavy = np.fromiter((t in HEAVY_OP_TYPES for t in graph.op_types), dtype=bool, count=graph.num_nodes)
        proposal = np.where(heavy, 0, light_device).astype(np.int64)
        proposal[graph.role != NodeRole.COMPUTE] = 0
        return proposal
