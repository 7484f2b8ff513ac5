"""``submodels._hetero_split`` (its rounds in C++, ``_native.hetero_split``; incremental: only the parts the last
round cut, ``through`` propagated in topological order) gives exactly the parts of the plain fixpoint it replaced,
kept here as the reference: every round recomputes every part and walks every bit of every cyclic node's sets."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.placement import submodels
from ov_autoplace.placement.submodels import _components, _hetero_split
from ov_autoplace_lab.training.graph_family import build, family


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _reference_split(graph, dev: list[int]) -> list[int]:
    """The fixpoint as it stood before issue 22 (commit 618cefa): part root per node."""
    n, role = graph.num_nodes, graph.role.tolist()
    src, dst = graph.edge_src.tolist(), graph.edge_dst.tolist()
    is_input = [r in (NodeRole.PARAMETER, NodeRole.CONSTANT) for r in role]
    in_edges: list[list[int]] = [[] for _ in range(n)]
    for e, t in enumerate(dst):
        in_edges[t].append(e)
    dev = list(dev)
    for s, t in zip(src, dst):
        if role[t] == NodeRole.RESULT:
            dev[t] = dev[s]
    cut = {e for e, (s, t) in enumerate(zip(src, dst)) if dev[s] != dev[t]}
    while True:
        part = _components(n, src, dst, cut)
        sg = [part.find(i) for i in range(n)]
        if not cut:
            return sg
        order = sorted(cut)
        bit = {e: k for k, e in enumerate(order)}
        owner_mask: dict[int, int] = {}
        leave_mask: dict[int, int] = {}
        for k, e in enumerate(order):
            owner_mask[sg[dst[e]]] = owner_mask.get(sg[dst[e]], 0) | (1 << k)
            leave_mask[sg[src[e]]] = leave_mask.get(sg[src[e]], 0) | (1 << k)
        deps = [0] * n
        k = len(order)
        for v in range(n):
            if is_input[v]:
                deps[v] = 1 << k
                owner_mask[sg[v]] = owner_mask.get(sg[v], 0) | (1 << k)
                k += 1
                continue
            for e in in_edges[v]:
                deps[v] |= deps[src[e]] | (1 << bit[e] if e in bit else 0)
        entered = [deps[v] & owner_mask.get(sg[v], 0) for v in range(n)]
        cyclic = [deps[v] & leave_mask.get(sg[v], 0) for v in range(n)]
        added = False
        for v in range(n):
            if not cyclic[v]:
                continue
            through = 0
            for k in _bits(cyclic[v]):
                through |= entered[src[order[k]]]
            for k in _bits(entered[v]):
                if k < len(order) and sg[src[order[k]]] != sg[v]:
                    through |= entered[dst[order[k]]]
            for e in in_edges[v]:
                if e not in cut and not (cyclic[v] & cyclic[src[e]]) and (through & entered[src[e]]):
                    cut.add(e)
                    added = True
        if not added:
            return sg


def _proposals(n: int, rng: np.random.Generator):
    """Random per node, alternating blocks, and a few nodes moved off the first device, on 2 or 3 devices."""
    for trial in range(6):
        num_devices = 2 + trial % 2
        if trial < 2:
            yield rng.integers(0, num_devices, n)
        elif trial < 4:
            yield (np.arange(n) // int(rng.integers(2, 40))) % num_devices
        else:
            dev = np.zeros(n, np.int64)
            moved = rng.random(n) < 0.1
            dev[moved] = rng.integers(1, num_devices, int(moved.sum()))
            yield dev


GRAPHS = [(name, make) for name, make in family("train", 6)] + [
    (f"{kind}_1", lambda kind=kind: build(1, kind)) for kind in ("detection", "multibranch", "state_space")]


@pytest.mark.parametrize("name,make", GRAPHS, ids=[name for name, _ in GRAPHS])
def test_the_split_matches_the_reference_fixpoint(name, make):
    graph = extract_graph(prepare_model(make()))
    rng = np.random.default_rng(22)
    for dev in _proposals(graph.num_nodes, rng):
        split = _hetero_split(graph, dev.tolist())
        assert [split.find(i) for i in range(graph.num_nodes)] == _reference_split(graph, dev.tolist()), name


def test_the_gru_split_is_the_reference_and_finds_parts_once(monkeypatch):
    """The 1,737-node GRU in 4-node blocks on two devices (dozens of rounds): the whole graph's parts are found at the
    start only, then kept up to date part by part (the reference finds them every round)."""
    graph = extract_graph(prepare_model(build(8, "state_space")))
    dev = ((np.arange(graph.num_nodes) // 4) % 2).tolist()
    calls = []
    real = submodels._components

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(submodels, "_components", counted)
    split = _hetero_split(graph, dev)
    assert len(calls) == 1
    monkeypatch.setattr(submodels, "_components", real)
    assert [split.find(i) for i in range(graph.num_nodes)] == _reference_split(graph, dev)


def test_the_native_rounds_refuse_arrays_that_do_not_describe_one_graph():
    """``_native.hetero_split`` checks what it indexes with (an edge, a root or a cut edge outside the graph, sizes
    that differ) and raises instead of reading outside its arrays."""
    from ov_autoplace._native_loader import load_native

    split = load_native().hetero_split
    src, dst, own, roots = np.array([0, 1]), np.array([1, 2]), np.array([1, 0, 0]), np.array([0, 1, 1])
    assert split(src, dst, own, roots, np.array([0])).tolist() == [0, 1, 1]  # one cut edge, no cycle: as given
    with pytest.raises(IndexError, match="edge"):
        split(src, np.array([1, 3]), own, roots, np.array([0]))
    with pytest.raises(IndexError, match="cut edge"):
        split(src, dst, own, roots, np.array([2]))
    with pytest.raises(IndexError, match="root"):
        split(src, dst, own, np.array([0, 1, 5]), np.array([0]))
    with pytest.raises(ValueError, match="sizes differ"):
        split(src, dst, own[:2], roots, np.array([0]))
