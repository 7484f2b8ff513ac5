"""The interface every *learned search* runs through, so the benchmark treats them alike.

A learned method (Placeto, the RNN placer, HSDAG in either mode) explores
placements of one graph by calling ``env.evaluate(proposals)`` on a
:class:`~ov_autoplace_lab.training.env.PlacementEnv` (simulated or measured).
What it costs is the number of *distinct legal* placements the environment
evaluated (``env.num_evaluated``): on real devices each is a compile plus a
timing. :func:`run_search` gives every method the same budget, records its
learning curve (best latency so far against placements evaluated), times it
and checks that the budget held; a method only implements
:meth:`LearnedSearch.explore`.

:class:`LearnedSearchStrategy` turns any of them into a
:class:`~ov_autoplace.strategies.base.PlacementStrategy` (it builds the
environment from the placement context), so learned baselines plug into
``place()`` / ``compile_model()`` like every other strategy.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
import time
from typing import Callable

import numpy as np

from ov_autoplace.strategies.base import PlacementContext, PlacementStrategy

log = logging.getLogger(__name__)


@dataclasses.dataclass
class SearchResult:
    """What one budgeted search found.

    ``best_row``: legal device index per node (``env.devices`` order) of the
    fastest placement evaluated, None if nothing finite was found;
    ``curve``: ``(evaluated, best_ms so far)`` after every ``env.evaluate`` call.
    """

    method: str
    best_row: np.ndarray | None
    best_ms: float
    evaluated: int
    budget: int
    seconds: float
    curve: list[tuple[int, float]]
    label: str
    notes: list[str] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        return {"method": self.method, "best_ms": self.best_ms, "evaluated": self.evaluated, "budget": self.budget,
                "seconds": round(self.seconds, 3), "curve": [[int(e), float(b)] for e, b in self.curve],
                "label": self.label, "notes": list(self.notes)}


class LearnedSearch(abc.ABC):
    """A budgeted search over placements of one environment's graph."""

    #: Name in tables, logs and learning-curve legends.
    name: str = "search"

    @abc.abstractmethod
    def explore(self, env, *, budget_samples: int, seed: int, out_of_time: Callable[[], bool]) -> list[str]:
        """Evaluate placements on ``env`` until ``env.num_evaluated`` reaches ``budget_samples`` or
        ``out_of_time()``; never evaluate more distinct placements than the budget. Returns notes
        (what was run: steps, samples per step, hyper-parameters worth printing)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def run_search(search: LearnedSearch, env, *, budget_samples: int, seed: int = 0,
               budget_seconds: float | None = None) -> SearchResult:
    """Run ``search`` on a fresh ``env`` (nothing evaluated yet) within the budget and return its result."""
    if budget_samples < 1:
        raise ValueError(f"budget_samples must be >= 1, got {budget_samples}")
    if env.num_evaluated:
        raise ValueError(f"{env!r} has already evaluated {env.num_evaluated} placements; give each search a fresh "
                         "environment so its sample count is its own")
    start = time.perf_counter()

    def out_of_time() -> bool:
        return budget_seconds is not None and time.perf_counter() - start >= budget_seconds

    curve: list[tuple[int, float]] = []
    with env.listening(lambda e: curve.append((e.num_evaluated, e.best_ms))):
        notes = search.explore(env, budget_samples=budget_samples, seed=seed, out_of_time=out_of_time)
    seconds = time.perf_counter() - start
    if env.num_evaluated > budget_samples:
        raise RuntimeError(f"{search.name} evaluated {env.num_evaluated} placements, over its budget of "
                           f"{budget_samples}: a bug in {type(search).__name__}.explore")
    best = None if env.best_placement is None or not np.isfinite(env.best_ms) else env.best_placement.copy()
    log.info("%s on %s: best %.4f ms after %d placements in %.1f s", search.name, env.name, env.best_ms,
             env.num_evaluated, seconds)
    return SearchResult(search.name, best, float(env.best_ms), env.num_evaluated, budget_samples, seconds,
                        curve, env.label, list(notes or []))


class LearnedSearchStrategy(PlacementStrategy):
    """A :class:`LearnedSearch` as a strategy: builds an environment for the context and proposes the best find.

    ``make_env(context) -> PlacementEnv``, e.g. a measured one
    (``lambda c: MeasuredEnv(c.model, c.core, c.devices, cost=provider(c))``)
    or a simulated one. ``last_result`` keeps the :class:`SearchResult`.
    """

    def __init__(self, search: LearnedSearch, make_env: Callable[[PlacementContext], object], *,
                 budget_samples: int = 50, budget_seconds: float | None = None) -> None:
        self.search, self.make_env = search, make_env
        self.budget_samples, self.budget_seconds = budget_samples, budget_seconds
        self.name = search.name
        self.last_result: SearchResult | None = None

    def propose(self, context: PlacementContext) -> np.ndarray:
        env = self.make_env(context)
        if tuple(env.devices) != tuple(context.devices):
            raise ValueError(f"the environment's devices {list(env.devices)} differ from the context's "
                             f"{list(context.devices)}")
        result = run_search(self.search, env, budget_samples=self.budget_samples, seed=context.seed,
                            budget_seconds=self.budget_seconds)
        self.last_result = result
        if result.best_row is None:
            raise RuntimeError(f"{self.name} found no placement with a finite latency on {env.name}")
        return result.best_row

    def cache_token(self) -> str:
        return f"{self.search!r}(budget={self.budget_samples}, seconds={self.budget_seconds})"

    def __repr__(self) -> str:
        return f"LearnedSearchStrategy({self.search!r}, budget_samples={self.budget_samples})"


__all__ = ["LearnedSearch", "LearnedSearchStrategy", "SearchResult", "run_search"]
