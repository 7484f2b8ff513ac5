"""The hostile probe: every way the cache, its root, the arguments and a worker's spec can be hostile, each case
in its own process with its own cache root and a timeout; one table of outcomes.

    python tools/hostile_probe.py [--json out.json] [--jobs 2] [--timeout 60] [-k SUBSTRING] [--skip SUBSTRING]
                                  [--list]

Each case runs in a process of its own (forked from one that imported OpenVINO and ov_autoplace once, or with
``--no-fork`` a fresh ``python tools/hostile_probe.py --case NAME --base DIR``) in a session of its own, with ``HOME``,
the working directory, the cache root and a folder of precious files "outside" all inside ``DIR`` (none of
``OV_AUTOPLACE_CACHE_DIR``, ``OV_AUTOPLACE_PROFILE_DIR``, ``XDG_CACHE_HOME`` set, so a write that ignores the
root lands in ``DIR/home/.cache`` and is seen). A case sets up its state (a populated cache, a hostile file, a
bad argument), then *arms*: the filesystem around the root is listed (``tests/hostile.py``), and the action runs.
Its outcome is one of

* ``correct``: the call returned what the plain call returns, with no WARNING;
* ``typed error``: a refusal the user can act on - an ``OVAutoplaceError`` (API), exit status 2 with one
  ``error:`` line (CLI), a worker that exits 2 or 3 naming why (worker specs);
* ``healed with WARNING``: correct outputs, a WARNING said what was wrong (and the next start is clean);
* ``hang``: the case did not finish within ``--timeout`` (killed, with any worker it started);
* ``outside the root``: something outside the root changed (created, removed or modified);
* ``wrong output``: outputs differ from the plain call's, or a promise of the case broke (a mode, a heal, a
  typed refusal taking over a second);
* ``untyped error``: any other exception, a traceback, another exit status.

Each case also states the outcomes it accepts (a hostile file: correct or healed; a bad argument: a typed
error): a case outside them is counted as ``unexpected``. The machine kind does not matter: the probe's two
devices are the testbed's where the prior can tell them apart, else the CPU plugin on all cores and on one
thread (``CPUS``, as ``tests/conftest.py``'s ``distinct_testbed``), so the cache is used on every machine.
``tests/test_hostile_probe.py`` (slow tier) runs all cases and requires 0 hangs, 0 outside the root, 0 wrong
outputs, 0 untyped errors and 0 unexpected outcomes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the probe reuses the tests' helpers (tests/hostile.py, tests/damaged_files.py)
    sys.path.insert(0, str(REPO))

CORRECT, TYPED, HEALED = "correct", "typed error", "healed with WARNING"
HANG, OUTSIDE, WRONG, UNTYPED = "hang", "outside the root", "wrong output", "untyped error"
OUTCOMES = (CORRECT, TYPED, HEALED, HANG, OUTSIDE, WRONG, UNTYPED)
FINE = frozenset({CORRECT, HEALED})  # a hostile file: read past or healed
REFUSED = frozenset({TYPED})  # a bad argument: refused, typed
REFUSE_WITHIN_S = 1.0  # a refused argument or path: before anything is compiled or opened
PROBE = ".probe"  # the case's own bookkeeping inside its base folder (not watched)
#: OpenVINO's telemetry writes ``$HOME/intel`` on a plain ``core.compile_model`` too: not ov_autoplace's write.
OPENVINO_OWN = ("home/intel",)


class Refused(Exception):
    """A typed refusal outside the API's exceptions (CLI exit 2 with one error line, a worker naming why)."""


class Broken(Exception):
    """A promise of the case broke (outputs, a mode, a heal): ``wrong output``."""


# --- one case, in its own process ---------------------------------------------------------------------------


class Ctx:
    """What a case works with: its folders, the two devices, the model, and the arming of the outside check."""

    def __init__(self, base: Path) -> None:
        self.base, self.root, self.outside = base, base / "root", base / "outside"
        self.inputs, self.work = base / "inputs", base / "work"
        self.also_root: list[Path] = []  # part of the root too (a symlinked root's target)
        self.warnings: list[str] = []
        self.violations: list[str] = []
        self.armed_at: float | None = None
        self.refuse_fast = False
        self._testbed = None

    # the devices: distinct ones, so that the first start uses the cache on every machine
    def testbed(self):
        if self._testbed is None:
            from tests.hostile import distinct_devices

            self._testbed = distinct_devices()
        return self._testbed

    @property
    def core(self):
        return self.testbed()[0]

    @property
    def hetero(self) -> str:
        return "HETERO:" + ",".join(self.testbed()[1])

    def model(self, blocks: int = 3):
        from tests import synthetic_graphs as sg

        return sg.residual(blocks=blocks)

    def arm(self) -> None:
        """The state is set up: list the filesystem around the root, count WARNINGs from here on."""
        (self.base / PROBE).mkdir(exist_ok=True)
        (self.base / PROBE / "before.json").write_text(json.dumps(listing(self.base, self.root, self.also_root)))
        (self.base / PROBE / "also_root.json").write_text(json.dumps([str(p) for p in self.also_root]))
        self.warnings.clear()
        self.armed_at = time.perf_counter()

    def compile(self, model=None, device: str | None = None, check: bool = True, **kw):
        """``compile_model`` on the case's root; its outputs checked against the plain call's."""
        import ov_autoplace as oa
        from tests.hostile import outputs_match

        model = model if model is not None else self.model()
        device = device or self.hetero
        kw.setdefault("cache_dir", self.root)
        compiled = oa.compile_model(model, device, core=self.core, **kw)
        if check and not outputs_match(compiled, self.core.compile_model(model, device)):
            raise Broken("outputs differ from the plain call's beyond bf16 precision")
        return compiled

    def populate(self, **kw) -> None:
        """A first start on the root (entries, the single-device index; a worker folder with profile=...)."""
        self.compile(**kw)
        self.stop_workers()

    def check(self, ok: bool, message: str) -> None:
        if not ok:
            self.violations.append(message)

    def heals(self, **kw) -> None:
        """The next start warns about nothing (a heal that holds)."""
        before = len(self.warnings)
        self.compile(**kw)
        self.check(len(self.warnings) == before, f"the next start still warns: {self.warnings[before:][:2]}")

    def stop_workers(self, clean: bool = True) -> None:
        """Kill the background workers this case started (found by the root in their command line)."""
        import threading

        for thread in threading.enumerate():
            if thread.name == "ov_autoplace-bg":
                thread.join(60)
        kill_processes_naming(self.root)
        if clean:  # a killed worker counts as a failure; the cases after it start from a clean record
            for path in list(self.root.glob("workers/*/lock")) + list(self.root.glob("workers/*/failure.json")):
                path.unlink(missing_ok=True)

    def worker_folder(self) -> Path:
        folders = sorted(self.root.glob("workers/*/"))
        if not folders:
            raise RuntimeError("probe setup: the first start started no background worker")
        return folders[0]


class _Warnings(logging.Handler):
    def __init__(self, ctx: Ctx) -> None:
        super().__init__(logging.WARNING)
        self.ctx = ctx

    def emit(self, record: logging.LogRecord) -> None:
        self.ctx.warnings.append(record.getMessage()[:300])


def run_case(name: str, base: Path) -> dict:
    """Run case ``name`` in this process; the outcome as the child reports it (the parent adds hang/outside)."""
    from ov_autoplace.errors import OVAutoplaceError

    case = CASES[name]
    ctx = Ctx(base)
    for folder in (ctx.outside, ctx.inputs, ctx.work):
        folder.mkdir(exist_ok=True)
    (ctx.outside / "precious.txt").write_text("keep me")
    (ctx.outside / "placement-x.json").write_text("{}")
    os.chdir(ctx.work)
    logging.getLogger("ov_autoplace").addHandler(_Warnings(ctx))
    detail = ""
    try:
        case.fn(ctx)
        if ctx.armed_at is None:
            raise RuntimeError("probe: the case never armed")
        outcome = WRONG if ctx.violations else HEALED if ctx.warnings else CORRECT
        detail = "; ".join(ctx.violations) or "; ".join(ctx.warnings[:1])
    except (OVAutoplaceError, Refused) as exc:
        outcome, detail = TYPED, f"{type(exc).__name__}: {exc}"
        if ctx.armed_at is None:
            outcome, detail = UNTYPED, f"probe setup failed: {detail}"
        elif ctx.refuse_fast and time.perf_counter() - ctx.armed_at > REFUSE_WITHIN_S:
            outcome = WRONG
            detail = f"refused after {time.perf_counter() - ctx.armed_at:.2f} s (> {REFUSE_WITHIN_S} s): {detail}"
    except Broken as exc:
        outcome, detail = WRONG, str(exc)
    except BaseException as exc:  # noqa: BLE001 - the probe reports it
        where = traceback.extract_tb(exc.__traceback__)[-1]
        outcome = UNTYPED
        detail = f"{type(exc).__name__}: {str(exc)[:300]} (at {Path(where.filename).name}:{where.lineno})"
        if ctx.armed_at is None:
            detail = f"probe setup failed: {detail}"
    finally:
        try:
            ctx.stop_workers(clean=False)
        except Exception:  # noqa: BLE001
            pass
    seconds = time.perf_counter() - ctx.armed_at if ctx.armed_at is not None else None
    return {"outcome": outcome, "detail": detail[:500], "action_s": seconds, "root": str(ctx.root)}


# --- the filesystem around the root ----------------------------------------------------------------------------


def listing(base: Path, root: Path, also_root=()) -> dict[str, list]:
    """Every path under ``base`` except the root (and what is part of it), the probe's own files and OpenVINO's
    telemetry, with type, size, mode and mtime (``tests/hostile.py``'s walk)."""
    from tests.hostile import _walk

    skip = [root, *map(Path, also_root), base / PROBE, *(base / p for p in OPENVINO_OWN)]
    return {k: list(v) for k, v in _walk(base, skip).items()}


def kill_processes_naming(root: Path) -> None:
    """SIGKILL the processes whose command line names ``root`` (the workers a case started; nothing else)."""
    needle = str(root).encode()
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit() or int(pid_dir.name) == os.getpid():
            continue
        try:
            args = (pid_dir / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"ov_autoplace.decision.background_worker" in args and needle in args:
            try:
                os.kill(int(pid_dir.name), signal.SIGKILL)
            except OSError:
                pass


# --- the cases -------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    family: str
    fn: Callable[[Ctx], None]
    expect: frozenset


CASES: dict[str, Case] = {}


def case(name: str, family: str, expect=FINE):
    def register(fn):
        CASES[name] = Case(name, family, fn, frozenset(expect))
        return fn
    return register


def _hostile(path: Path, kind: str, ctx: Ctx) -> None:
    from tests.damaged_files import JSON_DAMAGES, damage_json, make_hostile

    if kind in JSON_DAMAGES:
        damage_json(path, kind)
    else:
        make_hostile(path, kind, ctx.outside)


def _file_kinds() -> list[str]:
    from tests.damaged_files import HOSTILE_KINDS, JSON_DAMAGES

    return list(HOSTILE_KINDS) + [k for k in JSON_DAMAGES if k not in HOSTILE_KINDS]


def _cache_file_case(target: str, kind: str) -> None:
    """A hostile file in place of one the cache reads: the entry, the single-device index or a profile."""

    def fn(ctx: Ctx) -> None:
        if target == "profile":  # a stored profile is read on a miss of the placement cache
            ctx.populate(profile="now")
            shutil.rmtree(ctx.root / "placements")
            (path,) = ctx.root.glob("profiles/model-*.json")
        else:
            ctx.populate()
            (index,) = ctx.root.glob("placements/single-*.json")
            if target == "entry":  # read once the single-device index is gone
                index.unlink()
                (path,) = ctx.root.glob("placements/placement-*.json")
            else:
                path = index
        _hostile(path, kind, ctx)
        ctx.arm()
        ctx.compile()
        ctx.stop_workers()
        ctx.heals()
        ctx.stop_workers()

    case(f"cache/{target}/{kind}", f"hostile {target} file")(fn)


def _worker_file_case(target: str, kind: str) -> None:
    """A hostile file in a model's worker folder, met when the next start spawns a worker."""

    def fn(ctx: Ctx) -> None:
        ctx.populate(profile="background")
        folder = ctx.worker_folder()
        path = folder / {"failure": "failure.json", "lock": "lock", "log": "worker.log"}[target]
        if target == "failure":
            path.write_text(json.dumps({"failures": 1, "reason": "earlier", "reported": True}))
        if target == "log" and not path.exists():
            path.write_text("earlier lines\n")
        if kind == "oversize":
            path.write_text(json.dumps({"failures": 1, "padding": "x" * (1 << 20)}))
        elif kind == "not_json":
            path.write_text("{not json")
        else:
            _hostile(path, kind, ctx)
        ctx.arm()
        ctx.compile(profile="background")
        ctx.stop_workers()
        ctx.check(all(os.path.isfile(p) and not os.path.islink(p) for p in folder.iterdir() if p.name != "lock"),
                  f"non-regular files left in the worker folder: {sorted(p.name for p in folder.iterdir())}")

    case(f"cache/worker-{target}/{kind}", f"hostile worker {target}")(fn)


def _blob_case(kind: str) -> None:
    def fn(ctx: Ctx) -> None:
        ctx.populate(cache_blobs=True)
        blobs = list(ctx.root.glob("openvino/*.blob"))
        if not blobs:
            raise RuntimeError("probe setup: no blob was written")
        if kind == "garbage":
            os.chmod(blobs[0], 0o600)
            blobs[0].write_bytes(b"not a blob at all" * 100)
        else:
            _hostile(blobs[0], kind, ctx)
        ctx.arm()
        ctx.compile(cache_blobs=True)
        ctx.heals(cache_blobs=True)

    case(f"cache/blob/{kind}", "hostile blob")(fn)


def _layout_case(folder: str, kind: str) -> None:
    """A layout folder of the root that is a link out of the root, a file or a FIFO."""

    def fn(ctx: Ctx) -> None:
        from tests.damaged_files import make_hostile

        ctx.root.mkdir(mode=0o700)
        path = ctx.root / folder
        if kind == "file":
            path.write_text("{}")
        else:
            make_hostile(path, {"link_out": "outside_dir", "fifo": "fifo", "dev_zero": "dev_zero"}[kind], ctx.outside)
        ctx.arm()
        kw = {"cache_blobs": True} if folder == "openvino" else {"profile": "background"} if folder == "workers" \
            else {"profile": "now"} if folder == "profiles" else {"strategy": "heavy_ops"} if folder == "support" \
            else {}  # each folder met by a call that writes it (an explicit strategy stores the support matrix)
        ctx.compile(**kw)
        ctx.stop_workers()
        ctx.check(not os.path.islink(path), f"{folder} is still a link")

    case(f"layout/{folder}/{kind}", "hostile layout folder")(fn)


def _root_case(kind: str) -> None:
    def fn(ctx: Ctx) -> None:
        expect_cache = kind in ("symlink_to_private", "missing_parents")
        if kind in ("world_writable", "group_writable", "other_owner", "read_only", "sticky_world"):
            ctx.root.mkdir(mode=0o700)
            mode = {"world_writable": 0o777, "group_writable": 0o770, "read_only": 0o500,
                    "sticky_world": 0o1777}.get(kind)
            if kind == "other_owner":
                os.chown(ctx.root, 65534, 65534)
            else:
                os.chmod(ctx.root, mode)
        elif kind == "symlink_to_private":
            real = ctx.base / "real_root"
            real.mkdir(mode=0o700)
            ctx.root.symlink_to(real)
            ctx.also_root.append(real)
        elif kind == "symlink_to_dev_zero":
            ctx.root.symlink_to("/dev/zero")
        elif kind == "file":
            ctx.root.write_text("not a folder")
        elif kind == "fifo":
            os.mkfifo(ctx.root)
        elif kind == "missing_parents":
            ctx.root = ctx.base / "deep" / "er" / "root"
            ctx.also_root.append(ctx.base / "deep")
        elif kind == "parent_is_file":
            (ctx.base / "blocker").write_text("x")
            ctx.root = ctx.base / "blocker" / "root"
        ctx.arm()
        ctx.compile(profile="background")
        ctx.stop_workers()
        if expect_cache:
            ctx.check(bool(list(Path(os.path.realpath(ctx.root)).glob("placements/*.json"))), "nothing was cached")
        if kind in ("world_writable", "group_writable", "sticky_world"):
            ctx.check(not os.path.exists(ctx.root / "placements"), "a refused root was written")
        if kind == "other_owner":
            ctx.check(not os.path.exists(ctx.root / "placements"), "another user's root was written")

    case(f"root/{kind}", "hostile root")(fn)


def _umask_case(umask: int, how: str) -> None:
    def fn(ctx: Ctx) -> None:
        os.umask(umask)
        ctx.arm()
        if how == "profile_now":
            ctx.compile(profile="now")
        elif how == "blobs":
            ctx.compile(cache_blobs=True)
            ctx.compile(ctx.model(blocks=2), cache_blobs=True)
        elif how == "background":
            ctx.compile(profile="background")
        else:
            ctx.compile()
            ctx.compile()
        ctx.stop_workers(clean=False)
        for path in [ctx.root, *ctx.root.rglob("*")]:
            mode = os.lstat(path).st_mode & 0o7777
            want = 0o700 if path.is_dir() else 0o600
            ctx.check(mode == want, f"{path.relative_to(ctx.base)} is {mode:o}, not {want:o}")

    case(f"umask/{umask:03o}/{how}", "umask", {CORRECT, HEALED})(fn)


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


def _define_cases() -> None:
    for target in ("entry", "index", "profile"):
        # a profile is read by the same store as an entry: its JSON damages are sampled (each case profiles, ~5 s)
        for kind in _file_kinds() if target != "profile" else [*_file_kinds()[:10], "not_json", "nested_deeply"]:
            _cache_file_case(target, kind)
    for target, kinds in (("failure", ("fifo", "dev_zero", "hard_link", "outside_file", "oversize", "not_json")),
                          ("lock", ("fifo", "dev_zero", "hard_link", "outside_file")),
                          ("log", ("fifo", "dev_zero", "hard_link", "outside_file", "mode_0666"))):
        for kind in kinds:
            _worker_file_case(target, kind)
    for kind in ("fifo", "dev_zero", "hard_link", "outside_file", "garbage"):
        _blob_case(kind)
    for folder in ("placements", "profiles", "support", "openvino", "workers"):
        for kind in ("link_out", "file", "fifo"):
            _layout_case(folder, kind)
    for kind in ("world_writable", "group_writable", "sticky_world", "read_only", "symlink_to_private",
                 "symlink_to_dev_zero", "file", "fifo", "missing_parents", "parent_is_file"):
        _root_case(kind)
    if os.geteuid() == 0:  # chown to another user needs root
        _root_case("other_owner")
    for umask in (0o000, 0o077):
        for how in ("default", "profile_now", "blobs", "background"):
            _umask_case(umask, how)

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
            _hostile(path, ("fifo", "dev_zero")[i % 2], ctx)
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
            _hostile(spec_path, kind, ctx)
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


_define_cases()


# --- the parent: every case in its own process ---------------------------------------------------------------


#: None of these reach a case: a write that ignores ``cache_dir=`` must land in the case's own ``HOME``.
CACHE_VARIABLES = ("OV_AUTOPLACE_CACHE_DIR", "OV_AUTOPLACE_PROFILE_DIR", "XDG_CACHE_HOME")


def _case_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CACHE_VARIABLES}
    env.update(HOME=str(home), PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""))
    return env


class Spawner:
    """Starts one case per process. By default forked from a *zygote* that has imported OpenVINO and ov_autoplace
    once (and created no ``ov.Core``): the import is about half of a small case's time. Each forked case is a
    process of its own, in its own session (killed as a group on a timeout), with its own HOME and directory;
    ``--no-fork`` starts a fresh interpreter per case instead."""

    def __init__(self, fork: bool, home: Path) -> None:
        import threading

        self.lock = threading.Lock()
        self.zygote = None
        if fork:
            self.zygote = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--zygote"],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_case_env(home),
                                           cwd=home, text=True, start_new_session=True)
            if self.zygote.stdout.readline().strip() != "ready":
                raise RuntimeError("the probe's zygote did not start")

    def run(self, name: str, base: Path, timeout: float) -> tuple[bool, str]:
        """(hung, what the case printed): the case runs to its end or is killed at ``timeout``."""
        if self.zygote is None:
            process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--case", name, "--base",
                                        str(base)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       env=_case_env(base / "home"), cwd=base, start_new_session=True, text=True)
            try:
                return False, process.communicate(timeout=timeout)[0]
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                return True, process.communicate()[0]
        with self.lock:  # one request, one pid back
            self.zygote.stdin.write(f"{name}\t{base}\n")
            self.zygote.stdin.flush()
            pid = int(self.zygote.stdout.readline())
        deadline = time.monotonic() + timeout
        while _alive(pid):
            if time.monotonic() > deadline:
                os.killpg(pid, signal.SIGKILL)
                return True, _read(base / PROBE / "output.txt")
            time.sleep(0.05)
        return False, _read(base / PROBE / "output.txt")

    def close(self) -> None:
        if self.zygote is not None:
            self.zygote.stdin.close()
            self.zygote.wait(30)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # the zygote reaps its children (SIGCHLD ignored): a finished case is gone, no zombie
        return True
    except ProcessLookupError:
        return False


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def zygote() -> int:
    """Import what every case needs, then fork one process per request ``name<TAB>base`` read from stdin."""
    import numpy  # noqa: F401 - imported once, here
    import openvino  # noqa: F401

    import ov_autoplace.api  # noqa: F401
    import ov_autoplace.cli.main  # noqa: F401
    import ov_autoplace.decision.background_worker  # noqa: F401
    import tests.damaged_files  # noqa: F401
    import tests.hostile  # noqa: F401
    import tests.synthetic_graphs  # noqa: F401

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    print("ready", flush=True)
    for line in sys.stdin:
        name, base = line.rstrip("\n").split("\t")
        pid = os.fork()
        if pid == 0:  # the case: a session of its own, its HOME, its directory, its output in its base
            code = 1
            try:
                os.setsid()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # it waits for its own children (the worker)
                os.environ["HOME"] = str(Path(base) / "home")
                os.chdir(base)
                out = os.open(Path(base) / PROBE / "output.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(out, 1)
                os.dup2(out, 2)
                sys.stdin.close()
                code = _case_main(name, Path(base))
            finally:
                os._exit(code)
        print(pid, flush=True)
    return 0


def _case_main(name: str, base: Path) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    result = run_case(name, base)
    (base / PROBE / "result.json").write_text(json.dumps(result))
    return 0


def run_one(name: str, timeout: float, spawner: Spawner) -> dict:
    base = Path(tempfile.mkdtemp(prefix="ov_autoplace_probe_"))
    (base / "home" / ".cache").mkdir(parents=True)
    (base / PROBE).mkdir()
    started = time.perf_counter()
    hung, output = spawner.run(name, base, timeout)
    kill_processes_naming(base / "root")
    seconds = time.perf_counter() - started
    result_path = base / PROBE / "result.json"
    if hung:
        result = {"outcome": HANG, "detail": f"killed after {timeout:.0f} s"}
    elif result_path.exists():
        result = json.loads(result_path.read_text())
    else:
        result = {"outcome": UNTYPED, "detail": f"the case process died: {output[-300:]}"}
    before_path = base / PROBE / "before.json"
    if before_path.exists():
        before = {k: tuple(v) for k, v in json.loads(before_path.read_text()).items()}
        also = json.loads((base / PROBE / "also_root.json").read_text())
        root = Path(result.get("root") or base / "root")
        after = {k: tuple(v) for k, v in listing(base, root, also).items()}
        from tests.hostile import outside_changes

        changes = outside_changes(before, after)
        if changes:
            result = {"outcome": OUTSIDE, "detail": "; ".join(changes[:5])}
    _remove(base)
    case = CASES[name]
    return {"case": name, "family": case.family, "outcome": result["outcome"], "detail": result.get("detail", ""),
            "expected": result["outcome"] in case.expect, "expect": sorted(case.expect), "seconds": round(seconds, 2),
            "action_s": result.get("action_s")}


def _remove(base: Path) -> None:
    for dirpath, dirnames, _ in os.walk(base, followlinks=False):  # a 0000 or 0500 folder a case made
        for d in dirnames:
            try:
                os.chmod(os.path.join(dirpath, d), 0o700, follow_symlinks=False)
            except (OSError, NotImplementedError):
                pass
    shutil.rmtree(base, ignore_errors=True)


def summary(results: list[dict]) -> str:
    width = max(len(r["case"]) for r in results)
    lines = [f"{'case':<{width}}  {'outcome':<20} {'expected':<8} {'s':>6}  detail"]
    for r in results:
        lines.append(f"{r['case']:<{width}}  {r['outcome']:<20} {'yes' if r['expected'] else 'NO':<8} "
                     f"{r['seconds']:6.1f}  {r['detail'][:110]}")
    counts = {o: sum(r["outcome"] == o for r in results) for o in OUTCOMES}
    unexpected = sum(not r["expected"] for r in results)
    lines.append("")
    lines.append(f"{len(results)} cases: " + ", ".join(f"{o} {n}" for o, n in counts.items())
                 + f"; unexpected {unexpected}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write every case's outcome here")
    parser.add_argument("--jobs", type=int, default=2, help="cases at once (default 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a case counts as a hang")
    parser.add_argument("-k", dest="select", default=None, help="only cases whose name contains this")
    parser.add_argument("--skip", action="append", default=[], metavar="SUBSTRING",
                        help="leave out cases whose name contains this (repeatable; e.g. dev_zero on a build that "
                             "would read /dev/zero without end)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--no-fork", action="store_true",
                        help="start a fresh interpreter per case (default: fork each case from one that imported "
                             "OpenVINO and ov_autoplace once)")
    parser.add_argument("--zygote", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--base", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.zygote:
        return zygote()
    if args.case:  # one case, in this process (started by the parent with --no-fork)
        return _case_main(args.case, args.base)
    names = [n for n in CASES if (args.select is None or args.select in n) and not any(k in n for k in args.skip)]
    if args.list:
        print("\n".join(f"{n}  ({CASES[n].family}; expects {', '.join(sorted(CASES[n].expect))})" for n in names))
        return 0
    started = time.perf_counter()
    done = []

    home = Path(tempfile.mkdtemp(prefix="ov_autoplace_probe_home_"))  # the zygote's own (OpenVINO's telemetry)
    spawner = Spawner(not args.no_fork, home)

    def one(name: str) -> dict:
        result = run_one(name, args.timeout, spawner)
        done.append(name)
        print(f"[{len(done)}/{len(names)}] {name}: {result['outcome']}", file=sys.stderr, flush=True)
        return result

    try:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(one, names))
    finally:
        spawner.close()
        shutil.rmtree(home, ignore_errors=True)
    print(summary(results))
    print(f"wall time {time.perf_counter() - started:.0f} s with {args.jobs} job(s)")
    if args.json:
        args.json.write_text(json.dumps({"cases": results, "wall_s": time.perf_counter() - started}, indent=1))
    bad = [r for r in results if r["outcome"] in (HANG, OUTSIDE, WRONG, UNTYPED) or not r["expected"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
