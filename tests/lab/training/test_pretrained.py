"""The shipped pretrained policy: loads without torch, places unseen graphs in one forward pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ov_autoplace.policy import NumpyHSDAGPolicy
from ov_autoplace.policy.pretrained import PRETRAINED_POLICY
from tests.stand_in_costs import stand_in_cost_model

NO_TORCH = """
import sys
sys.modules["torch"] = None  # any import of torch now fails
import numpy as np
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.policy import NumpyHSDAGPolicy
from ov_autoplace.policy.pretrained import PRETRAINED_POLICY
from ov_autoplace_lab.training.graph_family import build
from tests.stand_in_costs import stand_in_cost_model
graph = extract_graph(prepare_model(build(1003)))  # a held-out graph
placement = NumpyHSDAGPolicy.load(PRETRAINED_POLICY).place(graph, stand_in_cost_model(graph, ("CPU", "CPUF", "NPU")))
assert placement.shape == (graph.num_nodes,) and placement.min() >= 0 and placement.max() <= 2
print("placed", graph.num_nodes)
"""


def test_shipped_policy_is_small_and_documented():
    assert PRETRAINED_POLICY.is_file() and PRETRAINED_POLICY.stat().st_size < 1_000_000
    # the training notes live with the docs, outside the runtime wheel
    assert (Path(__file__).resolve().parents[3] / "docs" / "training.md").is_file()
    assert not (PRETRAINED_POLICY.parent / "TRAINING.md").exists()
    header = NumpyHSDAGPolicy.load(PRETRAINED_POLICY).header
    # the recipe that made it (benchmarks/pretrain.py --amortise), and where it started: v3, the file shipped when
    # it trained ("pretrained" then; the lab keeps it, as it keeps v2 and v1), whose 4-pass placer it kept
    # (imitation's placer_passes None means "as the initial weights"); v3 itself started from v2, v2 from v1
    metadata = header["metadata"]
    assert metadata["recipe"] == "ov_autoplace_lab.training.amortise (issue 22)"
    assert metadata["init"] == "pretrained" and metadata["imitation"]["placer_passes"] is None
    assert metadata["imitation"]["seed"] == 3 and metadata["imitation"]["hold_out_validation"]
    from ov_autoplace_lab.training import V1_POLICY, V2_POLICY, V3_POLICY

    assert NumpyHSDAGPolicy.load(PRETRAINED_POLICY).config.placer_passes == 4
    v3 = NumpyHSDAGPolicy.load(V3_POLICY).header["metadata"]
    assert v3["init"] == "v2" and v3["imitation"]["placer_passes"] is None
    v2 = NumpyHSDAGPolicy.load(V2_POLICY).header["metadata"]
    assert v2["init"] == "v1" and v2["imitation"]["placer_passes"] == 4

    assert NumpyHSDAGPolicy.load(V1_POLICY).header["metadata"]["recipe"] in (
        "ov_autoplace.policy.train.pretrain", "ov_autoplace_lab.training.pretrain")  # its module then, or now


def test_places_a_held_out_graph_without_torch():
    result = subprocess.run([sys.executable, "-c", NO_TORCH], capture_output=True, text=True, timeout=300,
                            cwd=str(__import__("pathlib").Path(__file__).resolve().parents[3]))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "placed" in result.stdout


@pytest.mark.slow
@pytest.mark.zoo
def test_places_bert_base(bert_prepared):
    _, graph = bert_prepared
    policy = NumpyHSDAGPolicy.load(PRETRAINED_POLICY)
    out = policy.forward(policy.inputs(graph, stand_in_cost_model(graph)))
    assert out.node_placement().shape == (graph.num_nodes,)
    assert 1 <= out.num_groups < graph.num_nodes
    assert np.isfinite(out.logits).all()


def test_policies_by_name_for_the_recipes():
    from ov_autoplace_lab.training import V1_POLICY, V2_POLICY, V3_POLICY, named_policy

    # 'pretrained' follows the package; 'v1' to 'v3' stay the policies shipped before, where the recipes start
    assert named_policy("pretrained") == str(PRETRAINED_POLICY) and PRETRAINED_POLICY.name == "hsdag_v4.npz"
    assert named_policy("v1") == str(V1_POLICY) and V1_POLICY.is_file()
    assert named_policy("v2") == str(V2_POLICY) and V2_POLICY.is_file()
    assert named_policy("v3") == str(V3_POLICY) and V3_POLICY.is_file() and V3_POLICY.read_bytes() != PRETRAINED_POLICY.read_bytes()
    assert named_policy("/some/policy.npz") == "/some/policy.npz"
    assert NumpyHSDAGPolicy.load(V1_POLICY).config.placer_passes == 1  # the one-pass placer v1 was
