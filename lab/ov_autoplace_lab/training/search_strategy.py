"""``compile_model(..., search_budget=...)``: fine-tune the pretrained policy on this model, on the real devices.

The pretrained policy places a graph in one forward pass from a measured
profile. With a search budget it also *measures*: starting from the
pretrained weights it runs :func:`~ov_autoplace_lab.training.finetune.fine_tune`
on a :class:`~ov_autoplace_lab.training.env.MeasuredEnv` (every distinct
legal placement compiled by HETERO and timed with the native timer), within
``budget`` distinct placements (an ``int``) or seconds of search (a
``float``). The guard here is measured, not predicted: every single-device
placement is timed in the same environment with the same timer settings, and
a searched placement slower than the fastest of them is replaced by it. A stateful
decoder's placements (the single devices' included) are compiled on its dynamic
model and timed on whole generations, the objective its verification judges
(``MeasuredEnv``'s ``generation``). Needs torch (``pip install
'ov-autoplace-lab[train]'``); imported only when used.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np

from ov_autoplace.placement.assignment import Placement
from ov_autoplace.progress import progress_bar
from ov_autoplace.strategies.base import PlacementContext, PlacementStrategy
from ov_autoplace.strategies.cost_based import CostProvider, resolve_cost

log = logging.getLogger(__name__)


@dataclasses.dataclass
class SearchOutcome:
    """What the last budgeted search measured (all medians of the native timer, ms)."""

    searched_ms: float
    chosen_ms: float
    single_device_ms: dict[str, float]
    evaluated: int
    compiles: int
    seconds: float
    guarded: bool


class HSDAGSearchStrategy(PlacementStrategy):
    """The pretrained HSDAG policy fine-tuned on the context's model and devices within a budget.

    ``policy``: the ``.npz`` to start from; ``cost``: where the policy's
    device features come from (a measured profile in ``compile_model``);
    ``budget``: distinct placements (int >= 1) or seconds (float > 0);
    ``max_submodels``: the legalizer's bound used for every measured placement.
    """

    name = "hsdag+search"

    def __init__(self, policy: str | Path, cost: CostProvider, budget: int | float, *,
                 max_submodels: int | None = 8) -> None:
        check_search_budget(budget)
        self.policy_path, self.cost, self.budget, self.max_submodels = Path(policy), cost, budget, max_submodels
        self.last_outcome: SearchOutcome | None = None

    def propose(self, context: PlacementContext) -> np.ndarray:
        from ov_autoplace_lab.training.env import MeasuredEnv
        from ov_autoplace_lab.training.finetune import fine_tune

        if context.core is None or context.model is None:
            raise ValueError("a measured search needs the context's core and prepared model")
        cost = resolve_cost(self.cost, context)
        env = MeasuredEnv(context.model, context.core, context.devices, cost=cost, max_submodels=self.max_submodels,
                          generation=context.generation, dynamic_model=context.dynamic_model)  # a decoder: generations
        samples, seconds = (self.budget, None) if isinstance(self.budget, int) else (1_000_000, float(self.budget))
        with progress_bar(samples if seconds is None else None, "measured search", unit="placement") as bar:
            shown = 0

            def show(e) -> None:  # the bar follows the distinct placements measured
                nonlocal shown
                bar.update(e.num_evaluated - shown)
                shown = e.num_evaluated
                bar.set_postfix_str(f"best {e.best_ms:.2f} ms")

            with env.listening(show):
                fine_tune(self.policy_path, env, budget_samples=samples, budget_seconds=seconds, seed=context.seed)
        singles = dict(zip(env.devices, env.single_device_ms().tolist()))  # same env, same timer settings
        best_device = min(singles, key=singles.get)
        guarded = singles[best_device] < env.best_ms
        row = np.full(env.num_nodes, env.devices.index(best_device)) if guarded else env.best_placement
        self.last_outcome = SearchOutcome(env.best_ms, min(env.best_ms, singles[best_device]), singles,
                                          env.num_evaluated, env.num_compiles, env.compile_seconds, guarded)
        log.info("search: best of %d measured placements %.3f ms; single devices %s%s", env.num_evaluated,
                 env.best_ms, {d: round(v, 3) for d, v in singles.items()},
                 f"; guard: {best_device} alone is faster" if guarded else "")
        index = {name: i for i, name in enumerate(env.graph.names)}  # the env prepared its own copy
        return np.asarray(row)[[index[n] for n in context.graph.names]]

    def annotate(self, placement: Placement) -> None:
        o = self.last_outcome
        if o is None:
            return
        placement.measured_latency_ms = o.chosen_ms
        placement.reference_latency_ms = dict(o.single_device_ms)
        placement.notes.append(
            f"search: {o.evaluated} distinct placements measured (budget {self.budget}), best {o.searched_ms:.3f} ms; "
            + ", ".join(f"{d} alone {ms:.3f} ms" for d, ms in o.single_device_ms.items())
            + ("; guard chose the fastest single device" if o.guarded else ""))

    def cache_token(self) -> str:
        return f"hsdag-search(policy={self.policy_path.name}, budget={self.budget!r}, " \
               f"max_submodels={self.max_submodels}, costs={self.cost!r})"

    def __repr__(self) -> str:
        return f"HSDAGSearchStrategy(policy={self.policy_path.name!r}, budget={self.budget!r})"


def check_search_budget(budget: object) -> None:
    """ValueError unless ``budget`` is what ``compile_model(search_budget=...)`` accepts (the runtime's rule and bound:
    ``ov_autoplace.call_request.check_search_budget``)."""
    from ov_autoplace.call_request import check_search_budget as runtime_check
    from ov_autoplace.errors import PlacementError

    try:
        runtime_check(budget)
    except PlacementError as exc:
        raise ValueError(str(exc)) from None


__all__ = ["HSDAGSearchStrategy", "SearchOutcome", "check_search_budget"]
