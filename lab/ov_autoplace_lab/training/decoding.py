"""Decoding the policy's one pass into more than its greedy placement, priced by the cost model.

The policy's logits often rank the groups right where its threshold is wrong. :func:`offset_decodings` reads
placements off that ranking, ``argmax(logits + b)`` for a grid of per-device offsets ``b`` (on two devices: the
top-k groups by margin). :func:`priced_decoding` prices the greedy placement and ``count`` of them in one batch,
legalises the cheapest few and keeps the fastest predicted: a choice among the policy's own placements, not a
search. A decoding replaces the best so far only when its predicted gain exceeds the spread of the move
(``CostTerms.move_spread_ms``; zero on a simulated cost model). :class:`DecodedHSDAGStrategy`: the runtime's
HSDAG strategy with this choice in place of its greedy decoding ("hsdag+decodings").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ov_autoplace.costmodel.anchors import AnchorFixer
from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.search.memory_fit import fit_memory, legal_pricer, legalize_on_cost
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.strategies.hsdag import HSDAGStrategy

log = logging.getLogger(__name__)


def offset_decodings(logits: np.ndarray, count: int) -> list[np.ndarray]:
    """Up to ``count`` distinct group placements [G] ``argmax(logits + b)`` over a grid of per-device offsets
    ``b`` (``b[0] = 0``), the policy's own greedy decoding (``b = 0``) excluded, nearest it first.

    The offsets of device ``d`` are minus ``n`` evenly spaced quantiles of the groups' logit margin
    ``logits[:, d] - logits[:, 0]`` (``n ** (D - 1)`` about ``count``), so the grid spans every share of groups
    moved, whatever the logits' scale; "nearest" is the sum over devices of the distance in quantile steps from
    the greedy decoding's own position.
    """
    logits = np.asarray(logits, dtype=np.float64)
    groups, devices = logits.shape
    if count < 1 or devices < 2 or groups == 0:
        return []
    margin = logits - logits[:, :1]
    steps = np.linspace(0.0, 1.0, max(2, int(np.ceil(count ** (1.0 / (devices - 1))))))
    axes, origin = [], []
    for d in range(1, devices):
        # just below each quantile, so the group at the quantile moves too; +-inf ends put all or none on d
        cuts = np.concatenate([[-np.inf], np.quantile(margin[:, d], steps) - 1e-9, [np.inf]])
        axes.append(-cuts)
        origin.append(float(np.searchsorted(cuts, 0.0)))  # cuts ascend: quantiles between -inf and inf
    grid_points = np.stack(np.meshgrid(*[np.arange(len(a)) for a in axes], indexing="ij"), -1).reshape(-1,
                                                                                                    devices - 1)
    order = np.argsort(np.abs(grid_points - np.asarray(origin)).sum(1), kind="stable")
    greedy = margin.argmax(1)
    seen, out = {greedy.tobytes()}, []
    for index in grid_points[order]:
        offset = np.concatenate([[0.0], [axes[d][i] for d, i in enumerate(index)]])
        with np.errstate(invalid="ignore"):  # a masked device (-inf logit) + an infinite offset: nan, kept off
            decoded = np.nan_to_num(margin + offset, nan=-np.inf).argmax(1)
        key = decoded.tobytes()
        if key not in seen:
            seen.add(key)
            out.append(decoded.astype(np.int64))
            if len(out) >= count:
                break
    return out


#: Decodings legalised in full (with the submodel bound and pins) after the batched pricing ranked them.
LEGALISED = 2


@dataclass
class DecodingReport:
    """What :func:`priced_decoding` priced: ``priced`` distinct decodings (the greedy one included) in one batch,
    ``legalised`` of them in full, ``chosen`` the rank of the kept one (0: the greedy decoding), and the
    predictions of the greedy and the kept placement."""

    priced: int
    legalised: int
    chosen: int
    greedy_ms: float
    chosen_ms: float
    spread_ms: float

    def note(self, label: str) -> str:
        if self.chosen == 0:
            return (f"policy decodings: the greedy one kept ({self.greedy_ms:.3f} ms predicted, {label}; "
                    f"{self.priced} distinct decodings priced, {self.legalised} legalised)")
        return (f"policy decodings: the offset decoding ranked {self.chosen} of {self.priced} priced, predicted "
                f"{self.chosen_ms:.3f} ms against the greedy one's {self.greedy_ms:.3f} ms ({label}; spread of the "
                f"move {self.spread_ms:.3f} ms)")


def priced_decoding(logits: np.ndarray, node_group: np.ndarray, graph: GraphArrays, cost, support: np.ndarray,
                    count: int, *, max_submodels: int | None = None, pins: Sequence = (),
                    legalised: int = LEGALISED) -> tuple[np.ndarray, DecodingReport]:
    """The fastest predicted of the greedy decoding and ``count`` offset decodings; returns ``(device index per
    node, report)``.

    ``logits`` [G, D] and ``node_group`` [N] are the policy's output; ``cost`` is the CostModel it read (its
    device order). The decodings are priced in one batch with their anchors placed as the legalizer places them
    (:class:`AnchorFixer`, :class:`Simulator`); the ``legalised`` cheapest are then legalised in full with
    ``max_submodels`` and ``pins``, as the caller will legalise them (the bound's merging is what costs time),
    fitted to the devices' memory where they overflow (``search/memory_fit.py``, as the guard fits them), priced
    again, and one replaces the best so far (first the greedy placement) only when its predicted gain
    exceeds the spread of the move (``CostTerms.move_spread_ms``).
    """
    if count < 0:
        raise ValueError(f"count must be >= 0 decodings, got {count}")
    devices = tuple(cost.devices)
    node_group = np.asarray(node_group, np.int64)
    decoded = [np.asarray(logits).argmax(1), *offset_decodings(logits, count)]
    fixed = AnchorFixer(graph, len(devices), support)(np.stack([g[node_group] for g in decoded]))
    _, first = np.unique(fixed, axis=0, return_index=True)
    first = np.sort(first)  # distinct decodings in decoding order: the greedy one stays first
    batch_ms = np.atleast_1d(Simulator(cost, graph).feasible_ms(fixed[first]))
    ranked = [int(k) for k in first[1:][np.argsort(batch_ms[1:], kind="stable")]][:max(legalised, 0)]
    terms, price = CostTerms(cost, graph, support), legal_pricer(cost, graph, support)

    def legal(k: int) -> tuple[np.ndarray, float]:
        # the caller legalises what this returns, which (the legalizer being idempotent) is this placement again;
        # one that overflows a device's memory is fitted as the guard will fit it, so it competes as it will run
        placement = legalize_on_cost(graph, decoded[k][node_group], devices, support, cost=cost, strategy="hsdag",
                                     pins=pins, max_submodels=max_submodels, price=price)
        row = placement.device_indices(graph.names, devices)
        ms = terms.latency_ms(row)
        if not np.isfinite(ms) and not terms.memory_ok(row):
            row = fit_memory(placement, graph, cost, support, pins=pins,
                             max_submodels=max_submodels).device_indices(graph.names, devices)
            ms = terms.latency_ms(row)
        return row, ms

    best, best_ms = legal(0)
    greedy_ms = best_ms
    chosen, spread_ms = 0, 0.0
    for rank, k in enumerate(ranked, 1):
        row, row_ms = legal(k)
        spread = terms.move_spread_ms(best, row)
        if row_ms < best_ms - spread:  # inf - spread stays inf: any feasible decoding beats an infeasible one
            best, best_ms, chosen, spread_ms = row, row_ms, rank, spread
    return best, DecodingReport(len(first), len(ranked) + 1, chosen, float(greedy_ms), float(best_ms),
                                float(spread_ms))


class DecodedHSDAGStrategy(HSDAGStrategy):
    """:class:`~ov_autoplace.strategies.hsdag.HSDAGStrategy` that prices the greedy placement and
    ``decodings`` = K offset decodings of the same pass in one batch (:func:`priced_decoding`), legalises the
    cheapest with ``decode_options`` (``max_submodels``, ``pins``: the legalizer's options the caller applies;
    ``legalised``: how many, default :data:`LEGALISED`), and proposes the one the CostModel predicts fastest by
    more than the spread of the move ("hsdag+decodings"); then the local search when ``refine``. Its report is
    kept in ``last_decoding``. The other arguments are HSDAGStrategy's.
    """

    def __init__(self, policy, cost, *, decodings: int, decode_options: dict | None = None, **options) -> None:
        super().__init__(policy, cost, **options)
        if isinstance(decodings, bool) or not isinstance(decodings, int) or decodings < 0:
            raise ValueError(f"decodings must be an int >= 0 (offset decodings priced beside the greedy one), "
                             f"got {decodings!r}")
        unknown = sorted(set(decode_options or {}) - {"max_submodels", "pins", "legalised"})
        if unknown:
            raise ValueError(f"decode_options {unknown}: not an option of the decodings; they take max_submodels "
                             "and pins (as the caller legalises) and legalised (how many to legalise in full)")
        self.decodings, self.decode_options = decodings, dict(decode_options or {})
        self.last_decoding: DecodingReport | None = None
        self.name = "hsdag" + ("+decodings" if decodings else "") + ("+local_search" if self.refine else "")

    def decode(self, output, context, cost) -> np.ndarray:
        if not self.decodings:
            return output.node_placement()
        proposal, self.last_decoding = priced_decoding(output.logits, output.node_group, context.graph, cost,
                                                       context.support, self.decodings, **self.decode_options)
        log.debug("hsdag: %s", self.last_decoding.note(cost.label))
        return proposal

    def cache_token(self) -> str:
        decode = f", decodings={self.decodings}, {sorted(self.decode_options.items())}" if self.decodings else ""
        return super().cache_token()[:-1] + decode + ")"

    def __repr__(self) -> str:
        decode = f", decodings={self.decodings}, decode_options={self.decode_options}" if self.decodings else ""
        return super().__repr__()[:-1] + decode + ")"


__all__ = ["DecodedHSDAGStrategy", "DecodingReport", "LEGALISED", "offset_decodings", "priced_decoding"]
