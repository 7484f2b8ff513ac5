"""The shipped suite of named platforms and the errors of a malformed platform file."""

from __future__ import annotations

import copy
import json

import pytest

from ov_autoplace import CalibrationDataError
from ov_autoplace.costmodel.suite import PLATFORMS_JSON, load_fitted_terms, load_suite, parse_suite


def _file() -> dict:
    return json.loads(PLATFORMS_JSON.read_text())


def test_the_suite_has_the_calibrated_and_the_placement_settings():
    suite = load_suite()
    assert {"paper", "laptop", "npu_cpu", "small_memory", "cpu_igpu"} <= set(suite)
    assert suite["paper"].kind == "calibrated" and suite["small_memory"].kind == "hypothetical"
    fitted = load_fitted_terms()
    for platform in suite.values():
        for device in platform.devices:
            assert device.fitted == (device.calibration_key in fitted)
    # the shipped fit covers every calibrated device that has published points
    assert {"paper/CPU", "paper/GPU", "laptop/CPU", "laptop/GPU", "laptop/NPU"} <= set(fitted)
    assert suite["small_memory"].device("GPU").spec.memory_bytes == pytest.approx(0.25 * 2**30)
    assert "Gather" in suite["npu_cpu"].device("NPU").spec.supported_op_types


def test_priors_are_used_without_the_fit():
    prior = load_suite(use_fit=False)
    assert not any(d.fitted for p in prior.values() for d in p.devices)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["platforms"]["paper"]["devices"][1]["terms"].pop("link_gbps"),
     r"platforms\['paper'\]\.devices\[1\] \(GPU\)\.terms: missing term\(s\) \['link_gbps'\]"),
    (lambda d: d["platforms"]["laptop"]["devices"][0]["terms"].update(dispatch_ms=-0.001),
     r"platforms\['laptop'\]\.devices\[0\] \(CPU\)\.terms\.dispatch_ms: must be >= 0"),
    (lambda d: d["platforms"]["paper"]["devices"][0].update(spec="I9_99999K"),
     r"devices\[0\] \(CPU\)\.spec: 'I9_99999K' is not a device of platforms.py"),
    (lambda d: d["platforms"]["paper"].pop("precision"), r"platforms\['paper'\]: missing field 'precision'"),
    (lambda d: d["platforms"]["small_memory"]["devices"][0].update(memory_gb=-1),
     r"small_memory'\]\.devices\[0\] \(GPU\)\.memory_gb: must be a number > 0"),
    (lambda d: d["platforms"]["npu_cpu"]["devices"][0].update(supported_ops=["@NO_SUCH_SET"]),
     r"supported_ops: '@NO_SUCH_SET' names no op set"),
    (lambda d: d["platforms"]["laptop"]["devices"][2].update(recognized_by="ai boost"),
     r"laptop'\]\.devices\[2\] \(NPU\)\.recognized_by: must be a non-empty list of regular expressions"),
    (lambda d: d["platforms"]["paper"]["devices"][0].update(recognized_by=["core i9 (12900k"]),
     r"paper'\]\.devices\[0\] \(CPU\)\.recognized_by: 'core i9 \(12900k' is not a valid regular expression"),
])
def test_a_malformed_platform_file_names_the_platform_device_and_field(edit, message):
    data = copy.deepcopy(_file())
    edit(data)
    with pytest.raises(CalibrationDataError, match=message):
        parse_suite(data, "platforms.json")
