"""``component_roots``: every node points at its component's lowest member, the root a union-find that keeps the
smaller root makes (the submodel split reads its parts off it), on random graphs against a plain union-find,
chains in any order, and graphs without edges. (Its labelling against scipy: tests/costmodel/test_islands.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.graph.components import component_roots


def _union_find_roots(n: int, u: np.ndarray, v: np.ndarray) -> list[int]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in zip(u.tolist(), v.tolist()):
        ra, rb = find(a), find(b)
        parent[max(ra, rb)] = min(ra, rb)
    return [find(i) for i in range(n)]


@pytest.mark.parametrize("n, e", [(1, 0), (9, 0), (50, 20), (300, 280), (1000, 2500)])
def test_roots_are_the_lowest_members_a_union_find_finds(n, e):
    rng = np.random.default_rng(n * 7 + e)
    u, v = rng.integers(0, n, e), rng.integers(0, n, e)
    assert component_roots(n, u, v).tolist() == _union_find_roots(n, u, v)


def test_a_chain_in_any_order_points_at_its_first_node():
    rng = np.random.default_rng(3)
    for perm in (np.arange(500), np.arange(500)[::-1], rng.permutation(500)):
        assert not component_roots(500, perm[:-1], perm[1:]).any()


def test_no_edges_self_loops_and_bad_lists():
    assert component_roots(0, np.zeros(0, np.int64), np.zeros(0, np.int64)).size == 0
    assert component_roots(3, np.array([1, 1]), np.array([1, 1])).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="differ in length"):
        component_roots(3, np.array([0, 1]), np.array([1]))
