"""What the hostile-state tests and the hostile probe (``tools/hostile_probe.py``) share: a time bound, a listing
of the filesystem around a cache root, and a compile checked against the plain call.

A hostile file or directory can make a read block (a FIFO), never end (``/dev/zero``) or land outside the cache
root (a symbolic or hard link). Each check here fails instead of hanging, and names what changed where.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

BOUND_S = 10.0  # a correct compile or a typed error within 10 s each (issue 23's target)
FAST_S = 1.0  # a refused argument or path: before anything is compiled or opened


def bounded(fn: Callable[[], Any], seconds: float = BOUND_S) -> Any:
    """``fn()`` in a daemon thread; fails (instead of hanging) if it does not return within ``seconds``."""
    result: dict = {}

    def run():
        try:
            result["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"did not return within {seconds} s (hang)"
    if "error" in result:
        raise result["error"]
    return result["value"]


#: Model paths that are not regular files, each of which hung OpenVINO's read before the check at the door.
NOT_A_REGULAR_FILE = ("fifo", "dev_zero", "dev_zero_link", "bin_fifo", "bin_dev_zero", "empty_dir", "saved_model_pb_fifo")


def plant_model_path(kind: str, folder: Path, ir: Path) -> Path | str:
    """A model path of ``kind`` (:data:`NOT_A_REGULAR_FILE`) planted in ``folder``; ``ir`` is a saved IR whose
    weights the ``bin_*`` kinds replace with a FIFO or a link to ``/dev/zero``."""
    if kind in ("bin_fifo", "bin_dev_zero"):
        weights = ir.with_suffix(".bin")
        weights.unlink()
        os.mkfifo(weights) if kind == "bin_fifo" else weights.symlink_to("/dev/zero")
        return ir
    if kind == "dev_zero":
        return "/dev/zero"
    model = folder / "hostile.xml"
    if kind == "fifo":
        os.mkfifo(model)
    elif kind == "dev_zero_link":
        model.symlink_to("/dev/zero")
    else:  # a directory OpenVINO would read as a SavedModel
        model = folder / "saved"
        model.mkdir()
        if kind == "saved_model_pb_fifo":
            os.mkfifo(model / "saved_model.pb")
    return model


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every path under ``folder`` with its type, size, mode and mtime (to prove nothing was touched)."""
    out = {}
    for path in [folder, *folder.rglob("*")]:
        st = os.lstat(path)
        out[str(path)] = (stat.S_IFMT(st.st_mode), st.st_size, stat.S_IMODE(st.st_mode), st.st_mtime_ns)
    return out


def _walk(top: Path, skip: Iterable[Path], depth: int | None = None) -> dict[str, tuple]:
    """Like :func:`snapshot`, never entering ``skip`` (the root itself) nor following a link; ``depth`` levels."""
    skipped = {os.path.abspath(p) for p in skip}
    out: dict[str, tuple] = {}
    if not os.path.lexists(top):
        return out
    top_depth = str(top).rstrip("/").count("/")
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames[:] = [d for d in dirnames if os.path.abspath(os.path.join(dirpath, d)) not in skipped]
        if depth is not None and dirpath.rstrip("/").count("/") - top_depth >= depth:
            dirnames[:] = []
        for name in [".", *dirnames, *filenames]:
            path = os.path.normpath(os.path.join(dirpath, name))
            if path in skipped:
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            # not st_nlink: removing our own hard link to an outside file changes its count, not the file
            out[path] = (stat.S_IFMT(st.st_mode), st.st_size, stat.S_IMODE(st.st_mode), st.st_mtime_ns)
    return out


def surroundings(root: Path, *extra: Path) -> dict[str, tuple]:
    """The filesystem around a cache root: its parent (without the root), ``$HOME/.cache`` (its top level, and
    all of the default root ``~/.cache/ov_autoplace``), the current directory's top level and ``extra`` folders.

    Taken before and after a call, :func:`outside_changes` names whatever was written outside the root.
    """
    root = Path(os.path.abspath(root))
    home_cache = Path(os.path.expanduser("~/.cache"))
    tops = [(root.parent, None), (home_cache, 1), (home_cache / "ov_autoplace", None), (Path.cwd(), 1),
            *((Path(e), None) for e in extra)]
    out: dict[str, tuple] = {}
    for top, depth in tops:
        out.update(_walk(top, [root], depth))
    return out


def outside_changes(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """What differs between two :func:`surroundings`: created, removed and changed paths, each named."""
    created = [f"created {p}" for p in sorted(set(after) - set(before))]
    removed = [f"removed {p}" for p in sorted(set(before) - set(after))]
    # a folder's mtime changes when an entry is created or removed in it: those are named above already
    changed = [f"changed {p}" for p in sorted(set(before) & set(after))
               if before[p] != after[p] and not (stat.S_ISDIR(before[p][0]) and before[p][:3] == after[p][:3])]
    return created + removed + changed


def outputs_match(compiled, plain, seed: int = 1) -> bool:
    """Whether ``compiled`` computes what ``plain`` computes, within bf16 precision (the testbed's CPU may run it)."""
    from ov_autoplace.devices.timing import random_inputs

    inputs = random_inputs(plain, seed=seed)
    ours, ref = compiled(inputs)[0], plain(inputs)[0]
    scale = float(np.max(np.abs(ref))) or 1.0
    return bool(np.max(np.abs(ours - ref)) <= 0.05 * scale)


def distinct_devices():
    """``(core, devices)``: two devices the prior can tell apart, on every machine kind (``testbeds.py``)."""
    from tests.testbeds import distinct_devices as chosen

    core, devices, _ = chosen()
    return core, devices


def compile_checked(testbed, root: Path, model=None, **kw):
    """Compile with ov_autoplace under the time bound and compare outputs with the plain call's."""
    import ov_autoplace as oa
    from tests import synthetic_graphs as sg

    model = model if model is not None else sg.residual()
    compiled = bounded(lambda: oa.compile_model(model, testbed.hetero, core=testbed.core, cache_dir=root, **kw))
    plain = testbed.core.compile_model(model, testbed.hetero)
    assert outputs_match(compiled, plain), "outputs differ beyond bf16 precision"  # CPU runs bf16
    return compiled


__all__ = ["BOUND_S", "FAST_S", "bounded", "compile_checked", "distinct_devices", "outputs_match", "outside_changes", "snapshot",
           "surroundings"]
