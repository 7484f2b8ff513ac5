"""The warm start of a one-device placement: a small index keyed on the caller's own model.

How and why, in full: docs/default-path.md, "Module notes", ov_autoplace/decision/single_device_index.py.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openvino as ov

from ov_autoplace.cache.profile_store import device_properties, structural_hash
from ov_autoplace.cache.root import UntrustedDirectoryError, private_subdir, refusal_message, warn_once
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.loading import (INDEX_ENTRY_MAX_BYTES, RefusedFileError, read_json_bounded, remove_refused,
                                        write_private_atomic)

if TYPE_CHECKING:  # the request is built above this module, which only reads its fields
    from ov_autoplace.decision.request import PlacementRequest

logger = logging.getLogger(__name__)

INDEX_FORMAT = 2  # 2: the policy as size-mtime, not its digest


def index_key(req: PlacementRequest, policy_stamp: str) -> dict[str, Any]:
    """The key of the caller's model on these devices (JSON-able); ``policy_stamp`` names the policy file's version."""


    key = {"format": INDEX_FORMAT, "structure": structural_hash(extract_graph(req.model)),
           "devices": list(req.devices), "excluded": sorted(req.exclude_devices),
           "properties": {d: device_properties(req.core, d) for d in req.devices},
           "openvino": ov.get_version(), "policy": policy_stamp, "max_submodels": req.max_submodels}
    if req.shapes is not None:  # a dynamic model: the decision was made at these placement shapes
        key["placement_shapes"] = req.shapes
    return key


def key_digest(key: dict[str, Any]) -> str:
    """The file-name digest of an index key (this index's entries and the compile-ahead notes use it)."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:40]


def _path(root: Path, key: dict[str, Any]) -> Path:
    return Path(root) / "placements" / f"single-{key_digest(key)}.json"


def lookup(root: Path, key: dict[str, Any]) -> tuple[str, str] | None:
    """(device, source) stored for ``key``, or None (miss, stale, or a profile arrived after the prior)."""
    path = _path(root, key)
    try:
        private_subdir(root, "placements", create=False)
        data = read_json_bounded(path, INDEX_ENTRY_MAX_BYTES)
        if data["key"] != key or data["device"] not in key["devices"]:
            return None
        watch = data.get("profile_path")
        if data["source"].startswith("prior") and watch and os.path.lexists(str(watch)):
            return None  # measured since: let the full path use the profile
        return str(data["device"]), str(data["source"])
    except UntrustedDirectoryError as exc:
        warn_once(refusal_message("the placement cache is refused", exc))
    except RefusedFileError as exc:
        logger.warning("single-device index entry refused (%s); %s and placing through the full path", exc,
                       remove_refused(path))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass
    return None


def store(root: Path, key: dict[str, Any], device: str, source: str, profile_path: str | None) -> None:
    """Record a one-device decision (best effort: a failure is logged at DEBUG and ignored)."""
    path = _path(root, key)
    try:
        private_subdir(root, "placements")
        write_private_atomic(path, json.dumps({"key": key, "device": device, "source": source,
                                               "profile_path": profile_path}))
    except (OSError, TypeError, ValueError) as exc:  # an untrusted root was warned about by the lookup
        logger.debug("single-device index not written (%s)", exc)


__all__ = ["INDEX_FORMAT", "index_key", "lookup", "store"]
