"""The arguments and helpers every model command shares (``place``, ``profile``, ``show``, ``compare``).

A module of its own so that ``cli.py`` and ``picture_commands.py`` both use it without importing each other.
"""

from __future__ import annotations

import argparse
import time
from typing import Sequence

import openvino as ov

from . import api
from .errors import PinError
from .graph import extract_graph
from .placement import Placement
from .prepare import prepare_model
from .shapes import DEFAULT_BATCH, DEFAULT_DIM, resolve_shapes
from .strategies.registry import strategy_names
from .testbed import make_testbed
from .timing import measure_latency, random_inputs


def _add_model_device_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--model", required=True, help="model file OpenVINO can read (IR .xml, .onnx, ...)")
    parser.add_argument("-d", "--device", default=None,
                        help="device string, e.g. HETERO:GPU,CPU (default: the testbed's HETERO:CPU,CPUF)")
    parser.add_argument("--testbed", action="store_true",
                        help="register the standard testbed (CPU bf16 + virtual CPUF f32, all cores each)")
    parser.add_argument("-hint", "--hint", choices=["latency", "throughput", "none"], default="latency",
                        help="PERFORMANCE_HINT passed to the compile (default: latency)")
    parser.add_argument("--strategy", default=api.DEFAULT_STRATEGY.value,
                        choices=strategy_names(), help="placement strategy (`ov-autoplace strategies` lists them)")
    parser.add_argument("--pin", action="append", default=[], metavar="NODE=DEVICE",
                        help="pin a node name, a pattern ('*attn*') or 'type:MatMul' to a device; repeatable")
    parser.add_argument("--exclude", action="append", default=[], metavar="DEVICE", help="do not use this device")
    parser.add_argument("--max-submodels", type=int, default=api.DEFAULT_MAX_SUBMODELS,
                        help=f"bound on HETERO submodels (default {api.DEFAULT_MAX_SUBMODELS})")
    parser.add_argument("-shape", "--shape", default=None, metavar="SHAPES",
                        help="for a model with dynamic dimensions, the static shapes to place (and time) it for, "
                             "as benchmark_app's -shape: 'input_ids[1,128],attention_mask[1,128]' or '[1,3,224,224]' "
                             f"(default: {DEFAULT_BATCH} for a dynamic axis 0, {DEFAULT_DIM} for other dynamic axes)")
    parser.add_argument("--search-budget", type=_budget, default=None, metavar="N|SECONDS",
                        help="fine-tune the HSDAG policy on the devices: N measured placements (e.g. 30) or "
                             "seconds (e.g. 60.0); needs the train extra")


def _budget(text: str) -> int | float:
    try:
        return float(text) if "." in text else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of placements (30) or seconds (60.0), got {text!r}")


def _core_and_device(args) -> tuple[ov.Core, str]:
    if args.testbed or args.device is None:
        testbed = make_testbed()
        return testbed.core, args.device or testbed.hetero
    return ov.Core(), args.device


def _pins(values: Sequence[str]) -> dict[str, str]:
    pins = {}
    for item in values:
        name, sep, device = item.rpartition("=")
        if not sep or not name or not device:
            raise PinError(f"--pin expects NODE=DEVICE (e.g. 'type:MatMul=GPU'), got {item!r}")
        pins[name] = device
    return pins


def _config(args) -> dict[str, object]:
    return {} if args.hint == "none" else {"PERFORMANCE_HINT": args.hint.upper()}


def _placed_and_measured(args, core_and_device: tuple[ov.Core, str] | None = None):
    """Place (or load ``--placement``), then time it and every single device unless ``--no-measure``."""
    core, device = core_and_device or _core_and_device(args)
    model = api.load_model(args.model, core)
    t0 = time.perf_counter()
    if getattr(args, "placement", None):
        from .viz.placed import check_placement_matches

        placement = Placement.load(args.placement)
        check_placement_matches(placement, extract_graph(prepare_model(model)), source=f"placement {args.placement}")
    else:
        placement = api.place(model, device, core=core, strategy=args.strategy, pins=_pins(args.pin),
                              exclude_devices=args.exclude, max_submodels=args.max_submodels,
                              search_budget=args.search_budget, shapes=args.shape)
    place_s = time.perf_counter() - t0
    if not args.no_measure:
        config = _config(args)
        placed = api.compile_placement(model, placement, config, core=core)
        inputs = random_inputs(placed, shapes=resolve_shapes(model, args.shape))  # dynamic: the placement shapes
        placement.measured_latency_ms = measure_latency(placed, inputs, iterations=args.niter).median_ms
        for dev in placement.devices:
            single = core.compile_model(model, dev, config)
            placement.reference_latency_ms[dev] = measure_latency(single, inputs, iterations=args.niter).median_ms
    return model, placement, place_s
