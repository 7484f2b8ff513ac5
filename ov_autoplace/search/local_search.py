"""Cost-model refinement of a placement: a deterministic local search that only ever lowers predicted latency.

The rest: docs/architecture.md, "Module notes", ov_autoplace/search/local_search.py.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Sequence

import numpy as np

from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.legalizer import Pin, effective_max_submodels, legalize
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.cost_terms import CostTerms, move_spread_ms
from ov_autoplace.search.search_moves import candidate_moves, move_rows, repeated_layer_classes, structural_classes
from ov_autoplace.search.search_pricing import BATCH_CELLS, BatchPricer, Priced, lowered as _lowered, search_score

log = logging.getLogger(__name__)


@dataclasses.dataclass
class RefineResult:
    """What :meth:`LocalSearchRefiner.refine` did. ``proposal`` is device per node, to be legalised by the caller."""

    proposal: np.ndarray
    start_ms: float  # CostTerms latency of the input, made legal
    final_ms: float  # CostTerms latency of ``proposal``, made legal (<= start_ms)
    evaluations: int  # placements priced by the simulator (predicted, never measured)
    rounds: int
    moves: int
    seconds: float
    # converged | evaluations | seconds | rounds | rejected | heterosplit (HETERO's own split predicted faster) |
    # unproven (the gain over HETERO's own split is within the spread) | loaded (a loaded profile proves nothing) |
    # overflow (no placement it priced fits the devices' memory: its best is returned, for the memory fit)
    stopped: str
    spread_ms: float = 0.0  # spread of the move from the input (legal) to ``proposal`` (0: noise-free or no move)
    given: np.ndarray | None = None  # the input proposal

    @property
    def improved(self) -> bool:
        return self.final_ms < self.start_ms

    def note(self, label: str = "") -> str:
        tail = f" ({label})" if label else ""
        spread = f", spread of the move {self.spread_ms:.4f} ms" if self.spread_ms > 0 else ""
        return (f"local search: {self.start_ms:.4f} -> {self.final_ms:.4f} ms predicted{tail}{spread}, "
                f"{self.moves} moves, {self.evaluations} placements priced on the cost model, {self.seconds:.2f} s, "
                f"stopped: {self.stopped}")


class LocalSearchRefiner:
    """Refines proposals for one graph under one CostModel (build once, ``refine`` many times); the arguments:
    docs/architecture.md, "Module notes", local_search.py."""

    def __init__(self, cost: CostModel, graph: GraphArrays, support: np.ndarray | None = None, *,
                 pins: Sequence[Pin] = (), max_submodels: int | None = 8, max_evaluations: int = 20_000,
                 max_seconds: float = 2.0, max_rounds: int = 200, max_units: int = 256,
                 kl_steps: int = 6, batch: int = 256) -> None:
        self.cost, self.graph, self.pins = cost, graph, tuple(pins)
        self.devices = tuple(cost.devices)
        self.max_submodels = max_submodels
        self.max_evaluations, self.max_seconds, self.max_rounds = max_evaluations, max_seconds, max_rounds
        self.max_units = max(1, max_units)
        self.batch = max(1, min(batch, BATCH_CELLS // max(graph.num_nodes, 1)))
        self.kl_steps = kl_steps
        n, d = graph.num_nodes, len(self.devices)
        support = np.ones((n, d), bool) if support is None else np.asarray(support, bool)
        self.terms = CostTerms(cost, graph, support)  # the reference model; raises on nodes that fit nowhere
        # legalize() gets what the cost model can price too: its island merges never put a node where its compute
        # is unknown (inf)
        self.support = self.terms.allowed
        # what legalize() enforces: never below the submodels the devices' op support forces
        self.bound, _ = effective_max_submodels(graph, self.support, max_submodels)
        self.active = np.flatnonzero(self.terms.active)  # ascending = topological order
        self.allowed = self.terms.allowed[self.active]  # [A, D]: support and a finite cost
        self.compute = np.where(self.allowed, cost.compute_ms[self.active], np.inf)  # [A, D]
        locked = np.zeros(n, bool)
        for pin in self.pins:
            locked |= np.array([pin.matches(name, op) for name, op in zip(graph.names, graph.op_types)], bool)
        self.locked = locked[self.active]
        self.classes = structural_classes(graph, self.active)
        self.layer_classes = repeated_layer_classes(graph, self.active)
        # active-to-active edges as positions in ``active`` (both directions), for the enclosure rule
        position = np.full(graph.num_nodes, -1, np.int64)
        position[self.active] = np.arange(self.active.size)
        src, dst = position[graph.edge_src], position[graph.edge_dst]
        both = (src >= 0) & (dst >= 0) & (src != dst)
        pairs = np.unique(np.stack([src[both], dst[both]], axis=1), axis=0).reshape(-1, 2)
        self._nb_from = np.concatenate([pairs[:, 0], pairs[:, 1]])
        self._nb_to = np.concatenate([pairs[:, 1], pairs[:, 0]])
        self._degree = np.bincount(self._nb_from, minlength=self.active.size)
        # the noise rule: per-node spread of the decision variables, devices' end-to-end spread
        self.spread = self.terms.spread[self.active]  # [A, D]
        self.e2e_spread = self.terms.e2e_spread  # [D]
        self.noisy = bool(self.spread.any() or self.e2e_spread.any())
        self._origin = np.zeros(self.active.size, np.int64)
        # pricing batches of candidates (search_pricing.py): the anchor fixer may put a non-compute node anywhere
        self._pricer = BatchPricer(cost, graph, self.active, self.terms.allowed | ~self.terms.compute[:, None],
                                   self.bound)

    # ------------------------------------------------------------------ pricing (search_pricing.py)
    def _price(self, base: np.ndarray, rows: np.ndarray) -> Priced:
        return self._pricer.price(base, rows)

    _score = staticmethod(search_score)

    def _spread(self, rows: np.ndarray) -> np.ndarray:
        """Spread [P] of moving from the search's start to each of ``rows`` [P, A] (0 when noise-free)."""
        if not self.noisy:
            return np.zeros(rows.shape[0])
        return move_spread_ms(self.spread, self.e2e_spread, self._origin, rows)

    def _legal_ms(self, proposal: np.ndarray) -> tuple[float, np.ndarray]:
        """The reference latency (CostTerms) of ``proposal`` after ``legalize()`` with the caller's pins and bound."""
        placement = legalize(self.graph, np.asarray(proposal, np.int64), self.devices, self.support, pins=self.pins,
                             max_submodels=self.max_submodels)
        device = placement.device_indices(self.graph.names, self.devices)
        return self.terms.latency_ms(device), device

    # ------------------------------------------------------------------ moves (search_moves.py)
    def _candidates(self, cur: np.ndarray) -> list[tuple[int, np.ndarray]]:
        return candidate_moves(self, cur)

    _rows = staticmethod(move_rows)

    # ------------------------------------------------------------------ search
    def _descend(self, base: np.ndarray, cur: np.ndarray, bounded: bool, start: float) -> np.ndarray:
        """Steepest descent from ``cur`` [A] on :meth:`_score`; records the best in-bound placement seen."""
        parts = self._price(base, cur[None, :])
        self._evaluations += 1
        cur_score = float(self._score(parts, bounded)[0] + self._spread(cur[None, :])[0])
        self._note_best(cur[None, :], parts)
        while self._rounds < self.max_rounds:
            best_score, best_row = cur_score, None
            candidates = self._candidates(cur)
            for lo in range(0, len(candidates), self.batch):
                if self._evaluations >= self.max_evaluations:
                    self._stopped = "evaluations"
                    break
                if time.perf_counter() - start >= self.max_seconds:
                    self._stopped = "seconds"
                    break
                chunk = self._rows(cur, candidates[lo:lo + min(self.batch, self.max_evaluations - self._evaluations)])
                parts = self._price(base, chunk)
                self._evaluations += chunk.shape[0]
                self._note_best(chunk, parts)
                score = self._score(parts, bounded) + self._spread(chunk)
                k = int(np.argmin(score))
                if score[k] < best_score:
                    best_score, best_row = float(score[k]), chunk[k].copy()
            improved = best_row is not None and best_score < _lowered(cur_score)
            if improved:
                cur, cur_score = best_row, best_score
                self._rounds += 1
            if self._stopped != "converged" or not improved:
                return cur
        self._stopped = "rounds"
        return cur

    def _kl_pass(self, base: np.ndarray, cur: np.ndarray, start: float) -> np.ndarray | None:
        """Up to ``kl_steps`` forced moves (the best one each step, worse or not; nodes moved in this pass stay
        put); returns the state after the best prefix when it beats ``cur``, else None."""
        start_ms = self._best_ms
        moved = np.zeros(cur.size, bool)
        best_prefix, best_ms = None, start_ms
        for _ in range(self.kl_steps):
            candidates = [(t, nodes) for t, nodes in self._candidates(cur) if not moved[nodes].any()]
            if not candidates:
                break
            step_score, step_row = np.inf, None
            for lo in range(0, len(candidates), self.batch):
                if self._evaluations >= self.max_evaluations:
                    self._stopped = "evaluations"
                    return best_prefix
                if time.perf_counter() - start >= self.max_seconds:
                    self._stopped = "seconds"
                    return best_prefix
                chunk = self._rows(cur, candidates[lo:lo + min(self.batch, self.max_evaluations - self._evaluations)])
                parts = self._price(base, chunk)
                self._evaluations += chunk.shape[0]
                self._note_best(chunk, parts)
                score = self._score(parts, True) + self._spread(chunk)
                k = int(np.argmin(score))
                if score[k] < step_score:
                    step_score, step_row = float(score[k]), chunk[k].copy()
            if step_row is None or not np.isfinite(step_score):
                break
            moved |= step_row != cur
            cur = step_row
            if step_score < _lowered(best_ms):
                best_prefix, best_ms = cur.copy(), step_score
        self._rounds += 1
        return best_prefix

    def _note_best(self, rows: np.ndarray, parts) -> None:
        """Keep the row that fits memory and the submodel bound with the lowest latency plus spread from the start."""
        latency, excess, overflow = parts
        ok = np.where((excess == 0) & (overflow == 0), latency + self._spread(rows), np.inf)
        k = int(np.argmin(ok))
        if ok[k] < _lowered(self._best_ms):
            self._best_ms, self._best = float(ok[k]), rows[k].copy()

    def refine(self, proposal: np.ndarray) -> RefineResult:
        """A proposal (device per node) predicted no slower than ``proposal`` once both are made legal."""
        start = time.perf_counter()
        proposal = np.asarray(proposal, np.int64)
        start_ms, legal = self._legal_ms(proposal)
        result = RefineResult(proposal, start_ms, start_ms, 0, 0, 0, 0.0, "converged", given=proposal)
        if self.active.size == 0 or len(self.devices) < 2:
            result.seconds = time.perf_counter() - start
            return result
        if self.cost.loaded:  # measured on a loaded machine: no gain is proven, HETERO's own placement stays
            result.stopped = "loaded"
            return self._plain_if_proven(result, legal, legal, start)
        cur = legal[self.active].copy()
        self._origin = cur.copy()
        self._evaluations, self._rounds, self._stopped = 0, 0, "converged"
        self._best_ms, self._best = np.inf, cur
        # Bounded descent; then again without the submodel bound (regions that only pay together can form: each
        # step may add an island), then with the bound restored (islands merged back). The best placement within
        # the bound seen anywhere is the result.
        for bounded in (True, False, True):
            cur = self._descend(legal, cur, bounded, start)
            if self._stopped != "converged":
                break
        # Kernighan-Lin passes: from the local optimum, take the best move even when it costs, never moving a node
        # twice in a pass; a pass whose best prefix beats its start continues the descent from there.
        while self._stopped == "converged" and self.kl_steps > 0:
            escaped = self._kl_pass(legal, self._best, start)
            if escaped is None:
                break
            self._descend(legal, escaped, True, start)
        cur = self._best
        refined = legal.copy()
        refined[self.active] = cur
        final_ms, final_device = self._legal_ms(refined)
        result.evaluations, result.rounds, result.moves = self._evaluations, self._rounds, self._rounds
        result.stopped = self._stopped
        spread = self.terms.move_spread_ms(legal, final_device)
        if final_ms <= start_ms - spread:
            result.proposal, result.final_ms, result.spread_ms = refined, final_ms, spread
        else:  # the legalizer's rules (pins, quantization groups) undid the gain, or it is within the spread
            result.stopped = "rejected"
            log.debug("local search: refined %.4f ms (spread %.4f ms) does not beat start %.4f ms after legalize; "
                      "kept the input", final_ms, spread, start_ms)
        return self._plain_if_proven(result, legal, legal if result.proposal is proposal else final_device, start)

    def _plain_if_proven(self, result: RefineResult, legal: np.ndarray, device: np.ndarray,
                         start: float) -> RefineResult:
        """``result`` if its placement (legal: ``device``) beats HETERO's own placement by more than the spread
        between them (on a loaded profile: never), else HETERO's own placement. ``legal``: the input, legal. Why:
        docs/architecture.md, "Module notes", local_search.py."""
        if not np.isfinite(result.final_ms):  # nothing it priced fits the devices' memory: the memory fit decides
            result.stopped = "overflow"  # (HETERO's own split may fit where the fit of this one is faster)
            result.seconds = time.perf_counter() - start
            return result
        forced = np.where(self.terms.active, np.argmax(self.support, axis=1), 0)
        forced_ms, forced_device = self._legal_ms(forced)
        spread = self.terms.move_spread_ms(forced_device, device)
        moved = bool((forced_device[self.terms.active] != device[self.terms.active]).any())
        if self.cost.loaded and moved and np.isfinite(forced_ms):
            result.stopped = "loaded"
        elif forced_ms < result.final_ms:
            result.stopped = "heterosplit"
        elif moved and result.final_ms > forced_ms - spread:
            result.stopped = "unproven"
        else:
            result.seconds = time.perf_counter() - start
            log.debug("%s", result.note(self.cost.label))
            return result
        log.debug("local search: HETERO's own placement %.4f ms against %.4f ms (spread of the move %.4f ms): "
                  "%s, keeping HETERO's own", forced_ms, result.final_ms, spread, result.stopped)
        result.proposal, result.final_ms = forced, forced_ms
        result.spread_ms = self.terms.move_spread_ms(legal, forced_device)
        result.seconds = time.perf_counter() - start
        return result


__all__ = ["LocalSearchRefiner", "RefineResult"]
