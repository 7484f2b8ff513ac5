"""The suite of named simulated platforms (``data/platforms.json`` + ``data/fitted_terms.json``).

More: docs/architecture.md, "Module notes", suite.py.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from ov_autoplace.errors import CalibrationDataError
from ov_autoplace.costmodel import platforms as spec_sheets
from ov_autoplace.costmodel.device_model import Batch1Terms, ModelDevice, SuitePlatform

DATA_DIR = Path(__file__).resolve().parent / "data"

PLATFORMS_JSON = DATA_DIR / "platforms.json"
FITTED_TERMS_JSON = DATA_DIR / "fitted_terms.json"
KINDS = ("calibrated", "derived", "hypothetical")
_DEVICE_KEYS = {"name", "spec", "terms", "calibration", "supported_ops", "memory_gb", "product", "recognized_by"}


def _read_json(path: Path, what: str) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CalibrationDataError(f"cannot read {what} {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise CalibrationDataError(f"{what} {path} is not valid JSON: {exc}") from exc


def load_fitted_terms(path: str | Path | None = None) -> dict[str, Batch1Terms]:
    """``{"platform/DEVICE": Batch1Terms}`` from a fitted-terms file; {} if the file does not exist."""
    path = Path(path) if path is not None else FITTED_TERMS_JSON
    if not path.exists():
        return {}
    data = _read_json(path, "fitted terms")
    devices = data.get("devices")
    if not isinstance(devices, dict):
        raise CalibrationDataError(f"{path.name}: needs a 'devices' mapping of 'platform/DEVICE' -> terms")
    return {key: Batch1Terms.from_mapping(terms, f"{path.name}: devices[{key!r}]") for key, terms in devices.items()}


def _supported_ops(value: Any, where: str) -> frozenset[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CalibrationDataError(f"{where}.supported_ops: must be a list of op type names, got {value!r}")
    ops: set[str] = set()
    for item in value:
        if item.startswith("@"):
            named = getattr(spec_sheets, item[1:], None)
            if not isinstance(named, frozenset):
                raise CalibrationDataError(f"{where}.supported_ops: {item!r} names no op set of platforms.py")
            ops |= named
        else:
            ops.add(item)
    return frozenset(ops)


def _recognized_by(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise CalibrationDataError(f"{where}.recognized_by: must be a non-empty list of regular expressions "
                                   f"(matched against the normalized FULL_DEVICE_NAME), got {value!r}")
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise CalibrationDataError(f"{where}.recognized_by: {pattern!r} is not a valid regular expression "
                                       f"({exc})") from exc
    return tuple(value)


def _device(entry: Any, where: str, fitted: dict[str, Batch1Terms]) -> ModelDevice:
    if not isinstance(entry, dict):
        raise CalibrationDataError(f"{where}: a device must be a mapping with 'name', 'spec' and 'terms'")
    for field in ("name", "spec", "terms"):
        if field not in entry:
            raise CalibrationDataError(f"{where}: missing field {field!r}; a device needs 'name', 'spec' and 'terms'")
    unknown = sorted(set(entry) - _DEVICE_KEYS)
    if unknown:
        raise CalibrationDataError(f"{where}: unknown field(s) {unknown}; known fields are {sorted(_DEVICE_KEYS)}")
    where = f"{where} ({entry['name']})"
    spec = getattr(spec_sheets, str(entry["spec"]), None)
    if not isinstance(spec, spec_sheets.SimDevice):
        names = sorted(k for k, v in vars(spec_sheets).items() if isinstance(v, spec_sheets.SimDevice))
        raise CalibrationDataError(f"{where}.spec: {entry['spec']!r} is not a device of platforms.py; one of {names}")
    changes: dict[str, Any] = {"name": str(entry["name"])}
    if "supported_ops" in entry:
        changes["supported_op_types"] = _supported_ops(entry["supported_ops"], where)
    if "memory_gb" in entry:
        gb = entry["memory_gb"]
        if isinstance(gb, bool) or not isinstance(gb, (int, float)) or not gb > 0:
            raise CalibrationDataError(f"{where}.memory_gb: must be a number > 0, got {gb!r}")
        changes["memory_bytes"] = float(gb) * 2**30
    if "product" in entry:
        changes["product"] = str(entry["product"])
    terms = Batch1Terms.from_mapping(entry["terms"], f"{where}.terms")
    key = entry.get("calibration")
    is_fitted = key in fitted
    if is_fitted:
        terms = fitted[key]
    recognized_by = _recognized_by(entry["recognized_by"], where) if "recognized_by" in entry else ()
    return ModelDevice(dataclasses.replace(spec, **changes), terms, key, is_fitted, recognized_by)


def parse_suite(data: Any, origin: str = "platforms.json",
                fitted: dict[str, Batch1Terms] | None = None) -> dict[str, SuitePlatform]:
    """Validate a platform file's content; every error names the platform, device and field."""
    fitted = fitted or {}
    platforms = data.get("platforms") if isinstance(data, dict) else None
    if not isinstance(platforms, dict) or not platforms:
        raise CalibrationDataError(f"{origin}: needs a non-empty 'platforms' mapping of name -> platform")
    suite = {}
    for name, entry in platforms.items():
        where = f"{origin}: platforms[{name!r}]"
        if not isinstance(entry, dict):
            raise CalibrationDataError(f"{where}: must be a mapping")
        for field in ("title", "kind", "precision", "devices"):
            if field not in entry:
                raise CalibrationDataError(f"{where}: missing field {field!r}")
        if entry["kind"] not in KINDS:
            raise CalibrationDataError(f"{where}.kind: must be one of {KINDS}, got {entry['kind']!r}")
        if entry["precision"] not in spec_sheets.PRECISIONS:
            raise CalibrationDataError(f"{where}.precision: must be one of {spec_sheets.PRECISIONS}, "
                                       f"got {entry['precision']!r}")
        if not isinstance(entry["devices"], list) or not entry["devices"]:
            raise CalibrationDataError(f"{where}.devices: must be a non-empty list")
        devices = tuple(_device(d, f"{where}.devices[{i}]", fitted) for i, d in enumerate(entry["devices"]))
        names = [d.name for d in devices]
        if len(set(names)) != len(names):
            raise CalibrationDataError(f"{where}.devices: device names must be unique, got {names}")
        suite[name] = SuitePlatform(name, str(entry["title"]), devices, entry["precision"],
                                    str(entry.get("notes", "")), entry["kind"])
    return suite


def load_suite(path: str | Path | None = None, *, fitted_path: str | Path | None = None,
               use_fit: bool = True) -> dict[str, SuitePlatform]:
    """The named platforms; ``use_fit=False`` keeps every device at its prior terms (what the fit starts from)."""
    path = Path(path) if path is not None else PLATFORMS_JSON
    fitted = load_fitted_terms(fitted_path) if use_fit else {}
    return parse_suite(_read_json(path, "platform file"), path.name, fitted)


__all__ = ["FITTED_TERMS_JSON", "KINDS", "PLATFORMS_JSON", "load_fitted_terms", "load_suite", "parse_suite"]
