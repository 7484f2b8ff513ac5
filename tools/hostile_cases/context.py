"""One probe case in its own process: its folders, its two devices, its model, the arming of the outside check,
and the outcome it reports (``tools/hostile_probe.py`` forks it and adds ``hang`` and ``outside the root``)."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
import traceback
from pathlib import Path

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

    from tools.hostile_cases.registry import CASES

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
