"""benchmark_app's flags from benchmark_app's own parser (``openvino.tools.benchmark.parameters``): each taken with
its meaning (:data:`ACCEPTED`) or rejected in one line saying why (:data:`REJECTED`); docs/cli.md, "One style of flags".
"""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
from typing import Any, Iterable, Mapping

#: Where benchmark_app's parser lives in the openvino wheel.
BENCHMARK_PARAMETERS = "openvino.tools.benchmark.parameters"
BENCHMARK_UTILS = "openvino.tools.benchmark.utils.utils"


class Accepted:
    """A flag a command takes: the ``args`` attribute it fills, our default, a note for --help."""

    def __init__(self, dest: str, default: Any = None, note: str = "", *, aliases: tuple[str, ...] = (),
                 type: Any = None):
        self.dest, self.default, self.note, self.aliases, self.type = dest, default, note, aliases, type


def _positive_seconds(text: str) -> float:
    """``-t``: positive seconds, fractions too (benchmark_app: whole seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text} is an invalid positive number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is an invalid positive number of seconds")
    return value


#: benchmark_app dest -> how ov-autoplace takes it (docs/cli.md).
ACCEPTED: dict[str, Accepted] = {
    "path_to_model": Accepted("model", note="not a .blob", aliases=("--model",)),
    "target_device": Accepted("device", note="default: this machine's devices (--testbed: its HETERO)",
                              aliases=("--device",)),
    "perf_hint": Accepted("hint", "latency", "default: latency"),
    "number_iterations": Accepted("niter", None, "default: 20 per measurement"),
    "time": Accepted("time", None, "fractions too", type=_positive_seconds),
    "shape": Accepted("shape", None, "static shapes to place a dynamic model at", aliases=("--shape",)),
    "data_shape": Accepted("data_shape", None, "one shape set"),
    "extensions": Accepted("extensions"),
    "path_to_cldnn_config": Accepted("path_to_cldnn_config"),
    "cache_dir": Accepted("cdir"),
    "api_type": Accepted("api_type", None),
    "number_infer_requests": Accepted("nireq", 0),
    "number_streams": Accepted("nstreams"),
    "inference_only": Accepted("inference_only", None, "true only"),
    "no_warmup": Accepted("no_warmup", False),
    "infer_precision": Accepted("infer_precision"),
    "number_threads": Accepted("nthreads"),
    "infer_threads_pinning": Accepted("threads_pinning"),
    "latency_percentile": Accepted("latency_percentile", 50),
    "report_type": Accepted("report_type"),
    "report_folder": Accepted("report_folder", "."),
    "json_stats": Accepted("json_stats", False),
    "perf_counts": Accepted("perf_counts", False),
    "perf_counts_sort": Accepted("perf_counts_sort", ""),
    "exec_graph_path": Accepted("exec_graph_path"),
    "dump_config": Accepted("dump_config"),
    "load_config": Accepted("load_config"),
}

_TYPES = "a placement is made for the model's own element types; convert the model first"
_PREPROCESSING = "image preprocessing is not part of placing a model; put it in the model first"
#: benchmark_app dest -> why it has no meaning for placing a model (printed as the error).
REJECTED: dict[str, str] = {
    "paths_to_input": "a placement is measured on generated inputs or one sample: --inputs FILE.npz",
    "maximum_inference_rate": "a capped rate (for power measurements) would time the cap, not the placement",
    "batch_size": "give the batch in the shape: -shape [8,3,224,224]",
    "layout": "layouts steer only benchmark_app's batch and preprocessing; give shapes with -shape",
    "load_from_file": "a placement needs the model's graph, which compiling from the file skips",
    "input_precision": _TYPES, "output_precision": _TYPES, "input_output_precision": _TYPES,
    "mean_values": _PREPROCESSING, "scale_values": _PREPROCESSING,
    "pcseq": "a placement is measured at one shape set: no -data_shape sequence",
}

#: The flags ``profile`` takes (it profiles with its own compile settings: the property flags would be ignored).
PROFILE_FLAGS = ("path_to_model", "target_device", "number_iterations", "shape", "data_shape", "extensions",
                 "path_to_cldnn_config", "load_config")
PROFILE_REASON = "profile measures per-op times with its own compile settings; use it with `place`"


def benchmark_module(name: str):
    """A module of benchmark_app (``openvino.tools.benchmark...``), imported with the root logger put back."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        return importlib.import_module(name)
    finally:  # benchmark_app's logging module calls basicConfig(INFO, stdout) on import
        root.handlers[:] = handlers
        root.setLevel(level)


@functools.lru_cache(maxsize=1)
def benchmark_app_parser() -> argparse.ArgumentParser:
    """benchmark_app's own parser, as ``benchmark_app`` builds it."""
    return benchmark_module(BENCHMARK_PARAMETERS).parse_args()


def benchmark_utils():
    """benchmark_app's helpers (``utils/utils.py``: counter printers, batch, iteration alignment), imported as the
    parser is."""
    return benchmark_module(BENCHMARK_UTILS)


def benchmark_actions() -> list[argparse.Action]:
    """Every flag benchmark_app declares except its help (each command has its own ``-h``)."""
    return [a for a in benchmark_app_parser()._actions if a.dest != "help"]


def _kwargs(action: argparse.Action) -> dict[str, Any]:
    """add_argument's keywords that make a flag parse exactly as benchmark_app's ``action`` does."""
    if isinstance(action, argparse._StoreTrueAction):
        return {"action": "store_true"}
    kwargs: dict[str, Any] = {"nargs": action.nargs, "type": action.type, "choices": action.choices,
                              "metavar": action.metavar}
    if isinstance(action, argparse._AppendAction):
        kwargs["action"] = "append"
    elif action.nargs == "?":
        kwargs["const"] = action.const
    return kwargs


def _help(action: argparse.Action, note: str) -> str:
    text = (action.help or "").replace("Optional. ", "").replace("Required. ", "").replace("%", "%%")
    return f"{text} [ov-autoplace: {note}]" if note else text


def add_benchmark_flags(parser: argparse.ArgumentParser, dests: Iterable[str],
                        overrides: Mapping[str, Accepted] | None = None) -> None:
    """Declare the benchmark_app flags ``dests`` (benchmark_app's dest names) with their :data:`ACCEPTED` meaning."""
    by_dest = {a.dest: a for a in benchmark_actions()}
    for dest in dests:
        action, accepted = by_dest.get(dest), {**ACCEPTED, **(overrides or {})}[dest]
        if action is None:  # an OpenVINO whose benchmark_app has no such flag: ours keeps its spelling
            continue
        kwargs = _kwargs(action)
        if accepted.type is not None:
            kwargs["type"] = accepted.type
        if action.required:
            kwargs["required"] = True
        parser.add_argument(*action.option_strings, *accepted.aliases, dest=accepted.dest, default=accepted.default,
                            help=_help(action, accepted.note), **kwargs)


class _NoMeaning(argparse.Action):
    """A benchmark_app flag the command does not take: one error line saying why, exit 2 (argparse's own)."""

    def __init__(self, option_strings, dest, reason: str = "", **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.reason = reason

    def __call__(self, parser, namespace, values, option_string=None):
        parser.exit(2, f"{parser.prog}: error: {'/'.join(self.option_strings)} (benchmark_app's {self.dest}) has "
                       f"no meaning here: {self.reason}\n")  # one line: no usage block before it


def reject_other_benchmark_flags(parser: argparse.ArgumentParser, reasons: Mapping[str, str] | None = None,
                                 default_reason: str | None = None) -> None:
    """Declare every benchmark_app flag ``parser`` does not already take as a one-line rejection."""
    taken = set(parser._option_string_actions)
    for action in benchmark_actions():
        if any(option in taken for option in action.option_strings):
            continue
        reason = (reasons or {}).get(action.dest) or REJECTED.get(action.dest) or default_reason or (
            "this ov-autoplace does not know this benchmark_app flag of a newer OpenVINO")
        kwargs = _kwargs(action)
        kwargs.pop("action", None)
        kwargs.pop("type", None)  # the value is never used: any value gets the reason, not a type error
        kwargs.pop("choices", None)
        if isinstance(action, argparse._StoreTrueAction):
            kwargs["nargs"] = 0
        parser.add_argument(*action.option_strings, action=_NoMeaning, dest=action.dest, reason=reason,
                            default=argparse.SUPPRESS, help=f"not taken: {reason}", **kwargs)


__all__ = ["ACCEPTED", "Accepted", "PROFILE_FLAGS", "PROFILE_REASON", "REJECTED", "add_benchmark_flags",
           "benchmark_actions", "benchmark_app_parser", "benchmark_module", "benchmark_utils",
           "reject_other_benchmark_flags"]
