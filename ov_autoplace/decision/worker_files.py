"""The files of one model's background worker, and the lock and failure record in them (their layout and rules:
docs/architecture.md, "Module notes")."""

from __future__ import annotations

import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Any, Mapping

from ov_autoplace.cache.profile_store import key_digest
from ov_autoplace.cache.root import private_subdir
from ov_autoplace.model.loading import (DAMAGED_FILE_ERRORS, SMALL_RECORD_MAX_BYTES, RefusedFileError, read_bounded,
                           read_json_bounded, remove_refused, write_private_atomic)

logger = logging.getLogger("ov_autoplace")

MAX_FAILURES = 2
#: A lock older than this is stale even if its pid exists (pids are reused).
LOCK_MAX_AGE_S = 6 * 3600
_DIGEST = re.compile(r"[0-9a-f]{32}")
_FILES = {"lock": "lock", "spec": "spec.json", "model": "model.xml", "weights": "model.bin", "log": "worker.log",
          "failed": "failure.json", "sample": "sample.npz"}


def worker_digest(key: Mapping[str, Any]) -> str:
    return key_digest(key)[:32]


def worker_files(root: str | os.PathLike, digest: str) -> dict[str, Path]:
    """The files of the worker folder of ``digest`` (computed, never read from data)."""
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise ValueError(f"worker digest must be 32 lower-case hex digits, got {digest!r}")
    folder = Path(root) / "workers" / digest
    return {name: folder / filename for name, filename in _FILES.items()}


def private_worker_dir(root: str | os.PathLike, digest: str, *, create: bool = True) -> Path:
    """``<root>/workers/<digest>`` checked private (UntrustedDirectoryError / OSError otherwise)."""
    workers = private_subdir(root, "workers", create=create)
    return private_subdir(workers, worker_files(root, digest)["lock"].parent.name, create=create)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie - dead, not yet reaped by its parent - does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def lock_pid(lock: Path) -> int:
    """The pid in ``lock`` (0: missing, damaged, refused)."""
    try:
        return int(read_bounded(lock, SMALL_RECORD_MAX_BYTES).decode().strip() or 0)
    except RefusedFileError as exc:
        logger.warning("worker lock refused (%s); %s", exc, remove_refused(lock))
    except DAMAGED_FILE_ERRORS:
        pass
    return 0


def acquire_lock(lock: Path) -> bool:
    """Create ``lock`` (0600) holding our pid; False if a live holder has it. A stale lock is taken over."""
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pid = lock_pid(lock)
            try:
                age = time.time() - os.lstat(lock).st_mtime
            except OSError:
                age = 0.0
            if pid and pid_alive(pid) and age < LOCK_MAX_AGE_S:
                return False
            lock.unlink(missing_ok=True)  # stale: its worker died (or not a lock at all)
            continue
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


def holder_died(lock: Path) -> int:
    """The pid of a dead holder of ``lock``, else 0."""
    if not os.path.lexists(lock):
        return 0
    pid = lock_pid(lock)
    return pid if pid and not pid_alive(pid) else 0


def release_lock(lock: Path, pid: int | None = None) -> None:
    """Remove ``lock`` if it holds ``pid`` (default: ours)."""
    if lock_pid(lock) == (pid or os.getpid()):
        lock.unlink(missing_ok=True)


def read_failure(path: Path) -> dict[str, Any]:
    """The failure record (``{"failures": 0}`` if none; a damaged one counts once, reason 'damaged record')."""
    try:
        data = read_json_bounded(path, SMALL_RECORD_MAX_BYTES)
        if not isinstance(data.get("failures"), int) or not isinstance(data.get("reason", ""), str):
            raise ValueError("malformed")
        return data
    except FileNotFoundError:
        return {"failures": 0}
    except RefusedFileError as exc:
        logger.warning("worker failure record refused (%s); %s", exc, remove_refused(path))
        return {"failures": 0}
    except DAMAGED_FILE_ERRORS:
        return {"failures": 1, "reason": f"its failure record {path} is damaged", "reported": False}


def record_failure(path: Path, reason: str, *, abstained: bool = False) -> int:
    """Count one more failed try with ``reason``; returns the count (best effort). ``abstained``: the verification
    found the machine too noisy to decide: no failure, but a try (a machine that stays noisy does not pay for a
    worker on every start)."""
    count = int(read_failure(path).get("failures", 0)) + 1
    try:
        write_private_atomic(path, json.dumps({"failures": count, "reason": reason[:2000], "at": time.time(),
                                               "reported": False, "abstained": abstained}))
    except OSError as exc:
        logger.error("cannot write the failure record %s (%s)", path, exc)
    return count


def report_failure(files: dict[str, Path]) -> int:
    """Log an unreported failure once as a WARNING; returns the failure count."""
    record = read_failure(files["failed"])
    count = int(record.get("failures", 0))
    if count and not record.get("reported", True):
        abstained = record.get("abstained") is True
        (logger.info if abstained else logger.warning)(
            "background %s of this model %s (%d of %d tries): %s (log %s)%s",
            "verification" if abstained else "profiling", "abstained" if abstained else "failed", count,
            MAX_FAILURES, record.get("reason", "no reason recorded"), files["log"],
            "; not retrying (`ov-autoplace cache clear` resets it)" if count >= MAX_FAILURES else "; trying again")
        try:
            write_private_atomic(files["failed"], json.dumps(dict(record, reported=True)))
        except OSError:
            pass
    return count


__all__ = ["LOCK_MAX_AGE_S", "MAX_FAILURES", "acquire_lock", "holder_died", "lock_pid", "pid_alive",
           "private_worker_dir", "read_failure", "record_failure", "release_lock", "report_failure", "worker_digest",
           "worker_files"]
