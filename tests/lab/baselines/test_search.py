"""run_search (one budget, learning curves), LearnedSearchStrategy, and HSDAG as a budgeted search."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import ov_autoplace  # noqa: E402
from ov_autoplace_lab.baselines.hsdag_search import HSDAGFineTuneSearch, HSDAGPaperSearch  # noqa: E402
from ov_autoplace_lab.baselines.search import LearnedSearch, LearnedSearchStrategy, run_search  # noqa: E402
from ov_autoplace_lab.training import SimEnv  # noqa: E402
from tests import synthetic_graphs  # noqa: E402
from tests.stand_in_costs import stand_in_cost_model  # noqa: E402
from tests.lab.training.conftest import sim_env  # noqa: E402


class RandomSearch(LearnedSearch):
    """Test double: uniformly random proposals, ``per_call`` at a time, ``overspend`` ignores the budget."""

    name = "random"

    def __init__(self, per_call: int = 2, overspend: bool = False) -> None:
        self.per_call, self.overspend = per_call, overspend

    def explore(self, env, *, budget_samples, seed, out_of_time):
        rng = np.random.default_rng(seed)
        env.single_device_ms()  # a reference run: must not count, nor show in the curve
        for _ in range(200):
            if env.num_evaluated >= budget_samples and not self.overspend:
                break
            room = self.per_call if self.overspend else min(self.per_call, budget_samples - env.num_evaluated)
            env.evaluate(rng.integers(0, len(env.devices), size=(room, env.num_nodes)))
            if self.overspend and env.num_evaluated > budget_samples:
                break
        return ["random proposals"]


def test_budget_curve_and_result(synthetic_prepared):
    env = sim_env(synthetic_prepared, "residual")
    result = run_search(RandomSearch(per_call=3), env, budget_samples=7, seed=1)
    assert result.evaluated == env.num_evaluated <= 7 and result.budget == 7
    evaluated, best = zip(*result.curve)
    assert evaluated[0] >= 1 and list(evaluated) == sorted(evaluated)  # the reference run is not a point
    assert list(best) == sorted(best, reverse=True) and best[-1] == result.best_ms
    assert env.evaluate(result.best_row) == pytest.approx(result.best_ms)
    assert "random proposals" in result.notes and result.to_dict()["curve"][-1][1] == result.best_ms


def test_overspending_and_reused_environments_are_refused(synthetic_prepared):
    env = sim_env(synthetic_prepared, "residual")
    with pytest.raises(RuntimeError, match="over its budget of 3"):
        run_search(RandomSearch(per_call=5, overspend=True), env, budget_samples=3)
    with pytest.raises(ValueError, match="fresh environment"):
        run_search(RandomSearch(), env, budget_samples=3)
    with pytest.raises(ValueError, match="budget_samples must be >= 1"):
        run_search(RandomSearch(), sim_env(synthetic_prepared, "residual"), budget_samples=0)


def test_a_search_as_a_placement_strategy(testbed):
    def make_env(context):
        return SimEnv(context.graph, stand_in_cost_model(context.graph, context.devices), support=context.support)

    strategy = LearnedSearchStrategy(RandomSearch(), make_env, budget_samples=4)
    placement = ov_autoplace.place(synthetic_graphs.branching(), testbed.hetero, core=testbed.core,
                                   strategy=strategy)
    assert placement.strategy == "random" and strategy.last_result.evaluated <= 4
    assert "budget=4" in strategy.cache_token()


@pytest.mark.parametrize("search", [HSDAGPaperSearch(), HSDAGFineTuneSearch()], ids=["paper", "fine-tune"])
def test_hsdag_searches_keep_the_budget(synthetic_prepared, search):
    env = sim_env(synthetic_prepared, "attention_like")
    singles = env.single_device_ms()
    result = run_search(search, env, budget_samples=25, seed=0)
    assert 1 <= result.evaluated <= 25 and np.isfinite(result.best_ms)
    assert result.best_ms <= singles.max()
    if isinstance(search, HSDAGFineTuneSearch):  # fine-tuning also samples every single device
        assert result.best_ms <= singles.min() + 1e-9
