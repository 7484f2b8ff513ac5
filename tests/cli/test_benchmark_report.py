"""``place``'s report and closing statistics against benchmark_app's own, run on the same tiny model."""

import json
import logging
import sys

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from ov_autoplace.cli.main import main


def _tiny_model() -> ov.Model:
    x = ops.parameter([1, 3, 16, 16], np.float32, name="image")
    w = ops.constant(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32))
    y = ops.relu(ops.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1]))
    return ov.Model([ops.result(ops.add(y, y))], [x], "tiny")


@pytest.fixture()
def tiny_ir(tmp_path):
    path = tmp_path / "tiny.xml"
    ov.save_model(_tiny_model(), path)
    return path


def _benchmark_app(argv, monkeypatch) -> None:
    """benchmark_app's own main, in process, with ``argv`` (its logging put back afterwards)."""
    from ov_autoplace.cli.benchmark_flags import benchmark_module

    bench = benchmark_module("openvino.tools.benchmark.main")
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    monkeypatch.setattr(sys, "argv", ["benchmark_app", *argv])
    try:
        bench.main()
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_json_report_field_names_are_a_superset_of_benchmark_apps(tiny_ir, tmp_path, monkeypatch, capsys):
    """The same flags to benchmark_app and to place: every field benchmark_app's JSON has, place's has too."""
    flags = ["-m", str(tiny_ir), "-d", "CPU", "-niter", "4", "-hint", "latency", "-json_stats", "True",
             "-report_type", "no_counters"]
    (tmp_path / "bench").mkdir()  # benchmark_app writes into an existing folder only
    _benchmark_app([*flags, "-report_folder", str(tmp_path / "bench")], monkeypatch)
    theirs = json.loads((tmp_path / "bench" / "benchmark_report.json").read_text())
    assert main(["place", *flags, "-report_folder", str(tmp_path / "ours")]) == 0
    ours = json.loads((tmp_path / "ours" / "benchmark_report.json").read_text())
    assert set(ours) >= set(theirs) == {"cmd_options", "configuration_setup", "execution_results"}
    for section, fields in theirs.items():
        assert set(ours[section]) >= set(fields), (section, set(fields) - set(ours[section]))
    results = ours["execution_results"]
    assert int(results["total number of iterations"]) == 4 and float(results["throughput"]) > 0
    assert float(results["min latency"]) <= float(results["latency (ms)"]) <= float(results["max latency"])
    assert ours["configuration_setup"]["target device"] == "CPU" and results["device"] == "CPU"  # compiled CPU
    assert {"strategy", "submodels", "nodes per device", "placing time (s)"} <= set(results)  # the placement's
    out = capsys.readouterr().out
    assert "Placement on CPU (" in out and "Count:            4 iterations" in out and "Throughput:" in out


def test_percentile_and_niter_zero_as_benchmark_app(tiny_ir, tmp_path, capsys):
    folder = tmp_path / "r"
    assert main(["place", "-m", str(tiny_ir), "-d", "CPU", "-niter", "5", "-latency_percentile", "90",
                 "-json_stats", "-report_type", "no_counters", "-report_folder", str(folder)]) == 0
    results = json.loads((folder / "benchmark_report.json").read_text())["execution_results"]
    assert "latency (90 percentile) (ms)" in results and "latency (ms)" not in results
    assert "90 percentile:" in capsys.readouterr().out
    # -niter 0: placed and compiled, nothing run (benchmark_app: "compile the model and exit")
    assert main(["place", "-m", str(tiny_ir), "-d", "CPU", "-niter", "0"]) == 0
    out = capsys.readouterr().out
    assert "Compile model took" in out and "measured latency" not in out and "Count:            0" in out


@pytest.mark.slow
def test_place_on_the_testbed_ends_with_benchmark_apps_statistics_and_report(tiny_ir, tmp_path, capsys):
    """End to end: place on the testbed's HETERO, async with 2 requests, every report benchmark_app writes."""
    folder, graph = tmp_path / "report", tmp_path / "exec.xml"
    assert main(["place", "-m", str(tiny_ir), "--testbed", "-niter", "6", "-api", "async", "-nireq", "2",
                 "-json_stats", "-report_type", "average_counters", "-report_folder", str(folder),
                 "-exec_graph_path", str(graph), "-pc"]) == 0
    out = capsys.readouterr().out
    assert "Placement on HETERO:CPU,CPUF" in out and "(API async, 2 request(s))" in out
    for line in ("Compile model took", "Count:", "Duration:", "Median:", "Average:", "Min:", "Max:", "Throughput:"):
        assert line in out, line
    report = json.loads((folder / "benchmark_report.json").read_text())
    results = report["execution_results"]
    assert int(results["total number of iterations"]) == 6 and float(results["compile model time (ms)"]) > 0
    assert report["configuration_setup"]["number of parallel infer requests"] == "2"
    assert report["cmd_options"]["-nireq"] == "2" and results["device"] == "HETERO:CPU,CPUF"
    counters = json.loads((folder / "benchmark_average_counters_report.json").read_text())
    assert counters["report_type"] == "average" and counters["avg_performance"]["nodes"]
    assert "<layer" in graph.read_text()  # the runtime graph, serialized as benchmark_app writes it
