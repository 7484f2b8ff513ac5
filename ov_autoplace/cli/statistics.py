"""The run a ``place`` ends with: benchmark_app's measurement of the placed model, and its statistics.

benchmark_app compiles the model (timing the compile), runs one warm-up inference ("first inference"), then runs
``-niter`` inferences or for ``-t`` seconds: with ``-api sync`` one request's ``infer()`` in a loop, with
``-api async`` ``-nireq`` requests in flight (an AsyncInferQueue; 0: the device's optimal number), the inputs
filled once. It reports the count, the duration, the latency at ``-latency_percentile`` (50: the median), the
average, min and max latency of the requests, and the throughput (batch x iterations / duration). The loops below
are benchmark_app's (``openvino/tools/benchmark/benchmark.py``) on ov_autoplace's compiled model, and the field
names are benchmark_app's report's, so a tool reading one reads the other.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import openvino as ov

from ov_autoplace.devices.timing import is_stateful, random_inputs


@dataclasses.dataclass
class BenchmarkStatistics:
    """One benchmark_app run of a compiled model (times in ms, throughput in inferences x batch per second)."""

    device: str  # what was compiled
    api: str
    nireq: int
    iterations: int
    duration_ms: float
    latency_ms: float  # at ``percentile``
    percentile: int
    avg_ms: float
    min_ms: float
    max_ms: float
    throughput: float
    compile_ms: float
    first_inference_ms: float | None
    batch: int
    streams: dict[str, str]

    def console_lines(self) -> list[str]:
        """benchmark_app's closing lines (microseconds below an average of 1 ms, as benchmark_app prints)."""

        def fmt(ms: float) -> str:
            return f"{ms * 1000:.2f} us" if self.avg_ms < 1.0 else f"{ms:.2f} ms"

        lines = [f"Compile model took {self.compile_ms:.2f} ms"]
        if self.first_inference_ms is not None:
            lines.append(f"First inference took {self.first_inference_ms:.2f} ms")
        label = "Median:" if self.percentile == 50 else f"{self.percentile} percentile:"
        lines += [f"Execution device: {self.device} (API {self.api}, {self.nireq} request(s))",
                  f"Count:            {self.iterations} iterations",
                  f"Duration:         {self.duration_ms:.2f} ms",
                  "Latency:",
                  f"   {label:<15}{fmt(self.latency_ms)}",
                  f"   {'Average:':<15}{fmt(self.avg_ms)}",
                  f"   {'Min:':<15}{fmt(self.min_ms)}",
                  f"   {'Max:':<15}{fmt(self.max_ms)}",
                  f"Throughput:   {self.throughput:.2f} FPS"]
        return lines

    def configuration_setup(self, topology: str, niter: int | None, seconds: float | None) -> dict[str, str]:
        """benchmark_app's ``configuration_setup`` section."""
        setup = {"topology": topology, "target device": self.device, "API": self.api, "inference_only": "True",
                 "precision": "UNSPECIFIED", "batch size": str(self.batch),
                 "number of iterations": str(niter or 0),
                 "number of parallel infer requests": str(self.nireq),
                 "duration (ms)": str(float(seconds or 0) * 1000)}
        setup.update({f"number of {device} streams": str(n) for device, n in self.streams.items()})
        return setup

    def execution_results(self) -> dict[str, str]:
        """benchmark_app's ``execution_results`` section (its names, its formatting)."""
        latency = "latency (ms)" if self.percentile == 50 else f"latency ({self.percentile} percentile) (ms)"
        results = {"compile model time (ms)": f"{self.compile_ms:.2f}"}
        if self.first_inference_ms is not None:
            results["first inference time (ms)"] = f"{self.first_inference_ms:.2f}"
        results.update({"total execution time (ms)": f"{self.duration_ms:.2f}",
                        "total number of iterations": str(self.iterations), latency: f"{self.latency_ms:.2f}",
                        "avg latency": f"{self.avg_ms:.2f}", "min latency": f"{self.min_ms:.2f}",
                        "max latency": f"{self.max_ms:.2f}", "throughput": f"{self.throughput:.2f}"})
        return results


def _percentile(sorted_ms: list[float], percent: int) -> float:
    return sorted_ms[math.ceil(len(sorted_ms) * percent / 100) - 1]  # benchmark_app's definition


def batch_size(compiled: ov.CompiledModel) -> int:
    """benchmark_app's batch (its own helpers: the N of a layout, set or guessed from an image shape; else 1)."""
    from ov_autoplace.cli.benchmark_flags import benchmark_utils

    utils = benchmark_utils()
    dim = utils.get_network_batch_size(utils.get_inputs_info("", "", "", 0, "", "", compiled.inputs)[0])
    return dim.get_length() if dim.is_static else 1


def _streams(compiled: ov.CompiledModel, device: str) -> dict[str, str]:
    try:
        return {device: str(compiled.get_property("NUM_STREAMS"))}
    except Exception:  # noqa: BLE001 - a compiled model without the property: benchmark_app leaves it out too
        return {}


def _reset(request: ov.InferRequest, stateful: bool) -> None:
    if stateful:
        request.reset_state()


def run_benchmark(compiled: ov.CompiledModel, device: str, compile_ms: float, *, inputs=None, api: str = "sync",
                  nireq: int = 0, niter: int | None = None, seconds: float | None = None, percentile: int = 50,
                  warmup: bool = True, default_niter: int = 20) -> tuple[BenchmarkStatistics, list]:
    """benchmark_app's measurement loop on ``compiled``; returns the statistics and the requests (for counters)."""
    inputs = inputs if inputs is not None else random_inputs(compiled)
    niter = niter if niter else (None if seconds else default_niter)
    timer = time.perf_counter
    first_ms = None
    # a stateful model (an LLM's KV cache) runs each inference from a reset state, as the placement's timers do:
    # every sample is the same prefill, not a prompt appended to all the previous ones (which the model rejects)
    reset = is_stateful(compiled)
    if api == "sync":
        request = compiled.create_infer_request()
        requests: Any = [request]
        for port, value in zip(compiled.inputs, inputs):
            request.set_tensor(port, ov.Tensor(value))
        if warmup:
            _reset(request, reset)
            request.infer()
            first_ms = request.latency
        times, iteration, start = [], 0, timer()
        while (niter and iteration < niter) or (seconds and timer() - start < seconds):
            _reset(request, reset)
            request.infer()
            times.append(request.latency)
            iteration += 1
        duration = max(timer() - start, time.get_clock_info("perf_counter").resolution)
        used = 1
    else:
        queue = ov.AsyncInferQueue(compiled, nireq)
        used = len(queue)
        requests = [queue[i] for i in range(used)]
        for request in requests:
            for port, value in zip(compiled.inputs, inputs):
                request.set_tensor(port, ov.Tensor(value))
        if warmup:
            idle = queue.get_idle_request_id()
            _reset(queue[idle], reset)
            queue.start_async()
            queue.wait_all()
            first_ms = queue[idle].latency
        if niter:  # benchmark_app aligns the count to the requests in flight
            niter = (niter + used - 1) // used * used
        times, iteration, in_flight, start = [], 0, set(), timer()
        while (niter and iteration < niter) or (seconds and timer() - start < seconds) or iteration % used:
            idle = queue.get_idle_request_id()
            if idle in in_flight:
                times.append(queue[idle].latency)
            else:
                in_flight.add(idle)
            _reset(queue[idle], reset)
            queue.start_async()
            iteration += 1
        queue.wait_all()
        duration = max(timer() - start, time.get_clock_info("perf_counter").resolution)
        times.extend(queue[i].latency for i in in_flight)
    times.sort()
    batch = batch_size(compiled)
    stats = BenchmarkStatistics(
        device=device, api=api, nireq=used, iterations=iteration, duration_ms=duration * 1e3,
        latency_ms=_percentile(times, percentile), percentile=percentile, avg_ms=sum(times) / len(times),
        min_ms=times[0], max_ms=times[-1], throughput=batch * iteration / duration, compile_ms=compile_ms,
        first_inference_ms=first_ms, batch=batch, streams=_streams(compiled, device))
    return stats, requests


def compiled_timed(compile_call) -> tuple[ov.CompiledModel, float]:
    """``compile_call()`` and its wall time in ms (benchmark_app's "compile model time")."""
    start = time.perf_counter()
    compiled = compile_call()
    return compiled, (time.perf_counter() - start) * 1e3


__all__ = ["BenchmarkStatistics", "batch_size", "compiled_timed", "run_benchmark"]
