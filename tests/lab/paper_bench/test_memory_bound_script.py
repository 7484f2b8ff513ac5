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
    sets = script.node_sets(graph, support, other=1)
    named = {key: {graph.names[i] for i in np.flatnonzero(mask)} for key, mask in sets.items() if key != "active"}
    assert named == {"held": {"held_1", "held_2"}, "chain": {"head", "tail"}, "between": {"middle"}}
