"""A HETERO call that ends on one device gets a HETERO compiled model, as the call it replaces does."""

from __future__ import annotations

import numpy as np
import pytest

import ov_autoplace as oa
from ov_autoplace.devices.timing import random_inputs
from tests import synthetic_graphs as sg


@pytest.fixture()
def testbed(f32_testbed):
    return f32_testbed


def _round_trip(testbed, compiled):
    """The compiled model's blob, imported with the caller's device string; both give the same outputs."""
    imported = testbed.core.import_model(compiled.export_model(), testbed.hetero)
    inputs = random_inputs(compiled)
    np.testing.assert_array_equal(imported(inputs)[0], compiled(inputs)[0])
    return imported


def test_the_first_devices_decision_is_the_replaced_call_itself(testbed, tmp_path):
    model = sg.residual()
    compiled = oa.compile_model(model, testbed.hetero, core=testbed.core, cache_dir=tmp_path)
    plain = testbed.core.compile_model(model, testbed.hetero)
    assert compiled.get_property("MULTI_DEVICE_PRIORITIES") == plain.get_property("MULTI_DEVICE_PRIORITIES")
    assert list(compiled.get_property("EXECUTION_DEVICES")) == ["CPU"]
    assert list(_round_trip(testbed, compiled).get_property("EXECUTION_DEVICES")) == ["CPU"]


def test_another_single_device_is_compiled_through_the_same_hetero_string(testbed, tmp_path):
    """Excluding CPU leaves CPUF: one submodel on CPUF, the caller's string, a blob that imports with it."""
    model = sg.residual()
    compiled = oa.compile_model(model, testbed.hetero, core=testbed.core, cache_dir=tmp_path, exclude_devices="CPU")
    assert list(compiled.get_property("EXECUTION_DEVICES")) == ["CPUF"]
    assert compiled.get_property("MULTI_DEVICE_PRIORITIES") == ",".join(testbed.devices)
    assert list(_round_trip(testbed, compiled).get_property("EXECUTION_DEVICES")) == ["CPUF"]
    assert all("affinity" not in op.get_rt_info() for op in model.get_ops()), "the caller's model is not touched"
    inputs = random_inputs(compiled)
    np.testing.assert_allclose(compiled(inputs)[0], testbed.core.compile_model(model, "CPUF")(inputs)[0],
                               rtol=1e-5, atol=1e-5)


def test_a_dynamic_model_on_one_device_stays_dynamic(testbed, tmp_path):
    model = sg.dynamic_attention()
    compiled = oa.compile_model(model, testbed.hetero, core=testbed.core, cache_dir=tmp_path, exclude_devices="CPU")
    assert compiled.inputs[0].partial_shape.is_dynamic and list(compiled.get_property("EXECUTION_DEVICES")) == ["CPUF"]
