"""Place a model as the command line asks, time it against each single device, and end with benchmark_app's run.

Shared by ``place`` and the lab's ``show`` (docs/cli.md, "What place prints"); ``-niter 0``: compiled, nothing run.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Callable

import openvino as ov

from ov_autoplace import api
from ov_autoplace.cli.args import (DEFAULT_NITER, config_of, core_and_device, dump_config, memory_caps_of, pins_of,
                                   read_inputs, single_device_config)
from ov_autoplace.cli.benchmark_run import BenchmarkStatistics, counters_wanted, finish_run, run_benchmark
from ov_autoplace.devices.targets import placement_target
from ov_autoplace.devices.timing import input_sample, measure_latency, random_inputs
from ov_autoplace.model.generation import check_generation
from ov_autoplace.model.shapes import resolve_shapes
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.progress import progress_bar, progress_wanted


@dataclasses.dataclass
class PlacedRun:
    """What one ``place`` produced: the model, its placement, what was compiled and benchmark_app's statistics."""

    model: ov.Model
    placement: Placement
    place_s: float
    compiled_label: str  # the device string the placed model was compiled for
    statistics: BenchmarkStatistics | None = None
    read_ms: float = 0.0


def _status(text: str) -> None:
    """A step whose length is unknown (reading, placing), named on a terminal so no stretch is silent; the steps
    with a known length draw a bar (progress.py)."""
    if progress_wanted():
        print(f"{text} ...", file=sys.stderr, flush=True)


def _timed(compiled, inputs, args):
    """LatencyStats for -niter/-t: -t alone runs until the time, -niter alone that many, both: the first reached."""
    iterations = args.niter or (10 ** 9 if args.time else DEFAULT_NITER)
    return measure_latency(compiled, inputs, iterations=iterations, max_seconds=args.time or 0.0)


def compiled_label(core: ov.Core, args, placement: Placement, config: dict) -> str:
    """What compiling the placement is: one device named plainly (``-d CPU``, or a machine with one device) is
    compiled on that device, as ``ov_autoplace.compile_model`` does; a HETERO/AUTO/MULTI string or several
    devices are compiled through the placement's HETERO string."""
    device = args.device if args.device or not args.testbed else placement.device_string
    _, spec = placement_target(core, device, config)
    if spec.meta is None and len(placement.devices) == 1:
        return placement.devices[0]
    return placement.device_string


def compile_placed(core: ov.Core, model: ov.Model, placement: Placement, label: str, config: dict):
    if label == placement.device_string:
        return api.compile_placement(model, placement, config, core=core)
    return core.compile_model(model, label, single_device_config(config, label))


def placed_and_measured(args, opened: tuple[ov.Core, str | None] | None = None,
                        given: Callable[[ov.Model], Placement] | None = None) -> PlacedRun:
    """Place (or take ``given(model)``'s placement: the lab's ``show --placement``), time it and every single device
    unless ``--no-measure``, then run it as benchmark_app would and write the reports ``-report_type`` asks for."""
    core, device = opened or core_and_device(args)
    started = time.perf_counter()
    _status(f"reading {args.model}")
    model = api.load_model(args.model, core)
    read_ms = (time.perf_counter() - started) * 1e3
    generation = check_generation(getattr(args, "generation", None), model, args.model)
    config = config_of(args)
    sample, shapes = read_inputs(args, model)
    t0 = time.perf_counter()
    if given is not None:
        placement = given(model)
    else:
        _status(f"placing {len(model.get_ops())} nodes on {device or 'this machine'}")
        placement = api.place(model, device, config, core=core, strategy=args.strategy, pins=pins_of(args.pin),
                              exclude_devices=args.exclude, max_submodels=args.max_submodels,
                              search_budget=args.search_budget, shapes=shapes, inputs=sample,
                              memory_caps=memory_caps_of(args), generation=generation)
    run = PlacedRun(model, placement, time.perf_counter() - t0, compiled_label(core, args, placement, config),
                    read_ms=read_ms)
    dump_config(args, placement.devices)
    placed = None

    def compiled_timed(extra: dict) -> tuple[ov.CompiledModel, float]:  # and benchmark_app's "compile model time"
        start = time.perf_counter()
        compiled = compile_placed(core, model, placement, run.compiled_label, {**config, **extra})
        return compiled, (time.perf_counter() - start) * 1e3

    if not args.no_measure:  # on a terminal a bar shows after 2 s (-t 10 times each of these for 10 s)
        with progress_bar(len(placement.devices) + 2, "measuring", unit="model") as bar:
            bar.set_postfix_str(run.compiled_label)
            placed, compile_ms = compiled_timed({})
            inputs = None
            if args.niter != 0:  # benchmark_app's -niter 0: compile and exit without running inference
                with input_sample(sample):  # dynamic: the placement shapes
                    inputs = random_inputs(placed, shapes=resolve_shapes(model, shapes))
                placement.measured_latency_ms = _timed(placed, inputs, args).median_ms
                for dev in placement.devices:
                    bar.update(1)
                    bar.set_postfix_str(f"{dev} alone")
                    single = core.compile_model(model, dev, single_device_config(config, dev))
                    placement.reference_latency_ms[dev] = _timed(single, inputs, args).median_ms
                    del single
            bar.update(1)
            bar.set_postfix_str("benchmark_app's run")
            if counters_wanted(args) and args.niter != 0:  # the placement's own latency was timed without them
                placed, compile_ms = compiled_timed({"PERF_COUNT": True})
            run.statistics = run_benchmark(args, placed, run.compiled_label, compile_ms, inputs,
                                           args.niter if args.niter is not None or args.time else DEFAULT_NITER)
            bar.update(1)
    finish_run(args, run, config, placed)
    return run


__all__ = ["PlacedRun", "compile_placed", "compiled_label", "placed_and_measured"]
