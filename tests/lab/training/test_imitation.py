"""Imitation of the search's targets (issue 22): the cross-entropy pulls the policy's one pass toward the target."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ov_autoplace.policy.numpy_policy import NumpyHSDAGPolicy  # noqa: E402
from ov_autoplace_lab.training.imitation import (STAKES_FLOOR, ImitationConfig, active_mask,  # noqa: E402
                                                 build_tasks, imitate, imitation_loss, node_weights, set_inputs,
                                                 checked_imitation, one_pass_misses, train_amortised,
                                                 with_coarsening, with_gcn_layers, with_placer_inputs,
                                                 freeze_grouping, grouping_loss, merge_impurity)
from ov_autoplace_lab.training.targets import (TargetOptions, TargetSpec, check_manifest, generate_target,  # noqa: E402
                                               save_target)
from ov_autoplace_lab.training.trainer import TrainConfig, make_policy  # noqa: E402
from tests.lab.training.conftest import SMALL  # noqa: E402

FAST = TargetOptions(sigma=0.46, max_evaluations=300, local_search_seconds=5.0, policy=None)
SPECS = [TargetSpec("family:1", "npu_cpu", 0), TargetSpec("family:4", "laptop", 2), TargetSpec("family:7", "paper")]


@pytest.fixture(scope="module")
def target_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("targets")
    check_manifest(directory, FAST, SPECS)
    for spec in SPECS:
        save_target(directory, generate_target(spec, FAST))
    return directory


def _agreement(policy, tasks) -> float:
    """Share of the active nodes whose greedy device is the target's."""
    hits = total = 0.0
    with torch.no_grad():
        for t in tasks:
            out = policy(t.inputs)
            greedy = out.logits.argmax(-1)[out.node_group]
            hits += float(((greedy == t.target).float() * t.weight).sum())
            total += float(t.weight.sum())
    return hits / total


def test_cross_entropy_falls_and_the_greedy_pass_moves_to_the_target(target_dir):
    tasks = build_tasks(target_dir, SPECS, SMALL)
    policy = make_policy(TrainConfig(seed=0, calibrate_fraction=0.5), [t.env for t in tasks], SMALL)
    for t in tasks:
        set_inputs(t, policy.config)
        assert t.target_ms <= t.best_single_ms * (1 + 1e-9)  # the expressible target is never worse than one device
    with torch.no_grad():
        before = [float(imitation_loss(policy, t)) for t in tasks]
    agree_before = _agreement(policy, tasks)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    imitate(policy, tasks, 60, optimizer, np.random.default_rng(0), 3, progress=False)
    with torch.no_grad():
        after = [float(imitation_loss(policy, t)) for t in tasks]
    assert sum(after) < 0.7 * sum(before)
    assert _agreement(policy, tasks) > agree_before


def test_train_amortised_exports_a_torch_free_policy_outside_the_package(target_dir, tmp_path):
    out = train_amortised(target_dir, tmp_path / "p.npz", ImitationConfig(imitation_steps=3, reinforce_steps=2,
                                                                         tasks_per_step=2), specs=SPECS,
                          progress=False)
    policy = NumpyHSDAGPolicy.load(out)
    assert out.parent == tmp_path and policy.config.hidden == 128  # the shipped architecture, fine-tuned
    ablation = train_amortised(target_dir, tmp_path / "rl.npz", ImitationConfig(imitation_steps=0, reinforce_steps=2,
                                                                               tasks_per_step=2), specs=SPECS,
                               progress=False)
    assert ablation.is_file()


def test_cost_cut_targets_are_no_worse_and_the_trained_policy_keeps_the_cut(target_dir, tmp_path):
    chain_tasks = build_tasks(target_dir, SPECS, SMALL)
    cut_tasks = build_tasks(target_dir, SPECS, dataclasses.replace(SMALL, coarsening="cost_cut"))
    for chain, cut in zip(chain_tasks, cut_tasks):
        # the cut refines the chains, so its best one-device-per-group placement is at least as fast
        assert int(cut.inputs.node_coarse.max()) >= int(chain.inputs.node_coarse.max())
        assert cut.target_ms <= chain.target_ms * (1 + 1e-9)
    out = train_amortised(target_dir, tmp_path / "cut.npz",
                          ImitationConfig(imitation_steps=3, reinforce_steps=2, tasks_per_step=2,
                                          coarsening="cost_cut"), specs=SPECS, progress=False)
    policy = NumpyHSDAGPolicy.load(out)
    assert policy.config.coarsening == "cost_cut"


def test_with_coarsening_keeps_the_weights():
    from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy

    torch.manual_seed(0)
    policy = HSDAGPolicy(SMALL)
    cut = with_coarsening(policy, "cost_cut")
    assert cut.config.coarsening == "cost_cut" and with_coarsening(policy, None) is policy
    assert all(torch.equal(a, b) for a, b in zip(policy.state_dict().values(), cut.state_dict().values()))


def test_with_gcn_layers_keeps_what_fits_and_a_deeper_policy_trains_and_exports(target_dir, tmp_path):
    from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy

    torch.manual_seed(0)
    policy = HSDAGPolicy(SMALL)
    assert with_gcn_layers(policy, None) is policy and with_gcn_layers(policy, SMALL.num_gcn_layers) is policy
    deeper = with_gcn_layers(policy, SMALL.num_gcn_layers + 2)
    assert len(deeper.convs) == SMALL.num_gcn_layers + 2
    kept = policy.state_dict()
    for key, value in deeper.state_dict().items():  # everything but the new layers is the start policy's
        new_layer = key.startswith("convs.") and int(key.split(".")[1]) >= SMALL.num_gcn_layers
        assert (key not in kept) if new_layer else torch.equal(value, kept[key])
    out = train_amortised(target_dir, tmp_path / "deep.npz",
                          ImitationConfig(imitation_steps=3, reinforce_steps=1, tasks_per_step=2, gcn_layers=4),
                          specs=SPECS, progress=False)
    exported = NumpyHSDAGPolicy.load(out)  # torch-free at inference, whatever its depth
    assert exported.config.num_gcn_layers == 4
    with pytest.raises(ValueError, match="gcn_layers must be >= 1"):
        ImitationConfig(gcn_layers=0)


def test_with_placer_inputs_starts_from_the_same_placements_and_trains_the_new_weights(target_dir, tmp_path):
    """The boundary inputs' weights start at 0: the widened policy's logits are the start policy's on every task;
    imitation then moves them, and the trained policy exports and loads torch-free."""
    tasks = build_tasks(target_dir, SPECS, SMALL)
    policy = make_policy(TrainConfig(seed=0, calibrate_fraction=0.5), [t.env for t in tasks], SMALL)
    assert with_placer_inputs(policy, None) is policy and with_placer_inputs(policy, "group") is policy
    wider = with_placer_inputs(policy, "boundary")
    assert wider.config.placer_inputs == "boundary"
    with torch.no_grad():
        for t in tasks:
            set_inputs(t, policy.config)
            assert torch.equal(policy(t.inputs).logits, wider(t.inputs).logits)
    with pytest.raises(ValueError, match="cannot be narrowed"):
        with_placer_inputs(wider, "group")
    with pytest.raises(ValueError, match="placer_inputs must be one of"):
        ImitationConfig(placer_inputs="edges")
    out = train_amortised(target_dir, tmp_path / "boundary.npz",
                          ImitationConfig(imitation_steps=4, reinforce_steps=1, tasks_per_step=2,
                                          placer_inputs="boundary"), specs=SPECS, progress=False)
    exported = NumpyHSDAGPolicy.load(out)
    assert exported.config.placer_inputs == "boundary"
    new_columns = exported.w["placer.lin_pair.weight"][:, -4:]
    assert np.abs(new_columns).max() > 0 and np.abs(exported.w["placer.lin_graph.weight"]).max() > 0


def test_more_placer_passes_start_where_one_pass_was_and_freezing_keeps_the_groups(target_dir):
    """Widened to 3 passes with zero boundary weights, each pass repeats the first, so the logits are the start
    policy's; after imitation with the grouping frozen the groups are still the start policy's."""
    from ov_autoplace_lab.training.imitation import imitate

    tasks = build_tasks(target_dir, SPECS, SMALL)
    policy = make_policy(TrainConfig(seed=0, calibrate_fraction=0.5), [t.env for t in tasks], SMALL)
    for t in tasks:
        set_inputs(t, policy.config)
    passes = with_placer_inputs(policy, "boundary", 3)
    assert passes.config.placer_passes == 3 and with_placer_inputs(passes, None, None) is passes
    lean = with_placer_inputs(policy, "boundary", 3, graph_summary=False)
    assert lean.placer.lin_graph is None and not lean.config.graph_summary
    assert with_placer_inputs(lean, "boundary", 4).placer.lin_graph is None  # keeps its own inputs
    with pytest.raises(ValueError, match="dropping it would change its placements"):
        with_placer_inputs(passes, "boundary", 4, graph_summary=False)
    with pytest.raises(ValueError, match="graph_summary=False only applies"):
        ImitationConfig(graph_summary=False)
    with torch.no_grad():
        before = [policy(t.inputs) for t in tasks]
        for t, out in zip(tasks, before):
            assert torch.equal(out.logits, passes(t.inputs).logits)
            assert torch.equal(out.logits, lean(t.inputs).logits)
    freeze_grouping(passes)
    imitate(passes, tasks, 5, torch.optim.Adam(passes.parameters(), lr=1e-2), np.random.default_rng(0), 2, False)
    with torch.no_grad():
        for t, out in zip(tasks, before):
            after = passes(t.inputs)
            assert torch.equal(after.node_group, out.node_group) and not torch.equal(after.logits, out.logits)
    with pytest.raises(ValueError, match="placer_passes must be >= 1"):
        ImitationConfig(placer_passes=0)


def test_mining_checks_the_one_pass_each_round_and_draws_the_missed_tasks_more(target_dir, monkeypatch):
    """The check is the reward's legalised one pass against the target: a task is missed exactly when that latency
    exceeds 1.05x its target. Each round's draws weigh the missed tasks 1 + mining times."""
    tasks = build_tasks(target_dir, SPECS, SMALL)
    policy = make_policy(TrainConfig(seed=0, calibrate_fraction=0.5), [t.env for t in tasks], SMALL)
    for t in tasks:
        set_inputs(t, policy.config)
    misses = one_pass_misses(policy, tasks)
    with torch.no_grad():
        for t, missed in zip(tasks, misses):
            out = policy(t.inputs)
            greedy = out.logits.argmax(-1)[out.node_group].numpy()
            assert missed == (t.env.evaluate_uncounted(greedy) > 1.05 * t.target_ms)
    drawn = []
    from ov_autoplace_lab.training import imitation

    real = imitation.imitate
    monkeypatch.setattr(imitation, "imitate", lambda p, ts, steps, opt, rng, k, progress, weights, *rest:
                        drawn.append(np.asarray(weights).copy()) or real(p, ts, steps, opt, rng, k, progress, weights))
    config = ImitationConfig(imitation_steps=4, tasks_per_step=2, mining=3.0, check_every=2)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    losses, fit_log = checked_imitation(policy, tasks, config, optimizer, np.random.default_rng(0), np.ones(len(tasks)),
                                      progress=False)
    assert len(losses) == 4 and [step for step, *_ in fit_log] == [0, 2, 4]
    assert np.array_equal(drawn[0], 1.0 + 3.0 * misses)  # the first round draws from the check before it
    assert fit_log[0][1] == pytest.approx(misses.mean())
    with pytest.raises(ValueError, match="mining must be >= 0"):
        ImitationConfig(mining=-1.0)


def test_stakes_weights_follow_what_a_node_costs_to_get_wrong(target_dir):
    from ov_autoplace_lab.training.targets import case_cost

    graph, cost, _ = case_cost(SPECS[0], FAST.sigma)
    active = active_mask(graph)
    assert np.array_equal(node_weights(graph, cost), active.astype(float))
    weights = node_weights(graph, cost, "stakes")
    assert (weights[~active] == 0).all() and (weights[active] >= STAKES_FLOOR).all()
    assert np.isclose(weights[active].mean(), STAKES_FLOOR + 1.0)  # relative to the graph's mean stake
    ms = np.where(np.isfinite(cost.compute_ms), cost.compute_ms, np.nan)
    spread = np.nanmax(ms, 1) - np.nanmin(ms, 1)
    heavy, light = (int(np.flatnonzero(active)[k]) for k in (np.argmax(spread[active]), np.argmin(spread[active])))
    assert weights[heavy] > 5 * weights[light]
    # a node only one device can run decides nothing: the floor
    ms = cost.compute_ms.copy()
    ms[heavy, 1:] = np.inf
    only_one = node_weights(graph, dataclasses.replace(cost, compute_ms=ms), "stakes")
    assert only_one[heavy] == pytest.approx(STAKES_FLOOR)
    tasks = build_tasks(target_dir, SPECS[:1], SMALL, "stakes")
    assert np.allclose(tasks[0].weight.numpy(), weights.astype(np.float32))
    with pytest.raises(ValueError, match="node_weighting must be one of"):
        ImitationConfig(node_weighting="cost")
    with pytest.raises(ValueError, match="one of"):
        node_weights(graph, cost, "cost")


def test_a_cosine_schedule_ends_the_imitation_at_rate_zero(target_dir):
    tasks = build_tasks(target_dir, SPECS, SMALL)
    policy = make_policy(TrainConfig(seed=0, calibrate_fraction=0.5), [t.env for t in tasks], SMALL)
    for t in tasks:
        set_inputs(t, policy.config)
    rates = {}
    for schedule in ("constant", "cosine"):
        optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
        config = ImitationConfig(imitation_steps=4, tasks_per_step=2, check_every=2, lr_schedule=schedule)
        checked_imitation(policy, tasks, config, optimizer, np.random.default_rng(0), np.ones(len(tasks)), False)
        rates[schedule] = optimizer.param_groups[0]["lr"]
    assert rates["constant"] == 1e-3 and rates["cosine"] < 1e-9
    with pytest.raises(ValueError, match="lr_schedule must be one of"):
        ImitationConfig(lr_schedule="step")


def test_merge_impurity_counts_only_the_weight_a_merge_newly_puts_off_its_majority():
    votes = np.array([[3.0, 0.0], [0.0, 1.0], [2.0, 0.0], [1.0, 1.0]])
    u, v = np.array([0, 0, 3, 3]), np.array([1, 2, 0, 1])
    # 0-1: two pure groups of different devices, the lighter side (1) goes off majority; 0-2: same device;
    # 3 is already mixed (1 off): joined to 0 or 1 it adds nothing beyond what it had
    assert merge_impurity(votes, u, v).tolist() == [1.0, 0.0, 0.0, 0.0]
    assert merge_impurity(np.array([[0.0, 0.0], [2.0, 0.0]]), np.array([0]), np.array([1])).tolist() == [0.0]


def test_grouping_loss_by_hand_and_its_gradient_lowers_only_the_merges_that_mix():
    from types import SimpleNamespace

    from ov_autoplace_lab.hsdag_torch.layers.graph_parsing_pool import ScoredLevel

    votes = np.array([[3.0, 0.0], [0.0, 1.0], [2.0, 0.0]])  # coarse nodes 0 and 2 on device 0, 1 on device 1
    first = torch.tensor([0.5, 2.0], requires_grad=True)  # edges 0-1 (mixes) and 0-2 (does not)
    second = torch.tensor([1.0], requires_grad=True)  # level 2: {0, 2} against {1}
    levels = [ScoredLevel(np.array([0, 0]), np.array([1, 2]), np.arange(3)),
              ScoredLevel(np.array([0]), np.array([1]), np.array([0, 1, 0]))]
    output = SimpleNamespace(logits=torch.zeros(2, 2), edge_logits=[first, second], levels=levels)
    loss = grouping_loss(output, votes, threshold_logit=0.0)
    softplus = lambda x: float(np.log1p(np.exp(x)))  # noqa: E731
    assert float(loss) == pytest.approx(1 / 6 * softplus(0.5) + 1 / 6 * softplus(1.0))
    loss.backward()
    assert first.grad[0] > 0 and first.grad[1] == 0 and second.grad[0] > 0  # descent lowers the mixing merges
    assert float(grouping_loss(output, np.zeros((3, 2)), 0.0)) == 0.0  # no target weight: nothing to keep apart


def test_the_grouping_loss_trains_the_scorer_to_stop_merging_what_the_target_splits(target_dir):
    tasks = build_tasks(target_dir, SPECS, SMALL)
    policy = make_policy(TrainConfig(seed=0, calibrate_fraction=0.9), [t.env for t in tasks], SMALL)
    for t in tasks:
        set_inputs(t, policy.config)
    threshold = policy.pool.threshold_logit

    def mixing():
        with torch.no_grad():
            return sum(float(grouping_loss(policy(t.inputs), t.coarse_votes, threshold)) for t in tasks)

    before = mixing()
    assert before > 0  # calibrated to merge 90 % of the edges: some merges join what the target splits
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    imitate(policy, tasks, 30, optimizer, np.random.default_rng(0), 3, progress=False, grouping_weight=10.0)
    assert mixing() < 0.5 * before
    with pytest.raises(ValueError, match="grouping_weight"):
        ImitationConfig(grouping_weight=-1.0)
