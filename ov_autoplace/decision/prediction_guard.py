"""The guard: a placement is kept only if the cost model predicts it faster than the plain call, beyond the noise.

How and why, in full: docs/default-path.md, "Module notes", ov_autoplace/decision/prediction_guard.py.
"""

from __future__ import annotations

import logging

import numpy as np

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.costmodel.platforms import CATEGORIES, op_category
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS, legalize
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.search.memory_fit import fit_memory

logger = logging.getLogger(__name__)

#: The share of the reference's latency a noise-free CostModel must predict a move to gain.
NOISE_FREE_MIN_GAIN = 0.02
#: The noise-free model's error: log-normal sigma of log(simulated / published) on the held-out calibration points.
MODEL_ERROR_SIGMA = 0.4625
#: Perturbations of a noise-free model a split is priced under, and the share of them it must win (validation).
RISK_DRAWS, MIN_WIN_SHARE = 64, 0.75


def _error_factors(num_devices: int) -> np.ndarray:
    """float [RISK_DRAWS, D, len(CATEGORIES)]: the fixed perturbations (seeded: the same placement every time)."""
    rng = np.random.default_rng(0x715C)
    return np.exp(MODEL_ERROR_SIGMA * rng.standard_normal((RISK_DRAWS, num_devices, len(CATEGORIES))))


def _error_cells(terms: CostTerms) -> tuple[np.ndarray, np.ndarray]:
    """(int [N] each node's op category, float [RISK_DRAWS, D * len(CATEGORIES)] the fixed perturbations): what
    every placement of ``terms`` is priced under, made once per guard."""
    index = {t: CATEGORIES.index(op_category(t)) for t in set(terms.graph.op_types)}
    category = np.array([index[t] for t in terms.graph.op_types], np.int64)
    return category, _error_factors(terms.num_devices).reshape(RISK_DRAWS, -1)


def perturbed_ms(terms: CostTerms, row: np.ndarray, cells: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """float [RISK_DRAWS]: placement ``row``'s latency under each fixed perturbation of the model's compute
    (``cells``: :func:`_error_cells` of ``terms``, made here if not given)."""
    category, factors = _error_cells(terms) if cells is None else cells
    nodes, row = np.flatnonzero(terms.compute), np.asarray(row, np.int64)
    split = np.zeros(terms.num_nodes, bool)
    for i, j in terms.fusion_pairs:
        if row[i] != row[j]:
            split[[i, j]] = True
    scaled = terms.compute_cost[nodes, row[nodes]] + np.where(split[nodes], terms.unfused_delta[nodes, row[nodes]], 0)
    cell = np.bincount(row[nodes] * len(CATEGORIES) + category[nodes], weights=scaled, minlength=factors.shape[1])
    return terms.latency_ms(row) - scaled.sum() + factors @ cell


def win_share(terms: CostTerms, placed: np.ndarray, rivals: list[np.ndarray]) -> float:
    """The share of the perturbed models under which ``placed`` is faster than every row of ``rivals``."""
    cells = _error_cells(terms)
    best_rival = np.min([perturbed_ms(terms, r, cells) for r in rivals], axis=0)
    return float(np.mean(perturbed_ms(terms, placed, cells) < best_rival))


def _required(terms: CostTerms, cost: CostModel, before, after, reference_ms: float) -> tuple[float, str]:
    """(ms, what) a move's predicted gain must exceed (the module doc)."""
    spread = terms.move_spread_ms(before, after)
    if cost.compute_spread_ms is not None or not np.isfinite(reference_ms):
        return spread, f"the spread {spread:.2f} ms"
    ms = max(spread, NOISE_FREE_MIN_GAIN * reference_ms)
    return ms, f"the {NOISE_FREE_MIN_GAIN:.0%} ({ms:.2f} ms) a noise-free model must predict"


def _reference(terms: CostTerms, graph: GraphArrays, cost: CostModel, support, max_submodels: int | None):
    """(row, predicted ms, name, reason) of what the guard compares against, or None."""
    devices, loaded = tuple(cost.devices), cost.loaded
    n = terms.num_nodes
    if not terms.allowed[terms.compute].any(axis=1).all():
        return None
    first = terms.allowed.argmax(axis=1)
    if first[terms.compute].any():  # the first device cannot run everything: the plain call is HETERO's split
        row = legalize(graph, first, devices, support, max_submodels=max_submodels).device_indices(graph.names,
                                                                                                  devices)
        name, reason = "HETERO's own placement", "each node on the first device that runs it"
    else:
        row, name, reason = np.zeros(n, dtype=np.int64), devices[0], "first device, runs every node"
    ref_row, ref_ms = row, terms.latency_ms(row)
    best_ms = ref_ms
    full = [d for d in range(len(devices)) if terms.allowed[terms.compute, d].all()]
    for d in ([] if loaded and np.isfinite(ref_ms) else full):  # loaded: none proven faster, but a fit beats inf
        alone = np.full(n, d, dtype=np.int64)
        ms, (required, what) = terms.latency_ms(alone), _required(terms, cost, ref_row, alone, ref_ms)
        if ms < ref_ms - required and ms < best_ms:  # proven faster than the reference, and the fastest such
            row, best_ms, name = alone, ms, devices[d]
            reason = f"predicted {ref_ms - ms:.2f} ms faster than the reference, beyond {what}"
    return row, best_ms, name, reason


def guard_placement(placement: Placement, graph: GraphArrays, cost: CostModel, support: np.ndarray, *,
                    max_submodels: int | None = DEFAULT_MAX_SUBMODELS,
                    min_win_share: float = MIN_WIN_SHARE) -> Placement:
    """``placement`` (fitted to memory), or the reference it is not proven faster than (see the module doc).

    ``max_submodels`` bounds what the memory fit may make of the placement (the caller's legalizer bound);
    ``min_win_share``: the risk rule's share (a benchmark sweeps it; 0 turns the rule off).
    """
    terms = CostTerms(cost, graph, support)
    placed = placement.device_indices(graph.names, cost.devices)
    predicted = terms.latency_ms(placed)
    if not np.isfinite(predicted) and not cost.loaded and not terms.memory_ok(placed):  # fitted, not discarded
        placement = fit_memory(placement, graph, cost, support, max_submodels=max_submodels)
        placed = placement.device_indices(graph.names, cost.devices)
        predicted = terms.latency_ms(placed)
    ref = _reference(terms, graph, cost, support, max_submodels)
    if ref is None:
        placement.notes.append(f"predicted {predicted:.2f} ms ({cost.label}); no reference runs every node")
        return placement
    ref_row, ref_ms, name, reason = ref
    required, what = _required(terms, cost, ref_row, placed, ref_ms)
    same = not (placed[terms.active] != ref_row[terms.active]).any()
    share = None
    if not same and min_win_share > 0 and cost.compute_spread_ms is None and np.isfinite(predicted):
        share = win_share(terms, placed, [ref_row])
    risky = share is not None and share < min_win_share
    if same or (not cost.loaded and predicted <= ref_ms - required and not risky):
        placement.notes.append(f"predicted {predicted:.2f} ms ({cost.label}); {name} {ref_ms:.2f} ms ({reason})"
                               + (f"; the split cleared {what}" if required > 0 and not same else ""))
        return placement
    why = ("the profile was taken on a loaded machine" if cost.loaded else
           f"predicted slower than {name} ({ref_ms:.2f} ms)" if predicted > ref_ms else
           f"its predicted gain {ref_ms - predicted:.2f} ms over {name} ({ref_ms:.2f} ms) is within {what}"
           if predicted > ref_ms - required else
           f"it wins in {share:.0%} of {RISK_DRAWS} perturbations of the model's error (sigma "
           f"{MODEL_ERROR_SIGMA}), under the {min_win_share:.0%} required")
    logger.info("guard: %s's placement is predicted %.2f ms; %s; using %s", placement.strategy, predicted, why, name)
    guarded = legalize(graph, ref_row, cost.devices, support, max_submodels=max_submodels,
                       strategy=f"{placement.strategy}+guard")
    guarded.notes.append(f"guard: {placement.strategy} predicted {predicted:.2f} ms: {why} ({cost.label}); "
                         f"placed as {name} ({reason})")
    return guarded


__all__ = ["MIN_WIN_SHARE", "MODEL_ERROR_SIGMA", "NOISE_FREE_MIN_GAIN", "RISK_DRAWS", "guard_placement", "perturbed_ms",
           "win_share"]
