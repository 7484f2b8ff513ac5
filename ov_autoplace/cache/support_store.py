"""Which device can run which node, stored beside the placement cache.

More: docs/architecture.md, "Module notes", support_store.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import openvino as ov

from ov_autoplace.cache.profile_store import ProfileStore, profile_key
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.legalizer import query_support

SUPPORT_FORMAT = 1


def device_support(core: ov.Core, model: ov.Model, graph: GraphArrays, devices: Sequence[str],
                   directory: str | Path | None) -> np.ndarray:
    """``query_support`` of the prepared ``model``, read from / written to ``directory`` when one is given."""
    if directory is None:
        return query_support(core, model, graph, devices)
    store = ProfileStore(directory)
    key = profile_key(core, devices, kind="support", graph=graph, extra={"format": SUPPORT_FORMAT})
    stored = store.load(key, lambda payload: _decoded(payload, graph.num_nodes, len(devices)))
    if stored is not None:
        return stored
    support = query_support(core, model, graph, devices)
    store.save(key, {"rows": ["".join("1" if s else "0" for s in row) for row in support.tolist()]})
    return support


def _decoded(payload: dict[str, Any], num_nodes: int, num_devices: int) -> np.ndarray:
    rows = payload["rows"]
    if not isinstance(rows, list) or len(rows) != num_nodes:
        raise ValueError(f"support has {len(rows) if isinstance(rows, list) else '?'} rows, the model {num_nodes}")
    if not all(isinstance(r, str) and len(r) == num_devices and set(r) <= {"0", "1"} for r in rows):
        raise ValueError(f"support rows must be strings of {num_devices} '0'/'1' characters")
    return np.array([[c == "1" for c in r] for r in rows], dtype=bool).reshape(num_nodes, num_devices)


__all__ = ["SUPPORT_FORMAT", "device_support"]
