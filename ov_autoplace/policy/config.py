"""Hyper-parameters of the HSDAG policy, shared by the torch model, the export and the numpy twin."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ov_autoplace.policy.boundary import BOUNDARY_FEATURE_NAMES
from ov_autoplace.policy.features import (
    DEVICE_FEATURE_NAMES,
    NODE_DEVICE_FEATURE_NAMES,
    OP_VOCAB,
    POS_DIM,
    NodeFeatureConfig,
    node_feature_names,
)
from ov_autoplace.policy.inputs import COARSE_EXTRA_NAMES

#: How the graph is grouped before the GCN (``coarsen.py``): ``chain`` = the paper's chains (what ``hsdag_v1`` was
#: trained with); ``cost_cut`` = chains cut wherever the device a node is cheapest on changes;
#: ``cost_cut_fused`` = the same, never inside a fused kernel (``coarsen.preferred_device_class``).
COARSENING_RULES = ("chain", "cost_cut", "cost_cut_fused")

#: What the placer reads besides the group embedding and the devices: ``group`` = each group's mean node-device
#: features and compute per device (``hsdag_v1``); ``boundary`` = also what moving the group trades that compute
#: against (``boundary.BOUNDARY_FEATURE_NAMES``) and the mean group embedding of the whole graph, so its per-device
#: threshold can depend on the graph.
PLACER_INPUTS = ("group", "boundary")

#: Per-(group, device) placer inputs besides the mean node-device features:
#: ``log1p(sum of members' compute_us on d) / 10`` and that minus its minimum over devices.
GROUP_COST_FEATURE_NAMES = ("log_group_compute_us", "log_group_vs_best_device")


@dataclasses.dataclass(frozen=True)
class HSDAGConfig:
    """Sizes and rules of :class:`~ov_autoplace_lab.hsdag_torch.model.HSDAGPolicy`.

    The rest: docs/architecture.md, "Module notes", ov_autoplace/policy/config.py (HSDAGConfig).
    """

    hidden: int = 128  # the paper's size
    num_gcn_layers: int = 2
    max_pool_iterations: int = 4
    score_threshold: float = 0.5
    pos_dim: int = POS_DIM
    vocab: tuple[str, ...] = OP_VOCAB
    feature_config: NodeFeatureConfig = NodeFeatureConfig()
    coarsening: str = "chain"
    placer_inputs: str = "group"
    placer_passes: int = 1
    graph_summary: bool = True

    def __post_init__(self) -> None:
        if self.hidden < 1 or self.num_gcn_layers < 1 or self.max_pool_iterations < 0:
            raise ValueError(f"need hidden >= 1, num_gcn_layers >= 1, max_pool_iterations >= 0; got {self}")
        if not 0.0 < self.score_threshold < 1.0:
            raise ValueError(f"score_threshold must be in (0, 1), got {self.score_threshold}")
        if self.coarsening not in COARSENING_RULES:
            raise ValueError(f"coarsening must be one of {COARSENING_RULES}, got {self.coarsening!r}")
        if self.placer_inputs not in PLACER_INPUTS:
            raise ValueError(f"placer_inputs must be one of {PLACER_INPUTS}, got {self.placer_inputs!r}")
        if self.placer_passes < 1 or (self.placer_passes > 1 and self.placer_inputs != "boundary"):
            raise ValueError(f"placer_passes must be >= 1, and 1 unless placer_inputs is 'boundary' (a pass reads "
                             f"where the previous one put the neighbours); got {self.placer_passes} with "
                             f"{self.placer_inputs!r}")
        if not self.graph_summary and self.placer_inputs != "boundary":
            raise ValueError(f"graph_summary=False only applies to placer_inputs='boundary' (the summary is one of "
                             f"its inputs); got placer_inputs={self.placer_inputs!r}")
        object.__setattr__(self, "vocab", tuple(self.vocab))

    @property
    def in_features(self) -> int:
        return len(node_feature_names(self.vocab, self.pos_dim)) + len(COARSE_EXTRA_NAMES)

    @property
    def device_features(self) -> int:
        return len(DEVICE_FEATURE_NAMES)

    @property
    def pair_feature_names(self) -> list[str]:
        names = list(NODE_DEVICE_FEATURE_NAMES) + list(GROUP_COST_FEATURE_NAMES)
        return names + list(BOUNDARY_FEATURE_NAMES) if self.placer_inputs == "boundary" else names

    @property
    def pair_features(self) -> int:
        return len(self.pair_feature_names)

    @property
    def graph_features(self) -> int:
        """Width of the whole-graph summary the placer reads (the mean group embedding), 0 without one."""
        return self.hidden if self.placer_inputs == "boundary" and self.graph_summary else 0

    @property
    def threshold_logit(self) -> float:
        return math.log(self.score_threshold / (1.0 - self.score_threshold))

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["vocab"] = list(self.vocab)
        out["feature_config"] = self.feature_config.to_dict()
        if self.coarsening == "chain":  # the default is implicit: older policy files and digests stay as they were
            del out["coarsening"]
        if self.placer_inputs == "group":
            del out["placer_inputs"]
        if self.placer_passes == 1:
            del out["placer_passes"]
        if self.graph_summary:
            del out["graph_summary"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HSDAGConfig":
        data = dict(data)
        data["vocab"] = tuple(data.get("vocab", OP_VOCAB))
        data["feature_config"] = NodeFeatureConfig.from_dict(data.get("feature_config", {}))
        return cls(**data)


__all__ = ["COARSENING_RULES", "GROUP_COST_FEATURE_NAMES", "HSDAGConfig", "PLACER_INPUTS"]
