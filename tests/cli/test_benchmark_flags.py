"""benchmark_app's flags on ``place`` and ``profile``: generated from benchmark_app's own parser, not a hand list.

Every flag benchmark_app's parser declares (``openvino.tools.benchmark.parameters``), each option string, short and
long, is given to ``place`` and ``profile`` with a value benchmark_app accepts: it parses to the value benchmark_app's
parser gives (same type, same meaning) or is rejected in one ``error:`` line naming the flag and why, exit 2.
"""

import argparse
import subprocess
import sys

import pytest

from ov_autoplace.cli.args import checked_args, config_of
from ov_autoplace.cli.benchmark_flags import ACCEPTED, PROFILE_FLAGS, REJECTED, benchmark_app_parser
from ov_autoplace.cli.main import build_parser
from ov_autoplace.errors import PlacementError, ShapeError


def _bench_flags():
    return [(a, option) for a in benchmark_app_parser()._actions if a.dest != "help" for option in a.option_strings]


def _value(action: argparse.Action) -> list[str]:
    """A value benchmark_app's parser takes for ``action`` (none for a switch)."""
    if action.nargs == 0:
        return []
    if action.choices:
        return [list(action.choices)[-1]]
    name = getattr(action.type, "__name__", "")
    if name == "str2bool":
        return ["True"]
    if name in ("int", "check_positive", "check_nonneg"):
        return ["3"]
    if name == "float":
        return ["2.5"]
    return ["[1,2]" if "shape" in action.dest else "x"]


def test_every_benchmark_app_flag_is_either_taken_or_rejected_with_a_reason():
    dests = {a.dest for a in benchmark_app_parser()._actions if a.dest != "help"}
    assert dests and dests == set(ACCEPTED) | set(REJECTED) and not set(ACCEPTED) & set(REJECTED), \
        "a benchmark_app flag this OpenVINO adds needs a meaning or a reason (cli/benchmark_flags.py)"
    assert len(_bench_flags()) > 60  # short and long forms


@pytest.mark.parametrize("command", ["place", "profile"])
@pytest.mark.parametrize("action,option", _bench_flags(), ids=lambda x: x if isinstance(x, str) else "")
def test_a_benchmark_app_flag_means_what_it_means_there_or_is_one_error_line(command, action, option, capsys):
    value = _value(action)
    model = [] if action.dest == "path_to_model" else ["-m", "model.xml"]
    argv = [*model, option, *value]
    taken = action.dest in ACCEPTED and (command == "place" or action.dest in PROFILE_FLAGS)
    if taken:
        ours = build_parser().parse_args([command, *argv])
        theirs = benchmark_app_parser().parse_args(argv)
        assert getattr(ours, ACCEPTED[action.dest].dest) == getattr(theirs, action.dest), (option, value)
    else:
        with pytest.raises(SystemExit) as info:
            build_parser().parse_args([command, *argv])
        assert info.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "error:" in err[0] and option in err[0] and "no meaning here: " in err[0], err


def test_single_dash_words_and_long_forms_parse_as_benchmark_app_parses_them():
    args = build_parser().parse_args(["place", "-m", "m.xml", "-data_shape", "x[1,2]"])
    assert args.device is None and args.data_shape == "x[1,2]"  # was: -d "ata_shape"
    args = build_parser().parse_args(["place", "--path_to_model", "m.xml", "--target_device", "CPU",
                                      "--number_iterations", "7", "--json_stats", "--perf_hint", "throughput",
                                      "--number_infer_requests", "3", "--time", "2", "--report_type", "no_counters"])
    assert (args.model, args.device, args.niter, args.json_stats, args.hint, args.nireq, args.time) == \
        ("m.xml", "CPU", 7, True, "throughput", 3, 2)
    for text, expected in (("True", True), ("false", False), ("yes", True), ("0", False)):
        assert build_parser().parse_args(["place", "-m", "m.xml", "-json_stats", text]).json_stats is expected
    assert build_parser().parse_args(["place", "-m", "m.xml", "-t", "0.5"]).time == 0.5  # a fraction: ours only


def _checked(*flags):
    args = build_parser().parse_args(["place", "-m", "m.xml", *flags])
    checked_args(args)
    return args


def test_flags_set_the_properties_benchmark_app_sets():
    config = config_of(_checked("-hint", "none", "-nthreads", "2", "-pin", "NO", "-nstreams", "CPU:1,CPUF:2",
                                "-infer_precision", "CPU:f32", "-nireq", "2", "-cdir", "/tmp/x"))
    assert "PERFORMANCE_HINT" not in config
    assert config["INFERENCE_NUM_THREADS"] == 2 and config["ENABLE_CPU_PINNING"] == "NO"
    assert config["PERFORMANCE_HINT_NUM_REQUESTS"] == 2 and config["CACHE_DIR"] == "/tmp/x"
    assert config["DEVICE_PROPERTIES"] == {"CPU": {"NUM_STREAMS": "1", "INFERENCE_PRECISION_HINT": "f32"},
                                           "CPUF": {"NUM_STREAMS": "2"}}
    config = config_of(_checked("-hint", "tput", "-infer_precision", "bf16"))
    assert config["PERFORMANCE_HINT"] == "THROUGHPUT" and config["INFERENCE_PRECISION_HINT"] == "bf16"


def test_api_defaults_and_checks_follow_benchmark_app():
    assert _checked().api_type == "sync"  # -hint latency (ours by default): sync, as benchmark_app
    assert _checked("-hint", "throughput").api_type == "async"
    assert _checked("-hint", "latency", "-api", "async").api_type == "async"
    assert _checked("-data_shape", "[1,3]").shape == "[1,3]"  # one set: the placement shapes
    with pytest.raises(ShapeError, match="several shape sets"):
        _checked("-data_shape", "x[1,3][1,6]")
    for flags in (["-latency_percentile", "0"], ["-inference_only", "false"], ["-niter", "2", "-nireq", "3"]):
        with pytest.raises(PlacementError):
            _checked(*flags)


def test_benchmark_app_is_imported_only_when_a_command_line_is_parsed():
    code = ("import sys, ov_autoplace, ov_autoplace.cli.main\n"
            "assert not [m for m in sys.modules if m.startswith('openvino.tools.benchmark')]\n"
            "ov_autoplace.cli.main.build_parser()\n"
            "assert 'openvino.tools.benchmark.parameters' in sys.modules\n"
            "import logging; assert not logging.getLogger().handlers, 'benchmark_app configured logging'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
