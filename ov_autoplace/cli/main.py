"""``ov-autoplace``: the command line, in benchmark_app's conventions. Every command and flag: docs/cli.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from ov_autoplace import api
from ov_autoplace.cache.placement_cache import PlacementCache
from ov_autoplace.devices.targets import target_devices
from ov_autoplace.errors import OVAutoplaceError, ShapeError
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.generation import check_generation
from ov_autoplace.model.shapes import placement_clone
from ov_autoplace.devices.timing import input_sample
from ov_autoplace.cli.args import (add_device_args, add_generation_arg, add_inputs_arg, add_memory_cap_arg,
                                   add_model_device_args, add_run_args, checked_args, config_of, core_and_device,
                                   memory_caps_of, read_inputs)
from ov_autoplace.cli.benchmark_flags import (PROFILE_REASON, Accepted, add_benchmark_flags,
                                              reject_other_benchmark_flags)

logger = logging.getLogger("ov_autoplace")


def cmd_place(args) -> int:
    from ov_autoplace.cli.placed_run import placed_and_measured

    core, device = core_and_device(args)
    run = placed_and_measured(args, (core, device))
    model, placement = run.model, run.placement
    print(placement.summary(run.compiled_label))  # the simulated timeline of the placement: the lab's `show`
    print(f"  placing took {run.place_s:.2f} s")
    if run.statistics is not None:  # benchmark_app's closing statistics, for the placed model
        print("\n".join(run.statistics.lines))
    if args.output:
        placement.save(args.output)
        print(f"placement written to {args.output}")
    if args.save_model:  # the IR with the placement in its rt_info (saved_model.py); ov.save_model keeps none
        from ov_autoplace.saved_model import save_model

        stored = save_model(model, args.save_model, placement, core=core, shapes=args.shape)  # verified first
        verdict = (stored.verification or {}).get("decision", "not needed: the plain call's placement")
        print(f"model with its placement written to {args.save_model} (verification: {verdict}; "
              f"{stored.counts_per_device()})")
    return 0


def _measured_profile(args, model, core, devices, store):
    from ov_autoplace.measuring.link_calibration import profile_links
    from ov_autoplace.measuring.profiler import measure_model_profile
    from ov_autoplace.measuring.providers import QUICK_LINK_CUTS, QUICK_LINK_SIZES

    if args.full:  # three compiles per device and a measured link calibration (minutes on big graphs)
        links = profile_links(core, devices, sizes=QUICK_LINK_SIZES, cuts=QUICK_LINK_CUTS, rounds=3,
                              seconds_per_variant=0.3, store=store) if len(devices) > 1 else None
        return measure_model_profile(model, core, devices, iterations=args.niter or 20, store=store, links=links)
    from ov_autoplace.measuring.quick_profile import quick_model_profile

    # one compile and a few PERF_COUNT runs per device (measuring/quick_profile.py); -niter asks for exactly that
    # many profiled runs; without it a slow model stops at the time budget
    return quick_model_profile(model, core, devices, iterations=args.niter or 6, store=store,
                               **({"budget_ms": None} if args.niter else {}))


def _decode_steps(model, graph, cost, generation, core, store) -> str:
    """A decoder's decode steps profiled as the measuring paths of ``compile_model`` profile them, and stored, so the
    next start places on the whole generation, not on the prefill alone; a line to print. ``graph``, ``cost``: the
    prefill clone's and its profile."""
    from ov_autoplace.measuring.generation_profile import generation_profile, profile_links_of
    from ov_autoplace.model.generation import decode_pasts

    try:
        _, whole = generation_profile(model, graph, cost, generation, core, store=store,
                                      links=profile_links_of(cost), measure=True)
    except Exception as exc:  # noqa: BLE001 - the prefill's profile is stored: the next start places on it alone
        logger.warning("the decode steps of %s could not be profiled (%s: %s); the next start places on the "
                       "prefill's profile", generation, type(exc).__name__, exc)
        return f"  decode steps: not profiled ({type(exc).__name__})"
    total = np.asarray(whole.compute_ms, dtype=np.float64).sum(axis=0)
    return (f"  decode steps at past lengths {list(decode_pasts(generation))} profiled"
            f"{' and stored' if store is not None else ''}; the generation ({generation.prompt_tokens} + "
            f"{generation.new_tokens} tokens), per-op sum: "
            + ", ".join(f"{d} {ms:.1f} ms" for d, ms in zip(cost.devices, total)))


def _memory_check(args, model, core, device, shapes, generation) -> str:
    """With ``--memory-cap``: the model's need against the caps (MemoryCapError when no split can fit), as a line."""
    caps = memory_caps_of(args)
    if not caps:
        return ""
    from ov_autoplace.decision.memory_path import memory_request
    from ov_autoplace.devices.memory_caps import format_bytes

    req = api.build_request(model, device, config_of(args), core=core, shapes=shapes, memory_caps=caps,
                            generation=generation)
    need, capacity = memory_request(req, extract_graph(prepare_model(req.placement_model)))
    return (f"memory: the model needs {need.describe()}; caps "
            + ", ".join(f"{d} {format_bytes(c)}" for d, c in zip(req.devices, capacity) if c != float("inf"))
            + " (place with the same --memory-cap, or compile_model(memory_caps=...), to split within them)")


def cmd_profile(args) -> int:
    from collections import defaultdict

    from ov_autoplace.cache.profile_store import ProfileStore

    core, device = core_and_device(args)
    devices = target_devices(core, device, config_of(args))
    store = ProfileStore(args.profile_dir) if not args.no_store else None
    model = api.load_model(args.model, core)
    sample, shapes = read_inputs(args, model)
    generation = check_generation(args.generation, model, args.model)  # a decoder's (default 128,128), else None
    memory = _memory_check(args, model, core, device, shapes, generation)  # MemoryCapError before any measuring
    dynamic = model  # profiled as the clone compile_model places (a decoder's prefill), keyed as it looks it up
    shapes, model, unplaceable = placement_clone(model, shapes, generation.prompt_tokens if generation else None)
    if unplaceable:
        raise ShapeError(unplaceable)
    with input_sample(sample):
        profile = _measured_profile(args, model, core, devices, store)
    cost = profile.cost_model
    print(f"{Path(args.model).name} on {', '.join(devices)}: {cost.label}")
    for report in profile.reports:
        print(f"  {report.device}: end-to-end {report.e2e_ms:.2f} ms, per-op sum {report.profiled_sum_ms:.2f} ms "
              f"(ratio {report.ratio:.2f}), unmapped {100 * report.unmapped_fraction:.1f} %, "
              f"ops named {report.named_nodes}/{report.compute_nodes}, fused {report.fused_nodes}")
    graph = extract_graph(prepare_model(model))
    per_type: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(devices))
    for i, op_type in enumerate(graph.op_types):
        for d in range(len(devices)):
            per_type[op_type][d] += float(cost.compute_ms[i, d])
    total = [sum(v[d] for v in per_type.values()) for d in range(len(devices))]
    print("  op type".ljust(30) + "".join(f"{d:>12}" for d in devices) + "   (ms per inference)")
    for op_type, values in sorted(per_type.items(), key=lambda kv: -max(kv[1])):
        if max(values) >= 0.01 * max(total):
            print(f"  {op_type:<28}" + "".join(f"{v:12.3f}" for v in values))
    print(f"  {'total':<28}" + "".join(f"{v:12.3f}" for v in total))
    print(f"  profiler time {profile.profiler_seconds:.1f} s")
    if generation is not None:
        print(_decode_steps(dynamic, graph, cost, generation, core, store))
    if memory:
        print(f"  {memory}")
    if args.output:
        args.output.write_text(json.dumps(profile.to_dict()))
        print(f"profile written to {args.output}")
    return 0


def cmd_cache(args) -> int:
    from ov_autoplace.cache.root import UntrustedDirectoryError, cache_root, clear_cache, private_root

    if args.action == "list":
        from ov_autoplace.decision.worker_state import model_state
        from ov_autoplace.model.loading import DAMAGED_FILE_ERRORS, PLACEMENT_ENTRY_MAX_BYTES, read_json_bounded

        root = cache_root(args.cache_dir)
        entries = PlacementCache(root).entries()
        print(f"{len(entries)} placement(s) in {root / 'placements'}")
        try:
            private_root(root, create=False)
        except UntrustedDirectoryError as exc:
            print(f"  note: compile_model refuses this cache root ({exc}); fix: `chmod 700 {root}` if it is yours")
        except OSError:
            pass
        for path in entries:
            try:  # bounded and typed: a FIFO or a link to /dev/zero is named, never read
                data = read_json_bounded(path, PLACEMENT_ENTRY_MAX_BYTES)
                key, payload = data["key"], data["payload"]
                print(f"  {path.name}  devices={','.join(key['devices'])}  strategy={payload.get('strategy')}  "
                      f"nodes={len(payload['device_by_index'])}  submodels={payload.get('num_submodels')}\n"
                      f"    state: {model_state(root, key, payload)}")
            except DAMAGED_FILE_ERRORS as exc:
                print(f"  {path.name}  (unreadable: {exc})")
    else:  # everything ov_autoplace wrote: placements, profiles, opted-in blobs, worker files (cache/root.py)
        print(clear_cache(args.cache_dir).summary())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ov-autoplace", description="Learned device placement for OpenVINO HETERO.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the library decides")
    parser.add_argument("--version", action="version", version=version_line())
    sub = parser.add_subparsers(dest="command", required=True)

    place = sub.add_parser("place", help="place a model and print the summary",
                           description="Place every node of a model on a device, print nodes per device, "
                                       "submodels and measured latency against every single device.")
    add_model_device_args(place)
    place.add_argument("-o", "--output", type=Path, help="write the placement as JSON")
    place.add_argument("--save-model", type=Path, metavar="IR.xml",
                       help="write the model as an IR carrying this placement (rt_info ov_autoplace/placement, "
                            "keyed by node identity: ov_autoplace.save_model)")
    add_run_args(place)
    place.add_argument("--no-measure", action="store_true", help="only place; do not compile and time")
    place.set_defaults(func=cmd_place)

    sub.add_parser("run", help="run an unchanged Python app with OpenVINO's compile routed through ov_autoplace: "
                               "ov-autoplace run [--profile P] -- python app.py args", add_help=False)
    strategies = sub.add_parser("strategies", help="list every placement strategy, one line each",
                                description="The registered placement strategies (ov_autoplace.strategies.registry, "
                                            "plus the lab's where it is installed); each name works with --strategy "
                                            "of place and show, and in compare.")
    strategies.set_defaults(func=cmd_strategies)

    profile = sub.add_parser("profile", help="measure per-op latency on each device (a measured cost model)",
                             description="Profile a model on every listed device (PERF_COUNT per op, mapped back to "
                                         "the model's ops; link and submodel costs from real splits), print per-op-type "
                                         "times per device; reused from the profile store when nothing changed.")
    add_benchmark_flags(profile, ("path_to_model", "number_iterations", "shape", "data_shape"), overrides={
        "number_iterations": Accepted("niter", None, "profiled inferences per device (default 6 quick, 20 with "
                                                     "--full)")})
    add_device_args(profile, properties=False)  # the rest of PROFILE_FLAGS: -d -load_config -extensions -c
    profile.add_argument("--full", action="store_true",
                         help="the full profiler: fused ops compiled alone and measured links (slower)")
    add_inputs_arg(profile)
    add_generation_arg(profile, "profile the decode steps of")
    add_memory_cap_arg(profile)
    profile.add_argument("-o", "--output", type=Path, help="write the profile JSON here")
    profile.add_argument("--profile-dir", type=_directory_arg, default=None,
                         help="profile store (default $OV_AUTOPLACE_PROFILE_DIR or ~/.cache/ov_autoplace/profiles)")
    profile.add_argument("--no-store", action="store_true", help="always measure; do not read or write the store")
    profile.set_defaults(func=cmd_profile)
    reject_other_benchmark_flags(profile, default_reason=PROFILE_REASON)

    for add_parser in lab_commands().values():  # show, compare, whatif, bench, train: where the lab is installed
        add_parser(sub)

    cache = sub.add_parser("cache", help="list cached placements, or clear everything ov_autoplace wrote",
                           description="Inspect the placement cache ($OV_AUTOPLACE_CACHE_DIR or ~/.cache/ov_autoplace).")
    cache.add_argument("action", choices=["list", "clear"])
    cache.add_argument("--cache-dir", type=_directory_arg, default=None, help="cache directory (default: the user cache)")
    cache.set_defaults(func=cmd_cache)
    return parser


def _directory_arg(text: str) -> Path:
    """A directory flag of ov_autoplace's own cache: '' is an error (argparse: one line, exit 2), not the current
    directory (the API's rule, ``cache.root.checked_cache_dir``)."""
    from ov_autoplace.cache.root import checked_cache_dir

    try:
        return checked_cache_dir(text, "the value")
    except OVAutoplaceError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def version_line() -> str:
    import openvino as ov

    from ov_autoplace._version import __version__

    return f"ov-autoplace {__version__} (OpenVINO {ov.get_version()})"


def cmd_strategies(args) -> int:
    from ov_autoplace.strategies.registry import strategy_listing

    print(strategy_listing())
    return 0


#: Where other installed distributions add commands: each entry point is a function ``add_parser(subparsers)``;
#: one with a ``run_raw(argv)`` attribute gets every argument after its name unparsed (``train``).
COMMAND_ENTRY_POINTS = "ov_autoplace.commands"
#: The lab's commands, known here only so that asking for one without the lab says what to install.
LAB_COMMANDS = ("show", "compare", "whatif", "bench", "train")


def lab_commands() -> dict:
    """``{name: add_parser}`` of the commands installed distributions register (the lab's)."""
    from importlib.metadata import entry_points

    runtime = {"place", "profile", "cache", "strategies"}
    return {p.name: p.load() for p in entry_points(group=COMMAND_ENTRY_POINTS) if p.name not in runtime}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:  # everything after `run` is the launcher's and the app's (routing.main)
        from ov_autoplace.routing import main as run_routed

        return run_routed(argv[1:])
    if argv[:1] and argv[0] in LAB_COMMANDS:
        commands = lab_commands()
        if argv[0] not in commands:
            from ov_autoplace.strategies.registry import lab_missing

            print(f"ov-autoplace: error: {lab_missing(f'`ov-autoplace {argv[0]}`')}", file=sys.stderr)
            return 2
        run_raw = getattr(commands[argv[0]], "run_raw", None)
        if run_raw is not None:  # everything after `train` belongs to the trainer's own parser
            return run_raw(argv[1:])
    args = build_parser().parse_args(argv)
    args.argv = argv  # the report's command line, as typed
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    try:
        checked_args(args)
        return args.func(args)
    except (OVAutoplaceError, FileNotFoundError) as exc:  # LabNotInstalledError too: one line, exit 2
        print(f"ov-autoplace: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:  # an optional dependency of this subcommand: name the extra, no traceback
        return _missing_extra(args.command, exc)


#: Optional dependency -> the extra that installs it (the runtime needs only openvino and numpy).
EXTRA_OF = {"torch": "ov-autoplace-lab[train]", "scipy": "ov-autoplace-lab[train]", "tqdm": "ov-autoplace-lab[train]",
            "matplotlib": "ov-autoplace-lab[pictures]", "torchvision": "ov-autoplace-lab[zoo]",
            "transformers": "ov-autoplace-lab[zoo]"}


def _missing_extra(command: str, exc: ImportError) -> int:
    top = (exc.name or "").split(".")[0]
    if top in EXTRA_OF:
        print(f"ov-autoplace: error: `{command}` needs {top!r}, which is not installed; install it with "
              f"pip install '{EXTRA_OF[top]}'", file=sys.stderr)
    elif "ov-autoplace-lab[" in str(exc):  # our own message already names the extra
        print(f"ov-autoplace: error: `{command}`: {exc}", file=sys.stderr)
    else:
        raise exc
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
