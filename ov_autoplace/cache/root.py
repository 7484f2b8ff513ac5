"""One private cache root for everything ov_autoplace writes, and OpenVINO's blob cache left to the user.

The rest of this overview: docs/architecture.md, "Module notes".
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import os
import shutil
import stat
from pathlib import Path
from typing import Any, Mapping

from ov_autoplace.model.loading import file_kind, remove_refused

logger = logging.getLogger(__name__)

CACHE_DIR_ENV = "OV_AUTOPLACE_CACHE_DIR"
PROFILE_DIR_ENV = "OV_AUTOPLACE_PROFILE_DIR"
#: The sub-folders of the root that ov_autoplace writes (and ``clear_cache`` removes).
SUBDIRS = ("placements", "profiles", "support", "openvino", "workers")
#: Below this much free space a compiled blob will not fit (a blob is about as large as the model's weights).
BLOB_MIN_FREE_BYTES = 64 << 20
#: Files of ours in a profile directory the user named (the rest of it is theirs).
PROFILE_PATTERNS = ("model-*.json", "links-*.json", "support-*.json", ".quarantined-*")


class UntrustedDirectoryError(PermissionError):
    """A cache directory ov_autoplace refuses: another user's, writable by group/others, or not a directory."""


def checked_cache_dir(cache_dir: object, what: str = "cache_dir") -> Path:
    """A directory the caller named for ov_autoplace's cache, as a Path; PropertyError (a ValueError and a
    RuntimeError, as OpenVINO's error for a bad ``CACHE_DIR``) if it is not one.

    An empty string is refused rather than read as the current directory (``Path("")`` is ``.``): the cache
    would land wherever the app happens to run, which nobody asks for on purpose.
    """
    from ov_autoplace.errors import PropertyError

    if isinstance(cache_dir, os.PathLike):
        cache_dir = os.fspath(cache_dir)
    if not isinstance(cache_dir, str):
        raise PropertyError(f"{what} must be a directory path (str or os.PathLike), or unset for the default "
                            f"({default_root_text()}), got {type(cache_dir).__name__}")
    if not cache_dir.strip() or "\0" in cache_dir:
        raise PropertyError(f"{what} {cache_dir!r} names no directory; pass a directory of your own (e.g. "
                            f"'~/.cache/ov_autoplace'), or leave it unset for the default ({default_root_text()}); "
                            "for the current directory say '.'")
    return Path(cache_dir).expanduser()


def default_root_text() -> str:
    return f"${CACHE_DIR_ENV}, else $XDG_CACHE_HOME/ov_autoplace, else ~/.cache/ov_autoplace"


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """``cache_dir``, else ``$OV_AUTOPLACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/ov_autoplace``, else ``~/.cache/ov_autoplace``.

    The one resolution of the root every writer uses (placements, profiles, support, blobs, workers);
    PropertyError for a ``cache_dir`` that names no directory (:func:`checked_cache_dir`).
    """
    if cache_dir is not None:
        return checked_cache_dir(cache_dir)
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "ov_autoplace"


def profile_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """Where measured profiles live: ``$OV_AUTOPLACE_PROFILE_DIR`` if set, else ``<root>/profiles``.

    An explicit ``cache_dir`` wins over the environment, so one ``cache_dir=`` moves everything.
    """
    env = os.environ.get(PROFILE_DIR_ENV)
    if env and cache_dir is None:
        return Path(env).expanduser()
    return cache_root(cache_dir) / "profiles"


_warned: set[str] = set()


def warn_once(message: str) -> None:
    """A WARNING the first time in this process, DEBUG after (one refused root must not flood the log)."""
    (logger.debug if message in _warned else logger.warning)(message)
    _warned.add(message)


def ownership_problem(st: os.stat_result, path: Path) -> str | None:
    """Why a directory with this stat may not be trusted, or None."""
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.geteuid():
        return f"{path} is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"{path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _mkdir_private(path: Path) -> None:
    """Create ``path`` and its missing parents as 0700 (chmod after mkdir: the umask cannot widen it)."""
    missing = []
    for p in (path, *path.parents):
        if os.path.lexists(p):
            break
        missing.append(p)
    for p in reversed(missing):
        try:
            os.mkdir(p, 0o700)
        except FileExistsError:
            continue
        os.chmod(p, 0o700)


def private_root(root: str | os.PathLike, *, create: bool = True) -> Path:
    """The root, created 0700 if missing; UntrustedDirectoryError if it is not ours or group/other-writable.

    The root itself may be a symlink (a user's ``~/.cache`` on another disk): its target is checked.
    FileNotFoundError if it is missing and ``create`` is False; other OSErrors if it cannot be created.
    """
    root = Path(root)
    if create and not root.exists():
        _mkdir_private(root)
    st = os.stat(root)
    if not stat.S_ISDIR(st.st_mode):  # damage, not a trust question: the caller's OSError path says "not writable"
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(root))
    problem = ownership_problem(st, root)
    if problem:
        raise UntrustedDirectoryError(problem)
    return root


def private_subdir(root: str | os.PathLike, name: str, *, create: bool = True) -> Path:
    """``root/name`` as a real private directory of a trusted root (see the module docstring).

    Raises UntrustedDirectoryError (the root or the folder is not ours),
    FileNotFoundError (missing and ``create`` False) or another OSError.
    """
    root = private_root(root, create=create)
    path = root / name
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            raise
        _mkdir_private(path)
        return path
    if not stat.S_ISDIR(st.st_mode):  # a symlink (anywhere), file or FIFO where our folder belongs: heal
        target = f" to {os.readlink(path)!r}" if stat.S_ISLNK(st.st_mode) else ""
        logger.warning("%s is %s%s, expected a folder of ov_autoplace's cache (nothing is followed out of the "
                       "cache root); %s%s", path, file_kind(st.st_mode), target, remove_refused(path),
                       " and created a private folder" if create else "")
        if not create:
            raise FileNotFoundError(path)
        _mkdir_private(path)
        return path
    if st.st_uid == os.geteuid() and st.st_mode & 0o077:  # ours, inside a private root: only we reach it
        os.chmod(path, 0o700)  # tightened (a folder an older version made under the umask)
        return path
    problem = ownership_problem(st, path)
    if problem:
        raise UntrustedDirectoryError(problem)
    return path


def private_store_dir(directory: str | os.PathLike, *, create: bool = True) -> Path:
    """A store's directory: a layout folder of a root (``<root>/placements``...) or a directory the user named."""
    directory = Path(directory)
    if directory.name in SUBDIRS:
        return private_subdir(directory.parent, directory.name, create=create)
    return private_root(directory, create=create)


def refusal_message(what: str, exc: BaseException) -> str:
    return (f"{what}: {exc}; ov_autoplace continues without it (like ssh with a key others can change: someone "
            "else could plant entries there). Fix: use a cache_dir of your own, or `chmod go-w` / `chown` it")


def user_blob_cache_dir(core: Any, props: Mapping[str, Any]) -> str | None:
    """The ``CACHE_DIR`` the user enabled (in ``config`` first, then on the core), or None."""
    if props.get("CACHE_DIR"):
        return str(props["CACHE_DIR"])
    try:
        value = core.get_property("CACHE_DIR")
    except Exception:  # noqa: BLE001 - a core without the property has no blob cache
        return None
    return str(value) if value else None


def blob_cache_props(core: Any, props: Mapping[str, Any], root: Path, cache_blobs: bool) -> dict[str, Any]:
    """``props`` for the placed compile: the user's ``CACHE_DIR`` untouched; ``<root>/openvino`` only if opted in."""
    out = dict(props)
    if not cache_blobs or user_blob_cache_dir(core, props) is not None:
        return out
    try:
        blob_dir = private_subdir(root, "openvino")
    except UntrustedDirectoryError as exc:
        warn_once(refusal_message("the blob cache is refused", exc) + "; compiling without CACHE_DIR")
        return out
    except OSError as exc:
        logger.warning("cannot create the blob cache %s (%s); compiling without CACHE_DIR", Path(root) / "openvino",
                       exc)
        return out
    _sweep_blob_dir(blob_dir)
    free = shutil.disk_usage(blob_dir).free
    if free < BLOB_MIN_FREE_BYTES:
        logger.warning("cache_blobs=True but the disk holding the blob cache %s has %.1f MiB free (less than %d MiB); "
                       "OpenVINO would write no blob and say nothing, so compiling without CACHE_DIR (free some space "
                       "or point cache_dir elsewhere)", blob_dir, free / 2**20, BLOB_MIN_FREE_BYTES >> 20)
        return out
    out["CACHE_DIR"] = str(blob_dir)
    return out


def private_blob_files(root: str | os.PathLike) -> None:
    """Make OpenVINO's blobs under ``<root>/openvino`` 0600, like every file of ours.

    OpenVINO sets a blob's mode itself (0440 or 0640 whatever the umask: read-only, and readable by the group),
    so it is tightened after each compile that used the folder (and before the next one, for a blob a
    compile made ahead on another thread wrote later). Regular files of ours only: a link is not followed.
    """
    blob_dir = Path(root) / "openvino"
    try:
        if not stat.S_ISDIR(os.lstat(blob_dir).st_mode):
            return
    except OSError:
        return
    for entry, st in _blob_entries(blob_dir):
        if not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) == 0o600:
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:  # what was opened is what is changed; a file with another name (a hard link) is not ours alone
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_nlink == 1:
                os.fchmod(fd, 0o600)
        except OSError:
            pass
        finally:
            os.close(fd)


def _blob_entries(blob_dir: Path) -> list[tuple[os.DirEntry, os.stat_result]]:
    """Every entry of our blob folder with its own ``lstat`` (never a link's target); one that vanished is skipped."""
    try:
        entries = list(os.scandir(blob_dir))
    except OSError:
        return []
    found = []
    for entry in entries:
        try:
            found.append((entry, entry.stat(follow_symlinks=False)))
        except OSError:
            continue
    return found


def _sweep_blob_dir(blob_dir: Path) -> None:
    """Remove what is not a regular file or a folder from our blob folder: OpenVINO reads a blob with a blocking
    open, so a FIFO named like a blob hangs its compile forever (measured: killed by ``timeout 30``), and a
    symlink to ``/dev/zero`` would be read without end. A hard link goes too (the name only): its other name may
    be outside the root, and making it 0600 (``private_blob_files``) changed that file's mode. A few ``lstat``
    calls per compile with cache_blobs=True."""
    for entry, st in _blob_entries(blob_dir):
        mode, links = st.st_mode, st.st_nlink
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            target = f" to {os.readlink(entry.path)!r}" if stat.S_ISLNK(mode) else ""
            logger.warning("the blob cache holds %s, which is %s%s, not a blob OpenVINO can read; %s", entry.path,
                           file_kind(mode), target, remove_refused(entry.path))
        elif stat.S_ISREG(mode) and links > 1:
            logger.warning("the blob cache holds %s, a file with %d hard links (its other names may be outside the "
                           "cache root); %s", entry.path, links, remove_refused(entry.path))
    private_blob_files(blob_dir.parent)


@dataclasses.dataclass
class ClearReport:
    """What ``clear_cache`` removed (files and links, per folder) and what it left, with why."""

    root: Path
    removed: dict[str, int] = dataclasses.field(default_factory=dict)
    left: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.removed.values())

    def summary(self) -> str:
        lines = [f"removed {self.total} file(s) from {self.root} ("
                 + ", ".join(f"{name}: {n}" for name, n in self.removed.items()) + ")"]
        lines += [f"  left {path}: {why}" for path, why in self.left]
        return "\n".join(lines)


def _remove_tree(folder: Path, report: ClearReport, name: str) -> None:
    """Remove ``folder`` bottom-up, counting what is really gone; never follows a symlink."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(folder, topdown=False, followlinks=False):
        for entry in filenames + dirnames:
            path = os.path.join(dirpath, entry)
            try:
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    os.rmdir(path)  # emptied by the walk below it
                else:
                    os.unlink(path)  # a file, FIFO, device node or symlink: the name, never a link's target
                    count += 1
            except OSError as exc:
                report.left.append((path, f"cannot remove it ({exc.strerror or exc})"))
    try:
        os.rmdir(folder)
    except OSError as exc:
        if not report.left:
            report.left.append((str(folder), f"cannot remove it ({exc.strerror or exc})"))
    report.removed[name] = count


def clear_cache(cache_dir: str | os.PathLike | None = None) -> ClearReport:
    """Remove everything ov_autoplace wrote under the root (and its files in ``$OV_AUTOPLACE_PROFILE_DIR``).

    A user's own ``CACHE_DIR`` is never touched; files of other programs in the
    root are left and named; a layout folder that is a symlink loses the link
    only; a root owned by another user is left untouched.
    """
    root = cache_root(cache_dir)
    report = ClearReport(root)
    try:
        st = os.stat(root)
    except FileNotFoundError:
        return report
    if st.st_uid != os.geteuid():
        report.left.append((str(root), f"owned by uid {st.st_uid}, not by this user: not ours to clear"))
        return report
    for name in SUBDIRS:
        path = root / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            report.removed[name] = 0
            continue
        if stat.S_ISDIR(st.st_mode):
            _remove_tree(path, report, name)
            continue
        what = file_kind(st.st_mode) + (f" to {os.readlink(path)!r}" if stat.S_ISLNK(st.st_mode) else "")
        try:
            os.unlink(path)
            report.left.append((str(path), f"was {what}, not a folder: removed that name, followed nothing"))
        except OSError as exc:
            report.left.append((str(path), f"is {what}; cannot remove it ({exc.strerror or exc})"))
        report.removed[name] = 0
    profiles = profile_dir(cache_dir)
    if profiles != root / "profiles" and profiles.is_dir():  # a folder the user named: only our own files
        name = "profiles (OV_AUTOPLACE_PROFILE_DIR)"
        files = sorted({p for pattern in PROFILE_PATTERNS for p in profiles.glob(pattern)})
        report.removed[name] = 0
        for path in files:
            try:
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    shutil.rmtree(path)  # a quarantined folder (rmtree follows no symlink inside)
                else:
                    os.unlink(path)
                report.removed[name] += 1
            except OSError as exc:
                report.left.append((str(path), f"cannot remove it ({exc.strerror or exc})"))
    for other in sorted(root.iterdir()) if root.is_dir() else ():
        if other.name not in SUBDIRS:
            report.left.append((str(other), "not written by ov_autoplace"))
    problem = ownership_problem(os.stat(root), root)
    if problem:
        report.left.append((str(root), f"the root itself stays refused until fixed: {problem}"))
    return report


__all__ = ["BLOB_MIN_FREE_BYTES", "CACHE_DIR_ENV", "ClearReport", "PROFILE_DIR_ENV", "SUBDIRS",
           "UntrustedDirectoryError", "blob_cache_props", "cache_root", "checked_cache_dir", "clear_cache",
           "private_blob_files", "private_root",
           "private_store_dir", "private_subdir", "profile_dir", "user_blob_cache_dir", "warn_once"]
