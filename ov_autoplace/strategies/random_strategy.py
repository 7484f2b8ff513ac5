"""Random placements: the legalizer's property tests and a sanity baseline."""

from __future__ import annotations

import numpy as np

from ov_autoplace.strategies.base import PlacementContext, PlacementStrategy

MODES = ("node", "contiguous")


class RandomStrategy(PlacementStrategy):
    """``node``: every node drawn uniformly (worst case for fragmentation);
    ``contiguous``: the topological order cut at random points into runs, one device per run."""

    def __init__(self, seed: int = 0, mode: str = "node", max_cuts: int = 4) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.seed, self.mode, self.max_cuts = seed, mode, max_cuts
        self.name = f"random-{mode}"

    def propose(self, context: PlacementContext) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        n, k = context.graph.num_nodes, len(context.devices)
        if self.mode == "node":
            return rng.integers(0, k, size=n)
        cuts = np.sort(rng.choice(np.arange(1, max(n, 2)), size=min(self.max_cuts, max(n - 1, 1)), replace=False))
        run = np.searchsorted(cuts, np.arange(n), side="right")
        run_device = rng.integers(0, k, size=len(cuts) + 1)
        return run_device[run]

    def __repr__(self) -> str:
        return f"RandomStrategy(seed={self.seed}, mode={self.mode!r})"
