"""The torch-free policy: same forward pass as the torch model, and it runs with torch unimportable."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ov_autoplace.policy import NodeFeatureConfig, NumpyHSDAGPolicy, build_policy_arrays
from tests.stand_in_costs import stand_in_cost_model

torch = pytest.importorskip("torch")

from ov_autoplace.policy.config import HSDAGConfig  # noqa: E402
from ov_autoplace_lab.policy_export import export_policy  # noqa: E402
from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy, PolicyInputs, greedy  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _exported(tmp_path, graphs, seed=0, edge_fraction=0.4, **config):
    """A randomly initialised policy, calibrated so that pooling merges on ``graphs``, and its export."""
    torch.manual_seed(seed)
    policy = HSDAGPolicy(HSDAGConfig(**config))
    policy.calibrate_merging([PolicyInputs.from_graph(g, stand_in_cost_model(g), config=policy.config)
                              for g in graphs], edge_fraction=edge_fraction)
    path = export_policy(policy, tmp_path / f"policy{seed}.npz")
    return policy.eval(), NumpyHSDAGPolicy.load(path)


def _assert_same_forward(policy, twin, graph, cost, feature_config=None):
    arrays = twin.inputs(graph, cost, feature_config)
    got = twin.forward(arrays)
    with torch.no_grad():
        want = policy(PolicyInputs.from_arrays(arrays))
    assert np.array_equal(got.node_group, want.node_group.numpy())
    assert got.num_groups == want.num_groups and got.pool_iterations == want.pool_iterations
    np.testing.assert_allclose(got.logits, want.logits.numpy(), rtol=1e-5, atol=1e-5)
    assert np.array_equal(got.greedy(), greedy(want).numpy())
    return got


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numpy_forward_equals_torch_forward(tmp_path, synthetic_prepared, seed):
    graphs = [g for _, g in synthetic_prepared.values()]
    policy, twin = _exported(tmp_path, graphs, seed=seed)
    merged = 0
    for graph in graphs:
        for devices in (("CPU", "CPUF"), ("CPU", "CPUF", "NPU")):
            out = _assert_same_forward(policy, twin, graph, stand_in_cost_model(graph, devices))
            merged += out.pool_iterations
    assert merged > 0  # the comparison covered pooling, not just the GCN


@pytest.mark.parametrize("seed,passes", [(0, 1), (1, 1), (0, 3)])
def test_parity_with_boundary_inputs(tmp_path, synthetic_prepared, seed, passes):
    """A policy whose placer also reads the groups' boundary trade and a whole-graph summary (issue 22), in one
    pass or in three (each reading where the previous put the neighbours)."""
    graphs = [g for _, g in synthetic_prepared.values()]
    policy, twin = _exported(tmp_path, graphs, seed=seed, placer_inputs="boundary", placer_passes=passes)
    assert "placer.lin_graph.weight" in twin.w and twin.w["placer.lin_pair.weight"].shape[1] == 10
    merged = 0
    for graph in graphs:
        for devices in (("CPU", "CPUF"), ("CPU", "CPUF", "NPU")):
            merged += _assert_same_forward(policy, twin, graph, stand_in_cost_model(graph, devices)).pool_iterations
    assert merged > 0


def test_parity_with_boundary_inputs_and_no_graph_summary(tmp_path, synthetic_prepared):
    """Without the whole-graph summary the file carries no ``placer.lin_graph`` and both forwards agree."""
    graphs = [g for _, g in synthetic_prepared.values()]
    policy, twin = _exported(tmp_path, graphs, placer_inputs="boundary", placer_passes=3, graph_summary=False)
    assert "placer.lin_graph.weight" not in twin.w and policy.placer.lin_graph is None
    for graph in graphs:
        _assert_same_forward(policy, twin, graph, stand_in_cost_model(graph, ("CPU", "CPUF", "NPU")))


def test_parity_under_every_ablation(tmp_path, synthetic_prepared):
    _, graph = synthetic_prepared["attention_like"]
    policy, twin = _exported(tmp_path, [graph], hidden=64, num_gcn_layers=3)
    cost = stand_in_cost_model(graph)
    for switch in ("use_output_shape", "use_node_id", "use_structural", "use_op_cost"):
        _assert_same_forward(policy, twin, graph, cost, NodeFeatureConfig(**{switch: False}))


def test_parity_on_a_long_chain(tmp_path):
    from tests import synthetic_graphs
    from tests.stand_in_costs import prepared_graph

    _, graph = prepared_graph(synthetic_graphs.long_chain(200))
    policy, twin = _exported(tmp_path, [graph])
    out = _assert_same_forward(policy, twin, graph, stand_in_cost_model(graph))
    assert out.num_groups < 2 * 200


@pytest.mark.slow
@pytest.mark.zoo
def test_parity_on_bert_base(tmp_path, bert_prepared):
    _, graph = bert_prepared
    for seed in (0, 1):
        policy, twin = _exported(tmp_path, [graph], seed=seed)
        out = _assert_same_forward(policy, twin, graph, stand_in_cost_model(graph))
        assert out.num_groups < graph.num_nodes


def test_place_proposes_a_device_per_node(tmp_path, synthetic_prepared):
    _, graph = synthetic_prepared["branching"]
    _, twin = _exported(tmp_path, [graph])
    proposal = twin.place(graph, stand_in_cost_model(graph, ("CPU", "CPUF", "NPU")))
    assert proposal.shape == (graph.num_nodes,) and proposal.dtype == np.int64
    assert ((proposal >= 0) & (proposal < 3)).all()
    assert "NumpyHSDAGPolicy(hidden=128" in repr(twin)
    assert len(twin.digest) == 64


NO_TORCH_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.modules["torch"] = None  # any "import torch" now raises ImportError
    import numpy as np
    import ov_autoplace
    from ov_autoplace.policy import NumpyHSDAGPolicy
    from ov_autoplace.strategies.hsdag import HSDAGStrategy
    from ov_autoplace.devices.testbed import make_testbed
    from tests import synthetic_graphs
    from tests.stand_in_costs import stand_in_cost_model

    policy = NumpyHSDAGPolicy.load(sys.argv[1])
    strategy = HSDAGStrategy(policy, lambda context: stand_in_cost_model(context.graph, context.devices))
    testbed = make_testbed()
    placement = ov_autoplace.place(synthetic_graphs.attention_like(), "HETERO:" + ",".join(testbed.devices),
                                   core=testbed.core, strategy=strategy)
    print(json.dumps({"nodes": len(placement.assignment), "devices": sorted(set(placement.assignment.values())),
                      "groups": strategy.last_output.num_groups,
                      "torch_loaded": sys.modules.get("torch") is not None}))
""")


def test_the_numpy_policy_places_a_model_without_torch(tmp_path, synthetic_prepared):
    _, graph = synthetic_prepared["attention_like"]
    _, twin = _exported(tmp_path, [graph])
    path = tmp_path / "policy0.npz"
    run = subprocess.run([sys.executable, "-c", NO_TORCH_SCRIPT, str(path)], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["torch_loaded"] is False
    assert report["nodes"] == graph.num_nodes
    assert set(report["devices"]) <= {"CPU", "CPUF"} and report["groups"] >= 1


def test_inputs_built_twice_are_identical(synthetic_prepared):
    _, graph = synthetic_prepared["residual"]
    cost = stand_in_cost_model(graph)
    a, b = build_policy_arrays(graph, cost), build_policy_arrays(graph, cost)
    for field in ("x", "edge_src", "edge_dst", "node_device_sum", "compute_us"):
        assert np.array_equal(getattr(a, field), getattr(b, field))


def test_the_forward_pass_runs_on_one_blas_thread_and_gives_the_count_back(synthetic_prepared):
    """Its products are small, and a threaded one waits for OpenBLAS's worker to get a core: every product of the pass
    runs with the calling thread's BLAS threads at 1 in every OpenBLAS loaded (scipy's beside numpy's here), and the
    thread has its own counts back afterwards."""
    try:
        import scipy.linalg  # noqa: F401 - a second OpenBLAS in the process, where scipy is installed
    except ImportError:
        pass
    from ov_autoplace.policy import numpy_policy
    from ov_autoplace.policy.pretrained import PRETRAINED_POLICY

    numpy_policy._blas_threads_setters.cache_clear()
    setters = numpy_policy._blas_threads_setters()
    if not setters:
        pytest.skip("numpy's BLAS here is not an OpenBLAS with per-thread counts")

    def current() -> list[int]:
        counts = [setter(1) for setter in setters]
        for setter, count in zip(setters, counts):
            setter(count)
        return counts

    policy, (_, graph), seen = NumpyHSDAGPolicy.load(PRETRAINED_POLICY), synthetic_prepared["branching"], []
    linear = policy._linear

    def recording(*args, **kwargs):
        seen.extend(current())
        return linear(*args, **kwargs)

    policy._linear = recording
    for setter in setters:
        setter(2)
    try:
        policy.place(graph, stand_in_cost_model(graph, ("CPU", "CPUF")))
        assert seen and set(seen) == {1}
        assert current() == [2] * len(setters)
    finally:
        for setter in setters:
            setter(0)
