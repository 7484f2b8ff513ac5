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

This file is the parent (spawning, timeouts, the outside check, the table); the cases and what one case does in
its process are in ``tools/hostile_cases/``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the probe reuses the tests' helpers (tests/hostile.py, tests/damaged_files.py)
    sys.path.insert(0, str(REPO))

from tools.hostile_cases import CASES  # noqa: E402 - after the repository is on the path
from tools.hostile_cases.context import (HANG, OUTCOMES, OUTSIDE, PROBE, UNTYPED, WRONG,  # noqa: E402
                                         kill_processes_naming, listing, run_case)


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
