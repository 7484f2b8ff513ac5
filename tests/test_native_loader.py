import subprocess
import sys

import pytest

from ov_autoplace import NativeExtensionError
from ov_autoplace._native_loader import (
    built_openvino_version,
    check_openvino_version,
    load_native,
    runtime_openvino_version,
)


def test_built_matches_running():
    assert built_openvino_version() == runtime_openvino_version()
    assert load_native().BUILT_OPENVINO_VERSION == runtime_openvino_version()


def test_mismatch_message_says_how_to_rebuild():
    with pytest.raises(NativeExtensionError) as info:
        check_openvino_version(built="2025.1.0", running="2026.4.1")
    message = str(info.value)
    assert "2025.1.0" in message and "2026.4.1" in message and "pip install" in message
    assert isinstance(info.value, ImportError)


def test_import_fails_clearly_on_mismatch():
    """A package whose build info names another release refuses to import, saying why."""
    code = (
        "import sys, types; info = types.ModuleType('ov_autoplace._build_info');"
        "info.BUILT_OPENVINO_VERSION = '2024.6.0'; sys.modules['ov_autoplace._build_info'] = info\n"
        "try:\n import ov_autoplace\nexcept ImportError as e:\n print('ERR', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("ERR") and "2024.6.0" in out and "rebuild" in out
