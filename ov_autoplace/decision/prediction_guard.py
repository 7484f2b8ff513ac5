"""The guard: a placement is kept only if the cost model predicts it faster than one device, beyond the noise.

A learned or heuristic placement can lose to simply running everything on
one device (cross-device copies and submodel switches cost time). When the
strategy used a CostModel, the guard prices the legal placement and every
single-device placement under it (``CostTerms.latency_ms``, numpy only) and
keeps what is proven faster, with a note saying what happened. With measured
costs a single-device prediction is that device's measured end-to-end
latency, so the guard compares against measurements of this model on these
devices.

The rule (the local search's, ``costmodel/local_search.py``): a move is kept
only when its predicted gain exceeds the spread of what it moves
(``CostTerms.move_spread_ms``: the moved ops' spreads on both devices plus
the end-to-end spreads of the devices involved; 0 for a noise-free,
simulated model). The reference is the first device that runs every node
(what HETERO itself would pick); another single device replaces it only if
predicted faster by more than the spread of moving everything, and the
placement is kept only if predicted faster than that device by more than the
spread of the nodes it puts elsewhere. A CostModel measured on a loaded
machine (``cost.loaded``) proves no gain: the reference device is used.

A placement that overflows a device's memory is first fitted (``costmodel/memory_fit.py``), not thrown away.
"""

from __future__ import annotations

import logging

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS, legalize
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.costmodel.memory_fit import fit_memory

logger = logging.getLogger(__name__)


def _single_device_choice(terms: CostTerms, devices: tuple[str, ...], loaded: bool):
    """(device index, predicted ms, reason) of the single device the guard compares against, or None."""
    n = terms.num_nodes
    full = [d for d in range(len(devices)) if terms.allowed[terms.compute, d].all()]
    if not full:
        return None
    reference = full[0]
    ref_placed = np.full(n, reference, dtype=np.int64)
    ref_ms = terms.latency_ms(ref_placed)
    choice, choice_ms = reference, ref_ms
    reason = f"{devices[reference]} first device that runs every node"
    if loaded:
        return choice, choice_ms, reason + " (loaded profile: no single device is proven faster)"
    for d in full[1:]:
        alone = np.full(n, d, dtype=np.int64)
        ms, spread = terms.latency_ms(alone), terms.move_spread_ms(ref_placed, alone)
        if ms < ref_ms - spread and ms < choice_ms:  # proven faster than the reference, and the fastest such
            choice, choice_ms = d, ms
            reason = (f"{devices[d]} predicted {ref_ms - ms:.2f} ms faster than {devices[reference]}, beyond the "
                      f"spread {spread:.2f} ms")
    return choice, choice_ms, reason


def guard_placement(placement: Placement, graph: GraphArrays, cost: CostModel, support: np.ndarray, *,
                    max_submodels: int | None = DEFAULT_MAX_SUBMODELS) -> Placement:
    """``placement`` (fitted to memory), or the single device it is not proven faster than (see the module doc).

    ``max_submodels`` bounds what the memory fit may make of the placement (the caller's legalizer bound).
    """
    terms = CostTerms(cost, graph, support)
    placed = placement.device_indices(graph.names, cost.devices)
    predicted = terms.latency_ms(placed)
    if not np.isfinite(predicted) and not cost.loaded and not terms.memory_ok(placed):  # fitted, not discarded
        placement = fit_memory(placement, graph, cost, support, max_submodels=max_submodels)
        placed = placement.device_indices(graph.names, cost.devices)
        predicted = terms.latency_ms(placed)
    single = _single_device_choice(terms, tuple(cost.devices), cost.loaded)
    if single is None:
        placement.notes.append(f"predicted {predicted:.2f} ms ({cost.label}); best single device none")
        return placement
    d, single_ms, reason = single
    best_device = cost.devices[d]
    single_placed = np.full(graph.num_nodes, d, dtype=np.int64)
    spread = terms.move_spread_ms(single_placed, placed)
    same = not (placed[terms.active] != d).any()
    if same or (not cost.loaded and predicted <= single_ms - spread):
        placement.notes.append(f"predicted {predicted:.2f} ms ({cost.label}); single device {best_device} "
                               f"{single_ms:.2f} ms ({reason})" + (f"; spread of the split {spread:.2f} ms"
                                                                     if spread > 0 and not same else ""))
        return placement
    why = ("the profile was taken on a loaded machine" if cost.loaded else
           f"predicted slower than {best_device} alone ({single_ms:.2f} ms)" if predicted > single_ms else
           f"its predicted gain {single_ms - predicted:.2f} ms over {best_device} alone ({single_ms:.2f} ms) is "
           f"within the spread {spread:.2f} ms")
    logger.info("guard: %s's placement is predicted %.2f ms; %s; using %s only", placement.strategy, predicted, why,
                best_device)
    guarded = legalize(graph, single_placed, cost.devices, support, strategy=f"{placement.strategy}+guard")
    guarded.notes.append(f"guard: {placement.strategy} predicted {predicted:.2f} ms: {why} ({cost.label}); "
                         f"placed everything on {best_device} ({reason})")
    return guarded


__all__ = ["guard_placement"]
