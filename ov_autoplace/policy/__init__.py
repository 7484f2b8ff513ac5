"""The learned HSDAG placement policy.

Inference side (numpy only; importing this package never imports torch):
features (:mod:`.features`), chain coarsening (:mod:`.coarsen`), the policy
inputs (:mod:`.inputs`), the exported-weights file (:mod:`.policy_file`, read here, written by the lab's
``policy_export``) and the numpy forward pass (:mod:`.numpy_policy`). The strategy that runs it is ``strategies/hsdag.py``.

Training side (torch) is the lab's: ``ov_autoplace_lab.hsdag_torch`` (``HSDAGPolicy``, the layers) and
``ov_autoplace_lab.training``.
"""

from ov_autoplace.policy.coarsen import Coarsening, chain_coarsen
from ov_autoplace.policy.config import HSDAGConfig
from ov_autoplace.policy.policy_file import ExportedPolicy, PolicyFormatError, load_policy_file
from ov_autoplace.policy.features import (
    OP_VOCAB,
    NodeFeatureConfig,
    device_features,
    node_device_features,
    node_feature_names,
    node_features,
)
from ov_autoplace.policy.inputs import PolicyArrays, build_policy_arrays
from ov_autoplace.policy.numpy_policy import NumpyHSDAGPolicy, NumpyPolicyOutput

__all__ = [
    "OP_VOCAB",
    "Coarsening",
    "ExportedPolicy",
    "HSDAGConfig",
    "NodeFeatureConfig",
    "NumpyHSDAGPolicy",
    "NumpyPolicyOutput",
    "PolicyArrays",
    "PolicyFormatError",
    "build_policy_arrays",
    "chain_coarsen",
    "device_features",
    "load_policy_file",
    "node_device_features",
    "node_feature_names",
    "node_features",
]
