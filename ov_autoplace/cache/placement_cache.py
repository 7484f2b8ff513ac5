"""The placement cache: the second start of an application pays nothing for placement.

How and why, in full: docs/architecture.md, "Module notes", ov_autoplace/cache/placement_cache.py.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import openvino as ov

from ov_autoplace.cache.root import CACHE_DIR_ENV, cache_root
from ov_autoplace.cache.profile_store import ProfileStore, profile_key
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.errors import PlacementError, UnsupportedOpError
from ov_autoplace.placement.legality_check import LEGALIZER_VERSION, ensure_legal
from ov_autoplace.placement.assignment import Placement

logger = logging.getLogger(__name__)

#: Bumped when the entry layout or the meaning of a placement changes.
CACHE_FORMAT = 1


class PlacementCache:
    """Placements on disk under ``directory/placements``; OpenVINO blobs under ``directory/openvino``."""

    def __init__(self, directory: str | os.PathLike | None = None) -> None:
        self.directory = cache_root(directory)  # PropertyError for a directory argument that names none
        self._store = ProfileStore(self.directory / "placements")

    def key(
        self,
        core: ov.Core,
        graph: GraphArrays,
        devices: Sequence[str],
        *,
        strategy: str,
        pins: Sequence[Any] = (),
        exclude_devices: Sequence[str] = (),
        max_submodels: int | None = None,
        shapes: Mapping[str, Sequence[int]] | None = None,
        memory_caps: Mapping[str, int] | None = None,
        generation: Any = None,
    ) -> dict[str, Any]:
        """The key components of a placement (JSON-able; compared field by field on load).

        ``shapes``: a dynamic model's placement shapes (the static clone's graph
        hash already differs per shape; the field names them in clear). ``generation``: a stateful decoder's
        ``Generation`` (what its placement was verified for).
        """
        extra = {
            "format": CACHE_FORMAT,
            "legalizer": LEGALIZER_VERSION,
            "strategy": strategy,
            "pins": sorted(repr(p) for p in pins),
            "exclude_devices": sorted(exclude_devices),
            "max_submodels": max_submodels,
        }
        if shapes is not None:  # only for dynamic models, so static models keep their keys
            extra["placement_shapes"] = {name: list(dims) for name, dims in shapes.items()}
        if memory_caps:  # only where caps are given, so uncapped calls keep their keys
            extra["memory_caps"] = {device: int(size) for device, size in sorted(memory_caps.items())}
        if generation is not None:  # only for stateful decoders, so other models keep their keys
            extra["generation"] = [generation.prompt_tokens, generation.new_tokens]
        return profile_key(core, devices, kind="placement", graph=graph, extra=extra)

    def get(self, key: Mapping[str, Any], graph: GraphArrays, *, support: np.ndarray | None = None,
            pins: Sequence[Any] = ()) -> Placement | None:
        """The cached placement for ``key`` renamed onto ``graph``'s nodes and checked legal, or None (misses,
        stale and corrupt entries; how: docs/architecture.md, "Module notes", placement_cache.py)."""
        try:
            placement = self._store.load(key, lambda payload: _renamed(payload, graph))
        except OSError as exc:  # unreadable directory or file: behave as a miss
            logger.warning("placement cache %s cannot be read (%s); placing again", self.directory, exc)
            return None
        if placement is None:
            return None
        devices = tuple(key.get("devices", placement.devices))
        if support is None:  # unknown here; what keeps outputs exact (anchors, quantization groups) does not need it
            support = np.ones((graph.num_nodes, len(devices)), dtype=bool)
        try:
            legal = ensure_legal(placement, graph, devices, support, pins=pins,
                                 max_submodels=key.get("max_submodels"), source="cached")
        except UnsupportedOpError:
            raise
        except PlacementError as exc:
            logger.warning("%s; ignoring the cache entry and placing again", exc)
            return None
        if (legal.assignment, legal.devices) != (placement.assignment, placement.devices):
            self.put(key, legal, graph)  # rewrite the entry in its legal form
        return legal

    def put(self, key: Mapping[str, Any], placement: Placement, graph: GraphArrays) -> Path | None:
        """Store ``placement``; on any OS error warn and return None (caching is best effort)."""
        payload = placement.to_dict()
        payload["device_by_index"] = [placement.assignment[name] for name in graph.names]
        payload["compute_by_index"] = [i for i, name in enumerate(graph.names) if name in placement.compute_nodes]
        try:
            return self._store.save(key, payload)
        except OSError as exc:
            logger.warning("placement cache %s is not writable (%s); continuing without caching", self.directory, exc)
            return None

    def entries(self) -> list[Path]:
        """The entry files (a ``placements`` folder that is a symlink is not followed: no entries)."""
        folder = self._store.directory
        return sorted(folder.glob("placement-*.json")) if folder.is_dir() and not folder.is_symlink() else []

    def clear(self) -> int:
        """Delete every placement entry (not OpenVINO's blobs); returns how many were removed.

        An entry that is a symlink loses the link only (``unlink`` never touches a link's target).
        """
        removed = 0
        for path in self.entries():
            try:
                os.unlink(path)
                removed += 1
            except OSError as exc:
                logger.warning("cannot remove %s: %s", path, exc)
        return removed


def _renamed(payload: dict[str, Any], graph: GraphArrays) -> Placement:
    """Parse an entry and put the current graph's node names on it (ValueError if it does not fit)."""
    devices_by_index = payload["device_by_index"]
    if not isinstance(devices_by_index, list) or not all(isinstance(d, str) for d in devices_by_index):
        raise TypeError("'device_by_index' must be a list of device names")
    if len(devices_by_index) != graph.num_nodes:
        raise ValueError(f"entry has {len(devices_by_index)} nodes, the model {graph.num_nodes}")
    placement = Placement.from_dict(payload)
    if not set(devices_by_index) <= set(placement.devices):
        raise ValueError("entry assigns a device outside its device list")
    placement.assignment = dict(zip(graph.names, devices_by_index))
    placement.compute_nodes = frozenset(graph.names[i] for i in _node_indices(payload["compute_by_index"],
                                                                              graph.num_nodes))
    return placement


def _node_indices(values: Any, num_nodes: int) -> list[int]:
    """``values`` as node indices: a list of distinct JSON integers in [0, num_nodes), else ValueError.

    Python would accept a negative index (counting from the end) or ``int("3")``; an entry holding either was
    not written by ``put``.
    """
    if not isinstance(values, list):
        raise TypeError(f"'compute_by_index' must be a list of node indices, got {type(values).__name__}")
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < num_nodes]
    if bad:
        raise ValueError(f"'compute_by_index' holds {len(bad)} value(s) that are not node indices in "
                         f"[0, {num_nodes}), e.g. {bad[0]!r}")
    if len(set(values)) != len(values):
        raise ValueError("'compute_by_index' repeats node indices")
    return values


__all__ = ["CACHE_DIR_ENV", "CACHE_FORMAT", "PlacementCache"]
