"""Held-out evaluation rows and the amortise command line (issue 22)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from ov_autoplace.policy.pretrained import PRETRAINED_POLICY  # noqa: E402
from ov_autoplace_lab.training.amortise import main  # noqa: E402
from ov_autoplace_lab.training.heldout import evaluate_row, summary_table  # noqa: E402
from ov_autoplace_lab.training.targets import TargetSpec  # noqa: E402


def test_row_has_the_bench_keys_and_the_search_is_never_slower_than_the_plain_call(monkeypatch):
    from ov_autoplace.search import memory_fit

    priced = []  # the row legalizes as compile_model does with a CostModel: the bound's merges priced on it
    real = memory_fit.legal_pricer
    monkeypatch.setattr(memory_fit, "legal_pricer", lambda *a, **k: priced.append(a) or real(*a, **k))
    spec = TargetSpec("family:1", "npu_cpu")
    row = evaluate_row((spec, {"v1": str(PRETRAINED_POLICY)}, 0.46, None, None))
    assert priced
    cells = row["policies"]["v1"]
    assert {"hsdag_ms", "hsdag_refined_ms", "hsdag_s", "hsdag_refined_s"} <= set(cells)
    assert cells["hsdag_refined_ms"] <= cells["hsdag_ms"] * (1 + 1e-9)  # the local search only lowers latency
    assert row["optimum_ms"] <= min(cells["hsdag_refined_ms"], row["search_only_ms"]) * (1 + 1e-9)
    assert row["held_out_architecture"] is False and row["held_out_platform"] is False
    assert len(row["truth"]["optimum_ms"]) == 20 and len(row["truth"]["v1:hsdag_ms"]) == 20
    row["split_pays"] = True  # the table keeps split rows only; force this one in to check the layout
    lines = summary_table([row], ["v1"])
    assert len(lines) == 7 and "in training" in lines[1] and "local search alone" in lines[3]
    assert all("every split row" in line for line in lines[4:])  # the same row again, counted over all rows


def _row(model: str, platform: str, held_out_architecture: bool, ms: dict[str, float]) -> dict:
    return {"model": model, "platform": platform, "split_pays": True, "held_out_architecture": held_out_architecture,
            "held_out_platform": False, "optimum_ms": 1.0, "best_single_device_ms": 1.2, "search_only_ms": 1.0,
            "search_only_s": 1.0, "policies": {n: {"hsdag_ms": v, "hsdag_refined_ms": 1.0, "hsdag_s": 0.01,
                                                   "hsdag_refined_s": 1.0} for n, v in ms.items()}}


def test_a_policy_trained_on_all_data_is_never_reported_on_held_out_rows():
    rows = [_row("resnet50", "paper", False, {"v1": 1.2, "all": 1.0}),
            _row("densenet121", "paper", True, {"v1": 1.2, "all": 1.0})]
    lines = summary_table(rows, ["v1", "all"], frozenset({"all"}))
    held = [line for line in lines if line.startswith("held-out architecture")]
    assert held and not any(" all " in line for line in held) and any(" v1 alone" in line for line in held)
    every = [line for line in lines if line.startswith("every split row") and " all alone" in line]
    assert len(every) == 1 and every[0].split()[7:10] == ["2", "2", "2"]  # 2 rows, both within 1.05x and 1.10x


def test_evaluate_refuses_a_trained_on_all_name_that_is_not_a_policy(tmp_path):
    from ov_autoplace_lab.training.heldout import evaluate_policies

    with pytest.raises(ValueError, match="not a --policy NAME"):
        evaluate_policies(tmp_path, {"v1": str(PRETRAINED_POLICY)}, trained_on_all=["v2"])


def test_cli_unreachable_ray_address_exits_with_a_message(tmp_path, capsys):
    code = main(["targets", "--dir", str(tmp_path), "--address", "127.0.0.1:1", "--limit", "1", "--sigma", "0.4",
                 "--no-progress"])
    assert code == 1 and "cannot reach the Ray cluster" in capsys.readouterr().err


def test_cli_targets_refuses_unseen_with_all_data(tmp_path, capsys):
    code = main(["targets", "--dir", str(tmp_path), "--unseen", "--all-data", "--sigma", "0.4", "--no-progress"])
    assert code == 2 and "--unseen generates the zero-shot cases alone" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # refused before Ray or any file


def test_cli_train_refuses_to_exclude_a_target_it_does_not_have(tmp_path, capsys):
    code = main(["train", "--dir", str(tmp_path), "--output", str(tmp_path / "p.npz"), "--exclude", "zoo_x@nowhere",
                 "--no-progress"])
    assert code == 2 and "no such training target" in capsys.readouterr().err
    assert not (tmp_path / "p.npz").exists()


def test_cli_evaluate_refuses_a_trained_on_all_name_that_is_not_a_policy(tmp_path, capsys):
    code = main(["evaluate", "--dir", str(tmp_path), "--policy", f"v1={PRETRAINED_POLICY}", "--trained-on-all", "v2",
                 "--json", str(tmp_path / "e.json"), "--no-progress"])
    assert code == 2 and "not a --policy NAME" in capsys.readouterr().err
    assert not (tmp_path / "e.json").exists()


def test_cli_train_refuses_an_unknown_node_weighting(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--dir", str(tmp_path), "--output", str(tmp_path / "p.npz"), "--node-weighting", "cost"])
    assert exit_info.value.code == 2 and "invalid choice: 'cost'" in capsys.readouterr().err
    assert not (tmp_path / "p.npz").exists()


def test_cli_train_refuses_a_policy_without_gcn_layers(tmp_path, capsys):
    code = main(["train", "--dir", str(tmp_path), "--output", str(tmp_path / "p.npz"), "--gcn-layers", "0"])
    assert code == 2 and "gcn_layers must be >= 1" in capsys.readouterr().err
    assert not (tmp_path / "p.npz").exists()


def test_cli_train_refuses_no_graph_summary_without_boundary_inputs(tmp_path, capsys):
    code = main(["train", "--dir", str(tmp_path), "--output", str(tmp_path / "p.npz"), "--no-graph-summary"])
    assert code == 2 and "graph_summary=False only applies" in capsys.readouterr().err
    assert not (tmp_path / "p.npz").exists()


def test_row_with_decodings_adds_the_priced_decoding_beside_the_one_pass():
    spec = TargetSpec("family:1", "npu_cpu")
    row = evaluate_row((spec, {"v1": str(PRETRAINED_POLICY)}, 0.46, None, {"decodings": 8, "legalised": 8}))
    cells = row["policies"]["v1"]
    assert {"hsdag_decoded_ms", "hsdag_decoded_s"} <= set(cells) and len(row["truth"]["v1:hsdag_decoded_ms"]) == 20
    assert cells["hsdag_decoded_ms"] <= cells["hsdag_ms"] * (1 + 1e-9)  # the greedy placement is one of those priced
    row["split_pays"] = True
    lines = summary_table([row], ["v1"])
    assert any("v1 + decodings" in line for line in lines) and len(lines) == 9


def test_cli_evaluate_refuses_negative_decodings(tmp_path, capsys):
    code = main(["evaluate", "--dir", str(tmp_path), "--policy", f"v1={PRETRAINED_POLICY}", "--decodings", "-1",
                 "--json", str(tmp_path / "e.json"), "--no-progress"])
    assert code == 2 and "must be >= 0" in capsys.readouterr().err and not (tmp_path / "e.json").exists()


def test_cli_train_takes_one_seed_or_several_not_both(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--dir", str(tmp_path), "--output", str(tmp_path / "p.npz"), "--seed", "1", "--seeds", "2", "3"])
    assert exit_info.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
