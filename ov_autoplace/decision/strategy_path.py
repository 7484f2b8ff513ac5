"""``compile_model`` and ``place`` with an explicit strategy (or ``search_budget``): place, verify, cache, compile.

The strategy proposes on the prepared model's graph arrays, :func:`placement_pipeline` makes the proposal legal
and guards it, and the verification (``verification.verified_placement``) keeps a deviation from the plain call
only if it measurably wins. The result is cached under the strategy's cache token, so the next start reuses it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import openvino as ov

from ov_autoplace.cache.placement_cache import PlacementCache
from ov_autoplace.cache.root import blob_cache_props, cache_root, profile_dir
from ov_autoplace.cache.support_store import device_support
from ov_autoplace.decision.compile_decided import compile_decided
from ov_autoplace.decision.memory_path import capped_cost, memory_request
from ov_autoplace.decision.placement_pipeline import placement_pipeline
from ov_autoplace.decision.request import PlacementRequest
from ov_autoplace.decision.verification import (KeptCompile, evidence_intact, needs_verification, single_device_of,
                                                verified_placement)
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.strategies.base import PlacementContext

logger = logging.getLogger("ov_autoplace")


def place_with_strategy(req: PlacementRequest, prepared: ov.Model, graph: GraphArrays,
                        support_dir: Path | None = None, profiles: Path | None = None) -> Placement:
    """``req.strategy``'s proposal through the placement pipeline (pins and bound from the request).

    ``profiles``: where a measured cost provider stores what it measures (the call's ``<root>/profiles``;
    None: the default root's).
    """
    if req.memory_caps:
        memory_request(req, graph)  # MemoryCapError before the strategy profiles anything
    support = device_support(req.core, prepared, graph, req.devices, support_dir)
    context = PlacementContext(graph=graph, devices=req.devices, support=support, core=req.core, model=prepared,
                               seed=req.seed, profile_dir=profiles, generation=req.generation,
                               dynamic_model=req.model if req.generation else None)
    proposal = req.strategy.propose(context)
    cost = getattr(req.strategy, "last_cost", None)
    if req.memory_caps:  # priced with the caps (the prior's costs for a strategy that has none) and held to them
        cost = capped_cost(req, graph, cost)
    placement = placement_pipeline(graph, proposal, req.devices, support, strategy=req.strategy.name, cost=cost,
                                   pins=req.pins, max_submodels=req.max_submodels,
                                   annotate=getattr(req.strategy, "annotate", None),  # a budgeted search's timings
                                   check="new", enforce_memory=bool(req.memory_caps))
    logger.info("placed %d nodes with %s: %s, %d submodel(s)", graph.num_nodes, req.strategy.name,
                placement.counts_per_device(), placement.num_submodels)
    return placement


def cached_or_new_placement(req: PlacementRequest, prepared: ov.Model, cache: PlacementCache | None,
                            profiles: Path | None = None, *, kept: KeptCompile | None = None) -> Placement:
    """The cached placement of this request when its evidence holds, else a new one, verified (and cached).
    ``kept``: the verification's compile of what it chose (``verified_placement``)."""
    graph = req.placement_graph(prepared)
    if cache is None:
        return verified_placement(req, prepared, graph, place_with_strategy(req, prepared, graph, profiles=profiles),
                                  kept=kept)
    key = cache.key(req.core, graph, req.devices, strategy=req.strategy.cache_token(), pins=req.pins,
                    exclude_devices=req.exclude_devices, max_submodels=req.max_submodels, shapes=req.shapes,
                    memory_caps=req.memory_caps, generation=req.generation)
    support = device_support(req.core, prepared, graph, req.devices, cache.directory / "support")
    placement = cache.get(key, graph, support=support, pins=req.pins)  # legality-checked
    if placement is not None:
        if req.pins or req.memory_caps or evidence_intact(placement) or not needs_verification(placement, graph, support):
            logger.info("placement cache hit (%s): %s", req.strategy.name, placement.counts_per_device())
            return placement
        logger.info("placement cache hit (%s) without intact verification evidence: verifying it again",
                    req.strategy.name)
    else:
        placement = place_with_strategy(req, prepared, graph, cache.directory / "support", profiles)
    placement = verified_placement(req, prepared, graph, placement, support, kept=kept)
    cache.put(key, placement, graph)
    return placement


def compile_with_strategy(req: PlacementRequest, *, cache_dir, use_cache: bool,
                          cache_blobs: bool) -> ov.CompiledModel:
    """Place (or reuse the cached placement), verify, compile: ``compile_model`` with an explicit strategy."""
    cache = PlacementCache(cache_dir) if use_cache else None
    prepared = prepare_model(req.placement_model)  # a dynamic model is placed on its static clone
    kept = KeptCompile()
    # profiles: the call's root
    placement = cached_or_new_placement(req, prepared, cache, profile_dir(cache_dir), kept=kept)
    props = blob_cache_props(req.core, req.props, cache_root(cache_dir), cache_blobs)
    compiled = compile_decided(req, props, device=single_device_of(placement), placement=placement,
                               prepared=prepared, kept=kept)
    logger.info("compiled %s with placement %s", req.spec.hetero_string, placement.counts_per_device())
    return compiled


__all__ = ["cached_or_new_placement", "compile_with_strategy", "place_with_strategy"]
