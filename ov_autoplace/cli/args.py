"""The arguments and helpers every model command shares (``place``, ``profile``, ``show``, ``compare``), in a module
of its own so ``cli/main.py`` and the lab's ``commands/pictures.py`` share it; the flags: ``cli/benchmark_flags.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

import openvino as ov

from ov_autoplace import api
from ov_autoplace.cli.benchmark_flags import add_benchmark_flags, benchmark_utils, reject_other_benchmark_flags
from ov_autoplace.devices.memory_caps import parse_cap_option
from ov_autoplace.devices.targets import placement_target
from ov_autoplace.errors import PinError, PlacementError, PropertyError, ShapeError
from ov_autoplace.model.loading import read_json_file
from ov_autoplace.strategies.registry import LAB_STRATEGIES, strategy_names
from ov_autoplace.devices.testbed import make_testbed
from ov_autoplace.model.input_sample import check_input_sample, sample_shapes

#: Every PERFORMANCE_HINT OpenVINO has, with benchmark_app's short forms.
HINTS = {"latency": "LATENCY", "throughput": "THROUGHPUT", "tput": "THROUGHPUT",
         "cumulative_throughput": "CUMULATIVE_THROUGHPUT", "ctput": "CUMULATIVE_THROUGHPUT", "none": None}
META_DEVICES = ("AUTO", "HETERO", "MULTI", "BATCH")
DEFAULT_NITER = 20
#: benchmark_app's flags that choose the device and its compile properties.
DEVICE_FLAGS = ("target_device", "load_config", "extensions", "path_to_cldnn_config")
PROPERTY_FLAGS = ("perf_hint", "number_streams", "infer_threads_pinning", "number_threads", "infer_precision",
                  "cache_dir", "dump_config")
#: benchmark_app's flags that say how long to run, how, and what to report.
RUN_FLAGS = ("number_iterations", "time", "api_type", "number_infer_requests", "inference_only", "no_warmup",
             "latency_percentile", "report_type", "report_folder", "json_stats", "perf_counts", "perf_counts_sort",
             "exec_graph_path")


class _DeprecatedPin(argparse.Action):
    """``--pin NODE=DEVICE``, renamed ``--pin-node`` (``-pin`` is benchmark_app's thread pinning); kept for 0.1."""

    def __call__(self, parser, namespace, values, option_string=None):
        print("ov-autoplace: warning: --pin NODE=DEVICE is deprecated and will be removed after 0.1; use "
              "--pin-node NODE=DEVICE (-pin YES|NO is benchmark_app's thread pinning)", file=sys.stderr)
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])  # never the default


def add_device_args(parser: argparse.ArgumentParser, *, properties: bool = True) -> None:
    """``-d``, ``--testbed``, ``-load_config`` and (``properties``) the compile properties benchmark_app's flags set."""
    add_benchmark_flags(parser, DEVICE_FLAGS)
    parser.add_argument("--testbed", action="store_true",
                        help="register the standard testbed (CPU bf16 + virtual CPUF f32, all cores each)")
    if properties:  # a command that compiles with its own settings (profile) takes none it would ignore
        add_benchmark_flags(parser, PROPERTY_FLAGS)


def add_run_args(parser: argparse.ArgumentParser, *, niter_default: int | None = None) -> None:
    """How long to time and how (benchmark_app's -niter, -t, -api, -nireq...) and what to report (-report_type...);
    then every other benchmark_app flag, rejected in one line saying why."""
    add_benchmark_flags(parser, RUN_FLAGS)
    if niter_default is not None:
        parser.set_defaults(niter=niter_default)
    reject_other_benchmark_flags(parser)


def add_model_device_args(parser: argparse.ArgumentParser) -> None:
    add_benchmark_flags(parser, ("path_to_model",))
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
    add_memory_cap_arg(parser)
    parser.add_argument("--max-submodels", type=int, default=api.DEFAULT_MAX_SUBMODELS,
                        help=f"bound on HETERO submodels (default {api.DEFAULT_MAX_SUBMODELS})")
    add_benchmark_flags(parser, ("shape", "data_shape"))
    add_inputs_arg(parser)
    add_generation_arg(parser, "place and verify")
    parser.add_argument("--search-budget", type=_budget, default=None, metavar="N|SECONDS",
                        help="fine-tune the HSDAG policy on the devices: N measured placements (e.g. 30) or "
                             "seconds (e.g. 60.0); needs the train extra")


def checked_args(args) -> None:
    """What benchmark_app checks after parsing, and what ov-autoplace adds; a mistake is a PlacementError.

    ``-data_shape`` becomes the placement shapes (one shape set); ``-api`` gets benchmark_app's default
    (sync under the latency hint, async otherwise)."""
    percentile = getattr(args, "latency_percentile", 50)
    if not 1 <= percentile <= 100:
        raise PlacementError(f"-latency_percentile {percentile} is out of range; expected 1 to 100 (50: median)")
    if getattr(args, "inference_only", None) is False:
        raise PlacementError("-inference_only false is not taken: ov-autoplace fills the inputs once and times "
                             "inference only, so a device's time is not mixed with input filling; drop the flag")
    data_shape = getattr(args, "data_shape", None)
    if data_shape:
        if "][" in data_shape.replace(" ", ""):
            raise ShapeError(f"-data_shape {data_shape!r} gives several shape sets; a placement is made at one: "
                             "give one [..] per input (e.g. -data_shape input[1,3,224,224])")
        args.shape = data_shape
    if hasattr(args, "api_type") and not args.api_type:
        args.api_type = "sync" if args.hint == "latency" else "async"
    if getattr(args, "api_type", None) == "sync" and args.nireq and args.niter and not args.time \
            and args.nireq > args.niter:
        raise PlacementError(f"-nireq {args.nireq} is more than -niter {args.niter} in sync mode; expected "
                             "-nireq <= -niter (benchmark_app's rule)")


def add_memory_cap_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--memory-cap", dest="memory_cap", action="append", default=[], metavar="DEVICE=SIZE",
                        help="bytes DEVICE may hold (weights and KV cache), e.g. CPU=2GB or GPU=1.5GiB: the split "
                             "keeps each device under its cap (compile_model's memory_caps=); repeatable")


def memory_caps_of(args) -> dict[str, int] | None:
    """``--memory-cap DEVICE=SIZE`` (repeated) as ``memory_caps=``; None when none is given."""
    caps = dict(parse_cap_option(text) for text in getattr(args, "memory_cap", None) or ())
    return caps or None


def add_generation_arg(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--generation", type=_generation, default=None, metavar="PROMPT,NEW",
                        help=f"a stateful decoder's generation to {what} for: prompt tokens, new tokens "
                             "(default 128,128 for a decoder; docs/llm.md)")


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
        _per_device(config, "-nstreams", "NUM_STREAMS", args.nstreams, "N or DEVICE:N,DEVICE:N (e.g. CPU:2,CPUF:1)")
    if args.threads_pinning:
        config["ENABLE_CPU_PINNING"] = args.threads_pinning
    if args.nthreads:
        config["INFERENCE_NUM_THREADS"] = args.nthreads
    if args.infer_precision:
        _per_device(config, "-infer_precision", "INFERENCE_PRECISION_HINT", args.infer_precision, "bf16 or CPU:bf16,GPU:f32")
    if getattr(args, "nireq", 0):  # benchmark_app: -nireq given sets the hint's number of requests
        config["PERFORMANCE_HINT_NUM_REQUESTS"] = args.nireq
    if args.cdir:
        config["CACHE_DIR"] = args.cdir
    return config


def _per_device(config: dict[str, object], flag: str, key: str, text: str, expected: str) -> None:
    """benchmark_app's ``VALUE`` or ``DEVICE:VALUE,DEVICE:VALUE`` (the latter into DEVICE_PROPERTIES)."""
    if ":" not in text:
        config[key] = text
        return
    per_device = config.setdefault("DEVICE_PROPERTIES", {})
    for item in text.split(","):
        device, _, value = item.partition(":")
        if not device.strip() or not value.strip():
            raise PropertyError(f"{flag} expects {expected}, got {text!r}")
        per_device.setdefault(device.strip(), {})[key] = value.strip()  # type: ignore[union-attr]


def core_and_device(args) -> tuple[ov.Core, str | None]:
    """The core (``-load_config``'s device sections set on it) and what ``place`` takes for ``-d``."""
    if args.testbed:
        testbed = make_testbed()
        core, device = testbed.core, args.device or testbed.hetero
    else:
        core, device = ov.Core(), args.device
    for extension in (getattr(args, "extensions", None) or "").split(","):
        if extension.strip():  # benchmark_app's -extensions: libraries with custom ops, before the model is read
            core.add_extension(extension.strip())
    if getattr(args, "path_to_cldnn_config", None) and "GPU" in (device or ""):
        core.set_property("GPU", {"CONFIG_FILE": args.path_to_cldnn_config})  # benchmark_app's -c
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
        section.update(config)
        section.update(per_device.get(device, {}))
    Path(args.dump_config).parent.mkdir(parents=True, exist_ok=True)
    benchmark_utils().dump_config(args.dump_config, dumped)  # benchmark_app's writer: str values, bools YES/NO
    print(f"config written to {args.dump_config}")


def single_device_config(config: dict[str, object], device: str) -> dict[str, object]:
    """``config`` for ``device`` alone: its DEVICE_PROPERTIES section merged in, HETERO's keys left out."""
    own = {k: v for k, v in config.items() if k not in ("DEVICE_PROPERTIES", "MULTI_DEVICE_PRIORITIES",
                                                         "MODEL_DISTRIBUTION_POLICY")}
    own.update(dict(config.get("DEVICE_PROPERTIES", {})).get(device, {}))  # type: ignore[call-overload]
    return own


def pins_of(values: Sequence[str]) -> dict[str, str]:
    pins = {}
    for item in values:
        name, sep, device = item.rpartition("=")
        if not sep or not name or not device:
            raise PinError(f"--pin-node expects NODE=DEVICE (e.g. 'type:MatMul=GPU'), got {item!r}")
        pins[name] = device
    return pins


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
