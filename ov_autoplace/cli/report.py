"""What benchmark_app does after its run (``-exec_graph_path``, ``-pc``, ``-pcsort``, ``-report_type``), done on the
placed run by benchmark_app's own writers and printers; the report adds the placement's fields (docs/cli.md, Reports).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ov_autoplace.cli.benchmark_flags import benchmark_module, benchmark_utils

COUNTER_REPORTS = ("average_counters", "detailed_counters")


def counters_wanted(args) -> bool:
    """benchmark_app turns PERF_COUNT on for -pc, -pcsort, -exec_graph_path and the counter reports."""
    return bool(getattr(args, "perf_counts", False) or getattr(args, "perf_counts_sort", "")
                or getattr(args, "exec_graph_path", None) or getattr(args, "report_type", None) in COUNTER_REPORTS)


def _placement_results(run) -> list[tuple[str, Any]]:
    placement = run.placement
    results: list[tuple[str, Any]] = [
        ("device", run.compiled_label), ("strategy", placement.strategy), ("submodels", placement.num_submodels),
        ("nodes per device", placement.counts_per_device()), ("placing time (s)", round(run.place_s, 4))]
    if placement.measured_latency_ms is not None:
        results.append(("median latency (ms)", round(placement.measured_latency_ms, 4)))
    results += [(f"{device}-only median latency (ms)", round(ms, 4))
                for device, ms in placement.reference_latency_ms.items()]
    if placement.notes:
        results.append(("notes", list(placement.notes)))
    return results


def _write_report(args, run, config: dict, counters: list, sorted_counters) -> None:
    module = benchmark_module("openvino.tools.benchmark.utils.statistics_report")
    folder = Path(args.report_folder or ".")
    folder.mkdir(parents=True, exist_ok=True)  # benchmark_app writes into an existing folder only
    report = (module.JsonStatisticsReport if args.json_stats else module.CsvStatisticsReport)(
        module.StatisticsReport.Config(args.report_type, str(folder)))
    category = module.StatisticsReport.Category
    argv = getattr(args, "argv", None)
    report.add_parameters(category.COMMAND_LINE_PARAMETERS, benchmark_utils().get_command_line_arguments(
        ["ov-autoplace", *(sys.argv[1:] if argv is None else argv)]))
    stats = run.statistics
    setup = [("topology", run.model.get_name()), *(stats and stats.setup or [("target device", run.compiled_label)])]
    results = [("read model time (ms)", f"{run.read_ms:.2f}"), *(stats.results if stats else []),
               *_placement_results(run)]
    setup += [(k, v if isinstance(v, str) else json.dumps(v, default=str)) for k, v in config.items()]
    if not args.json_stats:  # benchmark_app's CSV writes f"{value}": a mapping or list as JSON, not Python's repr
        results = [(k, json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in results]
    report.add_parameters(category.RUNTIME_CONFIG, setup)
    report.add_parameters(category.EXECUTION_RESULTS, results)
    report.dump()
    if counters:
        report.dump_performance_counters(counters)  # for average_counters and detailed_counters only
    if sorted_counters is not None:
        report.dump_performance_counters_sorted(sorted_counters)
    print(f"report written to {folder} (benchmark_*report.{'json' if args.json_stats else 'csv'})")


def finish_run(args, run, config: dict, placed=None) -> None:
    """benchmark_app's last step on the placed run: runtime graph, counters printed, report written."""
    utils = benchmark_utils()
    if placed is not None and getattr(args, "exec_graph_path", None):
        Path(args.exec_graph_path).parent.mkdir(parents=True, exist_ok=True)
        utils.dump_exec_graph(placed, args.exec_graph_path)
        print(f"execution graph written to {args.exec_graph_path}")
    requests = list(run.statistics.requests) if run.statistics is not None else []
    counters = [request.profiling_info for request in requests] if counters_wanted(args) else []
    sorted_counters = None
    if counters and getattr(args, "perf_counts_sort", ""):
        sorted_counters = utils.print_perf_counters_sort(counters, sort_flag=args.perf_counts_sort)
    elif counters and getattr(args, "perf_counts", False):
        utils.print_perf_counters(counters)
    if getattr(args, "report_type", None):
        _write_report(args, run, config, counters, sorted_counters)


__all__ = ["COUNTER_REPORTS", "counters_wanted", "finish_run"]
