"""Benchmark model zoo (Inception-V3, ResNet-50, BERT-base) as OpenVINO IR.

Build with ``python -m models``; see :mod:`models.zoo`.
"""

from .zoo import ZOO, build, cache_dir, graph_counts, info, load

__all__ = ["ZOO", "build", "cache_dir", "graph_counts", "info", "load"]
