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

    ``policy``: path of a ``.npz`` written by ``export_policy`` (or a loaded
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

    ``decodings=K`` (default 0: the greedy placement alone) prices the greedy
    placement and K offset decodings of the same pass in one batch, legalises
    the cheapest with ``decode_options`` (``max_submodels``, ``pins``: the
    legalizer's options the caller applies; ``legalised``: how many, default
    ``decoding.LEGALISED``), and proposes the one the CostModel predicts fastest
    by more than the spread of the move (``policy/decoding.py``; "hsdag+decodings").
    Its report is kept in ``last_decoding``.
    """

    name = "hsdag"

    def __init__(self, policy: str | Path | NumpyHSDAGPolicy, cost: CostProvider, *,
                 feature_config: NodeFeatureConfig | None = None, refine: bool = False,
                 refine_options: dict | None = None, decodings: int = 0,
                 decode_options: dict | None = None) -> None:
        if not callable(cost) and not hasattr(cost, "compute_ms"):
            raise TypeError(f"cost must be a CostModel or a callable(PlacementContext) -> CostModel, got {type(cost)}")
        self.policy = policy if isinstance(policy, NumpyHSDAGPolicy) else NumpyHSDAGPolicy.load(policy)
        self.source = None if isinstance(policy, NumpyHSDAGPolicy) else str(policy)
        self.cost, self.feature_config = cost, feature_config
        self.last_output: NumpyPolicyOutput | None = None
        self.refine, self.refine_options = refine, dict(refine_options or {})
        self.last_refine = None
        if isinstance(decodings, bool) or not isinstance(decodings, int) or decodings < 0:
            raise ValueError(f"decodings must be an int >= 0 (offset decodings priced beside the greedy one), "
                             f"got {decodings!r}")
        unknown = sorted(set(decode_options or {}) - {"max_submodels", "pins", "legalised"})
        if unknown:
            raise ValueError(f"decode_options {unknown}: not an option of the decodings; they take max_submodels "
                             "and pins (as the caller legalises) and legalised (how many to legalise in full)")
        self.decodings, self.decode_options = decodings, dict(decode_options or {})
        self.last_decoding = None
        self.name = "hsdag" + ("+decodings" if decodings else "") + ("+local_search" if refine else "")

    def propose(self, context: PlacementContext) -> np.ndarray:
        cost = resolve_cost(self.cost, context)
        self.last_cost = cost
        arrays = self.policy.inputs(context.graph, cost, self.feature_config)
        output = self.policy.forward(arrays)
        self.last_output = output
        log.debug("hsdag: %d nodes -> %d coarse nodes -> %d groups (%d pooling iterations) on %s",
                  arrays.num_nodes, arrays.num_coarse, output.num_groups, output.pool_iterations, cost.devices)
        proposal = output.node_placement()
        if self.decodings:
            from ov_autoplace.policy.decoding import priced_decoding

            proposal, self.last_decoding = priced_decoding(output.logits, output.node_group, context.graph, cost,
                                                           context.support, self.decodings, **self.decode_options)
            log.debug("hsdag: %s", self.last_decoding.note(cost.label))
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

    def cache_token(self) -> str:
        """The policy's weights digest, the feature switches and where the costs come from."""
        costs = (f"costmodel:{self.cost.source}{', loaded' if self.cost.loaded else ''}"
                 if hasattr(self.cost, "compute_ms") else repr(self.cost))  # a loaded profile places differently
        refine = f", local_search={sorted(self.refine_options.items())}" if self.refine else ""
        decode = f", decodings={self.decodings}, {sorted(self.decode_options.items())}" if self.decodings else ""
        return (f"hsdag(weights={self.policy.digest[:16]}, features={self.feature_config}, costs={costs}"
                f"{decode}{refine})")

    def __repr__(self) -> str:
        refine = f", refine=True, refine_options={self.refine_options}" if self.refine else ""
        decode = f", decodings={self.decodings}, decode_options={self.decode_options}" if self.decodings else ""
        return (f"HSDAGStrategy(policy={self.source or self.policy!r}, feature_config={self.feature_config}"
                f"{decode}{refine})")


__all__ = ["HSDAGStrategy"]
