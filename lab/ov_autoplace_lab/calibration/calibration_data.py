"""The published single-device latencies the simulated platforms are calibrated on (``calibration.csv`` beside this module).

The lab's: only the fit (``fit_terms``, ``benchmarks/bench_platforms.py --refit``) and the benchmark's truth
tables read them; the runtime ships the fitted terms (``ov_autoplace/costmodel/data/fitted_terms.json``), not the
points they were fitted to.

Loaded on demand (never at ``import ov_autoplace``). Each row is one
(platform, device, model, precision, batch) with the published latency, its
source (title + URL), the source's date and OpenVINO version, and whether the
row is held out of the fit. The file's comment lines say which numbers do not
exist and why; nothing in it is invented. A row without a source, with a
non-positive latency or an unknown precision raises :class:`CalibrationDataError`
naming the line and the field.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from pathlib import Path

from ov_autoplace.errors import CalibrationDataError
from ov_autoplace.costmodel.platforms import PRECISIONS

DATA_DIR = Path(__file__).resolve().parent
CALIBRATION_CSV = DATA_DIR / "calibration.csv"  # beside this module in the lab wheel (lab/pyproject.toml, package-data)

COLUMNS = ("platform", "device", "product", "model", "precision", "batch", "latency_ms", "source_title",
           "source_url", "source_date", "openvino_version", "held_out", "note")
_REQUIRED_TEXT = ("platform", "device", "product", "model", "source_title", "source_url", "source_date",
                  "openvino_version")


@dataclasses.dataclass(frozen=True)
class CalibrationPoint:
    """One published measurement: ``latency_ms`` of ``model`` on ``platform``/``device``, batch ``batch``."""

    platform: str
    device: str
    product: str
    model: str
    precision: str
    batch: int
    latency_ms: float
    source_title: str
    source_url: str
    source_date: str
    openvino_version: str
    held_out: bool
    note: str = ""

    @property
    def key(self) -> str:
        """The calibrated device this point belongs to: ``"platform/DEVICE"``."""
        return f"{self.platform}/{self.device}"


def parse_calibration(text: str, origin: str = "calibration data") -> list[CalibrationPoint]:
    """Parse and validate the CSV text (``#`` lines are comments); errors name ``origin``, the line and the field."""
    lines = text.splitlines()
    body = [(n, line) for n, line in enumerate(lines, start=1) if line.strip() and not line.lstrip().startswith("#")]
    if not body:
        raise CalibrationDataError(f"{origin}: no header row; expected the columns {list(COLUMNS)}")
    header_line, header = body[0][0], next(csv.reader([body[0][1]]))
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise CalibrationDataError(f"{origin}, line {header_line}: header lacks column(s) {missing}; "
                                   f"expected {list(COLUMNS)}")
    points = []
    for n, line in body[1:]:
        values = next(csv.reader(io.StringIO(line)))
        if len(values) != len(header):
            raise CalibrationDataError(f"{origin}, line {n}: {len(values)} fields, the header has {len(header)}")
        row = dict(zip(header, (v.strip() for v in values)))
        where = f"{origin}, line {n} ({row.get('platform')}/{row.get('device')}/{row.get('model')})"
        for field in _REQUIRED_TEXT:
            if not row[field]:
                what = "a source (title and URL)" if field.startswith("source") else f"a {field}"
                raise CalibrationDataError(f"{where}: empty {field!r}; every published point needs {what}")
        if not re.match(r"^https?://", row["source_url"]):
            raise CalibrationDataError(f"{where}: source_url must be an http(s) URL, got {row['source_url']!r}")
        if not re.match(r"^\d{4}-\d{2}(-\d{2})?$", row["source_date"]):
            raise CalibrationDataError(f"{where}: source_date must be YYYY-MM or YYYY-MM-DD, "
                                       f"got {row['source_date']!r}")
        if row["precision"] not in PRECISIONS:
            raise CalibrationDataError(f"{where}: precision must be one of {PRECISIONS}, got {row['precision']!r}")
        try:
            latency, batch = float(row["latency_ms"]), int(row["batch"])
        except ValueError as exc:
            raise CalibrationDataError(f"{where}: latency_ms must be a number and batch an integer "
                                       f"({exc})") from None
        if not latency > 0:
            raise CalibrationDataError(f"{where}: latency_ms must be > 0, got {row['latency_ms']!r}")
        if batch < 1:
            raise CalibrationDataError(f"{where}: batch must be >= 1, got {row['batch']!r}")
        if row["held_out"] not in ("0", "1"):
            raise CalibrationDataError(f"{where}: held_out must be 0 or 1, got {row['held_out']!r}")
        points.append(CalibrationPoint(
            row["platform"], row["device"], row["product"], row["model"], row["precision"], batch, latency,
            row["source_title"], row["source_url"], row["source_date"], row["openvino_version"],
            row["held_out"] == "1", row.get("note", "")))
    return points


def load_calibration(path: str | Path | None = None) -> list[CalibrationPoint]:
    """The calibration points of ``path`` (default: the lab's ``calibration.csv``)."""
    path = Path(path) if path is not None else CALIBRATION_CSV
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CalibrationDataError(f"cannot read calibration data {path}: {exc}") from exc
    return parse_calibration(text, origin=str(path.name))


__all__ = ["CALIBRATION_CSV", "COLUMNS", "CalibrationPoint", "DATA_DIR", "load_calibration", "parse_calibration"]
