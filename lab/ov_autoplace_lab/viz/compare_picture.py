"""The comparison picture: one row per strategy, its placement as a strip and its latency as a bar.

The strip shows the model's active nodes in topological order (left: inputs,
right: outputs), each coloured by its device, so a split reads as where the
colour changes; the bar is the measured median with its interquartile range
(whisker), or the simulated prediction (hatched grey outline) when not run.
"""

from __future__ import annotations

import numpy as np

from ov_autoplace_lab.viz.scene import Line, Rect, Scene, Text, device_colour, fit_text

_NAME_W, _STRIP_W, _INFO_W, _ROW_H = 190, 360, 170, 30


def draw_comparison(result, *, title: str, width: float = 1150.0) -> tuple[Scene, dict[str, dict]]:
    """The scene and its hover data (keyed ``row<k>``) for a :class:`ov_autoplace_lab.compare.Comparison`."""
    rows = result.rows
    top = 74
    scene = Scene(width, top + _ROW_H * len(rows) + 50)
    scene.add(Text(0, 18, title, size=16, bold=True))
    what = "measured median [IQR] (native timer, interleaved)" if result.measured else "simulated prediction"
    scene.add(Text(0, 38, f"bar: {what}; thin mark: simulated prediction ({result.cost_label}); strip: each "
                          "compute op in topological order coloured by its device", size=10.5, colour="#555"))
    x = 0.0
    for k, d in enumerate(result.devices):
        scene.add(Rect(x, 48, 12, 12, device_colour(k)))
        scene.add(Text(x + 16, 58, d, size=11))
        x += 34 + 7 * len(d)
    bar_x = _NAME_W + _STRIP_W + _INFO_W + 20
    bar_w = width - bar_x - 90
    values = [v for r in rows for v in ((r.iqr_ms[1] if r.iqr_ms else None), r.predicted_ms) if v is not None]
    scale = bar_w / (max(values) if values else 1.0)
    scene.add(Text(_NAME_W, top - 4, "placement (inputs -> outputs)", size=10, colour="#555"))
    scene.add(Text(_NAME_W + _STRIP_W + 12, top - 4, "submodels / transfers", size=10, colour="#555"))
    scene.add(Text(bar_x, top - 4, "latency of one inference (ms)", size=10, colour="#555"))
    hover: dict[str, dict] = {}
    best = min((r.median_ms for r in rows if r.median_ms is not None), default=None)
    for k, r in enumerate(rows):
        y = top + k * _ROW_H
        scene.add(Rect(0, y, width, _ROW_H - 2, "#f6f6f6" if k % 2 == 0 else "white"))
        scene.add(Text(4, y + 19, fit_text(r.name, _NAME_W - 8, 12), size=12, bold=r.placement is not None))
        info = {"strategy": r.name}
        if r.error:
            scene.add(Text(_NAME_W, y + 19, fit_text("failed: " + r.error, width - _NAME_W, 11), size=11,
                           colour="#b00"))
            hover[f"row{k}"] = {**info, "error": r.error}
            continue
        _strip(scene, r.device_of_active, _NAME_W, y + 6, _STRIP_W, _ROW_H - 14, key=f"row{k}")
        scene.add(Text(_NAME_W + _STRIP_W + 12, y + 19,
                       f"{r.num_submodels} sub, {r.transfer_ms:.2f} ms xfer", size=11))
        if r.median_ms is not None:
            q1, q3 = r.iqr_ms
            colour = "#333333" if r.placement is not None else device_colour(int(r.device_of_active[0]))
            scene.add(Rect(bar_x, y + 6, r.median_ms * scale, _ROW_H - 14, colour, key=f"row{k}",
                           hover=f"{r.name}: {r.median_ms:.2f} ms [{q1:.2f}-{q3:.2f}]"))
            scene.add(Line(bar_x + q1 * scale, y + _ROW_H / 2 - 1, bar_x + q3 * scale, y + _ROW_H / 2 - 1, "#D00000",
                           2))
            label = f"{r.median_ms:.2f} ms"
            if r.median_ms == best:  # a lowest median inside another row's spread is not a win
                tied = any(o is not r and o.iqr_ms is not None and o.iqr_ms[0] <= q3 for o in rows)
                label += " (lowest median; within others' IQR)" if tied else " (fastest)"
            scene.add(Text(bar_x + q3 * scale + 6, y + 19, label, size=11, bold=r.median_ms == best))
        if r.predicted_ms is not None:
            px = bar_x + r.predicted_ms * scale
            scene.add(Line(px, y + 3, px, y + _ROW_H - 5, "#777777", 2, hover=f"simulated {r.predicted_ms:.2f} ms"))
            if r.median_ms is None:
                scene.add(Text(px + 6, y + 19, f"{r.predicted_ms:.2f} ms (simulated)", size=11))
        counts = r.placement.counts_per_device() if r.placement is not None else "whole model"
        hover[f"row{k}"] = {**info, "nodes per device": counts, "submodels": r.num_submodels,
                            "transfers ms (simulated)": round(r.transfer_ms, 4),
                            "predicted ms (simulated)": None if r.predicted_ms is None else round(r.predicted_ms, 3),
                            "measured median ms": None if r.median_ms is None else round(r.median_ms, 3),
                            "placing s": round(r.place_s, 3)}
    if {"CPU", "CPUF"} <= set(result.devices):
        from ov_autoplace_lab.viz import SAME_DEVICE_NOTE

        scene.add(Text(0, top + _ROW_H * len(rows) + 20, "note: " + SAME_DEVICE_NOTE, size=10.5, colour="#555"))
    return scene, hover


def _strip(scene: Scene, device: np.ndarray, x: float, y: float, w: float, h: float, *, key: str) -> None:
    """Runs of equal device along the topological order, as adjacent rectangles."""
    n = max(int(device.size), 1)
    change = np.flatnonzero(np.diff(device)) + 1 if device.size else np.zeros(0, int)
    starts = np.concatenate(([0], change)).astype(int)
    ends = np.concatenate((change, [device.size])).astype(int)
    scene.add(Rect(x, y, w, h, "#eeeeee", key=key))
    for s, e in zip(starts.tolist(), ends.tolist()):
        if e > s:
            scene.add(Rect(x + w * s / n, y, max(w * (e - s) / n, 1.0), h, device_colour(int(device[s]))))


__all__ = ["draw_comparison"]
