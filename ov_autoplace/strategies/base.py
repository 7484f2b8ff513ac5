"""The interface every placement method implements.

A strategy sees the graph arrays, the target devices and what each device
supports, and proposes a device index for every node. It does not need to know
HETERO's rules: the legalizer makes any proposal compile. Heuristics, the
learned HSDAG policy and the baselines all plug in here.
"""

from __future__ import annotations

import abc

import numpy as np

# the context lives below the cost model, which reads it too (placement/context.py); strategies import it here
from ov_autoplace.placement.context import PlacementContext  # noqa: F401


class PlacementStrategy(abc.ABC):
    """Proposes a device index (into ``context.devices``) for every node."""

    #: Short name used in summaries, logs and the cache.
    name: str = "strategy"
    #: Strategies that price placements with a CostModel set this in propose();
    #: compile_model's guard then checks the result against every single device.
    last_cost = None

    @abc.abstractmethod
    def propose(self, context: PlacementContext) -> np.ndarray:
        """Return an int array of shape ``(num_nodes,)`` with values in ``[0, len(devices))``."""

    def cache_token(self) -> str:
        """What a cached placement of this strategy depends on (its name and parameters).

        Strategies with state that changes their output (a policy's weights
        version, a seed) must include it; the default is ``repr(self)``.
        """
        return repr(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
