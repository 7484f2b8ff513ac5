"""The validation split (issue 22): held out from training, scored per candidate, the fixed choice rule."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.policy.pretrained import PRETRAINED_POLICY
from ov_autoplace_lab.training import V1_POLICY
from ov_autoplace_lab.training.imitation import ImitationConfig, train_amortised
from ov_autoplace_lab.training.splits import (VALIDATION_GRAPHS, evaluation_specs, is_held_out, is_validation,
                                               training_specs, validation_specs)
from ov_autoplace_lab.training.targets import (TargetOptions, TargetSpec, check_manifest, generate_target,
                                               save_target)
from ov_autoplace_lab.training.validation import (VALIDATION_DRAWS, choose, choose_by_heldout_rule,
                                                  heldout_rule_summary, summarize_validation, trained_on_validation,
                                                  validate_row)

FAST = TargetOptions(sigma=0.46, max_evaluations=200, local_search_seconds=5.0, policy=None)


def test_split_is_part_of_the_training_cases_and_apart_from_the_evaluation():
    specs = validation_specs()
    assert specs and {s.graph for s in specs} == set(VALIDATION_GRAPHS)
    assert set(specs) <= set(training_specs(extra_family_count=10, wider_family_count=10, hole_variants=1))
    assert not any(is_held_out(s) for s in specs) and not any(is_validation(s) for s in evaluation_specs())


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """Three targets: two training cases and one validation case (family:25), and a policy trained without it."""
    directory = tmp_path_factory.mktemp("run")
    specs = [TargetSpec("family:3", "paper"), TargetSpec("family:4", "npu_cpu", 0), TargetSpec("family:25", "laptop")]
    check_manifest(directory, FAST, specs)
    for spec in specs:
        save_target(directory, generate_target(spec, FAST))
    output = train_amortised(directory, directory / "held.npz", ImitationConfig(
        imitation_steps=2, reinforce_steps=1, samples=4, hold_out_validation=True), specs=specs, progress=False)
    return directory, specs, output


def test_training_leaves_the_validation_split_out(small_run):
    from ov_autoplace.policy.policy_file import load_policy_file

    _, _, output = small_run
    meta = load_policy_file(output).header["metadata"]
    assert meta["num_tasks"] == 2 and meta["imitation"]["hold_out_validation"] is True
    assert trained_on_validation(str(output)) is False and trained_on_validation(str(PRETRAINED_POLICY)) is False
    assert trained_on_validation(str(V1_POLICY)) is True  # no imitation metadata: v1 saw the random DAG family


def test_validation_row_scores_every_candidate_under_the_fitted_model_and_the_draws(small_run):
    from ov_autoplace.costmodel.simulator import Simulator
    from ov_autoplace_lab.training.targets import case_cost, load_target, target_path

    directory, specs, output = small_run
    spec = specs[2]
    row = validate_row((spec, {"v1": str(V1_POLICY), "held": str(output)}, FAST.sigma,
                        load_target(target_path(directory, spec))))
    assert {"v1", "held", "ref:plain_call", "ref:search", "ref:heft"} <= set(row["names"])
    target = load_target(target_path(directory, spec))
    assert row["split_pays"] == (target["latency_ms"] <= 0.95 * target["best_single_ms"])
    assert len(row["draws_ms"]) == VALIDATION_DRAWS and all(len(d) == len(row["names"]) for d in row["draws_ms"])
    graph, cost, _ = case_cost(spec, FAST.sigma)
    search = row["fitted_ms"][row["names"].index("ref:search")]
    assert search == pytest.approx(float(Simulator(cost, graph)(load_target(target_path(directory, spec))
                                                              ["placement"])))
    summary = summarize_validation([row], ["v1", "held"])
    for s in summary.values():
        assert s["pairs"] == VALIDATION_DRAWS and s["median_ratio"] >= 1.0 and 0.0 <= s["slower_than_plain_call"] <= 1


def test_evaluate_validation_only_scores_the_split_and_applies_rule_3(small_run, tmp_path, capsys, monkeypatch):
    import json

    from ov_autoplace_lab.training import distributed
    from ov_autoplace_lab.training.amortise import main

    def in_process(fn, items, on_result, **_):  # the same rows, without a second local Ray beside the suite's
        for item in items:
            on_result(item, fn(item))
        return []

    monkeypatch.setattr(distributed, "run_tasks", in_process)
    directory, _, output = small_run
    out = tmp_path / "v.json"
    assert main(["evaluate", "--dir", str(directory), "--num-cpus", "1", "--no-progress", "--validation-only",
                 "--policy", f"v4={PRETRAINED_POLICY}", "--policy", f"held={output}", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result) == {"sigma", "table", "validation"} and result["validation"]["cases"] == 1  # family:25 only
    assert result["validation"]["heldout_rule_choice"] in {"v4", "held"}
    assert set(result["validation"]["heldout_rule"]) == {"v4", "held"}
    assert "chosen by docs/heldout.md's rule 3" in capsys.readouterr().out


def test_choice_rule_admits_only_candidates_no_more_often_slower_than_the_shipped_policy():
    summary = {"v1": {"median_ratio": 1.10, "slower_than_plain_call": 0.05, "within_5pct": 0.3},
               "fast_but_risky": {"median_ratio": 1.01, "slower_than_plain_call": 0.20, "within_5pct": 0.6},
               "safe": {"median_ratio": 1.06, "slower_than_plain_call": 0.04, "within_5pct": 0.4},
               "safer_slower": {"median_ratio": 1.08, "slower_than_plain_call": 0.0, "within_5pct": 0.5}}
    assert choose(summary, "v1") == "safe"
    assert choose({k: summary[k] for k in ("v1", "fast_but_risky")}, "v1") is None
    assert np.isclose(summary[choose(summary, None)]["median_ratio"], 1.01)  # no shipped policy: no bound


def test_choice_rule_puts_the_fewest_cases_behind_heft_before_the_ratios():
    summary = {"v2": {"median_ratio": 1.0, "slower_than_plain_call": 0.05, "within_5pct": 0.84, "behind_heft": 4},
               "best_ratios": {"median_ratio": 1.0, "slower_than_plain_call": 0.05, "within_5pct": 0.88,
                               "behind_heft": 2},
               "never_behind": {"median_ratio": 1.0, "slower_than_plain_call": 0.05, "within_5pct": 0.87,
                                "behind_heft": 0},
               "never_behind_risky": {"median_ratio": 1.0, "slower_than_plain_call": 0.06, "within_5pct": 0.9,
                                      "behind_heft": 0}}
    assert choose(summary, "v2") == "never_behind"  # the plain-call bound still comes first
    # a summary without HEFT's placement (an older evaluation) is chosen as before: ratios, then the share within 5 %
    legacy = {n: {**s, "behind_heft": None} for n, s in summary.items()}
    assert choose(legacy, "v2") == "best_ratios"


def test_cases_behind_heft_are_counted_under_the_fitted_model():
    row = {"names": ["ref:plain_call", "ref:heft", "tie", "behind", "infeasible"],
           "fitted_ms": [2.0, 1.0, 1.0, 1.1, None], "draws_ms": [[2.0, 1.0, 1.0, 1.1, None]]}
    summary = summarize_validation([row, {**row, "names": [*row["names"][:1], "ref:other", *row["names"][2:]]}],
                                   ["tie", "behind", "infeasible"])
    assert {n: s["behind_heft"] for n, s in summary.items()} == {"tie": 0, "behind": 1, "infeasible": 1}


def test_heldout_rule_3_counts_rows_under_the_fitted_model_and_draws_against_the_best_single_device():
    names = ["ref:plain_call", "ref:single:CPU", "ref:single:GPU", "ref:heft", "a", "b"]
    rows = [{"names": names, "fitted_ms": [2.0, 2.0, 3.0, 1.0, 1.0, 1.02],  # b: within 1.05x, behind HEFT by 2 %
             "draws_ms": [[2.0, 2.0, 3.0, 1.0, 1.0, 2.5], [2.0, 1.5, 3.0, 1.0, 1.6, 1.0]]},
            {"names": names, "fitted_ms": [2.0, 2.0, 3.0, 1.5, 1.6, 1.5],  # a: 6.7 % off the row's best
             "draws_ms": [[2.0, 2.0, 3.0, 1.5, 1.6, 1.5], [2.0, 2.0, 3.0, 1.5, None, 1.5]]}]
    summary = heldout_rule_summary(rows, ["a", "b"])
    assert summary["a"]["within_5pct_rows"] == 1 and summary["b"]["within_5pct_rows"] == 2
    assert summary["a"]["behind_heft_1pct_rows"] == 1 and summary["b"]["behind_heft_1pct_rows"] == 1
    assert summary["a"]["slower_than_best_single_draws"] == pytest.approx(1 / 3)  # 1.6 > 1.5; the None draw skipped
    assert summary["b"]["slower_than_best_single_draws"] == pytest.approx(1 / 4)  # 2.5 > 2.0


def test_heldout_rule_3_keeps_the_shipped_policy_unless_an_eligible_candidate_has_more_rows_within():
    def s(within, behind, slower=0.1, median=1.0):
        return {"within_5pct_rows": within, "behind_heft_1pct_rows": behind, "slower_than_best_single_draws": slower,
                "median_ratio": median}

    shipped = s(10, 2)
    assert choose_by_heldout_rule({"v3": shipped, "more_behind": s(20, 3)}, "v3") == "v3"  # not eligible
    assert choose_by_heldout_rule({"v3": shipped, "as_good": s(10, 0)}, "v3") == "v3"  # beats it on no first criterion
    assert choose_by_heldout_rule({"v3": shipped, "a": s(11, 2, 0.2), "b": s(11, 1, 0.1)}, "v3") == "b"  # the tie-break
    assert choose_by_heldout_rule({"v3": shipped, "a": s(12, 2, 0.3), "b": s(11, 0, 0.0)}, "v3") == "a"


def test_the_reference_rows_are_legalised_as_compile_model_legalises():
    """HEFT's proposal (a reference of every draw) takes the bound's merges priced, as the policies' placements do:
    on this case the flops-ordered merge was 2.9 times slower, and the draws' best was judged against it."""
    from ov_autoplace.search.memory_fit import legal_pricer
    from ov_autoplace.costmodel.simulator import Simulator
    from ov_autoplace.strategies.base import PlacementContext
    from ov_autoplace.strategies.heft import HeftStrategy
    from ov_autoplace_lab.training.targets import _legal_row, case_cost

    spec = TargetSpec("family:multibranch:9", "npu_cpu", 0)
    assert is_validation(spec)
    row = validate_row((spec, {}, FAST.sigma, generate_target(spec, FAST)))
    graph, cost, support = case_cost(spec, FAST.sigma)
    devices = tuple(cost.devices)
    proposal = HeftStrategy(cost).propose(PlacementContext(graph=graph, devices=devices, support=support))
    simulator = Simulator(cost, graph)
    priced = float(simulator(_legal_row(graph, proposal, devices, support, legal_pricer(cost, graph, support))[None])[0])
    flops = float(simulator(_legal_row(graph, proposal, devices, support, None)[None])[0])
    assert row["fitted_ms"][row["names"].index("ref:heft")] == pytest.approx(priced) and priced < 0.5 * flops
