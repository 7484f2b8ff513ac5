"""Import an optional zoo dependency (torch, torchvision, transformers), or say how to get it.

A module of its own so that ``zoo/__init__`` and ``zoo/extra`` share it without importing each other.
"""

from __future__ import annotations

import importlib
from typing import Any

INSTALL_HINT = "pip install 'ov-autoplace-lab[zoo]'"


def optional_import(module: str) -> Any:
    """``importlib.import_module(module)``; a missing module raises ImportError naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"building the model zoo needs {module!r}, which is not installed: {INSTALL_HINT}") from exc
