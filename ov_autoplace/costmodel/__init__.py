"""Cost models of placements: measured (profiler) or simulated, and what predicts from them.

The names below are loaded on first use (PEP 562): ``import ov_autoplace`` and
the cache-hit path of ``compile_model`` then do not import the profiler, the
link calibration or the exact optimum they do not use.
"""

import importlib

_LAZY = {
    "CostModel": ".cost_model",
    "DeviceReport": ".profiler",
    "LinkProfile": ".link_calibration",
    "ModelProfile": ".profiler",
    "ProfileStore": "ov_autoplace.cache.profile_store",
    "measure_model_profile": ".profiler",
    "profile_links": ".link_calibration",
    "profile_model": ".profiler",
    "structural_hash": "ov_autoplace.cache.profile_store",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
