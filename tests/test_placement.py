import numpy as np
import pytest

import openvino as ov
from openvino import opset13 as ops

import ov_autoplace as oa
from ov_autoplace.placement import AFFINITY_KEY, Placement
from ov_autoplace.prepare import prepare_model
from tests import synthetic_graphs as sg


def test_json_round_trip(testbed, tmp_path):
    placement = oa.place(sg.residual(), testbed.hetero, core=testbed.core)
    path = tmp_path / "p.json"
    placement.save(path)
    again = Placement.load(path)
    assert again.assignment == placement.assignment and again.devices == placement.devices
    assert again.counts_per_device() == placement.counts_per_device()


def _shared_constant_model() -> ov.Model:
    """x*scale + (x+scale): one Constant read by nodes "a" and "b"."""
    x = ops.parameter([2, 4], np.float32, name="x")
    scale = ops.constant(np.full([2, 4], 3.0, np.float32), name="scale")
    a, b = ops.multiply(x, scale), ops.add(x, scale)
    a.set_friendly_name("a")
    b.set_friendly_name("b")
    return prepare_model(ov.Model([ops.add(a, b)], [x]))


def test_apply_sets_every_affinity_and_splits_shared_constants(testbed):
    model = _shared_constant_model()
    shared = [op for op in model.get_ops() if op.get_type_name() == "Constant"
              and len(op.output(0).get_target_inputs()) > 1]
    assert shared
    const = shared[0]
    consumers = [t.get_node().get_friendly_name() for t in const.output(0).get_target_inputs()]
    assignment = {op.get_friendly_name(): "CPU" for op in model.get_ops()}
    assignment[consumers[0]] = "CPUF"
    placement = Placement(assignment, ("CPU", "CPUF"), "manual", frozenset(), 2)
    placement.apply(model)
    for op in model.get_ops():
        assert op.get_rt_info()[AFFINITY_KEY].astype(str) in ("CPU", "CPUF")
    for op in model.get_ops():
        if op.get_type_name() == "Constant":
            devices = {op.get_rt_info()[AFFINITY_KEY].astype(str)}
            for t in op.output(0).get_target_inputs():
                assert t.get_node().get_rt_info()[AFFINITY_KEY].astype(str) in devices


def test_apply_rejects_other_model():
    placement = Placement({"x": "CPU"}, ("CPU",), "manual", frozenset(), 1)
    with pytest.raises(ValueError, match="does not cover"):
        placement.apply(sg.residual())


def test_summary_and_lookup():
    placement = Placement({"a": "CPU", "b": "CPUF", "p": "CPU"}, ("CPU", "CPUF"), "manual",
                          frozenset({"a", "b"}), 2, measured_latency_ms=1.5, reference_latency_ms={"CPU": 2.0})
    assert placement.counts_per_device() == {"CPU": 1, "CPUF": 1}
    assert placement.counts_per_device(compute_only=False) == {"CPU": 2, "CPUF": 1}
    text = placement.summary()
    assert "1.50 ms" in text and "CPU-only latency: 2.00 ms" in text
    with pytest.raises(KeyError, match="zzz"):
        placement.device_of("zzz")


def test_split_constant_compiles_and_computes(testbed):
    model = _shared_constant_model()
    assignment = {op.get_friendly_name(): "CPU" for op in model.get_ops()}
    assignment["b"] = "CPUF"
    placement = Placement(assignment, ("CPU", "CPUF"), "manual", frozenset({"a", "b"}), 2)
    compiled = oa.compile_placement(model, placement, core=testbed.core)
    value = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(compiled([value])[0], value * 3 + value + 3, rtol=1e-2)
