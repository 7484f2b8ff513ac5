"""One cache root for everything ov_autoplace writes, and OpenVINO's blob cache left to the user.

Layout under the root (``cache_dir=``, else ``$OV_AUTOPLACE_CACHE_DIR``, else
``$XDG_CACHE_HOME/ov_autoplace``, else ``~/.cache/ov_autoplace``)::

    placements/   placement cache entries (cache.py)
    profiles/     measured profiles and link profiles (unless $OV_AUTOPLACE_PROFILE_DIR says otherwise)
    openvino/     OpenVINO's compiled blobs, only when the caller opts in with cache_blobs=True
    workers/      background profiling: lock files, the model handed to the worker, its log

OpenVINO's own blob cache (``CACHE_DIR``) belongs to the user: a ``CACHE_DIR``
in ``config`` or set on the ``ov.Core`` is used as it is (OpenVINO applies the
core's property to every compile), and when the user enabled none,
ov_autoplace enables none either, unless ``cache_blobs=True`` asks for
``<root>/openvino``. ``clear_cache`` removes exactly the four folders above
(files ov_autoplace names), never a ``CACHE_DIR`` the user chose.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any, Mapping

logger = logging.getLogger(__name__)

CACHE_DIR_ENV = "OV_AUTOPLACE_CACHE_DIR"
PROFILE_DIR_ENV = "OV_AUTOPLACE_PROFILE_DIR"
#: The sub-folders of the root that ov_autoplace writes (and ``clear_cache`` removes).
SUBDIRS = ("placements", "profiles", "openvino", "workers")


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """``cache_dir``, else ``$OV_AUTOPLACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/ov_autoplace``, else ``~/.cache/ov_autoplace``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
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
    if cache_blobs and user_blob_cache_dir(core, props) is None:
        blob_dir = root / "openvino"
        try:
            blob_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            logger.warning("cannot create the blob cache %s (%s); compiling without CACHE_DIR", blob_dir, exc)
            return out
        out["CACHE_DIR"] = str(blob_dir)
    return out


def clear_cache(cache_dir: str | os.PathLike | None = None) -> dict[str, int]:
    """Remove everything ov_autoplace wrote under the root (and in ``$OV_AUTOPLACE_PROFILE_DIR``).

    Returns the number of files removed per folder. A user's own ``CACHE_DIR``
    is never touched; files of other programs in the root are left alone.
    """
    root = cache_root(cache_dir)
    folders = {name: root / name for name in SUBDIRS}
    profiles = profile_dir(cache_dir)
    if profiles != folders["profiles"]:
        folders["profiles (OV_AUTOPLACE_PROFILE_DIR)"] = profiles
    removed: dict[str, int] = {}
    for name, folder in folders.items():
        if not folder.is_dir():
            removed[name] = 0
            continue
        if name.startswith("profiles") and folder != root / "profiles":
            # a folder the user named: remove only our own files from it
            files = [p for pattern in ("model-*.json", "links-*.json") for p in folder.glob(pattern)]
            for path in files:
                path.unlink(missing_ok=True)
            removed[name] = len(files)
            continue
        count = sum(1 for p in folder.rglob("*") if p.is_file())
        shutil.rmtree(folder, ignore_errors=True)
        if folder.exists():
            logger.warning("could not remove all of %s", folder)
        removed[name] = count
    return removed


__all__ = ["CACHE_DIR_ENV", "PROFILE_DIR_ENV", "SUBDIRS", "blob_cache_props", "cache_root", "clear_cache",
           "profile_dir", "user_blob_cache_dir"]
