"""The torch layers of the HSDAG policy (training side; needs torch)."""

from .device_placer import DevicePlacer
from .gcn_conv import GCNConv, gcn_norm
from .graph_parsing_pool import GraphParsingPool, PoolResult

__all__ = ["DevicePlacer", "GCNConv", "GraphParsingPool", "PoolResult", "gcn_norm"]
