"""What the wheel tests build once per pytest run and share: the sdist.

``tests/test_wheel_install.py`` builds the running CPython's wheel from it (so the wheel every install test
uses is the one ``pip install <sdist>`` makes), ``tests/test_wheels_per_python.py`` the other CPythons' wheels.
Built by ``tools/wheels.py``'s ``build_sdist`` (scikit-build-core, run in the checkout) on first use.

Under pytest-xdist (``bash run.sh test`` runs ``-n 2``) the two files may run in different worker processes:
the sdist then goes to the run's temporary root, which every worker of the run shares, and a file lock makes
the first worker that asks build it while the other waits and reuses it (one sdist per run, never two builds
of the checkout at once).
"""

from __future__ import annotations

import os
from pathlib import Path

from filelock import FileLock

_BUILT: dict[str, Path] = {}


def run_shared_dir(tmp_path_factory) -> Path:
    """A directory every process of this pytest run sees: the run's temp root under xdist, else this session's."""
    base = tmp_path_factory.getbasetemp()
    # xdist gives each worker <run root>/popen-gw<N> as its basetemp; the run root is shared by the workers only.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_sdist(tmp_path_factory) -> Path:
    """The sdist of the checkout, built on the first call of the run (in any worker) and reused after."""
    from tools import wheels

    sdist = _BUILT.get("sdist")
    if sdist is not None and sdist.is_file():
        return sdist
    out = run_shared_dir(tmp_path_factory) / "shared_sdist"
    out.mkdir(exist_ok=True)
    with FileLock(str(out) + ".lock"):
        built = sorted(out.glob("ov_autoplace-*.tar.gz"))
        # built in a .part directory and moved in: a worker killed mid-build leaves no half sdist to reuse
        sdist = built[0] if built else _build_into(wheels, out)
    _BUILT["sdist"] = sdist
    return sdist


def _build_into(wheels, out: Path) -> Path:
    part = out.with_name(out.name + ".part")
    part.mkdir(exist_ok=True)
    built = wheels.build_sdist(part)
    final = out / built.name
    os.replace(built, final)
    return final
