"""What the wheel tests build once per pytest run and share: the sdist.

``tests/test_wheel_install.py`` builds the running CPython's wheel from it (so the wheel every install test
uses is the one ``pip install <sdist>`` makes), ``tests/test_wheels_per_python.py`` the other CPythons' wheels.
Built by ``tools/wheels.py``'s ``build_sdist`` (scikit-build-core, run in the checkout) on first use.
"""

from __future__ import annotations

from pathlib import Path

_BUILT: dict[str, Path] = {}


def shared_sdist(tmp_path_factory) -> Path:
    """The sdist of the checkout, built on the first call of the run and reused after."""
    from tools import wheels

    sdist = _BUILT.get("sdist")
    if sdist is None or not sdist.is_file():
        sdist = _BUILT["sdist"] = wheels.build_sdist(tmp_path_factory.mktemp("sdist"))
    return sdist
