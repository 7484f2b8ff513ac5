"""Chain coarsening: the paper's rule on hand-built graphs, and its invariants on the synthetic ones."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from ov_autoplace.graph.arrays import NodeRole
from ov_autoplace.placement.legalizer import constant_subgraph_mask
from ov_autoplace.policy.coarsen import chain_coarsen
from tests import synthetic_graphs
from tests.stand_in_costs import prepared_graph


def _groups_by_name(graph, coarse) -> list[set[str]]:
    return [{graph.names[i] for i in np.flatnonzero(coarse.group_of_node == g)} for g in range(coarse.num_groups)]


def _named(node, name):
    node.set_friendly_name(name)
    return node


def test_a_pure_chain_is_one_group():
    x = ops.parameter([2, 3], np.float32, name="x")
    c = _named(ops.tanh(_named(ops.sigmoid(_named(ops.relu(x), "a")), "b")), "c")
    _, graph = prepared_graph(ov.Model([c], [x], "chain"))
    coarse = chain_coarsen(graph)
    assert coarse.num_groups == 1
    assert coarse.num_edges == 0
    assert coarse.member_count.tolist() == [graph.num_nodes]


def test_branches_split_where_a_node_forks_or_joins():
    x = ops.parameter([2, 3], np.float32, name="x")
    a = _named(ops.relu(x), "a")
    b2 = _named(ops.tanh(_named(ops.sigmoid(a), "b1")), "b2")
    c = _named(ops.exp(a), "c")
    d = _named(ops.add(b2, c), "d")
    _, graph = prepared_graph(ov.Model([d], [x], "branch"))
    coarse = chain_coarsen(graph)
    groups = _groups_by_name(graph, coarse)
    result = next(graph.names[i] for i in range(graph.num_nodes) if graph.role[i] == NodeRole.RESULT)
    # a forks (two successors), d joins (two predecessors): only b1 -> b2 is a chain
    assert sorted(map(sorted, groups)) == sorted(map(sorted, [{"x", "a"}, {"b1", "b2"}, {"c"}, {"d", result}]))
    gid = {name: int(coarse.group_of_node[graph.names.index(name)]) for name in ("a", "b1", "c", "d")}
    edges = set(zip(coarse.edge_src.tolist(), coarse.edge_dst.tolist()))
    assert edges == {(gid["a"], gid["b1"]), (gid["a"], gid["c"]), (gid["b1"], gid["d"]), (gid["c"], gid["d"])}


def test_weights_join_their_consumer_and_a_shared_weight_links_nothing():
    x = ops.parameter([2, 4], np.float32, name="x")
    w = _named(ops.constant(np.ones((4, 4), np.float32)), "w")
    m = _named(ops.matmul(x, w, False, False), "m")
    r = _named(ops.relu(m), "r")
    y = ops.parameter([2, 4], np.float32, name="y")
    s = _named(ops.sigmoid(y), "s")
    shared = _named(ops.constant(np.float32(2.0)), "shared")
    p = _named(ops.multiply(r, shared), "p")
    q = _named(ops.multiply(s, shared), "q")
    out = _named(ops.add(p, q), "out")
    _, graph = prepared_graph(ov.Model([out], [x, y], "weights"))
    coarse = chain_coarsen(graph)
    group = {name: int(coarse.group_of_node[graph.names.index(name)]) for name in ("w", "m", "r", "p", "s", "q", "shared")}
    assert group["w"] == group["m"] == group["r"] == group["p"]  # m -> r -> p is a chain, w rides along
    assert group["s"] == group["q"] != group["p"]
    assert group["shared"] == group[min(("p", "q"), key=graph.names.index)]  # its first consumer's group
    # no edge out of a Constant: p's and q's groups are linked only through the final add
    edges = set(zip(coarse.edge_src.tolist(), coarse.edge_dst.tolist()))
    assert (group["p"], group["q"]) not in edges and (group["q"], group["p"]) not in edges


def test_long_chain_has_two_groups_per_block():
    blocks = 6
    _, graph = prepared_graph(synthetic_graphs.long_chain(blocks))
    coarse = chain_coarsen(graph)
    # MatMul -> Add -> Relu -> Multiply is a chain; the residual Add joins two paths, except in the
    # first block, where the skip comes from the Parameter (not a compute node) and the Add chains on
    assert coarse.num_groups == 2 * blocks - 1
    assert coarse.num_edges == 3 * (blocks - 1)


def _is_acyclic(num: int, src: np.ndarray, dst: np.ndarray) -> bool:
    indegree = np.bincount(dst, minlength=num)
    out = [[] for _ in range(num)]
    for s, t in zip(src.tolist(), dst.tolist()):
        out[s].append(t)
    ready = [v for v in range(num) if indegree[v] == 0]
    seen = 0
    while ready:
        v = ready.pop()
        seen += 1
        for t in out[v]:
            indegree[t] -= 1
            if indegree[t] == 0:
                ready.append(t)
    return seen == num


@pytest.mark.parametrize("build", [*synthetic_graphs.PLACEMENT_GRAPHS.values(), synthetic_graphs.with_if,
                                   synthetic_graphs.bool_and_string, synthetic_graphs.param_to_result],
                         ids=lambda b: b.__name__)
def test_coarsening_invariants(build):
    _, graph = prepared_graph(build())
    coarse = chain_coarsen(graph)
    group = coarse.group_of_node
    assert group.shape == (graph.num_nodes,)
    assert np.array_equal(np.unique(group), np.arange(coarse.num_groups))  # every group non-empty
    assert coarse.member_count.sum() == graph.num_nodes
    assert not (coarse.edge_src == coarse.edge_dst).any()
    assert len(set(zip(coarse.edge_src.tolist(), coarse.edge_dst.tolist()))) == coarse.num_edges
    assert _is_acyclic(coarse.num_groups, coarse.edge_src, coarse.edge_dst)
    # the rule itself: every single-successor -> single-predecessor pair of active nodes shares a group
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    pairs = {(s, t) for s, t in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()) if active[s] and active[t]}
    succ = {s: {t for a, t in pairs if a == s} for s, _ in pairs}
    pred = {t: {s for s, b in pairs if b == t} for _, t in pairs}
    for s, t in pairs:
        merges = len(succ[s]) == 1 and len(pred[t]) == 1
        assert (group[s] == group[t]) == merges, (graph.names[s], graph.names[t])
    # every group holds at most one chain of active nodes (groups never join unrelated compute)
    for g in range(coarse.num_groups):
        members = np.flatnonzero((group == g) & active)
        if len(members) > 1:
            inside = sum(1 for s, t in pairs if group[s] == g and group[t] == g)
            assert inside == len(members) - 1
    # Results sit with their producer
    for s, t in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()):
        if graph.role[t] == NodeRole.RESULT:
            assert group[s] == group[t]
