"""Import the C++ extension only after checking it matches the OpenVINO runtime.

The extension links ``libopenvino.so.<release>`` of the OpenVINO it was built
against; with another release installed the raw import fails with an obscure
loader message (or worse, loads against a different ABI). The build writes the
release into ``_build_info.py`` so we can compare first and say how to fix it.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

import openvino as ov

from ov_autoplace.errors import NativeExtensionError

#: The command that rebuilds the extension against the OpenVINO installed *in this environment*: without
#: build isolation (pip would otherwise build in a fresh environment with the release pyproject.toml pins, and
#: produce the same mismatch again) and without touching the installed OpenVINO (--no-deps).
REBUILD_COMMAND = "pip install --force-reinstall --no-deps --no-build-isolation"
BUILD_TOOLS = '"scikit-build-core>=0.10" "pybind11>=3.0"'
_REBUILD_HINT = (
    f"rebuild ov_autoplace against the installed OpenVINO, from a source checkout: "
    f"`pip install {BUILD_TOOLS} && {REBUILD_COMMAND} <path to the ov_autoplace checkout>` "
    f"(or reinstall OpenVINO at the release this build pins)"
)


def runtime_openvino_version() -> str:
    """The installed OpenVINO release, e.g. ``2026.4.1``."""
    return ov.get_version().split("-")[0]


def built_openvino_version() -> str | None:
    """The OpenVINO release the extension was built against (None if it was never built)."""
    try:
        return importlib.import_module("ov_autoplace._build_info").BUILT_OPENVINO_VERSION
    except ImportError:
        return None


def check_openvino_version(built: str | None = None, running: str | None = None) -> None:
    """Raise NativeExtensionError if the extension was built for another OpenVINO release.

    Runs at ``import ov_autoplace`` (it reads a generated .py, it does not load
    the extension), so a mismatch is reported with the fix before anything else.
    """
    built = built if built is not None else built_openvino_version()
    running = running if running is not None else runtime_openvino_version()
    if built is not None and built != running:
        raise NativeExtensionError(
            f"ov_autoplace._native was built against OpenVINO {built} but OpenVINO {running} is installed; "
            f"the extension links that exact release. Expected {built}, got {running}: {_REBUILD_HINT}; "
            f"or install the release it was built for: `pip install openvino=={built}`"
        )


@functools.lru_cache(maxsize=None)
def load_native() -> ModuleType:
    """Return ``ov_autoplace._native``, or raise NativeExtensionError saying why not."""
    if built_openvino_version() is None:
        raise NativeExtensionError(
            "ov_autoplace's C++ extension is not built (no ov_autoplace/_build_info.py); "
            f"install the package with pip so CMake builds it: {_REBUILD_HINT}"
        )
    check_openvino_version()
    try:
        return importlib.import_module("ov_autoplace._native")
    except ImportError as exc:
        raise NativeExtensionError(f"cannot load ov_autoplace._native ({exc}); {_REBUILD_HINT}") from exc
