"""``-report_type`` / ``-report_folder`` / ``-json_stats``: a run's report in benchmark_app's layout and names.

benchmark_app writes ``benchmark_report.csv`` (``;``-separated sections: command line parameters, configuration
setup, execution results) or, with ``-json_stats``, ``benchmark_report.json`` with the sections ``cmd_options``,
``configuration_setup`` and ``execution_results``; for ``average_counters`` / ``detailed_counters`` also each
node's PERF_COUNT times (``benchmark_<type>_report.csv`` / ``.json``). ov_autoplace writes the same sections with
benchmark_app's field names (``topology``, ``target device``, ``compile model time (ms)``, ``latency (ms)``,
``avg latency``, ``throughput``, ...; ``cli/statistics.py``) for the placed model, plus the placement's own fields
(``device``, ``strategy``, ``submodels``, ``nodes per device``, ``placing time (s)``, each device's latency alone),
into ``ov_autoplace_report.csv`` / ``.json`` and ``ov_autoplace_<type>_report.csv`` / ``.json``: the counters of
the *placed* model (HETERO names its nodes ``subgraph<K>: node``), ``detailed`` per run, ``average`` averaged.
"""

from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import openvino as ov

#: Runs whose PERF_COUNT counters are collected (benchmark_app collects over its whole run; a few suffice here).
COUNTER_RUNS = 10


def _command_line(args) -> dict[str, str]:
    """benchmark_app's ``cmd_options``: each flag as typed, with its value."""
    from ov_autoplace.cli.benchmark_flags import benchmark_utils

    argv = getattr(args, "argv", None)
    argv = sys.argv[1:] if argv is None else argv
    return dict(benchmark_utils().get_command_line_arguments(["ov-autoplace", *argv]))


def _placement_results(run) -> dict[str, Any]:
    placement = run.placement
    results: dict[str, Any] = {
        "device": run.compiled_label, "strategy": placement.strategy, "submodels": placement.num_submodels,
        "nodes per device": placement.counts_per_device(), "placing time (s)": round(run.place_s, 4),
    }
    if placement.measured_latency_ms is not None:
        results["median latency (ms)"] = round(placement.measured_latency_ms, 4)
    for device, ms in placement.reference_latency_ms.items():
        results[f"{device}-only median latency (ms)"] = round(ms, 4)
    if placement.notes:
        results["notes"] = list(placement.notes)
    return results


def sections(args, run, config: dict) -> dict[str, dict[str, Any]]:
    """The report's three sections: benchmark_app's fields first, then the placement's."""
    setup: dict[str, Any] = {}
    results: dict[str, Any] = {"read model time (ms)": f"{run.read_ms:.2f}"}
    if run.statistics is not None:
        setup.update(run.statistics.configuration_setup(run.model.get_name(), args.niter, args.time))
        results.update(run.statistics.execution_results())
    else:
        setup.update({"topology": run.model.get_name(), "target device": run.compiled_label})
    setup.update({k: v if isinstance(v, str) else json.dumps(v, default=str) for k, v in config.items()})
    results.update(_placement_results(run))
    return {"cmd_options": _command_line(args), "configuration_setup": setup, "execution_results": results}


def _counters(counted: ov.CompiledModel, inputs, runs: int) -> list[list[Any]]:
    """Each node's PERF_COUNT profiling info over ``runs`` inferences of the placed model, one list per run."""
    request = counted.create_infer_request()
    per_run = []
    for _ in range(runs):
        request.infer(list(inputs))
        per_run.append([(info.node_name, str(info.status), info.node_type, info.exec_type,
                         info.real_time.total_seconds() * 1e3, info.cpu_time.total_seconds() * 1e3)
                        for info in request.profiling_info])
    return per_run


def _averaged(per_run: list[list[Any]]) -> list[Any]:
    sums: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for rows in per_run:
        for name, status, node_type, exec_type, real, cpu in rows:
            total = sums[(name, status, node_type, exec_type)]
            total[0] += real
            total[1] += cpu
    return [(*key, real / len(per_run), cpu / len(per_run)) for key, (real, cpu) in sums.items()]


def _json_counters(rows: list[Any]) -> dict[str, Any]:
    """One request's counters as benchmark_app's JSON writes them (ms as strings with 3 decimals)."""
    return {"nodes": [{"name": name, "node_type": node_type, "status": status, "real_time": f"{real:.3f}",
                       "cpu_time": f"{cpu:.3f}", "exec_type": exec_type}
                      for name, status, node_type, exec_type, real, cpu in rows],
            "total_real_time": f"{sum(r[4] for r in rows):.3f}", "total_cpu_time": f"{sum(r[5] for r in rows):.3f}"}


def write_report(args, run, config: dict, counted: ov.CompiledModel | None = None, inputs=None) -> list[Path]:
    """Write the report ``args.report_type`` asks for into ``args.report_folder``; returns the files written.
    ``counted``: the placed model compiled with PERF_COUNT, for the ``*_counters`` types."""
    folder = Path(args.report_folder or ".")
    folder.mkdir(parents=True, exist_ok=True)
    report = sections(args, run, config)
    per_run: list[list[Any]] = []
    if args.report_type != "no_counters" and inputs is not None and counted is not None:
        per_run = _counters(counted, inputs, COUNTER_RUNS)
    detailed = args.report_type == "detailed_counters"
    written = []
    if args.json_stats:
        path = folder / "ov_autoplace_report.json"
        path.write_text(json.dumps(report, indent=1))
        written.append(path)
        if per_run:
            counters = ({"report_type": "detailed", "detailed_performance": [_json_counters(r) for r in per_run]}
                        if detailed else {"report_type": "average", "avg_performance": _json_counters(_averaged(per_run))})
            path = folder / f"ov_autoplace_{args.report_type}_report.json"
            path.write_text(json.dumps(counters, indent=4))
            written.append(path)
    else:
        path = folder / "ov_autoplace_report.csv"
        with path.open("w", newline="") as f:
            writer = csv.writer(f, delimiter=";")
            for title, key in (("Command line parameters", "cmd_options"), ("Configuration setup",
                               "configuration_setup"), ("Execution results", "execution_results")):
                writer.writerow([title])
                writer.writerows([k, v if isinstance(v, str) else json.dumps(v)] for k, v in report[key].items())
                writer.writerow([])
        written.append(path)
        if per_run:
            path = folder / f"ov_autoplace_{args.report_type}_report.csv"
            with path.open("w", newline="") as f:
                writer = csv.writer(f, delimiter=";")
                for rows in per_run if detailed else [_averaged(per_run)]:  # benchmark_app: one block per request
                    writer.writerow(["layerName", "execStatus", "layerType", "execType", "realTime (ms)",
                                     "cpuTime (ms)"])
                    writer.writerows([n, s, t, e, f"{real:.3f}", f"{cpu:.3f}"] for n, s, t, e, real, cpu in rows)
                    writer.writerow(["Total", "", "", "", f"{sum(r[4] for r in rows):.3f}",
                                     f"{sum(r[5] for r in rows):.3f}"])
                    writer.writerow([])
            written.append(path)
    print("report written to " + ", ".join(str(p) for p in written))
    return written


__all__ = ["sections", "write_report"]
