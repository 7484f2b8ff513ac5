"""The run a ``place`` ends with, on the compiled placed model: benchmark_app's own engine (``openvino.tools.
benchmark``: its loop, statistics, report writers and counter printers) with the placement's inputs, a stateful
model's reset and the placement's fields in the report (docs/cli.md, "What place prints" and Reports).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import openvino as ov

from ov_autoplace.cli.benchmark_flags import benchmark_module, benchmark_utils
from ov_autoplace.devices.timing import is_stateful

@dataclasses.dataclass
class BenchmarkStatistics:
    """benchmark_app's run of a compiled model: its report's two sections, its closing lines, the requests run."""

    setup: list[tuple[str, Any]]  # ``configuration_setup`` after the topology; empty for -niter 0 (compile, exit)
    results: list[tuple[str, str]]  # ``execution_results``
    lines: list[str]
    requests: Any = ()


class _ResetFirst:
    """A stateful model's request as benchmark_app's sync loop calls it: ``reset_state()`` before each ``infer()``."""

    def __init__(self, request: ov.InferRequest):
        self.request = request

    def infer(self) -> None:
        self.request.reset_state()
        self.request.infer()

    @property
    def latency(self) -> float:
        return self.request.latency


def run_benchmark(args, compiled: ov.CompiledModel, device: str, compile_ms: float, inputs, niter: int | None
                  ) -> BenchmarkStatistics:
    """benchmark_app's first inference and loop on ``compiled`` as ``args`` asks; ``niter`` 0: nothing run."""
    api, percentile, utils = args.api_type, args.latency_percentile, benchmark_utils()
    run = BenchmarkStatistics([], [("compile model time (ms)", f"{compile_ms:.2f}")],
                              [f"Compile model took {compile_ms:.2f} ms"])
    if niter == 0:
        run.lines += [f"Execution device: {device} (API {api}, 0 request(s))", "Count:            0 iterations"]
        return run
    benchmark = benchmark_module("openvino.tools.benchmark.benchmark").Benchmark(
        device, args.nireq, niter, args.time, api, inference_only=True)
    requests = loop_requests = benchmark.create_infer_requests(compiled)
    benchmark.niter = utils.get_number_iterations(niter, benchmark.nireq, 1, api)
    batch = utils.get_network_batch_size(utils.get_inputs_info("", "", "", 0, "", "", compiled.inputs)[0])
    batch = batch if batch.is_static else ov.Dimension(1)
    data = benchmark_module("openvino.tools.benchmark.utils.inputs_filling").DataQueue(
        {port: [ov.Tensor(value)] for port, value in enumerate(inputs)}, [batch.get_length()])
    for request in requests:  # filled once, outside the loop (-inference_only)
        for port, tensor in data.get_next_input().items():
            request.set_input_tensor(port, tensor)
    if is_stateful(compiled):  # each inference the same prefill, not a prompt appended to all the previous ones
        if api == "sync":
            loop_requests = [_ResetFirst(requests[0])]
        else:  # reset as each request completes, before the queue hands it out again
            requests.set_callback(lambda request, _: request.reset_state())
    if not args.no_warmup:
        first_ms = benchmark.first_infer(loop_requests)
        run.results.append(("first inference time (ms)", f"{first_ms:.2f}"))
        run.lines.append(f"First inference took {first_ms:.2f} ms")
    fps, latency, avg, low, high, seconds, iterations = benchmark.main_loop(loop_requests, data, batch, percentile,
                                                                            False)
    try:
        streams = [(f"number of {device} streams", str(compiled.get_property("NUM_STREAMS")))]
    except Exception:  # noqa: BLE001 - a compiled model without the property: benchmark_app leaves it out too
        streams = []
    run.setup = [("target device", device), ("API", api),
                 ("inference_only", True), ("precision", "UNSPECIFIED"), ("batch size", str(batch)),
                 ("number of iterations", str(benchmark.niter)),
                 ("number of parallel infer requests", str(benchmark.nireq)),
                 ("duration (ms)", str(utils.get_duration_in_milliseconds(benchmark.duration_seconds))), *streams]
    name = "latency (ms)" if percentile == 50 else f"latency ({percentile} percentile) (ms)"
    run.results += [("total execution time (ms)", f"{seconds * 1e3:.2f}"), ("total number of iterations",
                    str(iterations)), *((k, f"{v:.2f}") for k, v in ((name, latency), ("avg latency", avg),
                    ("min latency", low), ("max latency", high), ("throughput", fps)))]
    fmt = benchmark_module("openvino.tools.benchmark.main").format_console_latency
    label = "Median:" if percentile == 50 else f"{percentile} percentile:"
    run.lines += [f"Execution device: {device} (API {api}, {benchmark.nireq} request(s))",
                  f"Count:            {iterations} iterations", f"Duration:         {seconds * 1e3:.2f} ms",
                  "Latency:", *(f"   {k:<15}{fmt(v, avg)}" for k, v in ((label, latency), ("Average:", avg),
                                                                          ("Min:", low), ("Max:", high))),
                  f"Throughput:   {fps:.2f} FPS"]
    run.requests = requests
    return run


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


__all__ = ["BenchmarkStatistics", "COUNTER_REPORTS", "counters_wanted", "finish_run", "run_benchmark"]
