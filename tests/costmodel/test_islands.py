"""The numpy island labelling (no scipy at runtime) against scipy's connected components, on random graphs,
chains, empty graphs and self-loops, and the simulator's submodel count against ``submodels.count_islands``."""

from __future__ import annotations

import numpy as np
import pytest

from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.islands import IslandLabeller, connected_labels
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.costmodel.anchors import AnchorFixer
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.submodels import count_islands
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg

sparse = pytest.importorskip("scipy.sparse")
csgraph = pytest.importorskip("scipy.sparse.csgraph")


def _scipy_labels(n: int, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, int]:
    """scipy's components renumbered by lowest member (scipy numbers them in its own visiting order)."""
    graph = sparse.coo_matrix((np.ones(len(u)), (u, v)), shape=(n, n))
    count, labels = csgraph.connected_components(graph, directed=False)
    first = np.full(count, n, np.int64)
    np.minimum.at(first, labels, np.arange(n))
    rank = np.empty(count, np.int64)
    rank[np.argsort(first)] = np.arange(count)
    return rank[labels], count


@pytest.mark.parametrize("n, e", [(1, 0), (7, 0), (30, 10), (200, 150), (300, 600), (1000, 990), (2000, 5000)])
def test_labels_match_scipy_on_random_graphs(n, e):
    rng = np.random.default_rng(n + e)
    u, v = rng.integers(0, n, e), rng.integers(0, n, e)
    label, count = connected_labels(n, u, v)
    ref, ref_count = _scipy_labels(n, u, v)
    assert count == ref_count
    np.testing.assert_array_equal(label, ref)


def test_labels_on_chains_in_any_order_and_direction():
    rng = np.random.default_rng(1)
    for n in (2, 3, 64, 4099):
        for perm in (np.arange(n), np.arange(n)[::-1], rng.permutation(n)):
            label, count = connected_labels(n, perm[:-1], perm[1:])
            assert count == 1 and not label.any()
    # two interleaved chains (even and odd nodes) stay two components
    n = 1000
    evens, odds = np.arange(0, n, 2), np.arange(1, n, 2)
    u, v = np.concatenate([evens[:-1], odds[1:]]), np.concatenate([evens[1:], odds[:-1]])
    label, count = connected_labels(n, u, v)
    assert count == 2 and (label == np.arange(n) % 2).all()


def test_labels_of_empty_graphs_self_loops_and_repeated_edges():
    label, count = connected_labels(0, np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert count == 0 and label.size == 0
    label, count = connected_labels(4, np.array([0, 1, 1, 3]), np.array([0, 1, 1, 3]))  # only self-loops
    assert count == 4 and label.tolist() == [0, 1, 2, 3]
    label, count = connected_labels(5, np.array([3, 4, 3, 4, 2]), np.array([4, 3, 4, 2, 2]))
    assert count == 3 and label.tolist() == [0, 1, 2, 2, 2]
    with pytest.raises(ValueError, match="differ in length"):
        connected_labels(3, np.array([0, 1]), np.array([1]))


def _islands_with_scipy(num_nodes, src, dst, dev):
    """Islands per placement: components of the graph keeping only same-device edges, via scipy."""
    counts, devices = [], []
    for row in dev:
        same = row[src] == row[dst]
        label, count = _scipy_labels(num_nodes, src[same], dst[same])
        counts.append(count)
        first = np.full(count, num_nodes, np.int64)
        np.minimum.at(first, label, np.arange(num_nodes))
        devices.append(sorted(row[first].tolist()))
    return np.array(counts), devices


@pytest.mark.parametrize("seed", range(6))
def test_island_labeller_matches_scipy_on_random_dags(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    e = int(rng.integers(0, 3 * n))
    a, b = rng.integers(0, n, e), rng.integers(0, n, e)
    src, dst = np.minimum(a, b), np.maximum(a, b)  # topological numbering (self-loops included)
    chain = np.arange(n - 1)
    src, dst = np.concatenate([src, chain]), np.concatenate([dst, chain + 1])  # long paths as in real models
    devices = int(rng.integers(1, 4))
    random = rng.integers(0, devices, (20, n))
    blocks = (np.arange(n)[None, :] >= np.sort(rng.integers(0, n + 1, (20, 3)), axis=1)[:, :, None]).sum(axis=1)
    dev = np.concatenate([random, blocks % devices]).astype(np.int8)
    block, device = IslandLabeller(n, src, dst)(dev)
    counts, ref_devices = _islands_with_scipy(n, src, dst, dev)
    np.testing.assert_array_equal(np.bincount(block, minlength=dev.shape[0]), counts)
    assert [sorted(device[block == k].tolist()) for k in range(dev.shape[0])] == ref_devices


def test_island_labeller_edge_cases():
    assert [x.size for x in IslandLabeller(0, np.zeros(0), np.zeros(0))(np.zeros((3, 0), np.int8))] == [0, 0]
    labeller = IslandLabeller(3, np.zeros(0, np.int64), np.zeros(0, np.int64))  # no edges: one island per node
    block, device = labeller(np.array([[0, 0, 1], [1, 1, 1]], np.int8))
    assert np.bincount(block).tolist() == [3, 3] and sorted(device[block == 0].tolist()) == [0, 0, 1]
    with pytest.raises(ValueError, match="shape"):
        labeller(np.zeros((2, 4), np.int8))


def test_simulator_counts_submodels_like_legalize():
    graph = extract_graph(prepare_model(sg.attention_like()))
    rng = np.random.default_rng(3)
    n = graph.num_nodes
    simulator = Simulator(_uniform_cost(graph, 3), graph)
    proposals = np.concatenate([rng.integers(0, 3, (40, n)),
                                (np.arange(n)[None, :] >= rng.integers(0, n, (40, 1))).astype(np.int64) * 2])
    placements = AnchorFixer(graph, 3)(proposals)
    counts = simulator.num_submodels(placements)
    assert [count_islands(graph, p, simulator.active) for p in placements] == counts.tolist()
    assert counts.min() >= 1 and counts.max() > 2


def _uniform_cost(graph, num_devices):
    n = graph.num_nodes
    return CostModel(
        devices=tuple(f"D{k}" for k in range(num_devices)), node_names=graph.names,
        compute_ms=np.ones((n, num_devices)), unfused_ms=np.ones((n, num_devices)), fused_into=np.full(n, -1),
        link_latency_ms=np.full((num_devices, num_devices), 0.1) * (1 - np.eye(num_devices)),
        link_ms_per_byte=np.zeros((num_devices,) * 2), submodel_overhead_ms=np.full(num_devices, 0.05),
        node_memory_bytes=np.zeros(n, np.int64), device_memory_bytes=np.full(num_devices, np.inf), simulated=True,
        source="test")
