"""The batch-1 device model: term validation, what each term does, and agreement with the simulator."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from ov_autoplace import CalibrationDataError
from ov_autoplace.costmodel.device_model import Batch1Terms, ModelDevice, SuitePlatform, batch1_fusion
from ov_autoplace_lab.calibration.fit_terms import prepare_load, single_device_ms
from ov_autoplace.costmodel.platforms import CORE_ULTRA_7_155H, FLEX_170, NPU_155H
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg

TERMS = dict(dispatch_ms=0.01, occupancy_mflop=10.0, compute_scale=1.0, memory_scale=1.0, submodel_ms=0.05,
             link_latency_ms=0.01, link_gbps=25.0)


def _platform(*devices: ModelDevice) -> SuitePlatform:
    return SuitePlatform("test", "test platform", tuple(devices), "f16", kind="hypothetical")


def _gpu(**changes) -> ModelDevice:
    return ModelDevice(FLEX_170, Batch1Terms(**{**TERMS, **changes}))


def _cpu(**changes) -> ModelDevice:
    return ModelDevice(CORE_ULTRA_7_155H, Batch1Terms(**{**TERMS, "link_gbps": math.inf, **changes}))


@pytest.mark.parametrize("field", sorted(TERMS))
def test_a_missing_term_is_named(field):
    terms = {k: v for k, v in TERMS.items() if k != field}
    with pytest.raises(CalibrationDataError, match=rf"laptop/GPU: missing term\(s\) \['{field}'\]"):
        Batch1Terms.from_mapping(terms, "laptop/GPU")


@pytest.mark.parametrize("field, value", [("link_gbps", -3.0), ("dispatch_ms", -0.1), ("compute_scale", 0),
                                          ("memory_scale", "fast")])
def test_a_negative_or_non_numeric_rate_is_named(field, value):
    with pytest.raises(CalibrationDataError, match=rf"paper/CPU\.{field}: must be"):
        Batch1Terms.from_mapping({**TERMS, field: value}, "paper/CPU")


def test_terms_round_trip_through_json_values():
    terms = Batch1Terms.from_mapping({**TERMS, "link_gbps": "inf", "category_scale": {"matmul": 0.5}}, "x")
    assert math.isinf(terms.link_gbps) and terms.category_scale == {"matmul": 0.5}
    assert Batch1Terms.from_mapping(terms.to_dict(), "x") == terms


def test_single_device_latency_is_what_the_simulator_gives():
    graph = extract_graph(prepare_model(sg.residual(blocks=3)))
    platform = _platform(_gpu(), _cpu())
    cost = platform.cost_model(graph)
    simulator = Simulator(cost, graph)
    load = prepare_load(graph)
    for d, device in enumerate(platform.devices):
        expected = float(simulator(np.full(graph.num_nodes, d, np.int64)))
        assert single_device_ms(device, load, "f16") == pytest.approx(expected, rel=1e-9)


def test_dispatch_and_occupancy_make_small_kernels_cost_more():
    graph = extract_graph(prepare_model(sg.residual(blocks=2, channels=4, size=8)))  # tiny convolutions
    load = prepare_load(graph)
    base = single_device_ms(_gpu(dispatch_ms=0.0, occupancy_mflop=0.0, submodel_ms=0.0), load, "f16")
    with_dispatch = single_device_ms(_gpu(dispatch_ms=0.02, occupancy_mflop=0.0, submodel_ms=0.0), load, "f16")
    with_occupancy = single_device_ms(_gpu(dispatch_ms=0.0, occupancy_mflop=50.0, submodel_ms=0.0), load, "f16")
    assert with_dispatch > base and with_occupancy > base
    # a kernel far below the occupancy size costs about occupancy / rate, whatever its own size
    assert with_occupancy > 5 * base


def test_an_element_wise_chain_joins_one_kernel_and_concat_is_in_place():
    x = ops.parameter([1, 8, 16, 16], np.float32, name="x")
    a = ops.multiply(x, ops.constant(np.full((1, 8, 1, 1), 2.0, np.float32)))
    b = ops.add(a, ops.constant(np.full((1, 8, 1, 1), 1.0, np.float32)))
    c = ops.relu(b)
    cat = ops.concat([c, x], 1)
    for node, name in ((a, "mul"), (b, "add"), (c, "relu"), (cat, "cat")):
        node.set_friendly_name(name)
    graph = extract_graph(prepare_model(ov.Model([cat], [x], "chain")))
    fused = batch1_fusion(graph)
    mul = graph.names.index("mul")
    assert fused[graph.names.index("add")] == mul and fused[graph.names.index("relu")] == mul
    cost = _platform(_cpu(dispatch_ms=0.005)).cost_model(graph)
    assert cost.compute_ms[graph.names.index("cat"), 0] == pytest.approx(0.005)  # dispatch only


def test_the_npu_cannot_run_unsupported_ops():
    graph = extract_graph(prepare_model(sg.gather_model()))
    npu = ModelDevice(NPU_155H, Batch1Terms(**TERMS))
    cost = _platform(npu, _cpu()).cost_model(graph)
    unsupported = [i for i, t in enumerate(graph.op_types) if not NPU_155H.supports(t) and cost.unfused_ms[i, 1] > 0]
    assert unsupported and np.isinf(cost.compute_ms[unsupported, 0]).all()
    assert math.isinf(single_device_ms(npu, prepare_load(graph), "f16"))
    assert math.isfinite(single_device_ms(npu, prepare_load(graph), "f16", ignore_support=True))


def test_labels_say_simulated_and_subsets_keep_the_devices():
    platform = _platform(_gpu(), _cpu())
    graph = extract_graph(prepare_model(sg.branching()))
    assert platform.cost_model(graph).simulated
    assert "simulated" in platform.describe()
    sub = platform.subset(("CPU",))
    assert sub.device_names == ("CPU",) and sub.cost_model(graph).compute_ms.shape == (graph.num_nodes, 1)
    assert dataclasses.replace(platform).device_names == ("GPU", "CPU")
