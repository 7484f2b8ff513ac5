"""What a strategy, a cost provider or the legalizer's callers know about the model being placed.

Its own module below the cost model and the strategies, because both read it: a cost provider builds a
CostModel for a context (``measuring/providers.py``), a strategy proposes a device per node for one
(``strategies/base.py``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import openvino as ov

from ov_autoplace.graph.arrays import GraphArrays


@dataclasses.dataclass
class PlacementContext:
    """What a strategy may look at besides the graph."""

    graph: GraphArrays
    devices: tuple[str, ...]
    support: np.ndarray  # bool (nodes x devices), from core.query_model
    core: ov.Core | None = None
    model: ov.Model | None = None
    seed: int = 0
    #: Where a measured cost provider stores the profiles it measures: the call's cache root's ``profiles/``
    #: (``cache.root.profile_dir(cache_dir)``); None: the default root's.
    profile_dir: Path | None = None
    #: A stateful decoder's generation (``model/generation.Generation``) and its dynamic model: a measured cost
    #: provider then profiles the decode steps too and returns the whole generation's costs; None: single-shot.
    generation: object | None = None
    dynamic_model: ov.Model | None = None


__all__ = ["PlacementContext"]
