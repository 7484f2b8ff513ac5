import numpy as np
import pytest

import openvino as ov
from openvino import opset13 as ops

import ov_autoplace as oa
from ov_autoplace.placement.assignment import AFFINITY_KEY, Placement
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg
from tests.damaged_files import JSON_DAMAGES, damage_json
from ov_autoplace.devices.timing import random_inputs


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


def test_apply_on_the_users_unprepared_model_names_compile_placement():
    """A placement names the prepared model's nodes; on the user's own model apply says which call works."""
    import numpy as np

    import ov_autoplace
    from ov_autoplace.errors import PlacementError
    from ov_autoplace.devices.testbed import make_testbed

    testbed = make_testbed()
    model = sg.folded_constants() if hasattr(sg, "folded_constants") else sg.residual()
    placement = ov_autoplace.place(model, testbed.hetero, core=testbed.core, pins={"type:Convolution": "CPUF"})
    users = model.clone()
    users.get_ordered_ops()[-1].set_friendly_name("renamed_result")  # any node the placement does not name
    with pytest.raises(PlacementError, match=r"compile_placement\(model, placement"):
        placement.apply(users)
    compiled = ov_autoplace.compile_placement(model, placement, core=testbed.core)  # the call it names works
    inputs = random_inputs(compiled)
    reference = testbed.core.compile_model(model, "CPUF")(inputs)[0]
    assert np.allclose(compiled(inputs)[0], reference, rtol=0.05, atol=0.05)


def test_summary_and_lookup():
    placement = Placement({"a": "CPU", "b": "CPUF", "p": "CPU"}, ("CPU", "CPUF"), "manual",
                          frozenset({"a", "b"}), 2, measured_latency_ms=1.5, reference_latency_ms={"CPU": 2.0})
    assert placement.counts_per_device() == {"CPU": 1, "CPUF": 1}
    assert placement.counts_per_device(compute_only=False) == {"CPU": 2, "CPUF": 1}
    text = placement.summary()
    assert "1.50 ms" in text and "CPU-only latency: 2.00 ms" in text
    with pytest.raises(KeyError, match="zzz"):
        placement.device_of("zzz")


def test_device_indices_read_the_assignment_in_the_order_asked():
    placement = Placement({"a": "CPU", "b": "CPUF", "p": "CPU"}, ("CPU", "CPUF"), "manual", frozenset({"a", "b"}), 2)
    row = placement.device_indices(["p", "b", "a"])
    assert row.dtype == np.int64 and row.tolist() == [0, 1, 0]
    assert placement.device_indices(["p", "b", "a"], ("CPUF", "CPU")).tolist() == [1, 0, 1]  # another device order
    with pytest.raises(KeyError):
        placement.device_indices(["zzz"])


def test_split_constant_compiles_and_computes(testbed):
    model = _shared_constant_model()
    assignment = {op.get_friendly_name(): "CPU" for op in model.get_ops()}
    assignment["b"] = "CPUF"
    placement = Placement(assignment, ("CPU", "CPUF"), "manual", frozenset({"a", "b"}), 2)
    compiled = oa.compile_placement(model, placement, core=testbed.core)
    value = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(compiled([value])[0], value * 3 + value + 3, rtol=1e-2)


def test_any_assignment_applies_without_dangling_constants(f32_testbed):
    """Alternating devices node by node (Constants included, so no Constant shares its consumers' device).

    Placement.apply used to copy such a Constant for every consumer with shared
    memory; the original, left with no consumers, was dropped and the copies
    read freed memory (compile errors, or outputs off by up to 0.92).
    """
    model = sg.residual()
    prepared = prepare_model(model)
    names = [op.get_friendly_name() for op in prepared.get_ordered_ops()]
    assignment = {n: ("CPU", "CPUF")[i % 2] for i, n in enumerate(names)}
    Placement(assignment, ("CPU", "CPUF"), "alternating", frozenset(), 0).apply(prepared)
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    expected = f32_testbed.core.compile_model(model, "CPU")(x)[0]
    for _ in range(2):  # the second compile allocates over whatever the first freed
        np.testing.assert_allclose(f32_testbed.core.compile_model(prepared, f32_testbed.hetero)(x)[0], expected,
                                   atol=1e-5)


@pytest.mark.parametrize("kind", sorted(JSON_DAMAGES) + ["directory"])
def test_damaged_placement_file_is_a_file_format_error(testbed, tmp_path, kind):
    path = tmp_path / "placement.json"
    oa.place(sg.branching(), testbed.hetero, core=testbed.core, strategy="heavy_ops").save(path)
    damage_json(path, kind)
    with pytest.raises(oa.FileFormatError) as info:
        Placement.load(path)
    assert str(path) in str(info.value)
    with pytest.raises(FileNotFoundError):
        Placement.load(tmp_path / "missing.json")


def _shape_value_across_devices() -> tuple[ov.Model, Placement]:
    """OPT's layout: a layer's Reshape takes its target from ``Concat(ShapeOf(ids), 64)``, computed on the first
    device; the layer and a norm on the second; the head back on the first."""
    ids = ops.parameter([-1, -1], np.int64, name="ids")
    table = ops.constant(np.random.default_rng(0).standard_normal((16, 64)).astype(np.float32))
    embedded = ops.gather(table, ids, ops.constant(np.int64(0)))
    flat = ops.reshape(ops.relu(embedded), ops.constant(np.array([-1, 64], np.int64)), False)
    target = ops.concat([ops.shape_of(ids), ops.constant(np.array([64], np.int64))], 0)
    layer = ops.reshape(ops.add(flat, ops.constant(np.float32(1))), target, False)
    norm = ops.mvn(layer, ops.constant(np.array([-1], np.int64)), True, 1e-5, "inside_sqrt")
    head = ops.matmul(norm, ops.constant(np.random.default_rng(1).standard_normal((64, 8)).astype(np.float32)),
                      False, False)
    for node, name in ((target, "target"), (layer, "layer"), (norm, "norm"), (head, "head")):
        node.set_friendly_name(name)
    model = prepare_model(ov.Model([head], [ids]))
    second = {"layer", "norm"} | {i.get_source_output().get_node().get_friendly_name() for i in layer.inputs()
                                  if i.get_source_output().get_node().get_type_name() == "Add"}
    assignment = {op.get_friendly_name(): "CPUF" if op.get_friendly_name() in second else "CPU"
                  for op in model.get_ops()}
    return model, Placement(assignment, ("CPU", "CPUF"), "manual", frozenset(), 3)


def test_a_shape_value_read_on_another_device_is_computed_there_and_the_split_runs(f32_testbed):
    """Crossing, the Reshape target reached the second device as a Parameter of unknown value: its part turned
    ``[?,?,?]`` where the head's expects ``[?,?,64]``, and HETERO could not run the split (``Can't set the input
    tensor``, OPT's split of its last layer and final norm). Applied, the second device computes its own target
    from the shape of the tensor it reads, and the split runs as the plain compile at two shapes."""
    model, placement = _shape_value_across_devices()
    clone = model.clone()
    placement.apply(clone)
    copies = {op.get_type_name(): op.get_rt_info()[AFFINITY_KEY].astype(str) for op in clone.get_ops()
              if op.get_friendly_name().endswith("/on_CPUF")}
    assert copies == {"ShapeOf": "CPUF", "Concat": "CPUF"}
    compiled = f32_testbed.core.compile_model(clone, f32_testbed.hetero)
    plain = f32_testbed.core.compile_model(model, "CPU")
    for shape in ((1, 5), (2, 3)):
        ids = np.random.default_rng(1).integers(0, 16, shape)
        np.testing.assert_allclose(compiled(ids)[0], plain(ids)[0], rtol=1e-5, atol=1e-5)
