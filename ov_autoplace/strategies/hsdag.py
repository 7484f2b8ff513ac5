"""The learned HSDAG policy as a :class:`PlacementStrategy` (numpy inference, no torch)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from ov_autoplace.strategies.cost_based import CostProvider, resolve_cost
from ov_autoplace.strategies.base import PlacementContext, PlacementStrategy
from ov_autoplace.policy.features import NodeFeatureConfig
from ov_autoplace.policy.numpy_policy import NumpyHSDAGPolicy, NumpyPolicyOutput

log = logging.getLogger(__name__)


class HSDAGStrategy(PlacementStrategy):
    """Proposes the greedy placement of an exported HSDAG policy.

    The rest: docs/architecture.md, "Module notes", ov_autoplace/strategies/hsdag.py (HSDAGStrategy).
    """

    name = "hsdag"

    def __init__(self, policy: str | Path | NumpyHSDAGPolicy, cost: CostProvider, *,
                 feature_config: NodeFeatureConfig | None = None, refine: bool = False,
                 refine_options: dict | None = None) -> None:
        if not callable(cost) and not hasattr(cost, "compute_ms"):
            raise TypeError(f"cost must be a CostModel or a callable(PlacementContext) -> CostModel, got {type(cost)}")
        self.policy = policy if isinstance(policy, NumpyHSDAGPolicy) else NumpyHSDAGPolicy.load(policy)
        self.source = None if isinstance(policy, NumpyHSDAGPolicy) else str(policy)
        self.cost, self.feature_config = cost, feature_config
        self.last_output: NumpyPolicyOutput | None = None
        self.refine, self.refine_options = refine, dict(refine_options or {})
        self.last_refine = None
        self.name = "hsdag" + ("+local_search" if refine else "")

    def propose(self, context: PlacementContext) -> np.ndarray:
        cost = resolve_cost(self.cost, context)
        self.last_cost = cost
        arrays = self.policy.inputs(context.graph, cost, self.feature_config)
        output = self.policy.forward(arrays)
        self.last_output = output
        log.debug("hsdag: %d nodes -> %d coarse nodes -> %d groups (%d pooling iterations) on %s",
                  arrays.num_nodes, arrays.num_coarse, output.num_groups, output.pool_iterations, cost.devices)
        proposal = self.decode(output, context, cost)
        if not self.refine:
            return proposal
        from ov_autoplace.search.local_search import LocalSearchRefiner  # numpy only, never torch

        self.last_refine = LocalSearchRefiner(cost, context.graph, context.support,
                                              **self.refine_options).refine(proposal)
        if self.last_refine.stopped in ("unproven", "loaded"):  # the policy's split is noise on these costs
            log.info("hsdag: the refined split is not proven faster than HETERO's own placement (%s); %s",
                     self.last_refine.stopped, self.last_refine.note(cost.label))
        else:
            log.debug("hsdag: %s", self.last_refine.note(cost.label))
        return self.last_refine.proposal

    def decode(self, output: NumpyPolicyOutput, context: PlacementContext, cost) -> np.ndarray:
        """The placement read off the policy's pass: its greedy decoding."""
        return output.node_placement()

    def cache_token(self) -> str:
        """The policy's weights digest, the feature switches and where the costs come from."""
        costs = (f"costmodel:{self.cost.source}{', loaded' if self.cost.loaded else ''}"
                 if hasattr(self.cost, "compute_ms") else repr(self.cost))  # a loaded profile places differently
        refine = f", local_search={sorted(self.refine_options.items())}" if self.refine else ""
        return f"hsdag(weights={self.policy.digest[:16]}, features={self.feature_config}, costs={costs}{refine})"

    def __repr__(self) -> str:
        refine = f", refine=True, refine_options={self.refine_options}" if self.refine else ""
        return (f"{type(self).__name__}(policy={self.source or self.policy!r}, feature_config={self.feature_config}"
                f"{refine})")


__all__ = ["HSDAGStrategy"]
