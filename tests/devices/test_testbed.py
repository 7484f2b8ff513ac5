import pytest

from ov_autoplace.devices import testbed as testbed_module
from ov_autoplace.devices.testbed import ACCEL_DEVICE, HOST_DEVICE, make_testbed, usable_cores


def test_testbed_devices_differ(testbed):
    core = testbed.core
    assert testbed.devices == (ACCEL_DEVICE, HOST_DEVICE)
    assert set(testbed.devices) <= set(core.available_devices)
    # both on every usable core: with fewer, HETERO splits leak threads and fake a speed-up (see testbed.py)
    assert core.get_property(ACCEL_DEVICE, "INFERENCE_NUM_THREADS") == usable_cores()
    assert core.get_property(HOST_DEVICE, "INFERENCE_NUM_THREADS") == usable_cores()
    expected = "bf16" if testbed.bf16 else "f32"
    assert str(core.get_property(ACCEL_DEVICE, "INFERENCE_PRECISION_HINT")).endswith(
        "bfloat16'>" if testbed.bf16 else "float32'>"
    ), expected
    assert testbed.hetero == "HETERO:CPU,CPUF"
    assert "CPUF" in testbed.describe()


@pytest.mark.parametrize("bf16", [True, False])
def test_properties_without_bf16(bf16):
    props = testbed_module.testbed_properties(bf16)
    assert props[ACCEL_DEVICE]["INFERENCE_PRECISION_HINT"] == ("bf16" if bf16 else "f32")
    assert props[HOST_DEVICE]["INFERENCE_PRECISION_HINT"] == "f32"
    assert testbed_module.testbed_properties(bf16, like_for_like=True)[ACCEL_DEVICE]["INFERENCE_PRECISION_HINT"] == "f32"


def test_testbed_does_not_touch_default_core():
    import openvino as ov

    other = ov.Core()
    make_testbed()
    assert "CPUF" not in other.available_devices
