"""Fine-tuning a (pretrained) policy on one model under a budget: what ``compile_model``'s search budget calls.

``fine_tune(policy, env, budget_samples=50, budget_seconds=None)`` evaluates
the policy's greedy placement first, then - with ``offset_samples`` > 0 - up
to that many of its **offset decodings** (``argmax(logits + b)`` for a grid of
per-device offsets ``b``, see ``ov_autoplace_lab.training.decoding.offset_decodings``), then runs training
steps on ``env`` (``TrainConfig`` defaults: REINFORCE with a baseline and
entropy bonus) and, after each, the new greedy placement, until ``budget_samples`` *distinct*
legal placements have been evaluated or ``budget_seconds`` have passed. The
last step's sample count is cut so the budget is never exceeded. A converged
policy keeps drawing placements it has already seen (free: memoised), so the
loop raises the sampling temperature after every step that found nothing
new (see ``MAX_TEMPERATURE``) and stops after ``max_steps``. Why the offsets: a
policy whose per-group ranking of devices is right but whose threshold is off
(too cautious on a platform it was not trained on, say) places the right split
at some offset; the REINFORCE steps, which sample group by group, rarely reach
it within 50 placements. Returns the fastest legal
:class:`~ov_autoplace.placement.assignment.Placement` seen and the log records.

With ``refine=True`` the cost-model local search
(:class:`~ov_autoplace.search.local_search.LocalSearchRefiner`) runs on
``env.cost`` - the CostModel the policy reads, never ``env.evaluate`` - twice:
on the greedy placement before training, and on the best placement found
at the end. Each refined placement is then evaluated on ``env`` and counts as
one sample of the budget like any other (one is reserved for the last). The
placements the local search priced are predictions, not samples; their count
is in the notes and records. On a simulated platform the CostModel *is* what
``env`` scores with, so there the local search optimises the score itself.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from ov_autoplace.placement.assignment import Placement
from ov_autoplace_lab.training.decoding import offset_decodings
from ov_autoplace_lab.training.env import MeasuredEnv, PlacementEnv
from ov_autoplace_lab.training.reinforce import coarse_groups, greedy_coarse, to_nodes
from ov_autoplace_lab.training.trainer import TrainConfig, Trainer, torch_policy

log = logging.getLogger(__name__)

#: Upper bound of the exploration temperature (logits / T) when a step samples nothing new.
MAX_TEMPERATURE = 16.0
#: Fine-tuning defaults (found on the simulated zoo tasks; see benchmarks/bench_hsdag.py).
FINE_TUNE_CONFIG = TrainConfig(mode="reinforce", samples=8, lr=3e-3, entropy_weight=0.005, evaluate_greedy=True,
                               single_device_samples=True)


def fine_tune(policy, env: PlacementEnv, *, budget_samples: int = 50, budget_seconds: float | None = None,
              config: TrainConfig | None = None, max_steps: int | None = None, log_path: str | Path | None = None,
              progress: bool = False, refine: bool = False, refine_options: dict | None = None,
              offset_samples: int = 0, **overrides: Any) -> tuple[Placement, list[dict[str, Any]]]:
    """Fine-tune ``policy`` (a path to a ``.npz``, an ExportedPolicy, a NumpyHSDAGPolicy or an HSDAGPolicy,
    never modified) on ``env`` and return ``(fastest legal Placement, log records)``.

    ``overrides`` replace fields of ``config`` (default :data:`FINE_TUNE_CONFIG`), e.g. ``seed=3``. The
    placement's ``notes`` say how it was found; with a :class:`MeasuredEnv` its ``measured_latency_ms`` is set.
    ``offset_samples`` caps the placements of the offset sweep; the default 0 is REINFORCE alone, what the
    headroom table and ``search_budget`` ran (``benchmarks/bench_finetune.py`` compares 25 of 50: better under
    the fitted model, mixed under the truth draws; docs/bench/finetune.md).
    """
    if budget_samples < 1:
        raise ValueError(f"budget_samples must be >= 1, got {budget_samples}")
    config = dataclasses.replace(config or FINE_TUNE_CONFIG, **overrides)
    max_steps = max_steps if max_steps is not None else 4 * budget_samples
    trainer = Trainer(torch_policy(policy), [env], config, log_path=log_path, progress=False)
    start = time.perf_counter()

    def out_of_time() -> bool:
        return budget_seconds is not None and time.perf_counter() - start >= budget_seconds

    output = trainer.policy(trainer.inputs[0])
    greedy_row = to_nodes(greedy_coarse(output, trainer.inputs[0]), trainer.inputs[0])
    greedy_ms = float(env.evaluate(greedy_row)[0])
    first = {"event": "greedy", "step": 0, "evaluated": env.num_evaluated, "greedy_ms": greedy_ms,
             "best_ms": env.best_ms, "num_groups": output.num_groups}
    trainer.records.append(first)
    trainer._write(first)
    refiner, priced = None, 0
    if refine and budget_samples >= 2:
        from ov_autoplace.search.local_search import LocalSearchRefiner

        options = {"max_submodels": env.max_submodels, **(refine_options or {})}
        refiner = LocalSearchRefiner(env.cost, env.graph, env.support, **options)
        priced += _evaluate_refined(refiner, env, np.asarray(greedy_row).reshape(-1), trainer, "refined greedy")
    reserve = 1 if refiner is not None else 0  # the last sample: the refined best placement
    swept = _offset_sweep(output, trainer, env, min(offset_samples, budget_samples - reserve - env.num_evaluated),
                          out_of_time)
    steps = 0
    while env.num_evaluated < budget_samples - reserve and steps < max_steps and not out_of_time():
        # a step costs at most `samples` + greedy + D single-device new placements: never overrun the budget
        extra = (1 if config.evaluate_greedy else 0) + (len(env.devices) if config.single_device_samples else 0)
        room = budget_samples - reserve - env.num_evaluated - extra
        if room < 1:
            break
        before = env.num_evaluated
        trainer.step(samples=min(config.samples, room))
        steps += 1
        # A saturated policy redraws placements already measured (free, but nothing learnt): flatten the
        # sampling distribution until it finds new ones; its samples then only pull the policy (guided).
        trainer.temperature = 1.0 if env.num_evaluated > before else min(2.0 * trainer.temperature, MAX_TEMPERATURE)
        if progress:
            r = trainer.records[-1]
            log.info("fine-tune step %d: %d evaluated, best %.4f ms", steps, r["evaluated"], r["best_ms"])
    if refiner is not None and env.best_placement is not None and env.num_evaluated < budget_samples:
        priced += _evaluate_refined(refiner, env, env.best_placement, trainer, "refined best")
    best_row = env.best_placement
    assert best_row is not None  # the greedy placement was evaluated
    placement = env.legal_placement(best_row) if isinstance(env, MeasuredEnv) else env.placement(best_row)
    placement = dataclasses.replace(placement, strategy="hsdag+fine_tune", notes=list(placement.notes) + [
        f"fine-tuned HSDAG: best of {env.num_evaluated} distinct placements ({swept} offset decodings, then "
        f"{steps} REINFORCE steps), "
        f"{time.perf_counter() - start:.1f} s; {env.best_ms:.4f} ms {env.label} (greedy start {greedy_ms:.4f} ms)"]
        + ([f"local search on the cost model ({env.cost.label}): {priced} placements priced, not counted as "
            "samples; each refined placement evaluated on the environment counts as one"] if refiner else []))
    if refiner is not None:
        placement = dataclasses.replace(placement, strategy="hsdag+fine_tune+local_search")
    if isinstance(env, MeasuredEnv):
        placement.measured_latency_ms = env.best_ms
    if not np.isfinite(env.best_ms):
        log.warning("fine-tune found no placement with a finite latency on %s", env.name)
    return placement, trainer.records


def _offset_sweep(output, trainer: Trainer, env: PlacementEnv, limit: int, out_of_time) -> int:
    """Evaluate offset decodings of the greedy output until ``limit`` new distinct legal placements (two
    decodings can legalise to one placement) or the candidates run out; returns how many were new."""
    if limit < 1 or out_of_time():
        return 0
    inputs = trainer.inputs[0]
    coarse = coarse_groups(output, inputs).cpu().numpy()
    node_coarse = inputs.node_coarse.cpu().numpy()
    before = env.num_evaluated
    # a decoding that legalises to a placement already seen costs nothing; the budget left goes to REINFORCE
    for decoded in offset_decodings(output.logits.detach().cpu().numpy(), limit):
        if env.num_evaluated - before >= limit or out_of_time():
            break
        env.evaluate(decoded[coarse][node_coarse])
    record = {"event": "offsets", "step": 0, "evaluated": env.num_evaluated, "new": env.num_evaluated - before,
              "best_ms": env.best_ms}
    trainer.records.append(record)
    trainer._write(record)
    return env.num_evaluated - before


def _evaluate_refined(refiner, env: PlacementEnv, row: np.ndarray, trainer: Trainer, event: str) -> int:
    """Refine ``row`` on the cost model, evaluate the result on ``env`` (one counted sample when new); returns
    how many placements the local search priced."""
    result = refiner.refine(np.asarray(row, dtype=np.int64))
    ms = float(env.evaluate(result.proposal))
    record = {"event": event, "step": 0, "evaluated": env.num_evaluated, "refined_ms": ms, "best_ms": env.best_ms,
              "predicted_ms": result.final_ms, "priced": result.evaluations, "seconds": round(result.seconds, 3)}
    trainer.records.append(record)
    trainer._write(record)
    return result.evaluations


__all__ = ["FINE_TUNE_CONFIG", "fine_tune"]
