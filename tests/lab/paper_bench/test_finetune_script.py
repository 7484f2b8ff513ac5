"""benchmarks/bench_finetune.py's tables: counts per seed against the best known placement, per-row ranges."""

from __future__ import annotations

from tests.lab.paper_bench import bench_script


def _script():
    return bench_script("bench_finetune")


ROWS = [  # best known 10 ms; two seeds
    {"platform": "paper", "model": "a", "best_known_ms": 10.0, "best_single_device_ms": 12.0,
     "cells": {"v1/offsets=0": {"ms": [10.1, 11.0], "seconds": [1.0, 2.0]},
               "v1/offsets=25": {"ms": [10.1, 10.4], "seconds": [1.0, 1.0]}}},
    {"platform": "npu_cpu", "model": "b", "best_known_ms": 10.0, "best_single_device_ms": 15.0,
     "cells": {"v1/offsets=0": {"ms": [13.0, 12.0], "seconds": [3.0, 3.0]},
               "v1/offsets=25": {"ms": [9.9, 10.3], "seconds": [1.0, 1.0]}}},
]


def test_table_counts_rows_within_2_and_5_percent_per_seed():
    lines = _script().table(ROWS, ["v1/offsets=0", "v1/offsets=25"], seeds=2)
    reinforce, offsets = lines[1], lines[2]
    assert reinforce.split()[1:3] == ["1/1", "of"] and "0/0  of 2" in reinforce  # seed 0: 1.01x; seed 1: 1.1x, 1.2x
    assert offsets.split()[1] == "2/2" and "0/2  of 2" in offsets  # seed 1: 1.04x and 1.03x, within 5 % not 2 %
    assert "1.300x" in reinforce  # the worst ratio of any row and seed


def test_row_lines_give_the_median_and_range_over_seeds():
    lines = _script().row_lines(ROWS, ["v1/offsets=25"])
    assert lines[2] == "| paper | a | 1.200x | 1.025x (1.010-1.040) |"
    assert lines[3] == "| npu_cpu | b | 1.500x | 1.010x (0.990-1.030) |"
