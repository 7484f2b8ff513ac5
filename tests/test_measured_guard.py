"""The measured guard: a split survives only if it beats the best single device by more than the noise."""

from __future__ import annotations

import json
import logging

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

import ov_autoplace as oa
from ov_autoplace.cache import PlacementCache
from ov_autoplace.graph import NodeRole, extract_graph
from ov_autoplace.legalize import legalize, query_support
from ov_autoplace.measured_guard import decide, measured_guard, measurement_is_cheap
from ov_autoplace.prepare import prepare_model
from ov_autoplace.strategies.base import PlacementStrategy
from tests import synthetic_graphs as sg


def regnet_y_like(depths=(1, 3, 6, 6), widths=(16, 32, 64, 128), group_width=8, size=64, seed=0) -> ov.Model:
    """A RegNetY-400MF-shaped CNN (same stage depths; small widths and input): ~290 compute nodes.

    Each block: 1x1 conv, 3x3 group conv, squeeze-excitation, 1x1 conv, residual add (batch norms folded).
    """
    rng = np.random.default_rng(seed)

    def const(*shape, scale=0.1):
        return ops.constant((rng.standard_normal(shape) * scale).astype(np.float32))

    def conv(x, cin, cout, k=1, stride=1, groups=1):
        pad = k // 2
        if groups == 1:
            y = ops.convolution(x, const(cout, cin, k, k, scale=1 / np.sqrt(cin * k * k)), [stride] * 2, [pad] * 2,
                                [pad] * 2, [1, 1])
        else:
            w = const(groups, cout // groups, cin // groups, k, k, scale=1 / np.sqrt(cin // groups * k * k))
            y = ops.group_convolution(x, w, [stride] * 2, [pad] * 2, [pad] * 2, [1, 1])
        return ops.add(y, const(1, cout, 1, 1))

    x = ops.parameter([1, 3, size, size], np.float32, name="input")
    h, cin = ops.relu(conv(x, 3, widths[0], k=3, stride=2)), widths[0]
    for depth, width in zip(depths, widths):
        for b in range(depth):
            stride = 2 if b == 0 else 1
            y = ops.relu(conv(h, cin, width))
            y = ops.relu(conv(y, width, width, k=3, stride=stride, groups=width // group_width))
            s = ops.reduce_mean(y, ops.constant(np.array([2, 3], dtype=np.int64)), keep_dims=True)
            s = ops.sigmoid(conv(ops.relu(conv(s, width, max(1, cin // 4))), max(1, cin // 4), width))
            y = conv(ops.multiply(y, s), width, width)
            skip = h if (stride == 1 and cin == width) else conv(h, cin, width, stride=stride)
            h, cin = ops.relu(ops.add(y, skip)), width
    pooled = ops.reduce_mean(h, ops.constant(np.array([2, 3], dtype=np.int64)), keep_dims=False)
    out = ops.matmul(pooled, const(cin, 10), False, False)
    return ov.Model([out], [x], "regnet_y_like")


def _forced_split(graph, num_on_second=16):
    """Everything on device 0 except ``num_on_second`` consecutive compute nodes in the middle on device 1."""
    compute = np.flatnonzero(graph.role == NodeRole.COMPUTE)
    middle = compute[len(compute) // 2: len(compute) // 2 + num_on_second]
    proposal = np.zeros(graph.num_nodes, dtype=np.int64)
    proposal[middle] = 1
    return proposal


def test_decide_keeps_only_a_win_beyond_the_noise():
    rng = np.random.default_rng(0)
    single = {"CPU": 10 + rng.normal(0, 0.2, 30), "CPUF": 12 + rng.normal(0, 0.2, 30)}
    assert decide(8 + rng.normal(0, 0.2, 30), single).keep  # 20 % faster, spread 0.2 ms
    slower = decide(13 + rng.normal(0, 0.2, 30), single)
    assert not slower.keep and slower.best_device == "CPU"
    within_noise = decide(9.8 + rng.normal(0, 1.0, 30), single)  # 2 % faster, spread ~1.3 ms
    assert not within_noise.keep and within_noise.noise_ms > 0.2
    with pytest.raises(ValueError, match="single-device"):
        decide([1.0], {})


def test_regnet_like_split_on_identical_devices_is_rejected(f32_testbed, caplog):
    """The issue's case: a RegNetY-like CNN split 16/rest into 3 submodels on two identical f32 devices.

    Both testbed devices are the same f32 CPU plugin, so the split cannot be
    faster than one device alone beyond noise; the measured guard must put
    everything on one device and say why, with the numbers.
    """
    prepared = prepare_model(regnet_y_like())
    graph = extract_graph(prepared)
    support = query_support(f32_testbed.core, prepared, graph, f32_testbed.devices)
    split = legalize(graph, _forced_split(graph), f32_testbed.devices, support, strategy="forced")
    counts = split.counts_per_device()
    assert counts["CPUF"] == 16 and split.num_submodels == 3 and counts["CPU"] > 250
    with caplog.at_level(logging.INFO, logger="ov_autoplace.measured_guard"):
        guarded = measured_guard(f32_testbed.core, prepared, graph, split, support)
    assert guarded.num_submodels == 1 and guarded.strategy == "forced+measured-guard"
    assert set(guarded.reference_latency_ms) == {"CPU", "CPUF"} and guarded.measured_latency_ms > 0
    assert "measured guard: split" in caplog.text and "placed everything on" in caplog.text
    assert any("measured guard" in note for note in guarded.notes)


def test_single_device_placement_is_not_measured(f32_testbed):
    prepared = prepare_model(sg.residual())
    graph = extract_graph(prepared)
    support = query_support(f32_testbed.core, prepared, graph, f32_testbed.devices)
    single = legalize(graph, np.zeros(graph.num_nodes, dtype=np.int64), f32_testbed.devices, support)
    assert measured_guard(f32_testbed.core, prepared, graph, single, support) is single


class _ProfiledForcedSplit(PlacementStrategy):
    """A forced split whose strategy measured the model (the HSDAG path's real measured cost provider)."""

    name = "forced-split"

    def __init__(self, num_on_second: int) -> None:
        self.num_on_second = num_on_second

    def propose(self, context):
        from ov_autoplace.costmodel.providers import MeasuredCostProvider

        self.last_cost = MeasuredCostProvider(iterations=3, warmup=1)(context)
        return _forced_split(context.graph, self.num_on_second)


@pytest.mark.slow
def test_compile_model_never_keeps_a_split_slower_than_one_device(f32_testbed, tmp_path, caplog):
    """Wired into compile_model: a measured strategy's split on identical devices ends on one device, cached."""
    strategy = _ProfiledForcedSplit(num_on_second=4)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(sg.residual(blocks=4), f32_testbed.hetero, core=f32_testbed.core,
                                    cache_dir=tmp_path, strategy=strategy)
    assert isinstance(compiled, ov.CompiledModel) and "falling back" not in caplog.text
    assert measurement_is_cheap(strategy)
    (entry,) = PlacementCache(tmp_path).entries()
    stored = json.loads(entry.read_text())["payload"]
    assert len(set(stored["device_by_index"])) == 1  # one device: by the predicted or the measured guard
    assert any("guard" in note for note in stored["notes"])


def test_measurement_is_cheap_only_for_measuring_strategies():
    from ov_autoplace.costmodel.providers import SimulatedCostProvider
    from ov_autoplace.strategies import HeavyOpsStrategy

    assert not measurement_is_cheap(HeavyOpsStrategy())
    simulated = SimulatedCostProvider("paper")
    strategy = HeavyOpsStrategy()
    strategy.last_cost = simulated(_context(sg.residual()))
    assert not measurement_is_cheap(strategy)


def _context(model):
    from ov_autoplace.strategies.base import PlacementContext

    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    return PlacementContext(graph=graph, devices=("GPU", "CPU"), support=np.ones((graph.num_nodes, 2), dtype=bool))
