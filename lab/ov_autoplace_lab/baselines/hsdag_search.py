"""HSDAG as a budgeted search, in the paper's mode and in this project's default, for the benchmark.

* :class:`HSDAGPaperSearch` - the paper's public code: a fresh policy,
  REINFORCE without a baseline, reward ``1 / latency``, 20 samples per
  update, Adam 1e-3, hidden 128 (``TrainConfig.paper``), run until the
  sample budget is spent (the paper: 25 x 20 = 500 measured placements).
* :class:`HSDAGFineTuneSearch` - the default: the shipped pretrained policy,
  its greedy placement first, then :func:`~ov_autoplace_lab.training.finetune.fine_tune`
  (REINFORCE with a baseline and entropy bonus) within the budget; with
  ``refine=True`` the cost-model local search runs on its greedy start and
  on its best find, each refined placement one counted sample (``fine_tune``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ov_autoplace_lab.baselines.search import LearnedSearch


class HSDAGPaperSearch(LearnedSearch):
    """HSDAG trained from scratch on one graph with the paper's algorithm and hyper-parameters."""

    name = "HSDAG (paper mode)"

    def __init__(self, *, samples: int = 20, max_steps: int | None = None) -> None:
        self.samples, self.max_steps = samples, max_steps

    def explore(self, env, *, budget_samples: int, seed: int, out_of_time: Callable[[], bool]) -> list[str]:
        from ov_autoplace_lab.training.trainer import TrainConfig, Trainer, make_policy

        config = TrainConfig.paper(samples=self.samples, seed=seed)
        trainer = Trainer(make_policy(config, [env]), [env], config, progress=False)
        max_steps = self.max_steps if self.max_steps is not None else 4 * budget_samples
        steps = 0
        while env.num_evaluated < budget_samples and steps < max_steps and not out_of_time():
            trainer.step(samples=min(self.samples, budget_samples - env.num_evaluated))
            steps += 1
        return [f"paper mode: REINFORCE without baseline, reward 1/latency, {steps} updates of <= {self.samples} "
                f"samples, Adam lr {config.lr}, hidden {config.hidden}, from random weights"]

    def __repr__(self) -> str:
        return f"HSDAGPaperSearch(samples={self.samples})"


class HSDAGFineTuneSearch(LearnedSearch):
    """The shipped pretrained policy fine-tuned on one graph (what ``compile_model(search_budget=...)`` runs)."""

    name = "HSDAG (pretrained + fine-tune)"

    def __init__(self, policy: str | Path | None = None, *, refine: bool = False,
                 refine_options: dict | None = None) -> None:
        if policy is None:
            from ov_autoplace.policy.pretrained import PRETRAINED_POLICY

            policy = PRETRAINED_POLICY
        self.policy = Path(policy)
        self.refine, self.refine_options = refine, refine_options
        if refine:
            self.name = "HSDAG (pretrained + fine-tune) + local search"

    def explore(self, env, *, budget_samples: int, seed: int, out_of_time: Callable[[], bool]) -> list[str]:
        from ov_autoplace_lab.training.finetune import FINE_TUNE_CONFIG, fine_tune

        placement, records = fine_tune(self.policy, env, budget_samples=budget_samples, seed=seed,
                                       refine=self.refine, refine_options=self.refine_options)
        c = FINE_TUNE_CONFIG
        updates = sum(1 for r in records
                      if r.get("event") not in ("greedy", "offsets", "refined greedy", "refined best"))
        return [f"pretrained {self.policy.name}, greedy placement then {updates} fine-tune updates "
                f"({c.mode} with baseline, {c.samples} samples, lr {c.lr}, entropy {c.entropy_weight})"] + \
            [n for n in placement.notes if n.startswith("local search")]

    def __repr__(self) -> str:
        return f"HSDAGFineTuneSearch(policy={self.policy.name!r}{', refine=True' if self.refine else ''})"


__all__ = ["HSDAGFineTuneSearch", "HSDAGPaperSearch"]
