"""A manylinux wheel for the other CPythons on this machine, built from the sdist and checked in a fresh venv.

``tools/wheels.py`` (``bash run.sh wheels``) does this for every CPython it finds; this is the same, step by
step, for the oldest and the newest CPython the ``openvino`` release has wheels for, other than the one running
the suite (whose wheel ``tests/test_wheel_install.py`` builds from the same sdist, installs and checks). One
isolated build of the sdist per CPython, under ``nice``, one at a time: each wheel is also the check that the sdist
builds on that CPython. A CPython this machine does not have is skipped, saying which and where it was looked for.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.wheel_builds import shared_sdist
from tools import wheels

RUNNING = "%d.%d" % sys.version_info[:2]


def _on_this_machine(minor: str) -> bool:
    """Where ``wheels.find_pythons`` looks, without starting the interpreters (this runs at collection)."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    return bool(shutil.which(f"python{minor}") or list((pyenv_root / "versions").glob(f"{minor}.*/bin/python3")))


# The oldest and the newest CPython other than the running one: the ends of the range are where the build breaks
# (a dropped API, a new deprecation), and each wheel costs ~35 s of CI. `bash run.sh wheels` builds every one.
# The newest openvino supports may not be on the machine (CPython 3.14 here): then also the newest that is, so the
# top of what can be built is still checked, and the missing one is skipped saying so.
_others = [minor for minor in wheels.OPENVINO_PYTHONS if minor != RUNNING]
_present = [minor for minor in _others if _on_this_machine(minor)]
OTHERS = sorted({*_others[:1], *_others[-1:], *_present[-1:]}, key=wheels.OPENVINO_PYTHONS.index)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pythons() -> dict[str, Path]:
    return wheels.find_pythons()


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    pytest.importorskip("auditwheel")
    return shared_sdist(tmp_path_factory)  # the one tests/test_wheel_install.py builds its wheel from


@pytest.mark.parametrize("minor", OTHERS)
def test_wheel_from_the_sdist_is_manylinux_and_works_in_a_fresh_venv(minor, pythons, request, tmp_path):
    if minor not in pythons:
        pytest.skip(f"CPython {minor} is not on this machine (looked in $PYENV_ROOT/versions, python{minor} on "
                    f"PATH); found {sorted(pythons)}")
    sdist = request.getfixturevalue("sdist")  # built once, and only when a CPython is there to build it
    result = wheels.build_and_check(minor, pythons[minor], sdist, tmp_path / "out", tmp_path / "work")
    assert result.error is None, result.error
    tag = "cp" + minor.replace(".", "")
    # openvino's own platform tag (csrc/manylinux_compat.hpp), under the size bound every runtime wheel has
    assert re.fullmatch(rf"ov_autoplace-[\w.]+-{tag}-{tag}-{wheels.OPENVINO_PLATFORM}\.whl", result.wheel.name)
    assert not result.shown.problems(), result.shown.text  # symbols within that tag; libopenvino the only external
    assert not result.too_big, (result.wheel.stat().st_size, wheels.RUNTIME_WHEEL_MAX_BYTES)
    check = result.check
    assert check["python"].startswith(minor + ".") and f"/python{minor}/site-packages/" in check["ov_autoplace"]
    assert check["native"] == "ov_autoplace._native"
    assert check["default_equal"], "compile_model(model) must be core.compile_model(model) on a CPU-only machine"
    assert check["testbed_devices"] == ["CPU", "CPUF"] and check["testbed_close"], check
    print(f"{result.wheel.name}: " + ", ".join(f"{k} {v:.0f} s" for k, v in result.seconds.items()))
