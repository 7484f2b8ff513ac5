"""``compile_model``'s default path: a first start close to a plain compile, a warm start as fast as one.

More: docs/architecture.md, "Module notes", first_start.py.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import logging
import os
import time
from pathlib import Path
from typing import Any

import openvino as ov

from ov_autoplace.cache.placement_cache import PlacementCache
from ov_autoplace.cache.profile_store import MODEL_PROFILE_FORMAT, ProfileStore, profile_key
from ov_autoplace.cache.root import blob_cache_props, cache_root, profile_dir
from ov_autoplace.decision import background_worker, plain_compile_ahead, single_device_index
from ov_autoplace.decision.compile_decided import compile_decided
from ov_autoplace.decision.placement_sources import (Decision, cache_key, decision_from_cache, decision_to_placement,
                                                     measure_profile_now, place_from_prior, place_from_profile,
                                                     place_within_caps, settle)
from ov_autoplace.decision.memory_path import memory_request
from ov_autoplace.decision.request import PlacementRequest
from ov_autoplace.devices.facts import identical_devices
from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.placement.assignment import Placement

logger = logging.getLogger("ov_autoplace")

class Profiling(str, enum.Enum):
    """When ``compile_model``'s default placement measures the devices.

    Example::

        compiled = ov_autoplace.compile_model(model, "HETERO:GPU,CPU", profile=ov_autoplace.Profiling.BACKGROUND)
    """
    #: Use a stored profile when there is one; measure nothing during the call but a short check of a decoder the
    #: prior would move off the plain call's device or cannot tell from another device (the default).
    STORED = "stored"
    #: As STORED, and when no profile is stored a detached worker measures one and stores a better
    #: placement for the next start (``decision/background_worker.py``); this start runs on the prior's placement.
    BACKGROUND = "background"
    #: Measure now, blocking (the quick profile: one compile and a few runs per device).
    NOW = "now"


def check_profiling(value: Any) -> Profiling:
    try:
        return Profiling(value)
    except ValueError:

        raise PlacementError(f"profile must be one of {[p.value for p in Profiling]}, got {value!r}") from None


#: The policy file the default path places with and keys its cache on: the shipped one
#: (``policy.pretrained.PRETRAINED_POLICY``; tests/decision/test_first_start.py checks they agree).
POLICY_FILE = Path(__file__).parents[1] / "policy" / "pretrained" / "hsdag_v4.npz"


def _policy_digest(path) -> str:
    """sha256 of the shipped policy file (cheaper than loading it; changes whenever its weights do).

    Hashed once per process and file version (a start keys both the single-device index and the cache on it).
    """
    st = os.stat(path)
    return _digest_of(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _digest_of(path: str, size: int, mtime_ns: int) -> str:  # size and mtime key the cache: a new file is hashed
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _policy_stamp(path) -> str:
    """Size and modification time of the shipped policy file: the single-device index's policy component.

    A warm start keys its one lookup on this instead of the sha256 (0.3 ms on every start): any write of the
    file (a reinstall, an edit, a checkout) changes it, and a changed stamp only sends the start through the
    full path, whose cache is keyed on the content digest and rewrites the index entry.
    """
    st = os.stat(path)
    return f"{st.st_size}-{st.st_mtime_ns}"


def compile_default_path(req: PlacementRequest, *, profiling: Profiling, cache_dir, use_cache: bool, cache_blobs: bool):
    """Decide (fast path, single-device index, then :func:`decide`), log the source, compile, hand off."""
    started = time.perf_counter()
    root = cache_root(cache_dir)
    props = blob_cache_props(req.core, req.props, root, cache_blobs)
    # pins and memory caps need the graph: never the one-device shortcuts (a cap may forbid the first device)
    if profiling is not Profiling.NOW and not req.pins and not req.memory_caps and identical_devices(req.core,
                                                                                                   req.devices):
        first = req.devices[0]
        logger.info("placement source: prior -> %s (%.0f ms to decide); %s report identical properties, so no split "
                    "can be predicted faster than one device; %s is HETERO's own choice", first,
                    1e3 * (time.perf_counter() - started), ", ".join(req.devices), first)
        return compile_decided(req, props, device=first)
    index, hit = None, None
    if use_cache and profiling is not Profiling.NOW and not req.pins and not req.memory_caps:  # no clone needed
        try:
            index = single_device_index.index_key(req, _policy_stamp(POLICY_FILE))
            if profiling is Profiling.STORED:
                hit = single_device_index.lookup(root, index)
        except Exception as exc:  # noqa: BLE001 - the full path below decides instead
            logger.debug("single-device index unusable (%s: %s)", type(exc).__name__, exc)
            index, hit = None, None
        if hit is not None:
            device, source = hit
            logger.info("placement source: cache (%s) -> %s (%.0f ms to decide)", source, device,
                        1e3 * (time.perf_counter() - started))
            return compile_decided(req, props, device=device)
    ahead, noted = None, False
    if profiling is not Profiling.NOW and not req.pins and not req.memory_caps:  # the plain call's compile overlaps
        noted = plain_compile_ahead.deviation_noted(root, index)
        ahead = plain_compile_ahead.start(req, props, noted=noted)
    try:
        decision, cache, key, graph, profile_path = decide(req, root, profiling, cache_dir, use_cache, ahead)
        if index is not None and profiling is Profiling.STORED and decision.single_device is not None \
                and decision.final:
            source = decision.source[len("cache ("):-1] if decision.source.startswith("cache (") else decision.source
            single_device_index.store(root, index, decision.single_device, source, profile_path)
        if index is not None:
            plain_compile_ahead.note_decision(root, index, deviates=decision.single_device != req.devices[0],
                                              noted=noted)
        logger.info("placement source: %s -> %s (%.0f ms to decide)%s", decision.source,
                    decision.single_device or decision.placement.counts_per_device(),
                    1e3 * (time.perf_counter() - started), f"; {decision.reason}" if decision.reason else "")
        compiled = ahead.take(decision.single_device) if ahead is not None else None
    finally:
        if ahead is not None:
            ahead.discard()  # joined whatever happened (a no-op after take): no thread outlives the call
    if compiled is None:  # another placement, or the compile ahead raised: compiled (or raised) here
        compiled = compile_decided(req, props, device=decision.single_device, placement=decision.placement,
                                   prepared=decision.prepared, kept=decision.kept)
    if req.memory_caps and profiling is Profiling.BACKGROUND:  # the worker only profiles; the next start places
        if cache is not None and not Path(profile_path).exists():
            background_worker.spawn_worker(req, root, key, graph)
    elif (decision.pending and not decision.provisional) or (profiling is Profiling.BACKGROUND and decision.spawn_worker):
        if cache is None:
            logger.warning("%s needs the placement cache (use_cache=False): not measuring",
                           "verifying the placement" if decision.pending else "profile='background'")
        else:
            background_worker.spawn_worker(req, root, key, graph)
    return compiled


def decide(req: PlacementRequest, root: Path, profiling: Profiling, cache_dir, use_cache: bool, ahead=None
           ) -> tuple[Decision, PlacementCache | None, dict | None, GraphArrays, str]:
    """The default placement, in this order; the first source that applies decides.

    The rest: docs/architecture.md, "Module notes", ov_autoplace/decision/first_start.py (decide).
    """
    prepared = prepare_model(req.placement_model)  # a dynamic model is placed on its static clone (shapes.py)
    graph = req.placement_graph(prepared)
    cache = PlacementCache(root) if use_cache else None
    key = cache_key(req, cache, graph, _policy_digest(POLICY_FILE)) if cache is not None else None
    store = ProfileStore(profile_dir(cache_dir))
    profile_path = str(_profile_path(req, graph, store))
    if cache is not None and profiling is not Profiling.NOW:
        cached = cache.get(key, graph, pins=req.pins)  # legality-checked (placement/legality_check.py)
        if cached is not None:
            decision = decision_from_cache(req, cached, prepared, graph)
            if (decision.source == "cache (prior)" or decision.source.startswith("cache (prior+memory")) \
                    and Path(profile_path).exists():
                decision = None  # a profile arrived since the prior placed it (ov-autoplace profile): use it
            if decision is not None:
                if decision.stored_as is not None:  # demoted (edited evidence): store what runs now
                    cache.put(key, decision.stored_as, graph)
                return decision, cache, key, graph, profile_path
    if req.memory_caps:
        memory_request(req, graph)  # MemoryCapError before anything is measured when no split can fit
    if profiling is Profiling.NOW:
        measure_profile_now(req, prepared, graph, store)
    decision = _profile_or_prior(req, prepared, graph, store)
    decision = settle(req, decision, prepared, graph, verify_now=profiling is Profiling.NOW, ahead=ahead)
    if cache is not None:
        cache.put(key, decision_to_placement(decision, graph, req.devices), graph)
    return decision, cache, key, graph, profile_path


def _profile_or_prior(req: PlacementRequest, prepared: ov.Model, graph: GraphArrays, store: ProfileStore) -> Decision:
    """Sources 3 and 4: the policy on a stored profile, else on the prior (within the caps under ``memory_caps``)."""
    if req.memory_caps:
        return place_within_caps(req, prepared, graph, POLICY_FILE, store)
    decision = place_from_profile(req, prepared, graph, POLICY_FILE, store)
    return decision if decision is not None else place_from_prior(req, prepared, graph, POLICY_FILE)


def default_path_placement(req: PlacementRequest, prepared: ov.Model, graph: GraphArrays, cache_dir=None) -> Placement:
    """What the default path would place (stored profile, else prior) as a Placement; nothing is compiled or run."""
    decision = _profile_or_prior(req, prepared, graph, ProfileStore(profile_dir(cache_dir)))
    logger.info("placement source: %s -> %s%s", decision.source,
                decision.single_device or decision.placement.counts_per_device(),
                f"; {decision.reason}" if decision.reason else "")
    return decision_to_placement(decision, graph, req.devices)


def _profile_path(req: PlacementRequest, graph: GraphArrays, store: ProfileStore) -> Path:
    """Where a measured profile of this (prepared) model on these devices is stored, if one is."""
    return store.path_for(profile_key(req.core, req.devices, kind="model", graph=graph,
                                      extra={"format": MODEL_PROFILE_FORMAT}))


__all__ = ["compile_default_path"]
