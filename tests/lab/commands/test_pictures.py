"""`show`, `compare` and `strategies` on a real (small) model on the testbed."""

from __future__ import annotations

import json
import re

import openvino as ov
import pytest

from ov_autoplace.cli.main import main
from tests import synthetic_graphs as sg


@pytest.fixture()
def ir_path(tmp_path):
    path = tmp_path / "residual.xml"
    ov.save_model(sg.residual(blocks=3), path)
    return path


def test_show_measured_writes_all_three_and_agrees_with_place(ir_path, tmp_path, capsys):
    saved = tmp_path / "p.json"
    assert main(["place", "-m", str(ir_path), "--testbed", "--strategy", "random", "-niter", "3",
                 "-o", str(saved)]) == 0
    place_out = capsys.readouterr().out
    assert "timeline [simulated" not in place_out  # the simulated timeline is the lab's (show), not the runtime's
    prefix = tmp_path / "out" / "residual"
    assert main(["show", "-m", str(ir_path), "--testbed", "--placement", str(saved), "-niter", "3",
                 "-o", str(prefix)]) == 0
    out = capsys.readouterr().out
    simulated_line = next(line.strip() for line in out.splitlines() if "timeline [simulated" in line)
    facts = re.search(r"(\d+) submodel\(s\).*?(\d+) tensor group\(s\), ([\d.]+) MB", simulated_line)
    assert facts, simulated_line  # submodels, tensor groups and megabytes moved, from the simulator
    assert "timeline [measured: PERF_COUNT per submodel" in out
    svg = prefix.with_suffix(".svg").read_text()
    assert "Timeline of one inference (MEASURED)" in svg and "Timeline of one inference (SIMULATED)" in svg
    assert "same f32 device" in svg  # the testbed note
    page = prefix.with_suffix(".html").read_text()
    assert "ovap-data" in page and "measured latency" in page
    # the submodels drawn are the ones HETERO really compiled (its PERF_COUNT names them subgraph0..K-1)
    hetero = int(re.search(r"\((\d+) HETERO subgraph\(s\)\)", out).group(1))
    drawn = re.search(r"Timeline of one inference \(MEASURED\): (\d+) submodel\(s\)", svg)
    # failed twice in ~12 CI runs, both with place's profile marked loaded; the numbers say which side is off
    assert drawn and int(drawn.group(1)) == hetero, (
        f"drawn {drawn and drawn.group(1)} submodel(s), HETERO compiled {hetero}; placement "
        f"{saved.read_text()[:1500]}; place said: {place_out[-1500:]}; show said: {out[-1500:]}")
    assert json.loads(saved.read_text())["num_submodels"] <= hetero


def test_show_a_placement_of_another_model_fails_clearly(ir_path, tmp_path, capsys):
    other = tmp_path / "other.xml"
    ov.save_model(sg.attention_like(), other)
    saved = tmp_path / "other.json"
    assert main(["place", "-m", str(other), "--testbed", "--no-measure", "--strategy", "priority",
                 "-o", str(saved)]) == 0
    capsys.readouterr()
    assert main(["show", "-m", str(ir_path), "--testbed", "--placement", str(saved), "--no-png",
                 "-o", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert f"placement {saved} was made for another model" in err and "nodes are not in it" in err
    assert not (tmp_path / "x.svg").exists()


def test_compare_writes_one_table_and_one_picture(ir_path, tmp_path, capsys):
    prefix = tmp_path / "cmp"
    assert main(["compare", "-m", str(ir_path), "--testbed", "--strategies", "priority,random,heft",
                 "-niter", "4", "--rounds", "2", "-o", str(prefix)]) == 0
    out = capsys.readouterr().out
    table = prefix.with_suffix(".md").read_text()
    for row in ("| priority |", "| random |", "| heft |", "| CPU only |", "| CPUF only |"):
        assert row in table and row in out
    assert "measured ms median [IQR]" in table and "same f32 device" in table
    svg = prefix.with_suffix(".svg").read_text()
    assert svg.count('data-key="row') >= 5 and ("(fastest)" in svg or "(lowest median; within others" in svg)


def test_compare_rejects_an_unknown_strategy(ir_path, capsys):
    with pytest.raises(SystemExit):
        main(["compare", "-m", str(ir_path), "--testbed", "--strategies", "priority,nonsense"])
    assert "unknown strategy name(s) ['nonsense']" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["show", "compare", "strategies"])
def test_picture_commands_have_help(command, capsys):
    from ov_autoplace.cli.main import build_parser

    with pytest.raises(SystemExit) as info:
        build_parser().parse_args([command, "--help"])
    assert info.value.code == 0
    assert "usage: ov-autoplace " + command in capsys.readouterr().out


def test_compare_takes_a_bare_auto(ir_path, tmp_path, capsys):
    """`-d AUTO` compares over AUTO's candidates (parse_device_string("AUTO").devices is empty)."""
    prefix = tmp_path / "cmp"
    assert main(["compare", "-m", str(ir_path), "--testbed", "-d", "AUTO", "--strategies", "heavy_ops,random",
                 "--no-measure", "--no-png", "-o", str(prefix)]) == 0
    out = capsys.readouterr().out
    assert "heavy_ops" in out and "random" in out and prefix.with_suffix(".md").is_file()
