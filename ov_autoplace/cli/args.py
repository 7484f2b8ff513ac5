"""The arguments and helpers every model command shares (``place``, ``profile``, ``show``, ``compare``).

A module of its own so that ``cli/main.py`` and ``commands/pictures.py`` both use it without importing each other.
Flags that benchmark_app has keep its spelling and meaning (``-d``, ``-hint``, ``-niter``, ``-t``, ``-nireq``,
``-nstreams``, ``-pin``, ``-cdir``, ``-shape``, ``-load_config``, ``-dump_config``, ``-report_type``,
``-report_folder``, ``-json_stats``); flags only ov_autoplace has are ``--kebab-case`` (docs/cli.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import openvino as ov

from ov_autoplace import api
from ov_autoplace.devices.targets import placement_target
from ov_autoplace.errors import PinError, PlacementError, PropertyError, ShapeError
from ov_autoplace.model.loading import read_json_file
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.shapes import DEFAULT_BATCH, DEFAULT_DIM, resolve_shapes
from ov_autoplace.strategies.registry import LAB_STRATEGIES, strategy_names
from ov_autoplace.devices.testbed import make_testbed
from ov_autoplace.devices.timing import input_sample, measure_latency, random_inputs
from ov_autoplace.model.input_sample import check_input_sample, sample_shapes

#: Every PERFORMANCE_HINT OpenVINO has, with benchmark_app's short forms.
HINTS = {"latency": "LATENCY", "throughput": "THROUGHPUT", "tput": "THROUGHPUT",
         "cumulative_throughput": "CUMULATIVE_THROUGHPUT", "ctput": "CUMULATIVE_THROUGHPUT", "none": None}
META_DEVICES = ("AUTO", "HETERO", "MULTI", "BATCH")
DEFAULT_NITER = 20


class _DeprecatedPin(argparse.Action):
    """``--pin NODE=DEVICE``, renamed ``--pin-node`` (``-pin`` is benchmark_app's thread pinning); kept for 0.1."""

    def __call__(self, parser, namespace, values, option_string=None):
        print("ov-autoplace: warning: --pin NODE=DEVICE is deprecated and will be removed after 0.1; use "
              "--pin-node NODE=DEVICE (-pin YES|NO is benchmark_app's thread pinning)", file=sys.stderr)
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])  # never the default


def add_device_args(parser: argparse.ArgumentParser, *, properties: bool = True) -> None:
    """``-d``, ``--testbed``, ``-load_config`` and (``properties``) the compile properties benchmark_app's flags set."""
    parser.add_argument("-d", "--device", default=None,
                        help="device string as benchmark_app's -d / core.compile_model's: HETERO:GPU,CPU, AUTO, "
                             "CPU... (default: no device, OpenVINO's default: the devices this machine has, as "
                             "ov_autoplace.compile_model(model) places over them; --testbed: the testbed's HETERO)")
    parser.add_argument("--testbed", action="store_true",
                        help="register the standard testbed (CPU bf16 + virtual CPUF f32, all cores each)")
    parser.add_argument("-load_config", "--load-config", dest="load_config", type=Path, default=None,
                        help="JSON {device: {property: value}} as benchmark_app's: each device's properties are "
                             "set on the core; a HETERO/AUTO/MULTI/BATCH section is the compile config of a -d "
                             "string of that kind. Flags win over the file")
    if not properties:  # the command compiles with its own settings (profile): no flag it would ignore
        return
    parser.add_argument("-hint", "--hint", choices=list(HINTS), default="latency",
                        help="PERFORMANCE_HINT of the compile (benchmark_app's -hint; default: latency, what a "
                             "placement minimises; none: no hint set)")
    parser.add_argument("-nstreams", "--nstreams", default=None, metavar="N|DEV:N,...",
                        help="NUM_STREAMS: a number, or per device as benchmark_app: CPU:2,CPUF:1")
    parser.add_argument("-pin", "--infer_threads_pinning", dest="threads_pinning", choices=["YES", "NO"],
                        default=None, help="ENABLE_CPU_PINNING for CPU devices (benchmark_app's -pin)")
    parser.add_argument("-cdir", "--cache_dir", dest="cdir", default=None,
                        help="OpenVINO's model cache (CACHE_DIR); ov_autoplace's own cache is separate (docs/cache.md)")
    parser.add_argument("-dump_config", "--dump-config", dest="dump_config", type=Path, default=None,
                        help="write the properties this run set, in -load_config's format")


def add_run_args(parser: argparse.ArgumentParser, *, niter_default: int | None = None) -> None:
    """How long to time (benchmark_app's -niter, -t, -nireq) and what to report (-report_type...)."""
    parser.add_argument("-niter", "--niter", type=int, default=niter_default,
                        help=f"timed inferences per measurement (default {DEFAULT_NITER}; with -t: until the time)")
    parser.add_argument("-t", "--time", type=float, default=None, help="seconds to time each measurement")
    parser.add_argument("-nireq", "--nireq", type=int, default=1,
                        help="infer requests in flight (default 1: latency; more: also the throughput, async)")
    parser.add_argument("-report_type", "--report-type", dest="report_type", default=None,
                        choices=["no_counters", "average_counters", "detailed_counters"],
                        help="write a report to -report_folder: the run's parameters and results; *_counters: "
                             "also each node's PERF_COUNT time")
    parser.add_argument("-report_folder", "--report-folder", dest="report_folder", type=Path, default=Path("."),
                        help="folder for -report_type (default: .)")
    parser.add_argument("-json_stats", "--json-stats", dest="json_stats", action="store_true",
                        help="write the report as JSON instead of CSV")


def add_model_device_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--model", required=True, help="model file OpenVINO can read (IR .xml, .onnx, ...)")
    add_device_args(parser)
    # the lab's names are accepted here even without the lab: the API then says what to install, in one line
    names = strategy_names()
    parser.add_argument("--strategy", default=None, choices=names + [n for n in LAB_STRATEGIES if n not in names],
                        help="placement strategy (default: the library's, as compile_model: a stored profile or "
                             "the prior, nothing measured; `ov-autoplace strategies` lists them)")
    parser.add_argument("--pin-node", dest="pin", action="append", default=[], metavar="NODE=DEVICE",
                        help="pin a node name, a pattern ('*attn*') or 'type:MatMul' to a device; repeatable")
    parser.add_argument("--pin", dest="pin", action=_DeprecatedPin, metavar="NODE=DEVICE",
                        help="deprecated spelling of --pin-node (removed after 0.1)")
    parser.add_argument("--exclude", action="append", default=[], metavar="DEVICE", help="do not use this device")
    parser.add_argument("--max-submodels", type=int, default=api.DEFAULT_MAX_SUBMODELS,
                        help=f"bound on HETERO submodels (default {api.DEFAULT_MAX_SUBMODELS})")
    parser.add_argument("-shape", "--shape", default=None, metavar="SHAPES",
                        help="for a model with dynamic dimensions, the static shapes to place (and time) it for, "
                             "as benchmark_app's -shape: 'input_ids[1,128],attention_mask[1,128]' or '[1,3,224,224]' "
                             f"(default: {DEFAULT_BATCH} for a dynamic axis 0, {DEFAULT_DIM} for other dynamic axes)")
    add_inputs_arg(parser)
    parser.add_argument("--generation", type=_generation, default=None, metavar="PROMPT,NEW",
                        help="a stateful decoder's generation to place and verify for: prompt tokens, new tokens "
                             "(default 128,128 for a decoder; docs/llm.md)")
    parser.add_argument("--search-budget", type=_budget, default=None, metavar="N|SECONDS",
                        help="fine-tune the HSDAG policy on the devices: N measured placements (e.g. 30) or "
                             "seconds (e.g. 60.0); needs the train extra")


def _generation(text: str) -> tuple[int, int]:
    """``--generation 128,128``: (prompt tokens, new tokens); the API checks them against the model."""
    try:
        prompt, new = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected PROMPT,NEW token counts (e.g. 128,128), got {text!r}") from None
    return prompt, new


def _budget(text: str) -> int | float:
    """``--search-budget``: an int is measured placements, a number with '.' or an exponent is seconds; the bound is
    the API's own (``call_request.check_search_budget``)."""
    try:
        budget = float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of placements (30) or seconds (60.0), got {text!r}")
    try:
        api.check_search_budget(budget)
    except PlacementError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return budget


def _loaded_config(args) -> dict[str, dict[str, Any]]:
    path = getattr(args, "load_config", None)
    if path is None:
        return {}

    def parse(data) -> dict[str, dict[str, Any]]:
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise ValueError('expected {"DEVICE": {"PROPERTY": value, ...}, ...}')
        return {str(device): dict(props) for device, props in data.items()}

    return read_json_file(path, "-load_config", parse)


def config_of(args) -> dict[str, object]:
    """The compile config the flags ask for (benchmark_app's meaning of each); -load_config's meta section below."""
    config: dict[str, object] = {}
    loaded = _loaded_config(args)
    meta = (args.device or "").split(":")[0]
    if meta in META_DEVICES:
        config.update(loaded.get(meta, {}))
    if not hasattr(args, "hint"):  # a command without the property flags (profile)
        return config
    hint = HINTS[args.hint]
    if hint is not None:
        config["PERFORMANCE_HINT"] = hint
    if args.nstreams:
        if ":" in args.nstreams:  # per device: CPU:2,CPUF:1
            per_device: dict[str, dict[str, str]] = {}
            for item in args.nstreams.split(","):
                device, _, streams = item.partition(":")
                if not device or not streams:
                    raise PropertyError(f"-nstreams expects N or DEVICE:N,DEVICE:N (e.g. CPU:2,CPUF:1), got "
                                        f"{args.nstreams!r}")
                per_device[device.strip()] = {"NUM_STREAMS": streams.strip()}
            config["DEVICE_PROPERTIES"] = per_device
        else:
            config["NUM_STREAMS"] = args.nstreams
    if args.threads_pinning:
        config["ENABLE_CPU_PINNING"] = args.threads_pinning
    if args.cdir:
        config["CACHE_DIR"] = args.cdir
    return config


def core_and_device(args) -> tuple[ov.Core, str | None]:
    """The core (``-load_config``'s device sections set on it) and what ``place`` takes for ``-d``."""
    if args.testbed:
        testbed = make_testbed()
        core, device = testbed.core, args.device or testbed.hetero
    else:
        core, device = ov.Core(), args.device
    for section, props in _loaded_config(args).items():
        if section not in META_DEVICES:  # benchmark_app: core.set_property(device, its section)
            try:  # the plugin loaded first: set on a plugin not yet loaded, a bad property lingers and every
                core.get_property(section, "FULL_DEVICE_NAME")  # device later reads "not available"
            except Exception:  # noqa: BLE001 - a device this machine lacks: OpenVINO keeps its section, as before
                pass
            try:
                core.set_property(section, props)
            except Exception as exc:  # noqa: BLE001 - OpenVINO: RuntimeError (or TypeError) with a long trace
                first_line = next((line for line in str(exc).splitlines() if line.strip()
                                   and not line.startswith("Exception from")), type(exc).__name__)
                raise PropertyError(f"-load_config {args.load_config}: {section} rejects {props} ({first_line}); "
                                    "expected properties that device has (e.g. {\"CPU\": {\"NUM_STREAMS\": 1}})"
                                    ) from None
    target, _ = placement_target(core, device, config_of(args))
    return core, target


def dump_config(args, devices: Sequence[str]) -> None:
    """``-dump_config``: what this run set, per device, in ``-load_config``'s format (it loads back)."""
    if not getattr(args, "dump_config", None):
        return
    dumped = _loaded_config(args)
    config = config_of(args)
    per_device = config.pop("DEVICE_PROPERTIES", {})
    for device in devices:
        section = dumped.setdefault(device, {})
        section.update({k: str(v) for k, v in config.items()})
        section.update(per_device.get(device, {}))
    args.dump_config.parent.mkdir(parents=True, exist_ok=True)
    args.dump_config.write_text(json.dumps(dumped, indent=4, sort_keys=True))
    print(f"config written to {args.dump_config}")


def single_device_config(config: dict[str, object], device: str) -> dict[str, object]:
    """``config`` for ``device`` alone: its DEVICE_PROPERTIES section merged in, HETERO's keys left out."""
    own = {k: v for k, v in config.items() if k not in ("DEVICE_PROPERTIES", "MULTI_DEVICE_PRIORITIES",
                                                         "MODEL_DISTRIBUTION_POLICY")}
    own.update(dict(config.get("DEVICE_PROPERTIES", {})).get(device, {}))  # type: ignore[call-overload]
    return own


def _pins(values: Sequence[str]) -> dict[str, str]:
    pins = {}
    for item in values:
        name, sep, device = item.rpartition("=")
        if not sep or not name or not device:
            raise PinError(f"--pin-node expects NODE=DEVICE (e.g. 'type:MatMul=GPU'), got {item!r}")
        pins[name] = device
    return pins


def _timed(compiled, inputs, args):
    """LatencyStats for -niter/-t: -t alone runs until the time, -niter alone that many, both: the first reached."""
    iterations = args.niter or (10 ** 9 if args.time else DEFAULT_NITER)
    return measure_latency(compiled, inputs, iterations=iterations, max_seconds=args.time or 0.0)


def throughput_fps(compiled: ov.CompiledModel, inputs, args) -> float:
    """Inferences per second with ``-nireq`` requests in flight (AsyncInferQueue), for -niter or -t."""
    queue = ov.AsyncInferQueue(compiled, args.nireq)
    count = args.niter or (10 ** 9 if args.time else DEFAULT_NITER * args.nireq)
    for _ in range(args.nireq):  # warm-up: one inference per request
        queue.start_async(list(inputs))
    queue.wait_all()
    t0 = time.perf_counter()
    done = 0
    while done < count and (not args.time or time.perf_counter() - t0 < args.time):
        queue.start_async(list(inputs))
        done += 1
    queue.wait_all()
    return done / (time.perf_counter() - t0)


def add_inputs_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inputs", type=Path, default=None, metavar="FILE.npz",
                        help="an input sample to measure with (numpy .npz, one array per input name), for what the "
                             "conventions cannot guess; its shapes are the placement shapes (docs/llm.md)")


def read_inputs(args, model: ov.Model) -> tuple[dict | None, Any]:
    """``(sample, shapes)`` from ``--inputs`` (checked against ``model``) and ``--shape``: the sample's shapes
    unless ``--shape`` is given. ShapeError for a file that is not an .npz of arrays or a sample the model rejects."""
    path = getattr(args, "inputs", None)
    if path is None:
        return None, args.shape
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as archive:
            raw = {name: archive[name] for name in archive.files}
    except (OSError, ValueError) as exc:
        raise ShapeError(f"--inputs {path}: not a numpy .npz of arrays named by input ({exc})") from None
    sample = check_input_sample(model, raw)
    return sample, args.shape if args.shape is not None else sample_shapes(model, sample)


def placed_and_measured(args, opened: tuple[ov.Core, str | None] | None = None):
    """Place (or load ``--placement``), then time it and every single device unless ``--no-measure``."""
    core, device = opened or core_and_device(args)
    model = api.load_model(args.model, core)
    config = config_of(args)
    sample, shapes = read_inputs(args, model)
    t0 = time.perf_counter()
    if getattr(args, "placement", None):
        from ov_autoplace.placement.placed_graph import check_placement_matches

        placement = Placement.load(args.placement)
        check_placement_matches(placement, extract_graph(prepare_model(model)), source=f"placement {args.placement}")
    else:
        placement = api.place(model, device, config, core=core, strategy=args.strategy, pins=_pins(args.pin),
                              exclude_devices=args.exclude, max_submodels=args.max_submodels,
                              search_budget=args.search_budget, shapes=shapes, inputs=sample,
                              generation=getattr(args, "generation", None))
    place_s = time.perf_counter() - t0
    dump_config(args, placement.devices)
    if not args.no_measure:
        placed = api.compile_placement(model, placement, config, core=core)
        with input_sample(sample):  # dynamic: the placement shapes
            inputs = random_inputs(placed, shapes=resolve_shapes(model, shapes))
        placement.measured_latency_ms = _timed(placed, inputs, args).median_ms
        if args.nireq > 1:
            placement.notes.append(f"throughput with {args.nireq} requests: {throughput_fps(placed, inputs, args):.1f} "
                                   "inferences/s")
        for dev in placement.devices:
            single = core.compile_model(model, dev, single_device_config(config, dev))
            placement.reference_latency_ms[dev] = _timed(single, inputs, args).median_ms
    if getattr(args, "report_type", None):
        from ov_autoplace.cli.report import write_report

        write_report(args, placement, config, place_s, model, core, None if args.no_measure else inputs)
    return model, placement, place_s
