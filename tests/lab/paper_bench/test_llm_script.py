"""benchmarks/bench_llm.py's arithmetic and page: the bootstrap interval it reads the 1.02x target with, and the
sections a rerun replaces (the decoders' size and the devices' order are part of a section's key)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lab.paper_bench import bench_script


@pytest.fixture(scope="module")
def script():
    return bench_script("bench_llm")


def _rounds(ratios, per_token=4.0):
    """[rounds, 3] samples (TTFT, per token, generation) whose per-token ratios to ``per_token`` are ``ratios``."""
    r = np.asarray(ratios, np.float64)
    return np.stack([np.full_like(r, 10.0), per_token * r, np.full_like(r, 100.0)], axis=1)


def test_the_interval_holds_the_median_ratio_and_narrows_with_rounds(script):
    rng = np.random.default_rng(3)
    reference = _rounds(np.ones(41))
    noisy = _rounds(np.exp(rng.normal(0.0, 0.15, 41)))
    median = script._ratio(noisy, reference, 1)[0]
    lo, hi = script._median_interval(noisy, reference, 1)
    assert lo <= median <= hi and hi - lo > 0.02
    few_lo, few_hi = script._median_interval(noisy[:9], reference[:9], 1)
    assert few_hi - few_lo > hi - lo  # 9 rounds tell less than 41
    assert script._median_interval(_rounds([1.1] * 9), reference[:9], 1) == pytest.approx((1.1, 1.1))


def test_a_rerun_replaces_its_own_sections_and_keeps_the_others(script, tmp_path):
    page = tmp_path / "llm.md"
    script.write_sections(page, {"llama/quiet": "<!-- section: llama/quiet -->\nold llama"}, "cmd one")
    script.write_sections(page, {"llama_small/quiet/CPUF,CPU": "<!-- section: llama_small/quiet/CPUF,CPU -->\nrev"},
                          "cmd two")
    script.write_sections(page, {"llama/quiet": "<!-- section: llama/quiet -->\nnew llama"}, "cmd three")
    text = page.read_text()
    assert "new llama" in text and "old llama" not in text and "\nrev" in text
    assert "Last command: `cmd three`" in text and text.count("<!-- section: ") == 2


def test_the_reference_is_the_median_of_a_devices_compiles_and_the_spread_line_shows_them_apart(script):
    """One compile is one draw (two identical compiles of CPU ran 4.5 % apart): the best single device is read as
    the per-round median of its compiles, so one compile that drew slow or fast does not move the reference, and
    the line beside the table names each later compile against the first with its interval."""
    rng = np.random.default_rng(5)
    noise = np.exp(rng.normal(0.0, 0.01, 21))
    times = {"CPU alone": {128: _rounds(noise)}, "CPU alone, compile 2": {128: _rounds(1.05 * noise)},
             "CPU alone, compile 3": {128: _rounds(1.002 * noise)}, "CPUF alone": {128: _rounds(2.0 * noise)}}
    compiles = {"CPU": ["CPU alone", "CPU alone, compile 2", "CPU alone, compile 3"], "CPUF": ["CPUF alone"]}
    reference = script.reference_times(times, compiles["CPU"], 128)
    np.testing.assert_allclose(reference[:, 1], 4.0 * 1.002 * noise)  # the middle compile, round by round
    line = script.spread_line(times, compiles, 128)
    assert "CPU compile 2 1.050 (1.050-1.050)" in line and "CPU compile 3 1.002" in line and "CPUF" not in line
    assert "one compile each" in script.spread_line(times, {"CPUF": ["CPUF alone"]}, 128)


def test_every_contender_is_timed_through_each_of_its_requests_in_turn(script):
    """A real stateful decoder (OpenVINO opsets, shaped like optimum-intel's export) compiled on the CPU plugin: with
    two requests each, every round times one of them, so each contender's rows are whole generations and the
    rounds alternate between its requests."""
    import openvino as ov

    from ov_autoplace_lab.models.decoder_models import TINY, build_decoder

    model = build_decoder(TINY)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    vocabulary = int(model.output("logits").get_partial_shape()[-1].get_length())
    made = {"one": (compiled, "", 0.0), "two": (compiled, "", 0.0)}
    times = script.time_contenders(made, (4, 8), 3, 4, vocabulary, requests=2)
    assert set(times) == {"one", "two"}
    for by in times.values():
        assert set(by) == {4, 8}
        assert all(v.shape == (4, 3) and np.all(v > 0) for v in by.values())
        assert np.all(by[8][:, 2] >= by[8][:, 0])  # a generation includes its first token


def test_the_target_line_counts_path_rows_beside_the_devices_own_later_compiles(script):
    """A path row within 1.02x, one resolved slower, and the device's own later compile read the same way: the line
    shows how often one more draw of the device itself misses the target."""
    rng = np.random.default_rng(7)
    noise = np.exp(rng.normal(0.0, 0.005, 21))
    times = {"default path": {128: _rounds(1.0 * noise)}, "heft": {128: _rounds(1.05 * noise)},
             "CPU alone, compile 2": {128: _rounds(1.04 * noise)}}
    line = script.target_line(times, ["default path", "heft"], ["CPU alone, compile 2"], _rounds(np.ones(21)), 128)
    assert "path rows 1 of 2 (resolved slower: heft 1.0" in line
    assert "own later compiles 0 of 1 (resolved slower: CPU alone, compile 2 1.0" in line


def test_a_path_run_more_than_once_is_also_read_as_the_median_of_its_runs(script):
    """Three runs of one path, one of which drew a slow compile (1.06x): the path rows count that run as resolved
    slower, and the path read as the per-round median of its runs is within the target, as the reference is the
    median of the device's compiles. A path whose runs are all slow stays resolved slower when pooled."""
    rng = np.random.default_rng(11)
    noise = np.exp(rng.normal(0.0, 0.004, 21))
    times = {"heft": {128: _rounds(1.00 * noise)}, "heft, run 2": {128: _rounds(1.06 * noise)},
             "heft, run 3": {128: _rounds(1.01 * noise)}, "profile=now": {128: _rounds(1.05 * noise)},
             "profile=now, run 2": {128: _rounds(1.04 * noise)}, "profile=now, run 3": {128: _rounds(1.06 * noise)}}
    runs = {"heft": ["heft", "heft, run 2", "heft, run 3"],
            "profile=now": ["profile=now", "profile=now, run 2", "profile=now, run 3"]}
    line = script.target_line(times, list(times), [], _rounds(np.ones(21)), 128, runs)
    rows, pooled = line.split(" Each path as the per-round median of its 3 runs: ")
    assert "path rows 2 of 6 (resolved slower: heft, run 2 1.0" in rows
    assert pooled.startswith("1 of 2 (resolved slower: profile=now 1.05")
    assert "; heft 1.01" in pooled and "profile=now 1.05" in pooled.split("; ")[-1]
    assert "Each path" not in script.target_line(times, ["heft"], [], _rounds(np.ones(21)), 128, {"heft": ["heft"]})
