"""The fit of the one pass to the stored targets, and its grouping's ceiling (issue 22, ``amortise fit``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from ov_autoplace.costmodel.simulator import Simulator  # noqa: E402
from ov_autoplace.placement.legalizer import legalize  # noqa: E402
from ov_autoplace.policy.pretrained import PRETRAINED_POLICY  # noqa: E402
from ov_autoplace_lab.training.amortise import main  # noqa: E402
from ov_autoplace_lab.training.distributed import generate_targets  # noqa: E402
from ov_autoplace_lab.training.fit import fit_row  # noqa: E402
from ov_autoplace_lab.training.targets import (  # noqa: E402
    MAX_SUBMODELS, TargetOptions, TargetSpec, case_cost, load_target, save_target, target_path)

FAST = TargetOptions(sigma=0.46, max_evaluations=200, local_search_seconds=5.0, policy=None)
SPECS = [TargetSpec("family:0", "paper"), TargetSpec("family:1", "npu_cpu", 0)]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fit_run")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        generate_targets(directory, SPECS, FAST, progress=False)
        yield directory
    finally:
        ray.shutdown()


def test_a_one_device_target_is_its_own_ceiling_and_the_searched_one_is_scored(run_dir):
    """Projected onto any grouping, a target with every node on one device is that placement again: its ceiling is
    the target (1.000x). The searched target of the same case is scored against its own latency."""
    spec = SPECS[0]
    searched = load_target(target_path(run_dir, spec))
    row = fit_row((str(target_path(run_dir, spec)), {"v1": str(PRETRAINED_POLICY)}, 0.46, 0))
    cells = row["policies"]["v1"]
    assert row["subset"].startswith("family, ") and row["target_ms"] == pytest.approx(searched["latency_ms"])
    assert cells["groups"] >= 1 and 0 <= cells["mixed_groups"] <= cells["groups"]
    assert np.isfinite(cells["one_pass_ms"]) and np.isfinite(cells["ceiling_ms"])
    graph, cost, support = case_cost(spec, 0.46)
    devices = tuple(cost.devices)
    placement = legalize(graph, np.zeros(graph.num_nodes, np.int64), devices, support, max_submodels=MAX_SUBMODELS)
    single_ms = float(Simulator(cost, graph).feasible_ms(
        np.array([devices.index(placement.assignment[n]) for n in graph.names])))
    other = run_dir / "single"
    save_target(other, {**searched, "placement": np.zeros_like(searched["placement"]), "latency_ms": single_ms})
    again = fit_row((str(target_path(other, spec)), {"v1": str(PRETRAINED_POLICY)}, 0.46, 0))
    assert again["policies"]["v1"]["mixed_groups"] == 0
    assert again["policies"]["v1"]["ceiling_ms"] / again["target_ms"] == pytest.approx(1.0)


def test_cli_fit_writes_the_rows_and_the_table(run_dir, tmp_path, capsys):
    out = tmp_path / "fit.json"
    code = main(["fit", "--dir", str(run_dir), "--num-cpus", "1", "--no-progress", "--rows", "all",
                 "--policy", f"v1={PRETRAINED_POLICY}", "--json", str(out)])
    assert code == 0
    result = json.loads(out.read_text())
    assert sorted(r["key"] for r in result["rows"]) == sorted(s.key for s in SPECS)
    assert any(line.startswith("every target") for line in result["table"])
    assert "ceiling" in capsys.readouterr().out


def test_the_rankings_best_threshold_is_one_of_the_decodings_and_never_above_the_one_pass(run_dir):
    """``ranked_ms`` is the best legalised latency over the greedy pass and its offset decodings, so it is at most
    the one pass's and, where it is below, equals one decoding's; without ``decodings`` it is not computed."""
    from ov_autoplace_lab.training.decoding import offset_decodings
    from ov_autoplace.policy.numpy_policy import NumpyHSDAGPolicy

    spec = SPECS[1]
    row = fit_row((str(target_path(run_dir, spec)), {"v1": str(PRETRAINED_POLICY)}, 0.46, 4))["policies"]["v1"]
    assert row["ranked_ms"] <= row["one_pass_ms"]
    graph, cost, support = case_cost(spec, 0.46)
    devices = tuple(cost.devices)
    policy = NumpyHSDAGPolicy.load(PRETRAINED_POLICY)
    output = policy.forward(policy.inputs(graph, cost, None))
    simulator = Simulator(cost, graph)
    options = [row["one_pass_ms"]]
    for groups in offset_decodings(output.logits, 4):
        placed = legalize(graph, groups[output.node_group], devices, support, max_submodels=MAX_SUBMODELS)
        options.append(float(simulator.feasible_ms(placed.device_indices(graph.names, devices))))
    assert row["ranked_ms"] == pytest.approx(min(options))
    plain = fit_row((str(target_path(run_dir, spec)), {"v1": str(PRETRAINED_POLICY)}, 0.46, 0))["policies"]["v1"]
    assert "ranked_ms" not in plain


def test_cli_fit_names_a_missing_policy_file(run_dir, tmp_path, capsys):
    code = main(["fit", "--dir", str(run_dir), "--no-progress", "--policy", f"x={tmp_path / 'nope.npz'}",
                 "--json", str(tmp_path / "fit.json")])
    assert code == 2 and "no such file" in capsys.readouterr().err
    assert not (tmp_path / "fit.json").exists()


def test_cli_fit_refuses_negative_decodings(run_dir, tmp_path, capsys):
    code = main(["fit", "--dir", str(run_dir), "--no-progress", "--decodings", "-1", "--policy",
                 f"v1={PRETRAINED_POLICY}", "--json", str(tmp_path / "fit.json")])
    assert code == 2 and "--decodings -1" in capsys.readouterr().err
