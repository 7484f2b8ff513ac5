"""compile_model's default path: the fast start on identical devices, the profile= option, its imports."""

from __future__ import annotations

import logging

import pytest

import ov_autoplace as oa
from ov_autoplace.errors import PlacementError
from tests import synthetic_graphs as sg


def _source(caplog) -> str:
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("placement source: ")]
    assert lines, f"no 'placement source' INFO line in {caplog.text!r}"
    return lines[-1].split(": ", 1)[1]


def test_identical_devices_compile_on_heteros_first_device_without_profiling(testbed, tmp_path, caplog):
    if testbed.bf16:
        pytest.skip("CPU and CPUF differ (bf16) on this machine")
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, cache_dir=tmp_path)
    assert _source(caplog).startswith("prior -> CPU")
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPU"], "compiled on CPU itself, not through HETERO"
    assert not (tmp_path / "profiles").exists(), "nothing was measured"


def test_bad_profile_value_raises(testbed):
    with pytest.raises(PlacementError, match="profile must be one of"):
        oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, profile="sometimes")
    with pytest.raises(PlacementError, match="default placement"):
        oa.compile_model(sg.residual(), testbed.hetero, core=testbed.core, strategy="priority", profile="now")


def test_policy_file_named_for_the_cache_key_is_the_shipped_one():
    from ov_autoplace.decision.first_start import POLICY_FILE
    from ov_autoplace.policy.pretrained import PRETRAINED_POLICY

    assert POLICY_FILE == PRETRAINED_POLICY and POLICY_FILE.is_file()


def test_fast_start_imports_nothing_it_does_not_use(tmp_path):
    """The identical-devices start imports nothing during the call (no policy, profiler, simulator, cache)."""
    import subprocess
    import sys

    script = (
        "import sys, openvino as ov, ov_autoplace as oa\n"
        "from ov_autoplace.devices.testbed import make_testbed\n"
        "from tests import synthetic_graphs as sg\n"
        "tb = make_testbed()\n"
        "before = set(sys.modules)\n"
        "oa.compile_model(sg.residual(), tb.hetero, core=tb.core)\n"
        "print('BF16' if tb.bf16 else 'F32', sorted(m for m in set(sys.modules) - before if 'ov_autoplace' in m))\n"
    )
    env = dict(__import__("os").environ, OV_AUTOPLACE_CACHE_DIR=str(tmp_path))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    assert run.returncode == 0, run.stderr[-2000:]
    kind, _, loaded = run.stdout.strip().partition(" ")
    if kind == "BF16":
        pytest.skip("CPU and CPUF differ (bf16): the fast path does not apply")
    assert loaded == "[]", f"the fast start imported {loaded}"
