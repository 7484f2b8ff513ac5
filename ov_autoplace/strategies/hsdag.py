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

    ``policy``: path of a ``.npz`` written by the lab's ``export_policy`` (or a loaded
    :class:`NumpyHSDAGPolicy`). ``cost``: a CostModel of the prepared model, or
    a callable ``PlacementContext -> CostModel``; the policy reads device and
    node-device features from it, so it must cover the context's devices (its
    columns are reordered to the context's order). ``feature_config``
    overrides the policy's feature switches (ablations).
    The last output is kept in ``last_output`` (groups, logits).

    ``refine=True`` runs the cost-model local search
    (:class:`~ov_autoplace.search.local_search.LocalSearchRefiner`) on the
    policy's proposal, under the same CostModel the policy read, before the
    legalizer: a different method from the policy alone ("hsdag+local search"),
    predicted never slower, measuring nothing. On a measured CostModel with
    spreads it keeps a move only when its predicted gain exceeds the spread of
    what it moves - and the policy's proposal is itself a move away from
    HETERO's own placement: a split whose gain over that is within the spread,
    or any split on a profile taken on a loaded machine, is replaced by
    HETERO's own placement (one device when it runs everything; the rule is
    in ``search/local_search.py``). ``refine_options`` go to the
    refiner (``max_submodels`` should be the legalizer's bound the caller
    applies; ``max_seconds``, ``max_evaluations``). Its report is kept in ``last_refine``.

    :meth:`decode` reads a placement off the pass (the greedy one here); the lab's
    ``DecodedHSDAGStrategy`` (``ov_autoplace_lab.training.decoding``) prices
    more decodings of the same pass there ("hsdag+decodings").
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
