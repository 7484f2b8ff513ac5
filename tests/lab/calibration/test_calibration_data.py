"""The shipped calibration data: every row sourced, enough points per calibrated platform, bad rows rejected."""

from __future__ import annotations

import pytest

from ov_autoplace import CalibrationDataError
from ov_autoplace_lab.calibration.calibration_data import COLUMNS, load_calibration, parse_calibration

HEADER = ",".join(COLUMNS)
GOOD = ("paper,CPU,i9,resnet50,int8,1,3.0,OpenVINO benchmarks,https://example.org/data.csv,2022-12,2022.3,0,")


def test_shipped_rows_are_sourced_and_cover_each_calibrated_platform():
    points = load_calibration()
    for platform in ("paper", "laptop"):
        mine = [p for p in points if p.platform == platform]
        assert len(mine) >= 8, f"{platform}: {len(mine)} published points"
        assert any(p.held_out for p in mine) and any(not p.held_out for p in mine)
    for p in points:
        assert p.source_url.startswith("https://") and p.source_title and p.openvino_version
        assert p.latency_ms > 0 and p.batch == 1


def test_a_good_row_parses():
    (point,) = parse_calibration(f"# comment\n{HEADER}\n{GOOD}\n")
    assert (point.key, point.model, point.latency_ms, point.held_out) == ("paper/CPU", "resnet50", 3.0, False)


@pytest.mark.parametrize("field, value, message", [
    ("source_url", "", "empty 'source_url'"),
    ("source_title", "", "empty 'source_title'"),
    ("latency_ms", "-1.5", "latency_ms must be > 0"),
    ("precision", "fp64", "precision must be one of"),
    ("held_out", "yes", "held_out must be 0 or 1"),
    ("source_date", "Dec 2022", "source_date must be YYYY-MM"),
    ("source_url", "ftp://x", "source_url must be an http(s) URL"),
])
def test_a_bad_row_names_its_line_and_field(field, value, message):
    values = GOOD.split(",")
    values[COLUMNS.index(field)] = value
    with pytest.raises(CalibrationDataError) as err:
        parse_calibration(f"{HEADER}\n{GOOD}\n" + ",".join(values) + "\n", origin="my.csv")
    assert message in str(err.value)
    assert "my.csv, line 3" in str(err.value) and "paper/CPU/resnet50" in str(err.value)


def test_a_missing_column_is_named():
    header = HEADER.replace(",source_url", "")
    with pytest.raises(CalibrationDataError, match=r"lacks column\(s\) \['source_url'\]"):
        parse_calibration(f"{header}\n")
