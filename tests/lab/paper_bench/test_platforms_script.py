"""benchmarks/bench_platforms.py's Markdown: learned-baseline columns only when the rows have them; --render."""

from __future__ import annotations

import json

import pytest

from tests.lab.paper_bench import bench_script


@pytest.fixture(scope="module")
def script():
    return bench_script("bench_platforms")


def _row(model, split, **extra):
    row = {"platform": "paper", "model": model, "best_single_device_ms": 2.0, "best_single_device": "GPU",
           "optimum_ms": 1.6 if split else 2.0, "optimum_devices": ["CPU", "GPU"] if split else ["GPU"],
           "optimum_exact": True, "optimum_source": "milp_ms", "milp_ms": 1.6 if split else 2.0,
           "split_pays": split, "hsdag_ms": 2.0, "hsdag_refined_ms": 1.6, "hsdag_finetuned_ms": 1.9,
           "hsdag_finetuned_refined_ms": 1.6, "heft_ms": 1.7, "openvino_hetero_auto_ms": 3.0,
           "openvino_pipeline_parallel_ms": 3.0}
    row.update(extra)
    return row


def test_baseline_columns_appear_only_with_baseline_rows(script):
    plain = "\n".join(script.headroom_tables([_row("a", True), _row("b", False)]))
    assert "Placeto" not in plain and "RNN placer" not in plain
    rows = [_row("a", True, placeto_ms=1.63, rnn_placer_ms=1.9), _row("b", False, placeto_ms=2.0, rnn_placer_ms=2.0)]
    table = "\n".join(script.headroom_tables(rows))
    assert "| Placeto | RNN placer |" in table and "1.630 (1.019x)" in table
    targets = script.check_targets(rows)
    assert "Placeto (1 rows, same budget): <= 1.02x in 1/1, not behind HEFT in 1/1" in targets
    assert "RNN placer (1 rows, same budget): <= 1.02x in 0/1, not behind HEFT in 0/1" in targets


def test_the_targets_count_the_one_pass_within_1_10x_and_against_heft(script):
    # optimum 1.6: 1.70 is within 1.10x and not behind HEFT (1.70), 1.80 is neither; the fine-tuned column apart
    rows = [_row("a", True, hsdag_ms=1.70, heft_ms=1.70), _row("b", True, hsdag_ms=1.80), _row("c", False)]
    summary = [line for line in script.check_targets(rows) if line.startswith("policy alone:")]
    assert summary == ["policy alone: one pass <= 1.05x in 0/2, <= 1.10x in 1/2, not behind HEFT in 1/2; "
                       "fine-tuned <= 1.02x in 0/2, fine-tuned not behind HEFT in 0/2"]


def test_the_zero_shot_rows_are_titled_as_such(script, tmp_path):
    from ov_autoplace_lab import models as zoo

    data = {"command": "python benchmarks/bench_platforms.py --models unseen", "date": "2026-11-28",
            "seconds": 1.0, "fidelity": {}, "headroom": [_row(zoo.UNSEEN[0], True)]}
    out = tmp_path / "unseen.md"
    script.write_markdown(str(out), data)
    assert out.read_text().startswith("# Placement headroom on the simulated platforms: architectures no policy "
                                      "was trained on (zero-shot)")
    script.write_markdown(str(out), {**data, "headroom": [_row("resnet50", True)]})
    assert "zero-shot" not in out.read_text().splitlines()[0]


def test_render_writes_the_markdown_from_the_json(script, tmp_path):
    data = {"command": "python benchmarks/bench_platforms.py --json x.json", "date": "2026-11-23", "seconds": 12.0,
            "fidelity": {"fitted": {"points": 14, "median_abs_error": 0.004, "max_abs_error": 0.095}},
            "headroom": [_row("a", True)]}
    source = tmp_path / "platforms.json"
    source.write_text(json.dumps(data))
    out = tmp_path / "headroom.md"
    assert script.main(["--render", str(source), "--markdown", str(out)]) == 0
    text = out.read_text()
    assert "(2026-11-23, 12 s)" in text and "fitted: 14 points, median |error| 0.4 %" in text
    assert "policy + local search: one pass <= 1.05x in 1/1" in text
    with pytest.raises(SystemExit):
        script.main(["--render", str(source)])  # no --markdown: a usage error, not a traceback


def test_an_optimum_with_an_objective_gap_is_not_called_proven(script):
    row = _row("a", True, optimum_exact=False,
               optimum_proof="MILP objective 3.570256 ms differs from the simulator's 3.721341 ms by 4.06 %")
    assert script._optimum_cell(row) == "1.600 (not proven: objective != simulator)"
    stopped = _row("a", True, optimum_exact=False, optimum_proof="the MILP stopped before proving optimality")
    assert script._optimum_cell(stopped) == "1.600 (not proven: MILP at its time limit)"


def test_the_markdown_gains_the_truth_summary(script, tmp_path):
    draws = {"draws": 2, "optimum_ms": [1.5, 1.8], "optimum_proven": [True, False], "plain_call_ms": [3.0, 2.0],
             "best_single_device_ms": [1.9, 1.8], "milp_ms": [1.5, 1.9], "hsdag_ms": [1.9, 1.8],
             "hsdag_refined_ms": [1.5, 1.9]}
    loo = {"optimum_ms": 1.0, "optimum_proven": True, "plain_call_ms": 2.0, "best_single_device_ms": 1.2,
           "milp_ms": 1.3, "hsdag_ms": 1.2, "hsdag_refined_ms": 1.3}
    data = {"command": "c", "date": "2026-11-25", "seconds": 1.0, "fidelity": {},
            "headroom": [_row("a", True, truth=draws, truth_leave_platform_out=loo)],
            "truth_model": {"draws": 2, "sigma": 0.46, "seed": 0, "milp_seconds": 2.0,
                            "held_out_log_errors": [0.1, -0.2]}}
    out = tmp_path / "h.md"
    script.write_markdown(str(out), data)
    text = out.read_text()
    assert "sigma = 0.460" in text and "proven (0.5 % rule) in 1 of 2 draws and 1 of 1" in text
    # HSDAG + local search: ratios 1.0 and 1.9/1.8; slower than the best single device in 1 of 2 draws
    assert "| HSDAG one pass + local search | 2 | 1.028x |" in text and "| 0.0 % | 50.0 % |" in text
    assert "(b) leave-platform-out, one truth per row: split rows" in text


def test_the_summary_counts_the_one_pass_its_risk_and_the_proven_gap(script):
    truth = {"hsdag_ms": [2.1, 1.5, 1.9, 1.7], "best_single_device_ms": [2.0, 2.0, 2.0, 1.6],
             "plain_call_ms": [3.0, 1.4, 3.0, 3.0], "optimum_ms": [1.5] * 4}
    rows = [_row("a", True, hsdag_ms=1.65, heft_ms=1.62, truth=truth, milp_dual_bound_ms=1.58,
                 milp_model_agrees=True, optimum_exact=False,
                 milp_warm_start={"source": "hsdag_refined_ms", "ms": 1.6, "improved": False}),
            _row("b", True, hsdag_ms=1.60, heft_ms=1.70, optimum_exact=False, optimum_source="hsdag_refined_ms"),
            _row("c", False)]
    assert script.row_risk(rows[0]) == (2, 1, 4)  # draws 0 and 3 slower than the best single device, 1 than plain
    lines = script.summary_lines(rows)
    assert lines[0] == "split rows: 2 of 3"
    assert lines[1].startswith("policy alone, one pass: within 1.05x of the best known in 2 of 2 split rows; behind "
                               "HEFT by > 1 % in 1 (paper/a)")
    assert "slower than the best single device in 2 of 4 draws (50.0 %), slower than the plain call in 1 (25.0 %)" \
        in lines[2]
    # a: local search's placement (the warm MILP did not improve it), gap (1.6 - 1.58) / 1.6; b: no bound
    assert lines[4].startswith("best known proven within 2 % (MILP dual bound) on 1 of 2 split rows; unproven (no "
                               "bound, or the MILP's model disagrees with the simulator) on 1; found by: local search 2")
    assert "| local search, 1.25 % |" in "\n".join(script.headroom_tables(rows))


def test_runs_on_disjoint_platforms_merge_into_one_table(script, tmp_path):
    base = {"command": "c1", "date": "2026-12-02", "seconds": 10.0, "fidelity": {}, "truth_model": None}
    one = {**base, "headroom": [_row("a", True, platform="laptop")]}
    two = {**base, "command": "c2", "seconds": 30.0, "headroom": [_row("a", True, platform="paper")]}
    merged = script.merge_runs([one, two])
    assert [r["platform"] for r in merged["headroom"]] == ["paper", "laptop"]  # the suite's order
    assert merged["seconds"] == 40.0 and merged["wall_seconds"] == 30.0 and merged["command"] == "c1 ; c2"
    with pytest.raises(ValueError, match="share rows"):
        script.merge_runs([one, one])
    with pytest.raises(ValueError, match="not one evaluation"):
        script.merge_runs([one, {**two, "fidelity": {"fitted": {}}}])
    out = tmp_path / "m.md"
    script.write_markdown(str(out), merged)
    assert "2 processes side by side on disjoint platforms, joined by --merge: 30 s wall, 40 s summed" in \
        out.read_text()


def test_no_finetune_runs_and_shows_no_fine_tuned_column_and_the_decoders_are_a_named_set(script):
    import argparse

    args = argparse.Namespace(no_finetune=True, baselines=False)
    assert not any("fine-tune" in m for m in script.row_methods(args))
    assert "HSDAG (pretrained + fine-tune)" in script.row_methods(argparse.Namespace(no_finetune=False,
                                                                                     baselines=False))
    rows = [_row("a", True, hsdag_finetuned_ms=None, hsdag_finetuned_refined_ms=None)]
    table = "\n".join(script.headroom_tables(rows))
    assert "HSDAG fine-tuned" not in table and "HSDAG one pass + local search" in table
    assert any("not run: --no-finetune" in line for line in script.check_targets(rows))
    assert set(script.DECODER_SET) <= set(script.DECODERS)


def test_memory_caps_are_read_per_platform_and_device_and_a_wrong_one_names_what_would_work(script):
    suite = script.load_suite()
    caps = script.parse_memory_caps(["small_memory:CPU=0.2", "small_memory:GPU=0.1", "laptop:CPU=1"], suite)
    assert caps == {"small_memory": {"CPU": 0.2 * 2**30, "GPU": 0.1 * 2**30}, "laptop": {"CPU": 2**30}}
    with pytest.raises(SystemExit, match="small_memory: .*CPU"):
        script.parse_memory_caps(["small_memory:NPU=1"], suite)  # small_memory has no NPU
    with pytest.raises(SystemExit, match="PLATFORM:DEVICE=GIB"):
        script.parse_memory_caps(["nowhere:CPU=1"], suite)
    for size in ("0", "-1", "lots"):
        with pytest.raises(SystemExit, match="GiB > 0"):
            script.parse_memory_caps([f"laptop:CPU={size}"], suite)
