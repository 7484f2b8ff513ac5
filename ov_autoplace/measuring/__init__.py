"""Measuring: costs taken on the real devices. The profiler (``profiler.py``: per-op times from PERF_COUNT,
``perf_counts.py``, and end to end), the quick profile of the default path (``quick_profile.py``), the transfer
costs between devices (``link_calibration.py``), the load and noise of the machine while it measures
(``noise.py``), and the cost providers strategies ask (``providers.py``).

The names below load on first use (PEP 562): importing the package does not start the profiler.
"""

import importlib

_LAZY = {
    "DeviceReport": "ov_autoplace.measuring.profiler",
    "LinkProfile": "ov_autoplace.measuring.link_calibration",
    "ModelProfile": "ov_autoplace.measuring.profiler",
    "measure_model_profile": "ov_autoplace.measuring.profiler",
    "profile_links": "ov_autoplace.measuring.link_calibration",
    "profile_model": "ov_autoplace.measuring.profiler",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
