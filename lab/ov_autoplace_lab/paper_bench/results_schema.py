"""The schema of the benchmark's results dict (``results.json``), and its validation.

:func:`validate_results` raises ValueError naming the path of the first field that is missing, of the wrong
type or inconsistent (a cell's speed-up against its setting's reference). The report (``report.py``) validates
before it writes anything; ``ov-autoplace bench`` validates what it measured.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

KINDS = ("single", "openvino", "heuristic", "optimum", "learned")
_META = {"date": "str", "openvino": "str", "command": "str", "quick": "bool", "budget": "int", "runs": "int",
         "machine": "str", "seconds": "num"}
_SETTING = {"name": "str", "title": "str", "simulated": "bool", "models": "list", "reference": "str",
            "rows": "list", "curves": "dict"}
_CELL = {"median_ms": "num?", "q1_ms": "num?", "q3_ms": "num?", "runs": "int", "speedup": "signed?",
         "vs_optimum": "signed?", "evaluated": "int", "compiles": "int", "search_s": "num", "budget": "int?",
         "submodels": "int", "counts": "dict", "max_abs_diff": "num?", "cosine": "signed?", "error": "str?",
         "notes": "list"}
_EXPECTED = {"str": "a string", "bool": "a boolean", "int": "a non-negative integer", "num": "a non-negative number",
             "signed": "a number", "list": "a list", "dict": "an object"}
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


# --- validation ---------------------------------------------------------------------------------------

def _fail(path: str, expected: str, value: Any) -> None:
    raise ValueError(f"{path}: expected {expected}, got {value!r}")


def _check(path: str, value: Any, kind: str) -> None:
    base, nullable = kind.rstrip("?"), kind.endswith("?")
    if value is None and nullable:
        return
    expected = _EXPECTED[base] + (" or null" if nullable else "")
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = {"str": isinstance(value, str), "bool": isinstance(value, bool), "list": isinstance(value, list),
          "dict": isinstance(value, dict),
          "int": isinstance(value, int) and not isinstance(value, bool) and value >= 0,
          "num": number and math.isfinite(value) and value >= 0,
          "signed": number and math.isfinite(value)}[base]
    if not ok:
        _fail(path, expected, value)


def _fields(path: str, obj: Any, spec: Mapping[str, str], required: bool = True) -> None:
    if not isinstance(obj, dict):
        _fail(path or "results", "an object", obj)
    for key, kind in spec.items():
        where = f"{path}.{key}" if path else key
        if key not in obj:
            if required:
                raise ValueError(f"{where}: missing (required)")
            continue
        _check(where, obj[key], kind)


def _validate_cell(path: str, cell: Any, reference: Mapping[str, Any] | None, simulated: bool) -> None:
    _fields(path, cell, _CELL, required=not (isinstance(cell, dict) and cell.get("error") is not None))
    if cell.get("round_ms") is not None:  # optional: per-round medians of a measured cell (paired rounds)
        _check(f"{path}.round_ms", cell["round_ms"], "list")
        for k, value in enumerate(cell["round_ms"]):
            _check(f"{path}.round_ms[{k}]", value, "num")
    for key, value in cell.get("counts", {}).items():
        _check(f"{path}.counts[{key!r}]", value, "int")
    for k, note in enumerate(cell.get("notes", [])):
        _check(f"{path}.notes[{k}]", note, "str")
    q1, med, q3 = cell.get("q1_ms"), cell.get("median_ms"), cell.get("q3_ms")
    if None not in (q1, med, q3) and not q1 <= med <= q3:
        _fail(f"{path}.median_ms", f"q1_ms <= median_ms <= q3_ms ({q1} .. {q3})", med)
    if simulated:
        for key in ("max_abs_diff", "cosine"):
            if cell.get(key) is not None:
                _fail(f"{path}.{key}", "null in a simulated setting (nothing was executed)", cell[key])
    ref = reference.get("median_ms") if reference else None
    if cell.get("speedup") is not None and ref is not None and med:
        if abs(cell["speedup"] - (ref / med - 1.0)) > 1e-3:
            _fail(f"{path}.speedup", f"reference median / median - 1 = {ref / med - 1.0:.6f}", cell["speedup"])


def _validate_curves(path: str, curves: Mapping[str, Any], methods: set[str], models: list[str]) -> None:
    for method, per_model in curves.items():
        mpath = f"{path}[{method!r}]"
        if method not in methods:
            _fail(mpath, f"a method among the rows {sorted(methods)}", method)
        _check(mpath, per_model, "dict")
        for model, points in per_model.items():
            ppath = f"{mpath}[{model!r}]"
            if model not in models:
                _fail(ppath, f"a model among {models}", model)
            _check(ppath, points, "list")
            for k, point in enumerate(points):
                if not (isinstance(point, list) and len(point) == 2):
                    _fail(f"{ppath}[{k}]", "[evaluated, best_ms]", point)
                _check(f"{ppath}[{k}][0]", point[0], "int")
                _check(f"{ppath}[{k}][1]", point[1], "num")
                if k and (point[0] < points[k - 1][0] or point[1] > points[k - 1][1]):
                    _fail(f"{ppath}[{k}]", "evaluated not decreasing and best_ms not increasing", point)


def validate_results(results: Any) -> None:
    """Raise ValueError naming the path of the first problem in ``results`` (see the module schema).

    Beyond types it checks: setting names usable in file names, unique models and
    methods, the reference is a row, cells only for listed models, q1 <= median <= q3,
    no correctness numbers in simulated settings, speed-ups consistent with the
    medians (within 0.001), and learning curves that never get worse.
    """
    _fields("", results, {"meta": "dict", "settings": "list"})
    _fields("meta", results["meta"], _META)
    names: set[str] = set()
    for s, setting in enumerate(results["settings"]):
        spath = f"settings[{s}]"
        _fields(spath, setting, _SETTING)
        if not _NAME.match(setting["name"]) or setting["name"] in names:
            _fail(f"{spath}.name", "a unique name of letters, digits, '_', '.', '-'", setting["name"])
        names.add(setting["name"])
        models = setting["models"]
        for m, model in enumerate(models):
            _check(f"{spath}.models[{m}]", model, "str")
        if len(set(models)) != len(models):
            _fail(f"{spath}.models", "unique model names", models)
        methods: dict[str, dict] = {}
        for r, row in enumerate(setting["rows"]):
            rpath = f"{spath}.rows[{r}]"
            _fields(rpath, row, {"method": "str", "kind": "str", "cells": "dict"})
            if row["kind"] not in KINDS:
                _fail(f"{rpath}.kind", f"one of {list(KINDS)}", row["kind"])
            if row["method"] in methods:
                _fail(f"{rpath}.method", "a method name not used by an earlier row", row["method"])
            methods[row["method"]] = row
        if setting["reference"] not in methods:
            _fail(f"{spath}.reference", f"the method of a row {sorted(methods)}", setting["reference"])
        reference = methods[setting["reference"]]["cells"]
        for r, row in enumerate(setting["rows"]):
            for model, cell in row["cells"].items():
                cpath = f"{spath}.rows[{r}].cells[{model!r}]"
                if model not in models:
                    _fail(cpath, f"a model among {models}", model)
                _validate_cell(cpath, cell, reference.get(model), setting["simulated"])
        _validate_curves(f"{spath}.curves", setting["curves"], set(methods), models)
        for model, control in (setting.get("controls") or {}).items():  # optional: the reference compiled twice
            cpath = f"{spath}.controls[{model!r}]"
            if model not in models:
                _fail(cpath, f"a model among {models}", model)
            _fields(cpath, control, {"round_ms": "list", "round_ratio": "list"})
            for key in ("round_ms", "round_ratio"):
                for k, value in enumerate(control[key]):
                    _check(f"{cpath}.{key}[{k}]", value, "num")
