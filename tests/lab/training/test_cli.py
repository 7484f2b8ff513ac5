"""python -m ov_autoplace_lab.commands.train_command: help, a tiny run end to end, errors."""

from __future__ import annotations

import json

import openvino as ov
import pytest

from ov_autoplace.policy import NumpyHSDAGPolicy
from ov_autoplace_lab.commands.train_command import main
from tests import synthetic_graphs


def test_help_names_the_modes(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--paper" in out and "ppo" in out and "--measured" in out and "--resume" in out


def test_tiny_run_writes_policy_log_and_checkpoint(tmp_path, capsys):
    model = tmp_path / "residual.xml"
    ov.save_model(synthetic_graphs.residual(), str(model))
    out, log, ckpt = tmp_path / "p.npz", tmp_path / "log.jsonl", tmp_path / "run.ckpt"
    code = main(["--model", str(model), "--platform", "laptop", "--steps", "2", "--samples", "4", "--hidden", "16",
                 "--no-progress", "-o", str(out), "--log", str(log), "--checkpoint", str(ckpt)])
    assert code == 0 and out.is_file() and ckpt.is_file()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records[0]["event"] == "start" and len(records) == 3
    assert NumpyHSDAGPolicy.load(out).config.hidden == 16
    assert "distinct placements" in capsys.readouterr().out
    code = main(["--model", str(model), "--platform", "laptop", "--steps", "3", "--no-progress", "--resume",
                 "--checkpoint", str(ckpt), "--log", str(log)])
    assert code == 0 and len(log.read_text().splitlines()) == 4


def test_errors_are_explained(capsys):
    assert main([]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["--model", "family:1", "--resume"]) == 2
    with pytest.raises(SystemExit, match="not a file"):
        main(["--model", "/no/such/model.xml", "--no-progress"])
