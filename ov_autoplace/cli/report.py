"""``-report_type`` / ``-report_folder`` / ``-json_stats``: a run's report in benchmark_app's layout.

benchmark_app writes ``benchmark_report.csv`` (``;``-separated sections: command line parameters,
configuration setup, execution results) and, for ``average_counters`` / ``detailed_counters``, each
node's PERF_COUNT times; ``-json_stats`` writes the same as JSON. ov_autoplace writes the same sections
to ``ov_autoplace_report.csv`` (or ``.json``), with the placement in the execution results, and the
counters of the *placed* model (one row per node HETERO ran, with the device it ran on) to
``ov_autoplace_<type>_report.csv``. ``detailed_counters`` keeps every run's row; ``average_counters``
averages them.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import openvino as ov

from ov_autoplace.placement.assignment import Placement

#: Runs whose PERF_COUNT counters are collected (benchmark_app collects over its whole run; a few suffice here).
COUNTER_RUNS = 10


def _parameters(args) -> dict[str, str]:
    skip = {"func", "command", "verbose"}
    return {k: str(v) for k, v in sorted(vars(args).items()) if k not in skip and v not in (None, [], False)}


def _results(placement: Placement, place_s: float) -> dict[str, Any]:
    results: dict[str, Any] = {
        "device": placement.device_string, "strategy": placement.strategy, "submodels": placement.num_submodels,
        "nodes per device": placement.counts_per_device(), "placing time (s)": round(place_s, 4),
    }
    if placement.measured_latency_ms is not None:
        results["median latency (ms)"] = round(placement.measured_latency_ms, 4)
    for device, ms in placement.reference_latency_ms.items():
        results[f"{device}-only median latency (ms)"] = round(ms, 4)
    for note in placement.notes:
        results.setdefault("notes", []).append(note)
    return results


def _counters(model, placement: Placement, config: dict, core: ov.Core, inputs, runs: int) -> list[dict[str, Any]]:
    """Each node's PERF_COUNT times over ``runs`` inferences of the placed model (``run`` says which)."""
    from ov_autoplace import api

    placed = api.compile_placement(model, placement, {**config, "PERF_COUNT": True}, core=core)
    request = placed.create_infer_request()
    rows = []
    for run in range(runs):
        request.infer(list(inputs))
        for info in request.profiling_info:
            rows.append({"run": run, "layerName": info.node_name, "execStatus": str(info.status).split(".")[-1],
                         "layerType": info.node_type, "execType": info.exec_type,
                         "realTime (ms)": info.real_time.total_seconds() * 1e3,
                         "cpuTime (ms)": info.cpu_time.total_seconds() * 1e3})
    return rows


def _averaged(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    grouped: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[(row["layerName"], row["layerType"], row["execType"], row["execStatus"])].append(row)
    out = []
    for (name, layer_type, exec_type, status), group in grouped.items():
        out.append({"layerName": name, "execStatus": status, "layerType": layer_type, "execType": exec_type,
                    "realTime (ms)": sum(r["realTime (ms)"] for r in group) / len(group),
                    "cpuTime (ms)": sum(r["cpuTime (ms)"] for r in group) / len(group)})
    return out


def write_report(args, placement: Placement, config: dict, place_s: float, model=None, core: ov.Core | None = None,
                 inputs=None) -> list[Path]:
    """Write the report ``args.report_type`` asks for into ``args.report_folder``; returns the files written."""
    folder: Path = args.report_folder
    folder.mkdir(parents=True, exist_ok=True)
    sections = {"cmd_options": _parameters(args), "configuration_setup": {k: v if isinstance(v, str) else json.dumps(v, default=str)
                                                        for k, v in config.items()},
                "execution_results": _results(placement, place_s)}
    counters: list[dict[str, Any]] = []
    if args.report_type != "no_counters" and model is not None and inputs is not None:
        counters = _counters(model, placement, config, core, inputs, COUNTER_RUNS)
        if args.report_type == "average_counters":
            counters = _averaged(counters)
    written = []
    if args.json_stats:
        path = folder / "ov_autoplace_report.json"
        if counters:
            sections[args.report_type] = counters
        path.write_text(json.dumps(sections, indent=1))
        written.append(path)
    else:
        path = folder / "ov_autoplace_report.csv"
        with path.open("w", newline="") as f:
            writer = csv.writer(f, delimiter=";")
            for title, values in (("Command line parameters", sections["cmd_options"]),
                                  ("Configuration setup", sections["configuration_setup"]),
                                  ("Execution results", sections["execution_results"])):
                writer.writerow([title])
                writer.writerows([k, json.dumps(v) if not isinstance(v, str) else v] for k, v in values.items())
                writer.writerow([])
        written.append(path)
        if counters:
            path = folder / f"ov_autoplace_{args.report_type}_report.csv"
            with path.open("w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(counters[0]), delimiter=";")
                writer.writeheader()
                writer.writerows(counters)
            written.append(path)
    print("report written to " + ", ".join(str(p) for p in written))
    return written


__all__ = ["write_report"]
