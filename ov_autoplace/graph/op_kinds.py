"""Kinds of op types that placement rules share (the heavy-ops heuristic, the policy's features)."""

#: Matrix-heavy op types: convolutions, matrix products, attention.
HEAVY_OP_TYPES = frozenset({
    "Convolution", "GroupConvolution", "ConvolutionBackpropData", "GroupConvolutionBackpropData",
    "MatMul", "ScaledDotProductAttention", "Einsum", "FullyConnected",
})

__all__ = ["HEAVY_OP_TYPES"]
