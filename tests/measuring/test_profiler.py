"""The profiler: per-op times, fusion, unfused cost, links, caching - all measured on the testbed."""

from __future__ import annotations

import json
import logging

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from ov_autoplace.cache.profile_store import ProfileStore
from ov_autoplace.measuring import measure_model_profile, profile_links
from ov_autoplace.measuring.link_calibration import _features, _variants, calibration_chain, fit_links
from ov_autoplace.errors import DeviceError
from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.model.prepare import prepare_model

from ..conftest import zoo_available

# The per-op clock and the end-to-end timer run at different moments on a shared 2-core machine;
# the unscaled per-op sum has stayed within ~0.8-1.3x of the end-to-end median; allow 3x either way.
RATIO_BOUND = 3.0
# The synthetic model runs in ~0.5 ms: one preemption of a few ms on a loaded shared core multiplies its per-op
# sum (5.1x seen with a benchmark running beside the tests). For it the check only catches unit or mapping
# errors (1000x, or nothing mapped).
TINY_RATIO_BOUND = 20.0


def conv_chain(seed: int = 0, blocks: int = 3, channels: int = 16, size: int = 32) -> ov.Model:
    """Conv -> Add(bias) -> Relu, ``blocks`` times: the CPU plugin typically fuses bias and Relu into the Conv."""
    rng = np.random.default_rng(seed)
    x = ops.parameter([1, channels, size, size], np.float32, name="x")
    h = x
    for _ in range(blocks):
        w = ops.constant((rng.standard_normal((channels, channels, 3, 3)) * 0.1).astype(np.float32))
        h = ops.convolution(h, w, [1, 1], [1, 1], [1, 1], [1, 1])
        h = ops.add(h, ops.constant(rng.standard_normal((1, channels, 1, 1)).astype(np.float32)))
        h = ops.relu(h)
    return ov.Model([h], [x], "conv_chain")


@pytest.fixture(scope="module")
def links(testbed):
    return profile_links(testbed.core, testbed.devices, sizes=(1 << 10, 64 << 10), cuts=(1, 2), rounds=3,
                         seconds_per_variant=0.2)


@pytest.fixture(scope="module")
def model():
    return conv_chain()  # built once: friendly names are auto-generated per build


@pytest.fixture(scope="module")
def profiled(testbed, links, model):
    return measure_model_profile(model, testbed.core, testbed.devices, links=links, warmup=2, iterations=12)


@pytest.fixture(scope="module")
def graph(model):
    return extract_graph(prepare_model(model))


def test_cost_model_is_measured_and_aligned(profiled, graph, testbed):
    cost = profiled.cost_model
    assert not cost.simulated and cost.label.startswith("measured")
    assert cost.devices == testbed.devices
    assert cost.node_names == graph.names
    assert cost.compute_ms.shape == (graph.num_nodes, len(testbed.devices))


def test_per_op_times_positive_where_work_is_done(profiled, graph):
    cost = profiled.cost_model
    assert np.isfinite(cost.compute_ms).all() and (cost.compute_ms >= 0).all()
    assert (cost.compute_ms[graph.role != NodeRole.COMPUTE] == 0).all()
    convs = [i for i, t in enumerate(graph.op_types) if t == "Convolution"]
    assert len(convs) == 3 and (cost.compute_ms[convs] > 0).all()


def test_per_op_sum_matches_end_to_end(profiled):
    cost = profiled.cost_model
    for d, report in enumerate(profiled.reports):
        # Scaled contract: a single-device placement is predicted at its measured end-to-end median.
        predicted = cost.compute_ms[:, d].sum() + cost.submodel_overhead_ms[d]
        floor = 0.5 * report.e2e_ms + cost.submodel_overhead_ms[d]  # compute never scaled below e2e / 2
        assert predicted == pytest.approx(max(report.e2e_ms, floor), rel=1e-9)
        assert 1 / TINY_RATIO_BOUND < report.ratio < TINY_RATIO_BOUND, report
        assert 0 <= report.unmapped_fraction < 1


def test_fused_into_matches_the_runtime_model(profiled, graph, testbed, model):
    """Read the first device's runtime model independently and check the fusion it reports."""
    cost = profiled.cost_model
    index = {n: i for i, n in enumerate(graph.names) if graph.role[i] == NodeRole.COMPUTE}
    compiled = testbed.core.compile_model(prepare_model(model), testbed.devices[0])
    groups = []
    for op in compiled.get_runtime_model().get_ordered_ops():
        listed = op.get_rt_info()["originalLayersNames"].astype(str).split(",")
        groups.append([index[n] for n in listed if n in index])
    for group in groups:
        convs = [i for i in group if graph.op_types[i] == "Convolution"]
        if len(group) > 1 and convs:
            for i in group:
                assert cost.fused_into[i] == (-1 if i == convs[0] else convs[0]), graph.names[i]
    grouped = {i for g in groups if len(g) > 1 for i in g}
    for i in np.flatnonzero(cost.fused_into >= 0):
        assert graph.role[cost.fused_into[i]] == NodeRole.COMPUTE and cost.fused_into[cost.fused_into[i]] == -1
    assert profiled.reports[0].fused_nodes == sum(len(g) - 1 for g in groups if len(g) > 1)
    assert grouped <= set(np.flatnonzero(cost.fused_into >= 0)) | set(cost.fused_into[cost.fused_into >= 0])


def test_unfused_cost_is_measured_for_fused_ops(profiled):
    cost = profiled.cost_model
    fused = np.flatnonzero(cost.fused_into >= 0)
    primaries = np.unique(cost.fused_into[fused])
    for d, report in enumerate(profiled.reports):
        assert report.isolated_nodes == report.fused_nodes
    assert (cost.unfused_ms[fused] > 0).all()  # a Relu or bias Add run alone takes time
    np.testing.assert_array_equal(cost.unfused_ms[primaries], cost.compute_ms[primaries])
    unfused_elsewhere = np.setdiff1d(np.arange(cost.num_nodes), fused)
    np.testing.assert_array_equal(cost.unfused_ms[unfused_elsewhere], cost.compute_ms[unfused_elsewhere])


def test_memory_fields(profiled, graph):
    cost = profiled.cost_model
    for i, t in enumerate(graph.op_types):
        if t == "Convolution":
            assert cost.node_memory_bytes[i] == 16 * 16 * 3 * 3 * 4
    assert (cost.node_memory_bytes[graph.role != NodeRole.COMPUTE] == 0).all()
    assert np.isinf(cost.device_memory_bytes).all()  # CPU plugins: host memory, no per-device cap


def test_unknown_device_is_a_clear_error(testbed):
    with pytest.raises(DeviceError) as err:
        measure_model_profile(conv_chain(), testbed.core, [*testbed.devices, "NPU7"])
    assert "NPU7" in str(err.value) and "CPUF" in str(err.value) and "simulated" in str(err.value)


def test_store_round_trip_and_invalidation(tmp_path, testbed, links, caplog):
    store = ProfileStore(tmp_path)
    first = measure_model_profile(conv_chain(seed=1), testbed.core, testbed.devices, links=links, iterations=4,
                                  store=store)
    (path,) = [p for p in tmp_path.glob("model-*.json")]
    data = json.loads(path.read_text())
    data["payload"]["cost_model"]["loaded"] = False  # a shared machine may be loaded: that is tested elsewhere
    path.write_text(json.dumps(data))
    # Same architecture, other weights and auto-generated names: served from the store, renamed.
    other = conv_chain(seed=2)
    again = measure_model_profile(other, testbed.core, testbed.devices, links=links, iterations=4, store=store)
    assert again.profiler_seconds == first.profiler_seconds  # not re-measured
    np.testing.assert_array_equal(again.cost_model.compute_ms, first.cost_model.compute_ms)
    assert again.cost_model.node_names == extract_graph(prepare_model(other)).names
    # Another OpenVINO release in the stored key: re-measured, with a warning naming it.
    data = json.loads(path.read_text())
    data["key"]["openvino_version"] = "2030.1.0-future"
    path.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING):
        third = measure_model_profile(other, testbed.core, testbed.devices, links=links, iterations=4, store=store)
    assert third.profiler_seconds != first.profiler_seconds and "openvino_version" in caplog.text
    # A corrupt file is re-measured too.
    path.write_text('{"key": {"kind": "model"}, "payload": {"cost_model": ')
    fourth = measure_model_profile(other, testbed.core, testbed.devices, links=links, iterations=4, store=store)
    assert fourth.profiler_seconds not in (first.profiler_seconds, third.profiler_seconds)


# --- links -----------------------------------------------------------------------------------------

@pytest.mark.timed  # its re-measurement runs alone: a fresh-clone CI run with another pytest beside it fitted 0 twice
def test_link_profile_shapes_and_signs(links, testbed):
    d = len(testbed.devices)
    assert links.link_latency_ms.shape == (d, d) and links.link_ms_per_byte.shape == (d, d)
    assert (np.diag(links.link_latency_ms) == 0).all() and (np.diag(links.link_ms_per_byte) == 0).all()
    for arr in (links.link_latency_ms, links.link_ms_per_byte, links.submodel_overhead_ms):
        assert np.isfinite(arr).all() and (arr >= 0).all()
    (pair,) = links.pairs
    assert pair["r2"] <= 1 and pair["observations"] == 2 * (2 + 2 * 2 * 2)
    # Cutting costs something: a -> b -> a on 64 KB tensors (two cuts, two more submodels) is predicted > 0.
    # The fit is non-negative least squares on a short, noisy measurement. Between two CPU-plugin devices a cut
    # costs 1-3 us (module doc), within a busy machine's noise, so a round can fit every cut cost to 0. A zero is
    # measured again where the signal is largest against the noise: 8 cuts (8 more submodels, 8-16 transfers) on
    # a cheap chain, longer, up to twice, before it counts.
    def round_trip(pair):
        g = pair["globals"]
        return (g["overhead_a"] + g["overhead_b"] + g["latency_ab"] + g["latency_ba"]
                + (g["ms_per_mb_ab"] + g["ms_per_mb_ba"]) * 64 / 1024)

    for _ in range(2):
        if round_trip(pair) > 0:
            break
        (pair,) = profile_links(testbed.core, testbed.devices, sizes=(1 << 10, 64 << 10), cuts=(1, 8), rounds=8,
                                seconds_per_variant=0.4).pairs
    assert round_trip(pair) > 0, pair["globals"]


def test_link_fit_recovers_known_costs():
    """Rows generated from the fit's own model with known costs (no noise) are fitted back exactly."""
    truth = {"overhead_a": 0.002, "overhead_b": 0.003, "latency_ab": 0.001, "latency_ba": 0.0015,
             "ms_per_mb_ab": 0.1, "ms_per_mb_ba": 0.05}
    rows = []
    for nbytes, (base, dmvn, dadd) in {1024: (0.02, 0.001, -0.0005), 1 << 20: (4.0, -0.05, 0.02)}.items():
        for name, sides in _variants(9, (1, 2, 4, 8)):
            f = _features(sides, 9)
            mb = nbytes / (1 << 20)
            latency = (base + f["mvn_b"] * dmvn + f["add_b"] * dadd + f["extra_submodels_a"] * truth["overhead_a"]
                       + f["submodels_b"] * truth["overhead_b"]
                       + f["transfers_ab"] * (truth["latency_ab"] + mb * truth["ms_per_mb_ab"])
                       + f["transfers_ba"] * (truth["latency_ba"] + mb * truth["ms_per_mb_ba"]))
            rows.append({"variant": name, "bytes": nbytes, "latency_ms": latency, **f})
    fit = fit_links(rows)
    for name, value in truth.items():
        assert fit["globals"][name] == pytest.approx(value, rel=1e-6, abs=1e-12), name
    assert fit["r2"] == pytest.approx(1.0) and fit["r2_cut"] == pytest.approx(1.0)


def test_calibration_chain_maps_one_to_one_on_every_device(testbed):
    """The link fit assumes no fusion inside the chain (a cut must not also break a fusion)."""
    model, nodes = calibration_chain(4096, 3)
    names = {n.get_friendly_name() for n in nodes}
    for device in testbed.devices:
        compiled = testbed.core.compile_model(model, device)
        listed = [op.get_rt_info()["originalLayersNames"].astype(str).split(",")
                  for op in compiled.get_runtime_model().get_ordered_ops()]
        mapped = [[n for n in group if n in names] for group in listed]
        assert sorted(n for g in mapped for n in g) == sorted(names)
        assert all(len(g) <= 1 for g in mapped), mapped


# --- zoo -------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.zoo
@pytest.mark.timed  # alone under xdist: beside a compiling worker its unmapped fraction reached 0.11-0.14
@pytest.mark.parametrize("name", ["resnet50", "bert_base"])
def test_zoo_profile(name, testbed, links):
    if not zoo_available():
        pytest.skip("zoo extras not installed: pip install -e '.[zoo]'")
    from ov_autoplace_lab import models as zoo

    profile = measure_model_profile(zoo.load(name), testbed.core, testbed.devices, links=links, iterations=10)
    graph = extract_graph(prepare_model(zoo.load(name)))
    heavy = [i for i, t in enumerate(graph.op_types) if t in ("Convolution", "MatMul")]
    # Every conv/matmul gets time on every device, including those the runtime leaves unnamed.
    assert (profile.cost_model.compute_ms[heavy] > 0).all()
    for report in profile.reports:
        assert 1 / RATIO_BOUND < report.ratio < RATIO_BOUND, report
        assert report.unmapped_fraction < 0.1 and report.named_nodes > 0.8 * report.compute_nodes, report
