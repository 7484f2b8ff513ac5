"""OpenVINO HETERO's own rule: every node on the first listed device that runs it."""

from __future__ import annotations

import numpy as np

from ov_autoplace.strategies.base import PlacementContext, PlacementStrategy


class DevicePriorityStrategy(PlacementStrategy):
    """All nodes on the highest-priority device; the legalizer moves what it cannot run."""

    name = "priority"

    def propose(self, context: PlacementContext) -> np.ndarray:
        return np.argmax(context.support, axis=1).astype(np.int64)


class SingleDeviceStrategy(PlacementStrategy):
    """Everything on one named device (a baseline and a fallback)."""

    name = "single"

    def __init__(self, device: str) -> None:
        self.device = device
        self.name = f"single:{device}"

    def propose(self, context: PlacementContext) -> np.ndarray:
        if self.device not in context.devices:
            raise ValueError(f"device {self.device!r} is not among {list(context.devices)}")
        return np.full(context.graph.num_nodes, context.devices.index(self.device), dtype=np.int64)

    def __repr__(self) -> str:
        return f"SingleDeviceStrategy(device={self.device!r})"
