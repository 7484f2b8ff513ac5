"""benchmarks/bench_memory_bound.py's node sets: what the other device cannot run is held, what no held node reaches
or what reaches none is a chain, what lies between two held nodes is between."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from ov_autoplace.graph.arrays import extract_graph
from tests.lab.paper_bench import bench_script


def test_a_node_between_two_held_nodes_is_between_and_the_ends_are_a_chain():
    script = bench_script("bench_memory_bound")
    x = ops.parameter([1, 8], np.float32, name="x")
    head = ops.relu(x, name="head")
    held_1 = ops.sin(head, name="held_1")
    middle = ops.relu(held_1, name="middle")
    held_2 = ops.cos(middle, name="held_2")
    tail = ops.relu(held_2, name="tail")
    graph = extract_graph(ov.Model([ops.result(tail, name="out")], [x], "chain"))
    support = np.ones((graph.num_nodes, 2), bool)
    for name in ("held_1", "held_2"):
        support[graph.names.index(name), 1] = False
    sets = script.node_sets(graph, support, capped=0)
    named = {key: {graph.names[i] for i in np.flatnonzero(mask)} for key, mask in sets.items() if key != "active"}
    assert named == {"held": {"held_1", "held_2"}, "chain": {"head", "tail"}, "between": {"middle"}}


def test_hetero_itself_runs_the_chain_and_no_weights_of_a_node_between_held_ops():
    """``--hetero`` on a tiny Llama-geometry decoder on ``npu_cpu`` (its NPU runs neither attention nor the state's
    ops): the chain set alone on the second device compiles and runs as the plain compile (the control: the probe
    can compile a split), and no placement HETERO 2026.4 runs leaves a between node's weights off the first device.
    Should a release compile such a split, the capped row could have one, and this test says so."""
    from ov_autoplace.costmodel.sim_costs import simulated_support
    from ov_autoplace.costmodel.suite import load_suite
    from ov_autoplace_lab.models.decoder_models import TINY, build_decoder
    from ov_autoplace_lab.paper_bench import decoder_rows

    script = bench_script("bench_memory_bound")
    platform = load_suite()["npu_cpu"]
    model = build_decoder(TINY)
    case = decoder_rows.decoder_case(platform, model, decoder_rows.prefill_graph(model))
    other = case.cost.devices.index("NPU")
    found = script.ask_hetero(case, simulated_support(case.cost, case.graph), other,
                              platform.device("NPU").spec, windows=2, min_bytes=2048)
    assert found["control_run"][0] == "ran" and found["control_run"][1] > 1
    alone, tally = found["alone"]
    assert alone >= 7 * (TINY.layers - 1)  # at least the projections of every layer but the last (the chain's)
    assert found["moved_bytes"] == 0.0
    assert not any(verdict == "wrong" for verdict, _, _ in tally)
