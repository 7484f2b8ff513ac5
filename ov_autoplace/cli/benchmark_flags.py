"""benchmark_app's flags, taken from benchmark_app's own parser (``openvino.tools.benchmark.parameters``).

``place`` (and ``show``, ``profile``) declare every flag ``benchmark_app -h`` lists, short and long, from that
parser: spelling, value type, choices and ``nargs`` are benchmark_app's, so ``-json_stats True``,
``--number_iterations 5`` and ``-data_shape [1,3,224,224]`` parse as they do there. A flag is either accepted with
benchmark_app's meaning (:data:`ACCEPTED`: the ``args`` attribute it fills, our default where it differs) or
rejected in one line saying why it has no meaning for the command (:data:`REJECTED`); a flag a later OpenVINO adds
is rejected as unknown to this ov_autoplace. The meaning of each accepted flag is applied in ``cli/args.py``
(compile properties), ``cli/statistics.py`` (the benchmark_app run) and ``cli/report.py`` (the reports).

benchmark_app's parser module configures the root logger when imported (INFO on stdout); it is imported here only
when a command line is parsed, and the root logger is put back as it was.
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
    """A benchmark_app flag a command takes: the ``args`` attribute it fills, our default and a note for --help."""

    def __init__(self, dest: str, default: Any = None, note: str = "", *, aliases: tuple[str, ...] = (),
                 type: Any = None):
        self.dest, self.default, self.note, self.aliases, self.type = dest, default, note, aliases, type


def _positive_seconds(text: str) -> float:
    """``-t``: benchmark_app's positive seconds; a fraction (0.5) is accepted too, so short measurements stay short."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text} is an invalid positive number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is an invalid positive number of seconds")
    return value


#: benchmark_app dest -> how ov-autoplace takes it (the meaning is benchmark_app's; docs/cli.md lists the defaults).
ACCEPTED: dict[str, Accepted] = {
    "path_to_model": Accepted("model", note="an .xml/.onnx model to place (a compiled .blob cannot be placed)",
                              aliases=("--model",)),
    "target_device": Accepted("device", note="default: no device, OpenVINO's default: the devices this machine has "
                                             "(--testbed: the testbed's HETERO)", aliases=("--device",)),
    "perf_hint": Accepted("hint", "latency", "default: latency, what a placement minimises"),
    "number_iterations": Accepted("niter", None, "default: 20 per measurement (with -t: until the time); 0: place "
                                                 "and compile, no inference"),
    "time": Accepted("time", None, "fractions of a second accepted", type=_positive_seconds),
    "shape": Accepted("shape", None, "the static shapes to place a dynamic model at", aliases=("--shape",)),
    "data_shape": Accepted("data_shape", None, "one shape set: the shapes to place and time a dynamic model at"),
    "extensions": Accepted("extensions"),
    "path_to_cldnn_config": Accepted("path_to_cldnn_config"),
    "cache_dir": Accepted("cdir", None, "OpenVINO's model cache; ov_autoplace's own cache is separate"),
    "api_type": Accepted("api_type", None),
    "number_infer_requests": Accepted("nireq", 0),
    "number_streams": Accepted("nstreams"),
    "inference_only": Accepted("inference_only", None, "only true: ov-autoplace fills inputs once"),
    "no_warmup": Accepted("no_warmup", False, "skips the final run's first inference"),
    "infer_precision": Accepted("infer_precision"),
    "number_threads": Accepted("nthreads"),
    "infer_threads_pinning": Accepted("threads_pinning"),
    "latency_percentile": Accepted("latency_percentile", 50),
    "report_type": Accepted("report_type"),
    "report_folder": Accepted("report_folder", ".", "files are named ov_autoplace_*"),
    "json_stats": Accepted("json_stats", False),
    "perf_counts": Accepted("perf_counts", False),
    "perf_counts_sort": Accepted("perf_counts_sort", ""),
    "exec_graph_path": Accepted("exec_graph_path"),
    "dump_config": Accepted("dump_config"),
    "load_config": Accepted("load_config"),
}

#: benchmark_app dest -> why it has no meaning for placing a model (printed as the error).
REJECTED: dict[str, str] = {
    "paths_to_input": "a placement is measured on generated inputs or on one sample; give it as --inputs FILE.npz "
                      "(one array per input name)",
    "maximum_inference_rate": "a capped inference rate (for power measurements) would time the cap, not the "
                              "placement",
    "batch_size": "set the batch in the shape instead: -shape [8,3,224,224] (a placement is for one static shape)",
    "layout": "layouts only steer benchmark_app's batch and image preprocessing, which ov-autoplace does not do; "
              "give shapes with -shape",
    "load_from_file": "a placement needs the model's graph, which compiling straight from the file skips",
    "input_precision": "a placement is made for the model's own input element types; convert the model first",
    "output_precision": "a placement is made for the model's own output element types; convert the model first",
    "input_output_precision": "a placement is made for the model's own element types; convert the model first",
    "mean_values": "image preprocessing is not part of placing a model; bake it into the model first",
    "scale_values": "image preprocessing is not part of placing a model; bake it into the model first",
    "pcseq": "a placement is measured at one shape set, so there is no -data_shape sequence to report",
}

#: The flags ``profile`` takes (it profiles with its own compile settings: the property flags would be ignored).
PROFILE_FLAGS = ("path_to_model", "target_device", "number_iterations", "shape", "data_shape", "extensions",
                 "path_to_cldnn_config", "load_config")
PROFILE_REASON = "profile measures per-op times with its own compile settings (PERF_COUNT, one request); " \
                 "use it with `ov-autoplace place`"


def _benchmark_module(name: str):
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
    return _benchmark_module(BENCHMARK_PARAMETERS).parse_args()


def benchmark_utils():
    """benchmark_app's helpers (its performance-counter printers), imported as the parser is."""
    return _benchmark_module(BENCHMARK_UTILS)


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
           "benchmark_actions", "benchmark_app_parser", "benchmark_utils", "reject_other_benchmark_flags"]
