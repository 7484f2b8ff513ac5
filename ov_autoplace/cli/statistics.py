"""The run a ``place`` ends with: benchmark_app's own engine on the compiled placed model.

benchmark_app's ``Benchmark`` (``openvino/tools/benchmark/benchmark.py``) creates the requests, runs the first
inference and the measurement loop (``-niter`` / ``-t``, ``-api sync|async``, ``-nireq``) and computes the count,
duration, latency at ``-latency_percentile``, average, min, max and throughput. What is ours: the inputs (the ones
the placement and each single device were timed with, so LLM inputs follow the conventions rather than uniform
0..255 values), the default of 20 iterations, ``-niter 0`` and a stateful model's reset before each inference.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import openvino as ov

from ov_autoplace.cli.benchmark_flags import benchmark_module, benchmark_utils
from ov_autoplace.devices.timing import is_stateful, random_inputs


@dataclasses.dataclass
class BenchmarkStatistics:
    """One benchmark_app run of a compiled model (times in ms); ``iterations`` 0: compiled, nothing run."""

    device: str  # what was compiled
    api: str
    nireq: int
    niter: int | None  # the limit, aligned to the requests as benchmark_app aligns it
    duration_limit_s: float
    percentile: int
    compile_ms: float
    batch: int = 1
    streams: dict[str, str] = dataclasses.field(default_factory=dict)
    first_inference_ms: float | None = None
    iterations: int = 0
    duration_ms: float = 0.0
    latency_ms: float = 0.0  # at ``percentile``
    avg_ms: float = 0.0
    min_ms: float = 0.0
    max_ms: float = 0.0
    throughput: float = 0.0
    requests: Any = ()  # the requests run, for their profiling info

    def console_lines(self) -> list[str]:
        """benchmark_app's closing lines, formatted by benchmark_app."""
        lines = [f"Compile model took {self.compile_ms:.2f} ms"]
        if self.first_inference_ms is not None:
            lines.append(f"First inference took {self.first_inference_ms:.2f} ms")
        lines += [f"Execution device: {self.device} (API {self.api}, {self.nireq} request(s))",
                  f"Count:            {self.iterations} iterations"]
        if not self.iterations:
            return lines
        fmt = benchmark_module("openvino.tools.benchmark.main").format_console_latency
        label = "Median:" if self.percentile == 50 else f"{self.percentile} percentile:"
        return lines + [f"Duration:         {self.duration_ms:.2f} ms", "Latency:",
                        *(f"   {name:<15}{fmt(ms, self.avg_ms)}" for name, ms in (
                            (label, self.latency_ms), ("Average:", self.avg_ms), ("Min:", self.min_ms),
                            ("Max:", self.max_ms))),
                        f"Throughput:   {self.throughput:.2f} FPS"]

    def runtime_config(self, topology: str) -> list[tuple[str, Any]]:
        """benchmark_app's ``configuration_setup`` (its RUNTIME_CONFIG parameters)."""
        ms = benchmark_utils().get_duration_in_milliseconds(self.duration_limit_s)
        return [("topology", topology), ("target device", self.device), ("API", self.api), ("inference_only", True),
                ("precision", "UNSPECIFIED"), ("batch size", str(self.batch)),
                ("number of iterations", str(self.niter)), ("number of parallel infer requests", str(self.nireq)),
                ("duration (ms)", str(ms)), *((f"number of {d} streams", n) for d, n in self.streams.items())]

    def execution_results(self) -> list[tuple[str, str]]:
        """benchmark_app's ``execution_results`` (its names, its formatting)."""
        results = [("compile model time (ms)", f"{self.compile_ms:.2f}")]
        if self.first_inference_ms is not None:
            results.append(("first inference time (ms)", f"{self.first_inference_ms:.2f}"))
        if not self.iterations:
            return results
        latency = "latency (ms)" if self.percentile == 50 else f"latency ({self.percentile} percentile) (ms)"
        return results + [
            ("total execution time (ms)", f"{self.duration_ms:.2f}"),
            ("total number of iterations", str(self.iterations)), (latency, f"{self.latency_ms:.2f}"),
            ("avg latency", f"{self.avg_ms:.2f}"), ("min latency", f"{self.min_ms:.2f}"),
            ("max latency", f"{self.max_ms:.2f}"), ("throughput", f"{self.throughput:.2f}")]


def batch_size(compiled: ov.CompiledModel) -> int:
    """benchmark_app's batch (its own helpers: the N of a layout, set or guessed from an image shape; else 1)."""
    utils = benchmark_utils()
    dim = utils.get_network_batch_size(utils.get_inputs_info("", "", "", 0, "", "", compiled.inputs)[0])
    return dim.get_length() if dim.is_static else 1


def _streams(compiled: ov.CompiledModel, device: str) -> dict[str, str]:
    try:
        return {device: str(compiled.get_property("NUM_STREAMS"))}
    except Exception:  # noqa: BLE001 - a compiled model without the property: benchmark_app leaves it out too
        return {}


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


def run_benchmark(compiled: ov.CompiledModel, device: str, compile_ms: float, *, inputs=None, api: str = "sync",
                  nireq: int = 0, niter: int | None = None, seconds: float | None = None, percentile: int = 50,
                  warmup: bool = True, default_niter: int = 20) -> BenchmarkStatistics:
    """benchmark_app's first inference and measurement loop on ``compiled``; ``niter`` 0: nothing run."""
    niter = niter if niter is not None or seconds else default_niter
    if niter == 0:  # benchmark_app's -niter 0: compile and exit
        return BenchmarkStatistics(device, api, 0, 0, 0.0, percentile, compile_ms)
    benchmark = benchmark_module("openvino.tools.benchmark.benchmark").Benchmark(
        device, nireq, niter or None, seconds, api, inference_only=True)
    requests = benchmark.create_infer_requests(compiled)
    benchmark.niter = benchmark_utils().get_number_iterations(benchmark.niter, benchmark.nireq, 1, api)
    batch = batch_size(compiled)
    data = benchmark_module("openvino.tools.benchmark.utils.inputs_filling").DataQueue(
        {port: [ov.Tensor(value)] for port, value in enumerate(inputs if inputs is not None
                                                                 else random_inputs(compiled))}, [batch])
    for request in requests:  # filled once, outside the loop (-inference_only)
        for port, tensor in data.get_next_input().items():
            request.set_input_tensor(port, tensor)
    loop_requests = requests
    # a stateful model (an LLM's KV cache) runs each inference from a reset state, as the placement's timers do:
    # every sample is the same prefill, not a prompt appended to all the previous ones (which the model rejects)
    if is_stateful(compiled):
        if api == "sync":
            loop_requests = [_ResetFirst(requests[0])]
        else:  # reset as each request completes, before the queue hands it out again
            requests.set_callback(lambda request, _: request.reset_state())
    first_ms = benchmark.first_infer(loop_requests) if warmup else None
    fps, latency, avg, low, high, seconds_run, iterations = benchmark.main_loop(
        loop_requests, data, ov.Dimension(batch), percentile, False)
    return BenchmarkStatistics(device, api, benchmark.nireq, benchmark.niter, benchmark.duration_seconds, percentile,
                               compile_ms, batch, _streams(compiled, device), first_ms, iterations,
                               seconds_run * 1e3, latency, avg, low, high, fps, requests)


def compiled_timed(compile_call) -> tuple[ov.CompiledModel, float]:
    """``compile_call()`` and its wall time in ms (benchmark_app's "compile model time")."""
    start = time.perf_counter()
    compiled = compile_call()
    return compiled, (time.perf_counter() - start) * 1e3


__all__ = ["BenchmarkStatistics", "batch_size", "compiled_timed", "run_benchmark"]
