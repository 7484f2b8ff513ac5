"""Placement strategies: everything that proposes a device per node.

Strategies that read a CostModel (best single device, HEFT) take
it in their constructor, or a callable that builds it for the context being
placed (the exact optimum and OpenVINO's own modes, baselines, are the lab's: ``ov_autoplace_lab.optimum``,
``ov_autoplace_lab.baselines.openvino_modes``). Names are
loaded on first use (PEP 562).
"""

import importlib

_LAZY = {
    "HEAVY_OP_TYPES": ".heavy_ops",
    "BestSingleDeviceStrategy": ".best_single",
    "DevicePriorityStrategy": ".priority",
    "HeavyOpsStrategy": ".heavy_ops",
    "HeftStrategy": ".heft",
    "PlacementContext": ".base",
    "PlacementStrategy": ".base",
    "RandomStrategy": ".random_strategy",
    "SingleDeviceStrategy": ".priority",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
