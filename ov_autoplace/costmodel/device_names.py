"""Device names as the prior's ``recognized_by`` patterns see them, readable without loading the suite.

More: docs/architecture.md, "Module notes", device_names.py.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Iterable

#: The suite's platform file (``suite.PLATFORMS_JSON``: the same file, named here so no suite import is needed).
PLATFORMS_JSON = Path(__file__).parent / "data" / "platforms.json"


def normalized_device_name(name: str) -> str:
    """``FULL_DEVICE_NAME`` as ``recognized_by`` patterns see it: lower case, no (R)/(TM), words split by spaces."""
    text = re.sub(r"\((r|tm)\)", " ", name.lower())
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text).split())


@functools.lru_cache(maxsize=1)
def recognition_patterns() -> tuple[str, ...]:
    """Every ``recognized_by`` pattern of every device of the suite (of any kind, fitted or not): a superset."""
    platforms = json.loads(PLATFORMS_JSON.read_text())["platforms"]
    return tuple(sorted({pattern for platform in platforms.values() for device in platform.get("devices", ())
                         for pattern in device.get("recognized_by", ())}))


def may_all_be_recognized(full_names: Iterable[str | None]) -> bool:
    """False only when some device certainly is not recognized (no name, or a name no pattern matches).

    ``recognize_devices`` also requires the matching device to be of the same kind and fitted, and an integrated
    GPU/NPU to sit beside its platform's CPU, so True does not mean recognized; False does mean not.
    """
    patterns = recognition_patterns()
    return all(name and any(re.search(p, normalized_device_name(name)) for p in patterns) for name in full_names)


__all__ = ["PLATFORMS_JSON", "may_all_be_recognized", "normalized_device_name", "recognition_patterns"]
