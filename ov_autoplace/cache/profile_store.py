"""On-disk cache of measured profiles, keyed by what the numbers depend on.

The rest: docs/architecture.md, "Module notes", ov_autoplace/cache/profile_store.py.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

import numpy as np
import openvino as ov

from ov_autoplace.cache.root import (PROFILE_DIR_ENV, UntrustedDirectoryError, private_store_dir, profile_dir,
                          refusal_message, warn_once)
from ov_autoplace.model.loading import (DAMAGED_FILE_ERRORS, PLACEMENT_ENTRY_MAX_BYTES, PROFILE_MAX_BYTES, RefusedFileError,
                            read_json_bounded, remove_refused, write_private_atomic)
from ov_autoplace.graph.arrays import GraphArrays

logger = logging.getLogger(__name__)

DEFAULT_PROFILE_DIR = Path("~/.cache/ov_autoplace/profiles")  # without OV_AUTOPLACE_CACHE_DIR / XDG_CACHE_HOME

#: Bump when the meaning or layout of a stored model profile (profiler.py) changes.
MODEL_PROFILE_FORMAT = 1

#: Device properties a measured profile depends on (read from the core, as set).
KEY_PROPERTIES = ("INFERENCE_PRECISION_HINT", "INFERENCE_NUM_THREADS", "PERFORMANCE_HINT", "NUM_STREAMS",
                  "FULL_DEVICE_NAME")

T = TypeVar("T")

#: A miss explains itself from at most this many other files of its kind (the newest).
EXPLAIN_MAX_FILES = 64

#: Everything reading or parsing a damaged file raises (RecursionError: deeply nested JSON).
_CORRUPT = DAMAGED_FILE_ERRORS


def structural_hash(graph: GraphArrays) -> str:
    """sha256 of a graph's structure: op types/versions, roles, output shapes and element types, flops, edges.

    Friendly names and Constant *values* (weights) are left out, so the same
    architecture built twice (auto-generated names differ) or with other
    weights hashes equal, while a changed shape, type or connection does not.
    Deterministic across processes and platforms (fixed little-endian dtypes).
    """
    h = hashlib.sha256()

    def strings(values: Sequence[str]) -> None:
        h.update(b"\x1e".join(v.encode("utf-8", "surrogatepass") for v in values) + b"\x1d")

    def array(values: np.ndarray, dtype: str) -> None:
        arr = np.ascontiguousarray(values, dtype=dtype)
        h.update(str(arr.shape).encode() + arr.tobytes() + b"\x1d")

    h.update(f"nodes={graph.num_nodes};edges={graph.num_edges};".encode())
    strings(graph.op_types)
    strings(graph.op_versions)
    strings(graph.out_element_type)
    array(graph.role, "<i1")
    array(graph.num_outputs, "<i4")
    array(graph.out_rank, "<i4")
    array(graph.out_shape, "<i8")
    array(graph.out_bytes, "<i8")
    array(graph.flops, "<f8")
    for edge in (graph.edge_src, graph.edge_dst, graph.edge_src_port, graph.edge_dst_port):
        array(edge, "<i4")
    return h.hexdigest()


def device_properties(core: ov.Core, device: str) -> dict[str, str]:
    """The :data:`KEY_PROPERTIES` of ``device`` as strings (``"<unsupported>"`` where the device has none)."""
    out = {}
    for prop in KEY_PROPERTIES:
        try:
            out[prop] = str(core.get_property(device, prop))
        except Exception:  # noqa: BLE001 - a plugin without the property simply does not depend on it
            out[prop] = "<unsupported>"
    return out


def profile_key(core: ov.Core, devices: Sequence[str], *, kind: str, graph: GraphArrays | None = None,
                extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Key components of a profile of ``kind`` (JSON-able, compared field by field on load)."""
    key: dict[str, Any] = {
        "kind": kind,
        "devices": list(devices),
        "device_properties": {d: device_properties(core, d) for d in devices},
        "openvino_version": ov.get_version(),
    }
    if graph is not None:
        key["model_structure"] = structural_hash(graph)
    if extra:
        key.update(extra)
    return key


def key_digest(key: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def differences(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """Human-readable list of the key components that differ."""
    out = []
    for name in sorted(set(stored) | set(wanted)):
        a, b = stored.get(name, "<missing>"), wanted.get(name, "<missing>")
        if a == b:
            continue
        if name == "device_properties" and isinstance(a, dict) and isinstance(b, dict):
            for dev in sorted(set(a) | set(b)):
                pa, pb = a.get(dev, {}), b.get(dev, {})
                for prop in sorted(set(pa) | set(pb)) if isinstance(pa, dict) and isinstance(pb, dict) else ["*"]:
                    va = pa.get(prop) if isinstance(pa, dict) else pa
                    vb = pb.get(prop) if isinstance(pb, dict) else pb
                    if va != vb:
                        out.append(f"{dev}.{prop}: stored {va!r}, now {vb!r}")
        else:
            out.append(f"{name}: stored {str(a)[:80]!r}, now {str(b)[:80]!r}")
    return out


def _words(key: Mapping[str, Any]) -> tuple[str, str, str]:
    """What a file of this kind is called, how it was made, and what the caller does instead of using it."""
    if key.get("kind") == "placement":  # the placement cache keeps its entries in a ProfileStore too
        return "placement-cache entry", "placed", "placing the model again (nothing is re-measured for this)"
    return f"{key.get('kind', 'profile')} profile", "measured", "re-measuring"


class ProfileStore:
    """JSON profiles in one directory, one file per key."""

    def __init__(self, directory: str | Path | None = None) -> None:
        if directory is None:
            directory = profile_dir()
        self.directory = Path(directory).expanduser()

    def path_for(self, key: Mapping[str, Any]) -> Path:
        return self.directory / f"{key.get('kind', 'profile')}-{key_digest(key)[:40]}.json"

    def max_bytes(self, key: Mapping[str, Any]) -> int:
        return PLACEMENT_ENTRY_MAX_BYTES if key.get("kind") == "placement" else PROFILE_MAX_BYTES

    def usable(self, *, create: bool) -> bool:
        """Whether the directory may be used: private, ours (created 0700 if ``create``). Never raises."""
        try:
            private_store_dir(self.directory, create=create)
            return True
        except UntrustedDirectoryError as exc:
            warn_once(refusal_message(f"the cache directory {self.directory} is refused", exc))
        except OSError:
            pass  # missing (a plain miss) or cannot be created (save says so)
        return False

    def load(self, key: Mapping[str, Any], parse: Callable[[dict[str, Any]], T]) -> T | None:
        """The parsed payload stored under ``key``, or None (miss, mismatch, refused or corrupt: re-measure)."""
        if not self.usable(create=False):
            return None
        path = self.path_for(key)
        try:
            data = read_json_bounded(path, self.max_bytes(key))
            stored_key, payload = data["key"], data["payload"]
            if not isinstance(stored_key, dict) or not isinstance(payload, dict):
                raise ValueError("'key' and 'payload' must be JSON objects")
        except FileNotFoundError:
            self._explain_miss(key)
            return None
        except _CORRUPT as exc:
            self._discard_corrupt(path, exc, key)
            return None
        diffs = differences(stored_key, key)
        if diffs:
            thing, _, next_step = _words(key)
            logger.warning("%s %s was made under other conditions (%s); %s", thing, path, "; ".join(diffs), next_step)
            return None
        try:
            return parse(payload)
        except _CORRUPT as exc:
            self._discard_corrupt(path, exc, key)
            return None

    def _discard_corrupt(self, path: Path, exc: BaseException, key: Mapping[str, Any] | None = None) -> None:
        """Warn and remove a corrupt or refused file, so the caller's next save rewrites it (best effort)."""
        thing, _, next_step = _words(key or {})
        state = "refused" if isinstance(exc, RefusedFileError) else "corrupt"
        logger.warning("%s %s is %s (%s: %s); %s and %s", thing, path, state, type(exc).__name__,
                       str(exc)[:200], remove_refused(path), next_step)

    def save(self, key: Mapping[str, Any], payload: Mapping[str, Any]) -> Path | None:
        """Write atomically: a failure part-way (e.g. an unserialisable value) leaves any old file untouched.

        An OS error (directory not writable, or a file where it should be) is
        a WARNING and returns None: caching is best effort.
        """
        try:
            private_store_dir(self.directory, create=True)
        except UntrustedDirectoryError as exc:
            warn_once(refusal_message(f"the cache directory {self.directory} is refused", exc))
            return None
        except OSError as exc:
            logger.warning("cannot write the %s: %s is not writable (%s: %s); continuing without caching it",
                           _words(key)[0], self.directory, type(exc).__name__, exc)
            return None
        try:
            return self._save(key, payload)
        except OSError as exc:
            logger.warning("cannot write the %s: %s is not writable (%s: %s); continuing without caching it",
                           _words(key)[0], self.directory, type(exc).__name__, exc)
            return None

    def _save(self, key: Mapping[str, Any], payload: Mapping[str, Any]) -> Path:
        path = self.path_for(key)
        if os.path.isdir(path) and not os.path.islink(path):  # a directory where the file belongs: out of the way
            remove_refused(path)
        # serialised first (a failure leaves no file), then written 0600 and renamed into place
        write_private_atomic(path, json.dumps({"key": dict(key), "payload": dict(payload)}))
        logger.info("saved %s to %s", _words(key)[0], path)
        return path

    def _explain_miss(self, key: Mapping[str, Any]) -> None:
        """On a miss, say why an older profile of the same thing no longer applies (if there is one)."""
        same = ("kind", "devices", "model_structure")
        if not self.directory.is_dir():
            return
        others = []
        for other in self.directory.glob(f"{key.get('kind', 'profile')}-*.json"):
            try:
                others.append((os.lstat(other).st_mtime, other))
            except OSError:
                continue
        for _, other in sorted(others, reverse=True)[:EXPLAIN_MAX_FILES]:  # newest first, bounded
            try:
                stored = read_json_bounded(other, self.max_bytes(key))["key"]
            except RefusedFileError as exc:  # a FIFO or a link under an entry's name: never read, removed
                logger.warning("%s is refused (%s); %s", other, exc, remove_refused(other))
                continue
            except _CORRUPT:
                continue
            if isinstance(stored, dict) and all(stored.get(k) == key.get(k) for k in same):
                thing, made, next_step = _words(key)
                # Another placement-cache entry for other pins/options is normal (INFO); a stale profile is not.
                log = logger.info if key.get("kind") == "placement" else logger.warning
                log("no %s for these conditions; %s %s is for this %s but was %s under other conditions (%s); %s",
                    thing, thing, other, "model" if "model_structure" in key else "device set", made,
                    "; ".join(differences(stored, key)), next_step)
                return


__all__ = ["DEFAULT_PROFILE_DIR", "EXPLAIN_MAX_FILES", "KEY_PROPERTIES", "MODEL_PROFILE_FORMAT", "PROFILE_DIR_ENV", "ProfileStore", "device_properties",
           "differences", "key_digest", "profile_key", "structural_hash"]
