import json

import openvino as ov
import pytest

from ov_autoplace.cli import build_parser, main
from tests import synthetic_graphs as sg


@pytest.fixture()
def ir_path(tmp_path):
    path = tmp_path / "residual.xml"
    ov.save_model(sg.residual(), path)
    return path


def test_place_prints_summary_and_writes_json(ir_path, tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["place", "-m", str(ir_path), "--testbed", "-niter", "3", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Placement on HETERO:CPU,CPUF" in text and "CPU-only latency" in text and "measured latency" in text
    data = json.loads(out.read_text())
    assert set(data["devices"]) == {"CPU", "CPUF"} and data["assignment"]


def test_place_with_pins_no_measure(ir_path, capsys):
    assert main(["place", "-m", str(ir_path), "--testbed", "--no-measure", "--pin", "type:Convolution=CPUF"]) == 0
    assert "measured latency" not in capsys.readouterr().out


def test_errors_are_reported_not_raised(ir_path, capsys):
    assert main(["place", "-m", str(ir_path), "-d", "HETERO:GPU,CPU", "--no-measure"]) == 2
    assert "not available" in capsys.readouterr().err
    assert main(["place", "-m", "/does/not/exist.xml", "--testbed", "--no-measure"]) == 2
    assert main(["place", "-m", str(ir_path), "--testbed", "--pin", "nodevice"]) == 2
    assert "--pin expects NODE=DEVICE" in capsys.readouterr().err


def test_cache_list_and_clear(tmp_path, capsys):
    assert main(["cache", "list", "--cache-dir", str(tmp_path)]) == 0
    assert "0 placement(s)" in capsys.readouterr().out
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    assert "removed 0" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["place", "show", "profile", "cache"])
def test_every_subcommand_has_help(command, capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args([command, "--help"])
    assert info.value.code == 0
    assert "usage: ov-autoplace " + command in capsys.readouterr().out


def test_show_writes_svg_html_png(ir_path, tmp_path, capsys):
    prefix = tmp_path / "out" / "residual"
    assert main(["show", "-m", str(ir_path), "--testbed", "-niter", "3", "-o", str(prefix)]) == 0
    svg = prefix.with_suffix(".svg").read_text()
    assert svg.startswith("<svg") and "CPUF" in svg and "<rect" in svg
    page = prefix.with_suffix(".html").read_text()
    assert "<svg" in page and "measured latency" in page and "compute ops in" in page
    assert prefix.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"


def test_show_a_saved_placement(ir_path, tmp_path):
    saved = tmp_path / "p.json"
    assert main(["place", "-m", str(ir_path), "--testbed", "--no-measure", "-o", str(saved)]) == 0
    prefix = tmp_path / "again"
    assert main(["show", "-m", str(ir_path), "--testbed", "--placement", str(saved), "--no-measure",
                 "--no-png", "-o", str(prefix)]) == 0
    assert prefix.with_suffix(".svg").exists() and not prefix.with_suffix(".png").exists()


def test_profile_prints_per_op_types_and_writes_json(ir_path, tmp_path, capsys):
    out = tmp_path / "profile.json"
    assert main(["profile", "-m", str(ir_path), "--testbed", "-niter", "2", "--profile-dir", str(tmp_path / "store"),
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    # the quick profile (default): per-op times measured, links from the prior, so the model says "simulated"
    assert "simulated (quick profile on CPU,CPUF (prior (simulated) links)" in text
    assert "Convolution" in text and "total" in text
    data = json.loads(out.read_text())
    assert data["cost_model"]["devices"] == ["CPU", "CPUF"]
    assert all(r["isolated_nodes"] == 0 for r in data["reports"]), "no fused op compiled alone"


@pytest.mark.slow
def test_profile_full_measures_links(ir_path, tmp_path, capsys):
    assert main(["profile", "-m", str(ir_path), "--testbed", "--full", "-niter", "2",
                 "--profile-dir", str(tmp_path / "store")]) == 0
    assert "measured (profiled on CPU,CPUF" in capsys.readouterr().out


def test_train_subcommand_hands_over_to_the_trainer(capsys):
    with pytest.raises(SystemExit) as info:
        main(["train", "--help"])
    assert info.value.code == 0
    assert "ov_autoplace.train" in capsys.readouterr().out



def test_missing_extra_is_named_in_one_line(ir_path, tmp_path, monkeypatch, capsys):
    """Without matplotlib (the dev extra), `show` still writes SVG and HTML and names the extra for the PNG in one line."""
    import sys as _sys

    monkeypatch.setitem(_sys.modules, "matplotlib", None)  # what an install without the dev extra looks like
    assert main(["show", "-m", str(ir_path), "--testbed", "--no-measure", "-o", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "matplotlib" in line]
    assert len(lines) == 1 and "ov_autoplace[dev]" in lines[0]
    assert (tmp_path / "p.svg").is_file() and (tmp_path / "p.html").is_file() and not (tmp_path / "p.png").exists()
