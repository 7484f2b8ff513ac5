"""Held-out evaluation rows and the amortise command line (issue 22)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from ov_autoplace.policy.pretrained import PRETRAINED_POLICY  # noqa: E402
from ov_autoplace_lab.training.amortise import main  # noqa: E402
from ov_autoplace_lab.training.heldout import evaluate_row, summary_table  # noqa: E402
from ov_autoplace_lab.training.targets import TargetSpec  # noqa: E402


def test_row_has_the_bench_keys_and_the_search_is_never_slower_than_the_plain_call():
    spec = TargetSpec("family:1", "npu_cpu")
    row = evaluate_row((spec, {"v1": str(PRETRAINED_POLICY)}, 0.46, None))
    cells = row["policies"]["v1"]
    assert {"hsdag_ms", "hsdag_refined_ms", "hsdag_s", "hsdag_refined_s"} <= set(cells)
    assert cells["hsdag_refined_ms"] <= cells["hsdag_ms"] * (1 + 1e-9)  # the local search only lowers latency
    assert row["optimum_ms"] <= min(cells["hsdag_refined_ms"], row["search_only_ms"]) * (1 + 1e-9)
    assert row["held_out_architecture"] is False and row["held_out_platform"] is False
    assert len(row["truth"]["optimum_ms"]) == 20 and len(row["truth"]["v1:hsdag_ms"]) == 20
    row["split_pays"] = True  # the table keeps split rows only; force this one in to check the layout
    lines = summary_table([row], ["v1"])
    assert len(lines) == 4 and "in training" in lines[1] and "local search alone" in lines[3]


def test_cli_unreachable_ray_address_exits_with_a_message(tmp_path, capsys):
    code = main(["targets", "--dir", str(tmp_path), "--address", "127.0.0.1:1", "--limit", "1", "--sigma", "0.4",
                 "--no-progress"])
    assert code == 1 and "cannot reach the Ray cluster" in capsys.readouterr().err


def test_cli_train_refuses_to_exclude_a_target_it_does_not_have(tmp_path, capsys):
    code = main(["train", "--dir", str(tmp_path), "--output", str(tmp_path / "p.npz"), "--exclude", "zoo_x@nowhere",
                 "--no-progress"])
    assert code == 2 and "no such training target" in capsys.readouterr().err
    assert not (tmp_path / "p.npz").exists()
