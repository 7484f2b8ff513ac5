"""The discrete graph-parsing steps: components, best-edge selection, pooled edges."""

from __future__ import annotations

import numpy as np

from ov_autoplace.policy.graph_ops import (
    connected_components,
    parse_groups,
    pooled_edges,
    segment_sum,
    undirected_edges,
)


def _reference_components(n, u, v):
    adjacency = [[] for _ in range(n)]
    for a, b in zip(u.tolist(), v.tolist()):
        adjacency[a].append(b)
        adjacency[b].append(a)
    label, next_label = [-1] * n, 0
    for start in range(n):  # numbered by lowest member, like connected_components
        if label[start] >= 0:
            continue
        stack, label[start] = [start], next_label
        while stack:
            for w in adjacency[stack.pop()]:
                if label[w] < 0:
                    label[w] = next_label
                    stack.append(w)
        next_label += 1
    return np.array(label), next_label


def test_components_match_a_reference_on_random_graphs():
    rng = np.random.default_rng(0)
    for n, e in [(1, 0), (10, 0), (30, 20), (200, 150), (500, 499)]:
        u, v = rng.integers(0, n, e), rng.integers(0, n, e)
        label, count = connected_components(n, u, v)
        ref, ref_count = _reference_components(n, u, v)
        assert count == ref_count and np.array_equal(label, ref)
    # a long path in scrambled order converges too
    perm = rng.permutation(5000)
    label, count = connected_components(5000, perm[:-1], perm[1:])
    assert count == 1 and (label == 0).all()


def test_each_node_keeps_its_best_edge_above_the_threshold():
    # path 0-1-2-3 with logits 2, -1, 0.5
    u, v = np.array([0, 1, 2]), np.array([1, 2, 3])
    parsed = parse_groups(u, v, np.array([2.0, -1.0, 0.5]), 4)
    assert parsed.label.tolist() == [0, 0, 1, 1] and parsed.num_groups == 2
    assert parsed.kept.tolist() == [True, False, True]
    assert parsed.best_edge.tolist() == [0, 0, 2, 2]
    assert parsed.weight_edge.tolist() == [0, 0, 2, 2]
    # all below the threshold: nothing merges
    assert parse_groups(u, v, np.array([-2.0, -1.0, -0.5]), 4) is None
    # a higher threshold keeps only the best edge
    assert parse_groups(u, v, np.array([2.0, -1.0, 0.5]), 4, threshold_logit=1.0).label.tolist() == [0, 0, 1, 2]


def test_a_node_merged_by_its_neighbour_and_ties():
    # star 0-1, 0-2, 0-3: leaves all choose their only edge; node 0's best is edge 1
    u, v = np.array([0, 0, 0]), np.array([1, 2, 3])
    parsed = parse_groups(u, v, np.array([0.1, 0.9, -5.0]), 5)
    assert parsed.label.tolist() == [0, 0, 0, 1, 2]  # node 3's only edge is below; node 4 has none
    assert parsed.best_edge.tolist() == [1, 0, 1, 2, -1]
    assert parsed.weight_edge.tolist() == [1, 0, 1, -1, -1]
    # equal logits: the lower edge index wins
    tie = parse_groups(np.array([0, 1]), np.array([1, 2]), np.array([1.0, 1.0]), 3)
    assert tie.best_edge.tolist() == [0, 0, 1]


def test_undirected_pooled_and_segment_helpers():
    u, v = undirected_edges(np.array([0, 1, 2, 2]), np.array([1, 0, 2, 0]), 3)
    assert list(zip(u.tolist(), v.tolist())) == [(0, 1), (0, 2)]
    src, dst = pooled_edges(np.array([0, 1, 2, 3]), np.array([1, 2, 3, 0]), np.array([0, 0, 1, 1]), 2)
    assert list(zip(src.tolist(), dst.tolist())) == [(0, 1), (1, 0)]
    values = np.arange(12, dtype=np.float32).reshape(4, 3)
    out = segment_sum(values, np.array([2, 0, 2, 0]), 4)
    assert np.array_equal(out, np.stack([values[1] + values[3], np.zeros(3), values[0] + values[2], np.zeros(3)]))
