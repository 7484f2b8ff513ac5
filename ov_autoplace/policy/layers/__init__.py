"""The torch layers of the HSDAG policy (training side; needs torch)."""

from ov_autoplace.policy.layers.device_placer import DevicePlacer
from ov_autoplace.policy.layers.gcn_conv import GCNConv, gcn_norm
from ov_autoplace.policy.layers.graph_parsing_pool import GraphParsingPool, PoolResult

__all__ = ["DevicePlacer", "GCNConv", "GraphParsingPool", "PoolResult", "gcn_norm"]
