"""The run a ``place`` ends with: benchmark_app's own engine (``openvino.tools.benchmark``) on the compiled placed
model, with the placement's inputs and a stateful model's reset (docs/cli.md, "What place prints").
"""

from __future__ import annotations

import dataclasses
from typing import Any

import openvino as ov

from ov_autoplace.cli.benchmark_flags import benchmark_module, benchmark_utils
from ov_autoplace.devices.timing import is_stateful


@dataclasses.dataclass
class BenchmarkStatistics:
    """benchmark_app's run of a compiled model: its report's two sections, its closing lines, the requests run."""

    setup: list[tuple[str, Any]]  # ``configuration_setup`` after the topology; empty for -niter 0 (benchmark_app: compile and exit)
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


__all__ = ["BenchmarkStatistics", "run_benchmark"]
