"""Hostile calls: one bad argument per case to the API and the command line (and controls that must compile),
and crafted worker specs the worker must refuse. Each expects a typed refusal within a second."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from tools.hostile_cases.context import CORRECT, HEALED, REFUSED, Broken, Ctx, Refused
from tools.hostile_cases.registry import case
from tools.hostile_cases.state_cases import hostile_file


def _api_case(name: str, call: str = "compile_model", expect=REFUSED, model=None, device=None, **kw) -> None:
    """A call of the API with one bad (or, as a control, good) argument."""

    def fn(ctx: Ctx) -> None:
        import ov_autoplace as oa

        the_model = model(ctx) if callable(model) else ctx.model()
        the_device = (device(ctx) if callable(device) else device) if device is not None else ctx.hetero
        args = {k: (v(ctx) if callable(v) else v) for k, v in kw.items()}
        if call == "compile_model":
            args.setdefault("cache_dir", ctx.root)
        if "core" not in args:
            args["core"] = ctx.core
        ctx.refuse_fast = True
        ctx.arm()
        result = getattr(oa, call)(the_model, the_device, **args)
        if call == "compile_model" and isinstance(the_device, str) and the_device.startswith("HETERO") \
                and not isinstance(the_model, (str, bytes)):
            from tests.hostile import outputs_match

            if not outputs_match(result, ctx.core.compile_model(the_model, the_device)):
                raise Broken("outputs differ from the plain call's")
        ctx.stop_workers()

    case(f"api/{call}/{name}", f"bad argument to {call}", expect)(fn)


def _model_file(kind: str) -> Callable[[Ctx], str]:
    def make(ctx: Ctx) -> str:
        import openvino as ov

        path = ctx.inputs / "model.xml"
        if kind == "missing":
            return str(ctx.inputs / "missing.xml")
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dev_zero":
            return "/dev/zero"
        elif kind == "dev_zero_link":
            path.symlink_to("/dev/zero")
        elif kind in ("bin_fifo", "bin_dev_zero", "ir"):
            ov.save_model(ctx.model(), str(path))
            if kind != "ir":
                path.with_suffix(".bin").unlink()
                if kind == "bin_fifo":
                    os.mkfifo(path.with_suffix(".bin"))
                else:
                    path.with_suffix(".bin").symlink_to("/dev/zero")
        elif kind == "empty_dir":
            path = ctx.inputs / "folder"
            path.mkdir()
        elif kind == "text":
            path.write_text("these are notes, not a model")
        elif kind == "empty":
            path.write_bytes(b"")
        return str(path)

    return make


def _cli_case(name: str, argv: Callable[[Ctx], list[str]], expect=REFUSED, setup: Callable[[Ctx], None] | None = None,
              fast: bool = True) -> None:
    """``ov-autoplace ...`` run in the case's process: exit 2 with one ``error:`` line is a typed refusal."""

    def fn(ctx: Ctx) -> None:
        import contextlib
        import io

        from ov_autoplace.cli.main import main

        if setup is not None:
            setup(ctx)
        args = argv(ctx)
        err, out = io.StringIO(), io.StringIO()
        ctx.refuse_fast = fast
        ctx.arm()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                status = main(args)
            except SystemExit as exc:  # argparse's refusal
                status = exc.code
        text = err.getvalue()
        if "Traceback" in text:
            raise RuntimeError(f"a traceback: {text[-300:]}")
        if status == 2:
            lines = [line for line in text.splitlines() if "error:" in line]
            if len(lines) != 1:
                raise RuntimeError(f"exit 2 with {len(lines)} error lines: {text[-300:]}")
            raise Refused(lines[0])
        if status != 0:
            raise RuntimeError(f"exit status {status}: {text[-300:]}")
        ctx.stop_workers()

    case(f"cli/{name}", "bad CLI input", expect)(fn)


def _write_json(path: Path, data) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def _spec_case(name: str, mutate: Callable[[Ctx, dict, Path], str | None]) -> None:
    """A crafted spec in a worker folder, the worker started as the app starts it: it refuses (exit 2 or 3)."""

    def fn(ctx: Ctx) -> None:
        import openvino as ov

        from ov_autoplace.cache.placement_cache import PlacementCache
        from ov_autoplace.decision import background_worker as bw
        from ov_autoplace.graph.arrays import extract_graph
        from ov_autoplace.model.prepare import prepare_model

        model = ctx.model()
        devices = ctx.testbed()[1]
        key = PlacementCache(ctx.root).key(ctx.core, extract_graph(prepare_model(model)), devices, strategy="probe")
        digest = bw.worker_digest(key)
        files = bw.worker_files(ctx.root, digest)
        bw.private_worker_dir(ctx.root, digest)
        ov.save_model(model, str(files["model"]), compress_to_fp16=False)
        spec = {"format": bw.SPEC_FORMAT, "key": key, "devices": list(devices),
                "setup": json.loads(json.dumps(bw.device_setup(ctx.core, devices))), "config": {},
                "device_name": ctx.hetero, "max_submodels": 8, "seed": 0, "pins": []}
        digest = mutate(ctx, spec, files["spec"]) or digest
        if not files["spec"].exists() and not os.path.lexists(files["spec"]):
            files["spec"].write_text(json.dumps(spec))
        ctx.arm()
        done = subprocess.run([sys.executable, "-m", "ov_autoplace.decision.background_worker", str(ctx.root),
                               digest], capture_output=True, text=True, timeout=120, cwd=ctx.work)
        if done.returncode in (2, 3) and "Traceback" not in done.stderr:
            raise Refused(f"worker exit {done.returncode}: {(done.stderr.strip().splitlines() or [''])[-1][:200]}")
        raise RuntimeError(f"worker exit {done.returncode}: {done.stderr[-300:]}")

    case(f"worker-spec/{name}", "crafted worker spec", REFUSED)(fn)


def _set(path: list, value):
    def mutate(ctx: Ctx, spec: dict, spec_path: Path):
        node = spec
        for part in path[:-1]:
            node = node[part if not callable(part) else part(ctx)]
        node[path[-1]] = value(ctx) if callable(value) else value
    return mutate


def _first_device(ctx: Ctx) -> str:
    return ctx.testbed()[1][0]



def define() -> None:
    # --- the API, one bad argument per case (and controls that must compile)
    import numpy as np

    for kind in ("missing", "fifo", "dev_zero", "dev_zero_link", "bin_fifo", "bin_dev_zero", "empty_dir", "text",
                 "empty"):
        _api_case(f"model/{kind}", model=_model_file(kind))
        if kind in ("fifo", "dev_zero", "bin_fifo"):
            _api_case(f"model/{kind}", call="place", model=_model_file(kind))
    _api_case("model/ir_path", expect={CORRECT}, model=_model_file("ir"))
    _api_case("model/none", model=lambda ctx: None)
    _api_case("model/int", model=lambda ctx: 5)
    for name, device in (("int", 5), ("empty", ""), ("no_list", "HETERO:"), ("spaces", "HETERO: CPU , CPUF"),
                         ("first_space", "HETERO:CPU ,CPUF"), ("lower_case", "hetero:CPU,CPUF"),
                         ("absent", "HETERO:XPU,CPU"), ("trailing_space", "CPU "), ("twice", "HETERO:CPU,CPU"),
                         ("empty_entry", "HETERO:CPU,,CPUF")):
        _api_case(f"device/{name}", device=device)
    _api_case("device/space_after_comma", expect={CORRECT, HEALED},  # OpenVINO trims a list's later entries
              device=lambda ctx: ctx.hetero.replace(",", ", "))
    for name, config in (("int", 5), ("list", ["PERF_COUNT"]), ("bad_value", {"PERFORMANCE_HINT": "FASTEST"}),
                         ("int_key", {5: 1})):
        _api_case(f"config/{name}", config=config)
    _api_case("config/unknown_on_one_device", device="CPU", config={"NOT_A_PROPERTY": 1})
    # HETERO compiles with a property it does not know (OpenVINO 2026.4.1): the same call keeps that meaning
    _api_case("config/unknown_on_hetero", expect={CORRECT, HEALED}, config={"NOT_A_PROPERTY": 1})
    _api_case("core/str", core="core")
    for name, value in (("unknown", "nope"), ("int", 5)):
        _api_case(f"strategy/{name}", strategy=value)
        _api_case(f"strategy/{name}", call="place", strategy=value)
    for name, pins in (("no_node", {"NoSuchNode": "CPU"}), ("no_device", {"type:Convolution": "XPU"}), ("int", 5)):
        _api_case(f"pins/{name}", pins=pins)
    for name, value in (("absent", ["XPU"]), ("int", 5), ("all", lambda ctx: list(ctx.testbed()[1]))):
        _api_case(f"exclude_devices/{name}", exclude_devices=value)
    for name, value in (("zero", 0), ("str", "8"), ("negative", -1)):
        _api_case(f"max_submodels/{name}", max_submodels=value)
    for name, value in (("str", "x"), ("bool", True), ("float", 1.5), ("none", None)):
        _api_case(f"seed/{name}", seed=value)
        _api_case(f"seed/{name}", call="place", seed=value)
    _api_case("seed/numpy_int", expect={CORRECT}, seed=np.int64(3))
    for name, value in (("empty", ""), ("blank", "   "), ("int", 5), ("nul", "a\0b"), ("bytes", b"x")):
        _api_case(f"cache_dir/{name}", cache_dir=value)
    for name, value in (("1e9_seconds", 1e9), ("1e9_placements", 10**9), ("zero", 0), ("nan", float("nan")),
                        ("str", "10"), ("bool", True), ("day_and_a_second", 86_401.0)):
        _api_case(f"search_budget/{name}", search_budget=value)
    _api_case("search_budget/1e9", call="place", search_budget=1e9)
    for name, value in (("unknown", "sometimes"), ("int", 5)):
        _api_case(f"profile/{name}", profile=value)
    _api_case("profile/now_with_strategy", profile="now", strategy="heavy_ops")
    for name, value in (("rank", {"x": [1, 2, 3, 4, 5]}), ("unknown_input", {"nope": [1]}), ("int", 5)):
        _api_case(f"shapes/{name}", shapes=value)
        _api_case(f"shapes/{name}", call="place", shapes=value)
    _api_case("weights/with_a_path", model=_model_file("ir"), weights=b"12345678")

    # --- the command line
    def place(*extra):
        return lambda ctx: ["place", "-m", _model_file("ir")(ctx), "--testbed", "--no-measure", *extra]

    def place_model(kind):
        return lambda ctx: ["place", "-m", _model_file(kind)(ctx), "--testbed", "--no-measure"]

    for kind in ("missing", "fifo", "dev_zero", "bin_fifo", "text", "empty_dir"):
        _cli_case(f"place/model/{kind}", place_model(kind))
    _cli_case("place/device/spaces", place("-d", "HETERO: CPU , CPUF"))
    _cli_case("place/device/absent", place("-d", "HETERO:XPU,CPU"))
    for value in ("1e9", "0", "-5", "abc", "1000000000"):
        _cli_case(f"place/search-budget/{value}", place("--search-budget", value))
    _cli_case("place/max-submodels/0", place("--max-submodels", "0"))
    _cli_case("place/exclude/XPU", place("--exclude", "XPU"))
    _cli_case("place/pin-node/no_equals", place("--pin-node", "nodevice"))
    _cli_case("place/shape/garbage", place("-shape", "x[1,2"))
    _cli_case("place/nstreams/garbage", place("-nstreams", "CPU:"))
    _cli_case("place/strategy/unknown", place("--strategy", "nope"))
    for name, content in (("unknown_property", {"CPU": {"NOT_A_PROPERTY": 1}}), ("bad_value", {"CPU": {"NUM_STREAMS": "x"}}),
                          ("not_sections", [1, 2]), ("garbage", None)):
        def argv(ctx, name=name, content=content):
            path = ctx.inputs / f"{name}.json"
            if content is None:
                path.write_text("{not json")
            else:
                path.write_text(json.dumps(content))
            return place("-load_config", str(path))(ctx)
        _cli_case(f"place/load_config/{name}", argv)

    def fifo_config(ctx):
        os.mkfifo(ctx.inputs / "c.json")
        return place("-load_config", str(ctx.inputs / "c.json"))(ctx)
    _cli_case("place/load_config/fifo", fifo_config)
    _cli_case("place/load_config/missing", lambda ctx: place("-load_config", str(ctx.inputs / "none.json"))(ctx))
    for action in ("clear", "list"):
        _cli_case(f"cache/{action}/empty_cache_dir", lambda ctx, a=action: ["cache", a, "--cache-dir", ""])
    _cli_case("profile/empty_profile_dir", lambda ctx: ["profile", "-m", "x.xml", "--profile-dir", ""])

    def hostile_entries(ctx):  # cache list names what it cannot read; never reads a FIFO or /dev/zero
        ctx.populate()
        for i, path in enumerate(sorted(ctx.root.glob("placements/*.json"))):
            hostile_file(path, ("fifo", "dev_zero")[i % 2], ctx)
    _cli_case("cache/list/hostile_entries", lambda ctx: ["cache", "list", "--cache-dir", str(ctx.root)],
              expect={CORRECT}, setup=hostile_entries, fast=False)
    _cli_case("cache/clear/hostile_entries", lambda ctx: ["cache", "clear", "--cache-dir", str(ctx.root)],
              expect={CORRECT}, setup=hostile_entries, fast=False)

    # --- crafted worker specs: the worker takes no path from data and sets only the app's properties
    for prop, value in (("CACHE_DIR", lambda ctx: str(ctx.outside / "blobs")), ("WEIGHTS_PATH", "/tmp/w.bin"),
                        ("PERF_COUNT", True), ("LOG_LEVEL", "LOG_TRACE")):
        _spec_case(f"setup/{prop}", _set(["setup", _first_device, "properties", prop], value))
    _spec_case("config/CACHE_DIR", _set(["config", "CACHE_DIR"], lambda ctx: str(ctx.outside / "blobs")))
    _spec_case("base/not_a_plugin", _set(["setup", _first_device, "base"], "/tmp/libevil.so"))
    _spec_case("key/foreign", _set(["key", "model_structure"], "0" * 64))
    _spec_case("format/old", _set(["format"], 1))
    _spec_case("seed/str", _set(["seed"], "x"))
    _spec_case("pins/not_a_list", _set(["pins"], "everything"))

    def raw(kind):
        def mutate(ctx, spec, spec_path):
            spec_path.write_text(json.dumps(spec))
            hostile_file(spec_path, kind, ctx)
        return mutate
    for kind in ("fifo", "dev_zero", "hard_link", "outside_file", "oversize", "not_json", "nested_deeply"):
        _spec_case(f"file/{kind}", raw(kind))
    _spec_case("digest/traversal", lambda ctx, spec, path: "../../outside")
    _spec_case("digest/not_hex", lambda ctx, spec, path: "z" * 32)

    def model_link(ctx, spec, spec_path):
        model = spec_path.parent / "model.xml"
        model.unlink()
        model.symlink_to(ctx.outside / "precious.txt")
    _spec_case("model/link_out", model_link)

    def model_fifo(ctx, spec, spec_path):
        model = spec_path.parent / "model.xml"
        model.unlink()
        os.mkfifo(model)
    _spec_case("model/fifo", model_fifo)

    # the worker's log (its stdout, opened by the app) through a hard link: a fresh private log instead
    def log_link(ctx: Ctx) -> None:
        from ov_autoplace.decision import background_worker as bw

        key = {"kind": "placement", "devices": list(ctx.testbed()[1]), "model_structure": "probe"}
        digest = bw.worker_digest(key)
        files = bw.worker_files(ctx.root, digest)
        bw.private_worker_dir(ctx.root, digest)
        bw.acquire_lock(files["lock"])
        os.link(ctx.outside / "precious.txt", files["log"])
        foreign = {"format": bw.SPEC_FORMAT, "key": {**key, "model_structure": "other"}, "devices": key["devices"],
                   "setup": {}, "config": {}, "max_submodels": 8, "seed": 0, "pins": []}
        ctx.arm()
        bw._write_and_start(ctx.model(), foreign, ctx.root, digest)  # fails fast: a foreign spec, logged
        deadline = time.time() + 60
        while files["lock"].exists() and time.time() < deadline:
            time.sleep(0.1)
        ctx.check("foreign spec" in files["log"].read_text(), "the worker's refusal is not in its own log")
        ctx.check(os.lstat(files["log"]).st_nlink == 1, "the log still has another name")
    case("worker-log/hard_link_out", "crafted worker spec", {CORRECT, HEALED})(log_link)

    # --- explicit strategies keep their profiles under cache_dir (one case: it measures, ~15 s)
    def heft(ctx: Ctx) -> None:
        ctx.arm()
        ctx.compile(ctx.model(blocks=1), strategy="heft")
        ctx.check(len(list(ctx.root.glob("profiles/*.json"))) == 2, "the profiles are not under the root")
    case("api/compile_model/strategy/heft_profiles", "explicit strategy", {CORRECT, HEALED})(heft)

