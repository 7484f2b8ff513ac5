import pytest

from ov_autoplace.devices.targets import placement_target, target_devices
from ov_autoplace.errors import DeviceError
from ov_autoplace.devices.testbed import make_testbed
from ov_autoplace_lab.same_device_note import SAME_DEVICE_NOTE, same_device_note


@pytest.fixture(scope="module")
def core():
    return make_testbed().core


@pytest.mark.parametrize("device, config, target", [
    ("AUTO", {}, "HETERO:CPU,CPUF"),
    ("AUTO:-CPUF", {}, "CPU"),
    ("MULTI:CPUF,CPU", {}, "HETERO:CPUF,CPU"),
    ("HETERO", {"MULTI_DEVICE_PRIORITIES": "CPUF,CPU"}, "HETERO:CPUF,CPU"),
    ("HETERO:CPU,CPUF", {}, "HETERO:CPU,CPUF"),
    ("CPUF", {}, "CPUF"),
    (None, {}, None),  # the library's own no-device meaning
])
def test_every_device_string_names_what_place_takes(core, device, config, target):
    assert placement_target(core, device, config)[0] == target


def test_no_device_lists_autos_candidates_and_bad_strings_raise(core):
    assert target_devices(core, None) == ("CPU", "CPUF")
    with pytest.raises(DeviceError, match="this machine has CPU, CPUF"):
        placement_target(core, "HETERO", {})
    with pytest.raises(RuntimeError):  # an app's handler catches it
        placement_target(core, "AUTO:GPU", {})


def test_same_device_note_reads_a_bare_auto_through_the_core(core, monkeypatch):
    import ov_autoplace_lab.same_device_note as notes

    monkeypatch.setattr(notes, "cpu_supports_bf16", lambda core=None: False)  # the note's own condition
    assert same_device_note("AUTO", core) == SAME_DEVICE_NOTE
    assert same_device_note("AUTO:-CPUF", core) is None
