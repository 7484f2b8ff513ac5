"""The best single device under a CostModel: the baseline every placement must beat.

Each device in turn gets every active node (the legalizer moves the nodes it
cannot run to the first device that can, as ``place()`` would); the one whose
legal placement the CostModel predicts fastest and that fits in memory wins,
ties going to the earlier device in priority order. When no device fits, the
fastest one is chosen and a warning logged.
"""

from __future__ import annotations

import logging

import numpy as np

from ov_autoplace.strategies.cost_based import CostModelStrategy
from ov_autoplace.strategies.base import PlacementContext

logger = logging.getLogger("ov_autoplace.strategies")


class BestSingleDeviceStrategy(CostModelStrategy):
    """Everything on the device with the lowest predicted latency. ``last_latencies_ms`` keeps the comparison."""

    name = "best_single"

    def propose(self, context: PlacementContext) -> np.ndarray:
        terms = self.terms(context)
        latencies, devices = [], []
        for d in range(terms.num_devices):
            device, _ = terms.legal_devices(np.full(terms.num_nodes, d, dtype=np.int64))
            latencies.append(terms.latency_ms(device))
            devices.append(device)
        latencies_arr = np.array(latencies)
        if not np.isfinite(latencies_arr).any():
            b = [terms.breakdown(dev) for dev in devices]
            latencies_arr = np.array([x["compute"] + x["fusion"] + x["transfer"] + x["overhead"] for x in b])
            logger.warning("no single device holds the model within its memory capacity; choosing the fastest anyway")
        self.last_latencies_ms = dict(zip(terms.cost.devices, latencies_arr.tolist()))
        best = int(np.argmin(latencies_arr))  # first minimum: ties go to the higher-priority device
        return np.full(terms.num_nodes, best, dtype=np.int64)


__all__ = ["BestSingleDeviceStrategy"]
