"""Modelling: what a placement costs. ``CostModel`` (per-node costs per device, measured or simulated) and
``CostTerms`` (a placement's latency under it), the simulator and the simulated platforms, the batch-1 device
models fitted to published latencies and the prior built from what devices report.

Measuring fills a CostModel (``ov_autoplace.measuring``); searching reads one (``ov_autoplace.search``).
"""

from ov_autoplace.costmodel.cost_model import CostModel

__all__ = ["CostModel"]
