"""A measured profile of a stateful decoder's whole generation: the prefill's profile plus each decode step's.

More: docs/architecture.md, "Module notes", generation_profile.py.
"""

from __future__ import annotations

import logging

import numpy as np
import openvino as ov

from ov_autoplace.cache.profile_store import MODEL_PROFILE_FORMAT, ProfileStore, profile_key
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.measuring.link_calibration import LinkProfile
from ov_autoplace.measuring.profiler import ModelProfile
from ov_autoplace.measuring.quick_profile import quick_model_profile
from ov_autoplace.model.generation import Generation, generation_costs, measurable_decode_clone

logger = logging.getLogger(__name__)


class DecodeNotProfiled(LookupError):
    """A decode point has no stored profile and the caller may not measure now."""


def _by_name(cost: CostModel, graph) -> CostModel:
    """``cost`` re-indexed to ``graph``'s node order by name (the profiler prepared the clone once more)."""
    if tuple(cost.node_names) == tuple(graph.names):
        return cost
    index = {n: i for i, n in enumerate(cost.node_names)}
    rows = np.array([index.get(n, -1) for n in graph.names])

    def take(array):
        if array is None:
            return None
        array = np.asarray(array, dtype=np.float64)
        out = np.zeros((len(rows),) + array.shape[1:])
        out[rows >= 0] = array[rows[rows >= 0]]
        return out
    return CostModel(devices=cost.devices, node_names=tuple(graph.names), compute_ms=take(cost.compute_ms),
                     unfused_ms=take(cost.unfused_ms), fused_into=np.full(len(rows), -1, dtype=np.int64),
                     link_latency_ms=cost.link_latency_ms, link_ms_per_byte=cost.link_ms_per_byte,
                     submodel_overhead_ms=cost.submodel_overhead_ms, node_memory_bytes=take(cost.node_memory_bytes).astype(np.int64),
                     device_memory_bytes=cost.device_memory_bytes, simulated=cost.simulated, source=cost.source,
                     compute_spread_ms=take(cost.compute_spread_ms), e2e_spread_ms=cost.e2e_spread_ms,
                     loaded=cost.loaded)


def decode_profile(prepared: ov.Model, graph, core: ov.Core, devices, *, store: ProfileStore | None,
                   links: LinkProfile, measure: bool) -> CostModel:
    """The quick profile of one prepared decode clone on ``devices``: the stored one, else measured (``measure``)
    or :class:`DecodeNotProfiled`."""
    if not measure:
        key = profile_key(core, tuple(devices), kind="model", graph=graph, extra={"format": MODEL_PROFILE_FORMAT})
        stored = (store.load(key, lambda payload: ModelProfile.from_dict(payload, graph))
                  if store is not None and store.path_for(key).exists() else None)
        if stored is None:
            raise DecodeNotProfiled("no stored profile of this decode step")
        return _by_name(stored.cost_model, graph)
    return _by_name(quick_model_profile(prepared, core, devices, store=store, links=links).cost_model, graph)


def generation_profile(model: ov.Model, graph, cost: CostModel, gen: Generation, core: ov.Core, *,
                       store: ProfileStore | None, links: LinkProfile, measure: bool = True):
    """``(graph, cost)`` of the whole generation from the prefill's measured ``cost`` on ``graph`` (the static
    clone's) and each decode point's quick profile of the dynamic ``model`` (``measure=False``: only stored ones;
    :class:`DecodeNotProfiled` when one is missing)."""
    devices = tuple(cost.devices)
    return generation_costs(model, graph, cost, gen,
                            lambda g, prepared: decode_profile(prepared, g, core, devices, store=store, links=links,
                                                               measure=measure),
                            clone=measurable_decode_clone)


def profile_links_of(cost: CostModel) -> LinkProfile:
    """The links a decode point's quick profile is scaled with: the prefill profile's own."""
    return LinkProfile(tuple(cost.devices), np.asarray(cost.link_latency_ms), np.asarray(cost.link_ms_per_byte),
                       np.asarray(cost.submodel_overhead_ms), (), 0.0)


__all__ = ["DecodeNotProfiled", "generation_profile", "profile_links_of"]
