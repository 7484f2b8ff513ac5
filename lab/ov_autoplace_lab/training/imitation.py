"""Imitation of the search, then REINFORCE: the policy learns the splits the search finds.

The policy places whole groups, so it imitates :func:`expressible_target`, the fastest group-constant placement near
the search's target, by a cross-entropy over each active node's target device (weighted by what the node's device
decides with ``node_weighting="stakes"``: :func:`node_weights`); ``grouping_weight`` also trains the parsing
network not to merge what the target places apart (:func:`grouping_loss`), so the grouping does not drift while the
GCN trains. Then REINFORCE on the simulator, one imitation step after each policy-gradient step so its noise does
not wash the imitated splits out; ``imitation_steps=0`` is the ablation. The loss in full: docs/training.md,
"Imitation".
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

import numpy as np
import torch

from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.policy.config import PLACER_INPUTS
from ov_autoplace.policy.graph_ops import segment_sum
from ov_autoplace_lab.training.env import SimEnv
from ov_autoplace_lab.training.robust import robust_env
from ov_autoplace_lab.training.targets import (FITS, MAX_SUBMODELS, TargetSpec, case_cost, load_graph, load_targets,
                                               run_sigma)
from ov_autoplace_lab.training.trainer import TrainConfig, Trainer, make_policy, policy_inputs, torch_policy

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ImitationConfig:
    """Steps and rates of :func:`train_amortised`. A field added later must default to what training did before it
    existed: a stored policy's recipe lacking the field is read with its default (``distributed.finished_seed``)."""

    imitation_steps: int = 3000
    reinforce_steps: int = 600
    tasks_per_step: int = 8
    lr: float = 1e-3
    reinforce_lr: float = 3e-4
    samples: int = 16
    split_weight: float = 3.0  # tasks whose target beats the best single device by >= 2 % are drawn 1 + this as often
    seed: int = 0
    threads: int = 1
    coarsening: str | None = None  # None: the start policy's; "cost_cut": chains cut where the cheapest device changes
    hold_out_validation: bool = False  # leave splits.VALIDATION_GRAPHS out (validation.py chooses among candidates)
    all_data: bool = False  # train on the held-out architectures and platforms too (splits.training_specs)
    node_weighting: str = "uniform"  # or "stakes": each node's cross-entropy weighted by node_weights
    gcn_layers: int | None = None  # None: the start policy's; more: the extra layers start fresh (with_gcn_layers)
    mining: float = 0.0  # tasks whose one pass misses its target (one_pass_misses) drawn 1 + this times as often
    check_every: int = 500  # imitation steps between two checks of which tasks the one pass misses (the fit log)
    placer_inputs: str | None = None  # None: the start policy's; "boundary": with_placer_inputs
    placer_passes: int | None = None  # None: the start policy's; > 1 needs boundary inputs (with_placer_inputs)
    graph_summary: bool = True  # with boundary inputs added: the placer also reads the mean group embedding
    freeze_grouping: bool = False  # keep the start policy's groups: freeze_grouping
    lr_schedule: str = "constant"  # or "cosine": the imitation's rate decays to 0 over imitation_steps
    grouping_weight: float = 0.0  # > 0: grouping_loss added to every imitation step with this weight

    def __post_init__(self) -> None:
        if self.node_weighting not in NODE_WEIGHTINGS:
            raise ValueError(f"ImitationConfig.node_weighting must be one of {NODE_WEIGHTINGS}, got "
                             f"{self.node_weighting!r}")
        if not self.grouping_weight >= 0:
            raise ValueError(f"ImitationConfig.grouping_weight must be >= 0, got {self.grouping_weight}")
        if self.mining < 0 or self.check_every < 1:
            raise ValueError(f"ImitationConfig.mining must be >= 0 and check_every >= 1, got {self.mining} and "
                             f"{self.check_every}")
        if self.placer_inputs is not None and self.placer_inputs not in PLACER_INPUTS:
            raise ValueError(f"ImitationConfig.placer_inputs must be one of {PLACER_INPUTS} (or None: the start "
                             f"policy's), got {self.placer_inputs!r}")
        if not self.graph_summary and self.placer_inputs != "boundary":
            raise ValueError("ImitationConfig.graph_summary=False only applies where boundary inputs are added "
                             f"(placer_inputs='boundary'), got placer_inputs={self.placer_inputs!r}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"ImitationConfig.lr_schedule must be one of {LR_SCHEDULES}, got {self.lr_schedule!r}")
        if self.placer_passes is not None and self.placer_passes < 1:
            raise ValueError(f"ImitationConfig.placer_passes must be >= 1 (or None: the start policy's), got "
                             f"{self.placer_passes}")
        if self.gcn_layers is not None and self.gcn_layers < 1:
            raise ValueError(f"ImitationConfig.gcn_layers must be >= 1 (or None: the start policy's), got "
                             f"{self.gcn_layers}")


#: The imitation's learning rate: ``constant``, or ``cosine`` from ``lr`` to 0 over the imitation steps (the one
#: pass's fit swings by 10-15 points of the tasks between checks at a constant rate; a decayed rate settles it).
LR_SCHEDULES = ("constant", "cosine")
#: ``uniform``: every active node counts 1; ``stakes``: see :func:`node_weights`.
NODE_WEIGHTINGS = ("uniform", "stakes")
#: The weight of a node with nothing at stake, relative to the mean stake of the graph's active nodes: small, not
#: 0, so such nodes still follow their group.
STAKES_FLOOR = 0.1


def node_weights(graph: GraphArrays, cost, weighting: str = "uniform") -> np.ndarray:
    """float [N]: each node's weight in the imitation loss; 0 off the active nodes (:func:`active_mask`).

    ``stakes``: ``STAKES_FLOOR + s_n / mean(s)`` over the active nodes, where ``s_n`` is the spread of the node's
    compute time over the devices that can run it (fitted model; 0 where one device can: the legalizer decides
    it). A MatMul that is 3 ms on the CPU and 0.2 ms on the NPU weighs what it costs to get wrong, an Add of
    microseconds next to it little. The transfer costs are left out: they depend on the neighbours' devices.
    """
    active = active_mask(graph)
    if weighting == "uniform":
        return active.astype(np.float64)
    if weighting != "stakes":
        raise ValueError(f"node weighting must be one of {NODE_WEIGHTINGS}, got {weighting!r}")
    ms = np.asarray(cost.compute_ms, np.float64)
    finite = np.isfinite(ms)
    high = np.where(finite, ms, -np.inf).max(1)
    low = np.where(finite, ms, np.inf).min(1)
    stakes = np.where(finite.sum(1) >= 2, high - low, 0.0)
    mean = stakes[active].mean() if active.any() else 0.0
    relative = stakes / mean if mean > 0 else np.zeros_like(stakes)
    return np.where(active, STAKES_FLOOR + relative, 0.0)


def active_mask(graph: GraphArrays) -> np.ndarray:
    """bool [N]: the nodes whose device the search decides (compute, not constant folding)."""
    from ov_autoplace.placement.legalizer import constant_subgraph_mask

    return (np.asarray(graph.role) == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)


@dataclasses.dataclass
class ImitationTask:
    """One training case: its environment, the policy's inputs, the target device per node and the node weights."""

    env: SimEnv
    inputs: object
    search_target: torch.Tensor  # int64 [N]: the search's best placement (targets.py)
    weight: torch.Tensor  # float [N]
    search_ms: float
    best_single_ms: float = float("inf")
    target: torch.Tensor | None = None  # int64 [N]: what is imitated (expressible_target), set with the inputs
    target_ms: float = float("inf")
    coarse_votes: np.ndarray | None = None  # float [C, D]: each coarse node's node weights per target device

    @property
    def split_pays(self) -> bool:
        return self.target_ms <= 0.98 * self.best_single_ms


def imitation_loss(policy, task: ImitationTask, grouping_weight: float = 0.0) -> torch.Tensor:
    """The weighted cross-entropy (docs/training.md, "Imitation") on one task (+ ``grouping_weight`` x
    :func:`grouping_loss`)."""
    output = policy(task.inputs)
    log_p = torch.log_softmax(output.logits, dim=-1)[output.node_group]  # [N, D]
    picked = log_p.gather(1, task.target.unsqueeze(1)).squeeze(1)
    loss = -(task.weight * picked).sum() / task.weight.sum().clamp(min=1.0)
    if grouping_weight > 0:
        loss = loss + grouping_weight * grouping_loss(output, task.coarse_votes, policy.pool.threshold_logit)
    return loss


def merge_impurity(votes: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """float [E]: the weight a merge of ``u`` and ``v`` adds to the nodes off their group's majority device.

    ``votes`` [n, D] is each node's weight per target device; a group's off-majority weight is
    ``sum - max`` of its votes, and the merge's share is what the union has beyond the two parts' own, so an
    edge between nodes the target keeps together costs 0 and a merge of two pure groups of different devices
    costs the smaller side's weight.
    """
    def off_majority(x: np.ndarray) -> np.ndarray:
        return x.sum(1) - x.max(1)

    return np.maximum(off_majority(votes[u] + votes[v]) - off_majority(votes[u]) - off_majority(votes[v]), 0.0)


def grouping_loss(output, coarse_votes: np.ndarray, threshold_logit: float) -> torch.Tensor:
    """``sum_levels sum_e share_e * softplus(logit_e - threshold)``, ``share_e`` the weight the edge's merge would
    misplace (:func:`merge_impurity`) over the task's total: each scored edge whose merge would join what the
    target places apart is pushed below the merge threshold, the heavier the misplacement the harder. Edges the
    target keeps together are left to the cross-entropy. ``coarse_votes`` [C, D]: the target's node weights per
    device summed over each coarse node (the pooling's input nodes)."""
    total = float(coarse_votes.sum())
    loss = output.logits.new_zeros(())
    if total <= 0:
        return loss
    for logit, level in zip(output.edge_logits, output.levels):
        votes = segment_sum(coarse_votes, level.member, int(level.member.max()) + 1)  # a scored level has edges
        share = merge_impurity(votes, level.u, level.v) / total
        if share.any():
            weight = torch.as_tensor(share, dtype=logit.dtype, device=logit.device)
            loss = loss + (weight * torch.nn.functional.softplus(logit - threshold_logit)).sum()
    return loss


def build_tasks(directory: str | Path, specs: list[TargetSpec], policy_config,
                node_weighting: str = "uniform") -> list[ImitationTask]:
    """The imitation tasks of ``specs`` (their targets must exist in ``directory``), each node weighted by
    :func:`node_weights`."""
    tasks, sigma = [], run_sigma(directory)
    for spec, target in zip(specs, load_targets(directory, specs)):
        graph, cost, support = case_cost(spec, sigma, load_graph(spec.graph))
        if list(cost.devices) != list(target["devices"]):
            raise ValueError(f"{spec.key}: the target was searched on {target['devices']}, the case now has "
                             f"{list(cost.devices)}; regenerate the targets")
        if target.get("robust"):  # a draw-robust target (robust.py): priced and rewarded across the same draws
            env = robust_env(spec, target, sigma, graph, cost, support, MAX_SUBMODELS)
        else:
            env = SimEnv(graph, cost, name=spec.key, support=support, max_submodels=MAX_SUBMODELS)
        weight = torch.as_tensor(node_weights(graph, cost, node_weighting), dtype=torch.float32)
        tasks.append(ImitationTask(env, None, torch.as_tensor(target["placement"]), weight,
                                   float(target["latency_ms"]), float(target["best_single_ms"])))
    for t in tasks:
        set_inputs(t, policy_config)
    return tasks


def set_inputs(task: ImitationTask, policy_config) -> None:
    """The policy's inputs on ``task`` and the target it can express under that coarsening. Under a finer
    grouping than the chains (``cost_cut``), the chain-constant target is one more start, so the finer target is
    never slower than the chain one."""
    task.inputs = policy_inputs(policy_config, task.env)
    coarse = task.inputs.node_coarse.cpu().numpy()
    search, active = task.search_target.numpy(), task.weight.numpy() > 0
    starts = []
    if policy_config.coarsening != "chain":
        from ov_autoplace.policy.coarsen import chain_coarsen

        starts.append(expressible_target(task.env, chain_coarsen(task.env.graph).group_of_node, search, active)[0])
    row, ms = expressible_target(task.env, coarse, search, active, extra_starts=starts)
    task.target, task.target_ms = torch.as_tensor(row), ms
    task.coarse_votes = np.zeros((int(coarse.max()) + 1, len(task.env.devices)))
    np.add.at(task.coarse_votes, (coarse, row), task.weight.numpy().astype(np.float64))


def expressible_target(env: SimEnv, node_coarse: np.ndarray, target: np.ndarray, active: np.ndarray,
                       rounds: int = 40, extra_starts: list[np.ndarray] = ()) -> tuple[np.ndarray, float]:
    """The fastest placement with one device per coarse node (what the policy can place: a chain is never
    split) found from the search target's per-chain majority and from every single device, then improved by
    steepest descent over single chain moves (simulated; the legalizer's anchors placed by the batched twin,
    memory enforced; on a ``RobustSimEnv`` the draws' robust score is minimised instead, and the returned ms is
    the fitted model's). Imitating the search's placement itself would teach, for a chain the search split, a
    majority that can be slower than any single device. ``extra_starts``: node rows constant on every coarse
    node (each coarse node takes the device of its first member)."""
    num_devices, num_coarse = len(env.devices), int(node_coarse.max()) + 1

    def nominal(rows: np.ndarray) -> np.ndarray:
        return env.simulator.feasible_ms(np.atleast_2d(np.asarray(rows, np.int64)))

    robust_score = getattr(env, "score_rows", None)  # a RobustSimEnv: the descent minimises the draws' score

    def price(coarse_rows: np.ndarray) -> np.ndarray:
        rows = env.fixer(coarse_rows[:, node_coarse])
        return nominal(rows) if robust_score is None else robust_score(rows)

    counts = np.zeros((num_coarse, num_devices))
    np.add.at(counts, (node_coarse[active], target[active]), 1.0)
    first = np.unique(node_coarse, return_index=True)[1]
    starts = np.stack([counts.argmax(1)] + [np.full(num_coarse, d) for d in range(num_devices)]
                      + [np.asarray(s)[first] for s in extra_starts])
    ms = price(starts)
    best = int(np.argmin(ms))
    current, current_ms = starts[best].copy(), float(ms[best])
    for _ in range(rounds):
        moves = [(c, d) for c in range(num_coarse) for d in range(num_devices) if d != current[c]]
        batch = np.repeat(current[None], len(moves), axis=0)
        for i, (c, d) in enumerate(moves):
            batch[i, c] = d
        ms = price(batch)
        j = int(np.argmin(ms))
        if not ms[j] < current_ms * (1 - 1e-6):
            break
        current, current_ms = batch[j], float(ms[j])
    if robust_score is not None:  # the caller compares ms with the best single device: the fitted model's
        current_ms = float(np.atleast_1d(nominal(env.fixer(current[node_coarse][None])))[0])
    return current[node_coarse], current_ms


def _start_policy(init: str, config: ImitationConfig, envs):
    if init == "scratch":
        from ov_autoplace_lab.training.pretrain import PRETRAIN_POLICY

        return make_policy(TrainConfig(seed=config.seed, calibrate_fraction=0.1), envs, PRETRAIN_POLICY)
    from ov_autoplace_lab.training import named_policy

    return torch_policy(Path(named_policy(init)))


def with_coarsening(policy, coarsening: str | None):
    """``policy`` with its config's grouping rule set to ``coarsening`` (same weights: the rule only changes which
    nodes form a group, not the shapes of the layers); ``None`` keeps the policy as it is."""
    if coarsening is None or coarsening == policy.config.coarsening:
        return policy
    from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy

    regrouped = HSDAGPolicy(dataclasses.replace(policy.config, coarsening=coarsening))
    regrouped.load_state_dict(policy.state_dict())
    return regrouped


def with_gcn_layers(policy, layers: int | None, seed: int = 0):
    """``policy`` with ``layers`` GCN layers: its own weights where the shapes allow (the input projection, its
    first layers, the parsing network, the placer), the layers it lacks freshly initialised (seeded), the ones it
    has beyond ``layers`` dropped; ``None`` or its own count keeps the policy as it is. The embeddings then reach
    ``layers`` hops of the coarse graph, so imitation has to retrain the placer on them."""
    if layers is None or layers == policy.config.num_gcn_layers:
        return policy
    from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy

    torch.manual_seed(seed)
    deeper = HSDAGPolicy(dataclasses.replace(policy.config, num_gcn_layers=layers))
    own = deeper.state_dict()
    deeper.load_state_dict({k: v for k, v in policy.state_dict().items() if k in own and own[k].shape == v.shape},
                           strict=False)
    return deeper


def with_placer_inputs(policy, placer_inputs: str | None, passes: int | None = None, graph_summary: bool = True):
    """``policy`` reading ``placer_inputs`` (``HSDAGConfig.PLACER_INPUTS``) in ``passes`` placer passes, with its
    own weights and the weights of the inputs it lacks set to 0, so it places exactly as before until training
    moves them (later passes then repeat the first); ``None`` keeps the policy's own. ``graph_summary``: whether
    boundary inputs, where added, include the whole-graph summary. Only adding inputs is supported (dropping them
    would change its placements)."""
    placer_inputs = placer_inputs or policy.config.placer_inputs
    passes = passes or policy.config.placer_passes
    if not graph_summary and policy.config.graph_summary and policy.config.placer_inputs == "boundary":
        raise ValueError("the start policy's placer reads the graph summary, and dropping it would change its "
                         "placements; train one without it from a policy with group inputs")
    if (placer_inputs, passes) == (policy.config.placer_inputs, policy.config.placer_passes):
        return policy
    if policy.config.placer_inputs == "boundary" and placer_inputs != "boundary":
        raise ValueError(f"a policy reading {policy.config.placer_inputs!r} cannot be narrowed to {placer_inputs!r} "
                         "without changing its placements; train one with those inputs from scratch")
    from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy

    # placer_inputs is "boundary" here (group inputs allow one pass only); a boundary policy keeps its own summary
    summary = graph_summary if policy.config.placer_inputs == "group" else policy.config.graph_summary
    wider = HSDAGPolicy(dataclasses.replace(policy.config, placer_inputs=placer_inputs, placer_passes=passes,
                                            graph_summary=summary))
    state = dict(policy.state_dict())
    own = wider.state_dict()
    pair = state["placer.lin_pair.weight"]
    state["placer.lin_pair.weight"] = torch.cat(
        [pair, torch.zeros(pair.shape[0], own["placer.lin_pair.weight"].shape[1] - pair.shape[1])], dim=1)
    if "placer.lin_graph.weight" in own and "placer.lin_graph.weight" not in state:
        state["placer.lin_graph.weight"] = torch.zeros_like(own["placer.lin_graph.weight"])
    wider.load_state_dict(state)
    return wider


def freeze_grouping(policy) -> None:
    """Stop training what decides the groups - the input projection, the GCN and the parsing network's edge
    scorer - so the policy keeps the start policy's groups (and their ceiling, ``fit.py``) while imitation trains
    how groups are embedded and placed."""
    for module in (policy.input_proj, *policy.convs, policy.pool.score):
        for parameter in module.parameters():
            parameter.requires_grad_(False)


def task_weights(tasks: list[ImitationTask], split_weight: float) -> np.ndarray:
    """How often each task is drawn: 1, or ``1 + split_weight`` where the target is a split that pays."""
    return np.array([1.0 + split_weight * t.split_pays for t in tasks])


def one_pass_misses(policy, tasks: list[ImitationTask]) -> np.ndarray:
    """bool [tasks]: the policy's greedy pass, legalised as the reward legalises it, is slower than ``FITS`` x the
    task's imitated target (fitted model; a robust task's draws are for the reward, not for this check)."""
    misses = np.zeros(len(tasks), dtype=bool)
    with torch.no_grad():
        for k, task in enumerate(tasks):
            output = policy(task.inputs)
            greedy = output.logits.argmax(-1)[output.node_group].cpu().numpy().astype(np.int64)
            env = task.env
            ms = float(np.atleast_1d(env.simulator.feasible_ms(env.legal_rows(greedy[None])))[0])
            misses[k] = not ms <= FITS * task.target_ms
    return misses


def checked_imitation(policy, tasks: list[ImitationTask], config: ImitationConfig, optimizer,
                      rng: np.random.Generator, weights: np.ndarray, progress: bool = True) -> tuple[list[float], list]:
    """:func:`imitate` in rounds of ``config.check_every`` steps, each round after a check of which tasks the one
    pass misses (:func:`one_pass_misses`). Returns the losses and, per check, (step, share of the tasks missed,
    share of the split-paying ones missed): how well the one pass fits its own training set as it trains. With
    ``config.mining`` > 0 the missed tasks are drawn ``1 + mining`` times as often as ``weights`` says in the next
    round (hard-example mining: the cross-entropy weighs every node of every drawn task alike, so a task whose
    few misplaced heavy groups cost 20 % gets as little attention as one already placed right); with 0 the draws
    are :func:`imitate`'s own."""
    losses: list[float] = []
    fit_log = []
    split = np.array([t.split_pays for t in tasks])
    scheduler = (torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, max(config.imitation_steps, 1))
                 if config.lr_schedule == "cosine" else None)
    done = 0
    while True:
        misses = one_pass_misses(policy, tasks)
        fit_log.append((done, round(float(misses.mean()), 4),
                        round(float(misses[split].mean()), 4) if split.any() else None))
        log.info("imitation step %d: the one pass misses %.1f %% of the tasks (%.1f %% of the split-paying ones)",
                 done, 100 * fit_log[-1][1], 100 * (fit_log[-1][2] or 0.0))
        if done >= config.imitation_steps:
            return losses, fit_log
        steps = min(config.check_every, config.imitation_steps - done)
        losses += imitate(policy, tasks, steps, optimizer, rng, config.tasks_per_step, progress,
                          weights * (1.0 + config.mining * misses), scheduler, config.grouping_weight)
        done += steps


def imitate(policy, tasks: list[ImitationTask], steps: int, optimizer, rng: np.random.Generator,
            tasks_per_step: int, progress: bool = True, weights: np.ndarray | None = None,
            scheduler=None, grouping_weight: float = 0.0) -> list[float]:
    """``steps`` cross-entropy updates on random batches of ``tasks`` (``scheduler``: stepped after each;
    ``grouping_weight``: :func:`imitation_loss`'s); returns the loss per step."""
    from tqdm import tqdm

    losses = []
    with tqdm(total=steps, disable=not progress, desc="imitation", unit="step") as bar:
        for _ in range(steps):
            losses.append(imitation_step(policy, tasks, optimizer, rng, tasks_per_step, weights, grouping_weight))
            if scheduler is not None:
                scheduler.step()
            bar.update(1)
            if len(losses) % 25 == 0:
                bar.set_postfix(loss=f"{np.mean(losses[-25:]):.4f}")
    return losses


def imitation_step(policy, tasks, optimizer, rng, tasks_per_step: int, weights: np.ndarray | None = None,
                   grouping_weight: float = 0.0) -> float:
    p = None if weights is None else weights / weights.sum()
    batch = rng.choice(len(tasks), size=min(tasks_per_step, len(tasks)), replace=False, p=p)
    optimizer.zero_grad()
    total = 0.0
    for i in batch:
        loss = imitation_loss(policy, tasks[int(i)], grouping_weight) / len(batch)
        loss.backward()
        total += float(loss.detach())
    torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
    optimizer.step()
    return total


def train_amortised(directory: str | Path, output: str | Path, config: ImitationConfig = ImitationConfig(), *,
                    init: str = "pretrained", specs: list[TargetSpec] | None = None,
                    log_path: str | Path | None = None, progress: bool = True) -> Path:
    """Imitation on the training targets of ``directory``, then REINFORCE; exports the policy to ``output``."""
    from ov_autoplace_lab.training.splits import is_held_out, is_validation, training_specs

    started = time.perf_counter()
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    specs = [s for s in (specs if specs is not None else training_specs(all_data=config.all_data))
             if (config.all_data or not is_held_out(s)) and not (config.hold_out_validation and is_validation(s))]
    probe = with_coarsening(_start_policy(init if init != "scratch" else "pretrained", config, []), config.coarsening)
    tasks = build_tasks(directory, specs, probe.config, config.node_weighting)
    policy = with_gcn_layers(with_coarsening(_start_policy(init, config, [t.env for t in tasks]), config.coarsening)
                             if init == "scratch" else probe, config.gcn_layers, config.seed)
    policy = with_placer_inputs(policy, config.placer_inputs, config.placer_passes, config.graph_summary)
    if config.freeze_grouping:
        freeze_grouping(policy)
    if init == "scratch":
        for t in tasks:
            set_inputs(t, policy.config)
    built = time.perf_counter() - started
    rng = np.random.default_rng(config.seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr)
    weights = task_weights(tasks, config.split_weight)
    losses, fit_log = checked_imitation(policy, tasks, config, optimizer, rng, weights, progress)
    imitated = time.perf_counter() - started
    rl_config = TrainConfig(mode="reinforce", steps=config.reinforce_steps, samples=config.samples,
                            lr=config.reinforce_lr, entropy_weight=0.02, logit_penalty=0.001,
                            single_device_samples=True, tasks_per_step=4, grad_clip=1.0, seed=config.seed,
                            threads=config.threads)
    trainer = Trainer(policy, [t.env for t in tasks], rl_config, log_path=log_path, progress=progress,
                      weights=list(weights))
    from tqdm import tqdm

    with tqdm(total=config.reinforce_steps, disable=not progress, desc="reinforce", unit="step") as bar:
        for _ in range(config.reinforce_steps):
            trainer.step()
            if config.imitation_steps:  # keep the imitated splits (see the module docstring)
                losses.append(imitation_step(policy, tasks, trainer.optimizer, rng, config.tasks_per_step, weights,
                                             config.grouping_weight))
            bar.update(1)
    meta = {"recipe": "ov_autoplace_lab.training.amortise (issue 22)", "init": init,
            "imitation": dataclasses.asdict(config), "targets_dir": str(directory), "num_tasks": len(tasks),
            "split_tasks": int(sum(t.split_pays for t in tasks)),
            "expressible_over_search": round(float(np.median([t.target_ms / t.search_ms for t in tasks])), 4),
            "one_pass_misses": fit_log,  # (imitation step, share of the tasks missed, of the split-paying ones)
            "imitation_loss_first_last": [round(float(np.mean(losses[:25])), 4) if losses else None,
                                          round(float(np.mean(losses[-25:])), 4) if losses else None],
            "seconds": {"build": round(built, 1), "imitation": round(imitated - built, 1),
                        "reinforce": round(time.perf_counter() - started - imitated, 1)}}
    log.info("trained on %d tasks: %s", len(tasks), meta["seconds"])
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    return trainer.export(output, metadata=meta)


__all__ = ["ImitationConfig", "ImitationTask", "LR_SCHEDULES", "NODE_WEIGHTINGS", "active_mask", "build_tasks",
           "checked_imitation", "freeze_grouping", "grouping_loss", "imitate", "imitation_loss", "imitation_step",
           "merge_impurity", "node_weights", "one_pass_misses", "task_weights", "train_amortised", "with_coarsening",
           "with_gcn_layers", "with_placer_inputs"]
