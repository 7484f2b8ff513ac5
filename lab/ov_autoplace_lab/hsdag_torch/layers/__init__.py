"""The torch layers of the HSDAG policy (training side; needs torch)."""

from ov_autoplace_lab.hsdag_torch.layers.device_placer import DevicePlacer
from ov_autoplace_lab.hsdag_torch.layers.gcn_conv import GCNConv, gcn_norm
from ov_autoplace_lab.hsdag_torch.layers.graph_parsing_pool import GraphParsingPool, PoolResult

__all__ = ["DevicePlacer", "GCNConv", "GraphParsingPool", "PoolResult", "gcn_norm"]
