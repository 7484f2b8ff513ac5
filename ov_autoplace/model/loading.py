"""Reading files so that every way they can be damaged or hostile becomes one typed error, within a bound.

A damaged JSON file (missing, a directory, empty, truncated, not UTF-8, too deep, the wrong shape: seven Python
exception types) is one :class:`~ov_autoplace.errors.FileFormatError` naming the file and what went wrong; a
hostile one (a FIFO, a link to ``/dev/zero``, a device, a huge file) is refused unread by :func:`read_bounded`, which
never blocks and never reads past its kind's cap (``*_MAX_BYTES``), as a :class:`RefusedFileError`. Each rule,
cap and what a refusal does next: docs/cache.md, "Hostile files and shared machines".
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable, TypeVar

from ov_autoplace.errors import FileFormatError

T = TypeVar("T")

#: What reading or parsing a damaged file raises (JSONDecodeError and UnicodeDecodeError are ValueErrors).
DAMAGED_FILE_ERRORS = (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError)

MiB = 1 << 20
PLACEMENT_ENTRY_MAX_BYTES = 16 * MiB
PROFILE_MAX_BYTES = 64 * MiB
INDEX_ENTRY_MAX_BYTES = 1 * MiB
WORKER_SPEC_MAX_BYTES = 1 * MiB
SMALL_RECORD_MAX_BYTES = 64 * 1024
USER_FILE_MAX_BYTES = 256 * MiB


class RefusedFileError(FileFormatError):
    """A file is not a regular file (FIFO, symlink, device, directory) or exceeds its size cap: not read."""


def file_kind(mode: int) -> str:
    """What a stat mode is, in words (for messages)."""
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_bounded(path: str | os.PathLike, max_bytes: int, *, follow_symlinks: bool = False) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``; never blocks, never follows a link.

    FileNotFoundError if it does not exist; RefusedFileError (naming what it
    is) for a symlink (unless ``follow_symlinks``: files the user named), a
    FIFO, a device, a socket, a directory, or a file over ``max_bytes``.
    """
    path = os.fspath(path)
    st = os.stat(path) if follow_symlinks else os.lstat(path)  # no open at all of what is not a regular file
    if not stat.S_ISREG(st.st_mode):
        target = f" to {os.readlink(path)!r}" if stat.S_ISLNK(st.st_mode) else ""
        raise RefusedFileError(f"{path} is {file_kind(st.st_mode)}{target}, expected a regular file")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # replaced by a symlink since the lstat
            raise RefusedFileError(f"{path} is a symbolic link, expected a regular file") from None
        raise
    try:
        st = os.fstat(fd)  # what was opened, not what the name pointed to a moment ago
        if not stat.S_ISREG(st.st_mode):
            raise RefusedFileError(f"{path} is {file_kind(st.st_mode)}, expected a regular file")
        if st.st_size > max_bytes:
            raise RefusedFileError(f"{path} has {st.st_size} bytes, more than the {max_bytes}-byte cap for this "
                                   "kind of file")
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise RefusedFileError(f"{path} grew past the {max_bytes}-byte cap while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_json_bounded(path: str | os.PathLike, max_bytes: int, *, follow_symlinks: bool = False) -> Any:
    """``json.loads`` of :func:`read_bounded` (every damage raises one of DAMAGED_FILE_ERRORS)."""
    return json.loads(read_bounded(path, max_bytes, follow_symlinks=follow_symlinks).decode("utf-8"))


def remove_refused(path: str | os.PathLike) -> str:
    """Take a bad file out of the way; returns what was done (for the WARNING).

    A non-directory (regular file, FIFO, symlink, device node) is unlinked:
    unlinking a symlink removes the link, never its target. A directory where
    a file should be is removed if empty, else renamed to a hidden
    ``.quarantined-*`` name beside it (``cache clear`` removes those), so its
    contents are neither read nor lost.
    """
    path = Path(path)
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            try:
                os.rmdir(path)
                return "removed it"
            except OSError:  # not empty: keep its contents, out of the way
                pass
            target = path.with_name(f".quarantined-{path.name}-{os.getpid()}")
            os.rename(path, target)
            return f"moved it aside to {target.name}"
        os.unlink(path)
        return "removed it"
    except FileNotFoundError:
        return "it is gone already"
    except OSError as exc:
        return f"cannot remove it ({exc})"


def write_private_atomic(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` as a 0600 file, atomically (temp file in the same directory, fsync, rename).

    The rename replaces a symlink or FIFO at ``path`` by the new file, never writes through it.
    """
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mkstemp: 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_json_file(path: str | Path, what: str, parse: Callable[[Any], T]) -> T:
    """``parse(json of path)``; FileNotFoundError if missing, FileFormatError for any other damage.

    The user named the file, so a symlink is followed; a FIFO, a device or a
    file over ``USER_FILE_MAX_BYTES`` is refused, never read.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no {what} file at {path}")
    try:
        data = read_json_bounded(path, USER_FILE_MAX_BYTES, follow_symlinks=True)
    except DAMAGED_FILE_ERRORS as exc:
        raise FileFormatError(f"{path} is not a readable {what} file: {_reason(exc)}; expected the JSON that "
                              f"ov_autoplace writes for a {what}") from exc
    if not isinstance(data, dict):
        raise FileFormatError(f"{path} holds a JSON {type(data).__name__}, expected the JSON object of a {what}")
    try:
        return parse(data)
    except DAMAGED_FILE_ERRORS as exc:
        raise FileFormatError(f"{path} is not a valid {what} file: {_reason(exc)}") from exc


def check_model_path(path: str | os.PathLike) -> None:
    """Check the model path the user named before OpenVINO opens it; ModelNotFoundError / ModelLoadError.

    OpenVINO's ``read_model`` opens with a blocking read: a FIFO hangs it until a writer comes (forever), and a
    character device such as ``/dev/zero`` is read without end. A ``stat`` (which follows the user's symlinks
    and never blocks) refuses what is not a regular file, and an IR's weights (the ``.bin`` beside the ``.xml``)
    alike; a TensorFlow SavedModel directory (it holds ``saved_model.pb``) is a model too. No size cap: a model's
    weights are legitimately gigabytes (OpenVINO maps them, nothing is read into Python).
    """
    from ov_autoplace.errors import ModelLoadError, ModelNotFoundError

    path = Path(path)
    expected = "expected an IR .xml, .onnx, ... file, or a TensorFlow SavedModel directory (holding saved_model.pb)"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ModelNotFoundError(f"model file {str(path)!r} does not exist ({expected})") from None
    except OSError as exc:  # a dangling link's loop, a path through a file, no permission
        raise ModelLoadError(f"model path {str(path)!r} cannot be examined ({exc.strerror or exc}); {expected}") from None
    if stat.S_ISDIR(st.st_mode):
        pb = path / "saved_model.pb"
        if not pb.exists():
            raise ModelLoadError(f"model path {str(path)!r} is a directory, not a model file; {expected}")
        path, st = pb, os.stat(pb)  # what OpenVINO opens in it
    if not stat.S_ISREG(st.st_mode):
        raise ModelLoadError(f"model path {str(path)!r} is {file_kind(st.st_mode)}, not a regular file: OpenVINO "
                             f"would block or read it without end; {expected}")
    weights = path.with_suffix(".bin")
    if path.suffix.lower() == ".xml" and os.path.lexists(weights):
        try:
            wst = os.stat(weights)
        except OSError as exc:
            raise ModelLoadError(f"the IR's weights {str(weights)!r} cannot be examined ({exc.strerror or exc}); "
                                 "expected a regular .bin file beside the .xml") from None
        if not stat.S_ISREG(wst.st_mode):
            raise ModelLoadError(f"the IR's weights {str(weights)!r} are {file_kind(wst.st_mode)}, not a regular "
                                 "file: OpenVINO would block or read them without end; expected a regular .bin file "
                                 "beside the .xml")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply"
    if isinstance(exc, IsADirectoryError):
        return "it is a directory"
    if isinstance(exc, RefusedFileError):
        return str(exc)
    text = str(exc)
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


__all__ = ["DAMAGED_FILE_ERRORS", "check_model_path", "file_kind", "INDEX_ENTRY_MAX_BYTES", "PLACEMENT_ENTRY_MAX_BYTES", "PROFILE_MAX_BYTES",
           "RefusedFileError", "SMALL_RECORD_MAX_BYTES", "USER_FILE_MAX_BYTES", "WORKER_SPEC_MAX_BYTES",
           "read_bounded", "read_json_bounded", "read_json_file", "remove_refused", "write_private_atomic"]
