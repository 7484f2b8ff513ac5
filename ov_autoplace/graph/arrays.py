"""The computation graph of an OpenVINO model as flat, read-only numpy arrays.

More: docs/architecture.md, "Module notes", graph/arrays.py; every array's definition: docs/graph-arrays.md.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

__all__ = ["MAX_RANK", "GraphArrays", "NodeRole", "constant_subgraph_mask", "extract_graph"]

#: Width of ``GraphArrays.out_shape``; ranks above it are truncated.
MAX_RANK = 8


class NodeRole(enum.IntEnum):
    """Value of ``GraphArrays.role``."""

    COMPUTE = 0
    PARAMETER = 1
    CONSTANT = 2
    RESULT = 3


_ARRAY_FIELDS = (
    ("role", np.int8, 1),
    ("num_outputs", np.int32, 1),
    ("out_rank", np.int32, 1),
    ("out_shape", np.int64, 2),
    ("out_bytes", np.int64, 1),
    ("flops", np.float64, 1),
    ("edge_src", np.int32, 1),
    ("edge_dst", np.int32, 1),
    ("edge_src_port", np.int32, 1),
    ("edge_dst_port", np.int32, 1),
    ("edge_bytes", np.int64, 1),
    ("in_degree", np.int32, 1),
    ("out_degree", np.int32, 1),
    ("topo_index", np.int32, 1),
    ("pos_enc", np.float32, 2),
    ("depth", np.int32, 1),
    ("fractal_dim", np.float32, 1),
)
_LIST_FIELDS = ("names", "op_types", "op_versions", "out_element_type")


@dataclass(frozen=True, eq=False)
class GraphArrays:
    """Node and edge arrays of one model; every array is defined in docs/graph-arrays.md.

    Node arrays have length ``num_nodes`` (first axis), edge arrays ``num_edges``.
    """

    names: tuple[str, ...]
    op_types: tuple[str, ...]
    op_versions: tuple[str, ...]
    role: np.ndarray  # int8[N], NodeRole values
    out_element_type: tuple[str, ...]
    num_outputs: np.ndarray  # int32[N]
    out_rank: np.ndarray  # int32[N]
    out_shape: np.ndarray  # int64[N, MAX_RANK]
    out_bytes: np.ndarray  # int64[N]
    flops: np.ndarray  # float64[N]
    edge_src: np.ndarray  # int32[E]
    edge_dst: np.ndarray  # int32[E]
    edge_src_port: np.ndarray  # int32[E]
    edge_dst_port: np.ndarray  # int32[E]
    edge_bytes: np.ndarray  # int64[E]
    in_degree: np.ndarray  # int32[N]
    out_degree: np.ndarray  # int32[N]
    topo_index: np.ndarray  # int32[N]
    pos_enc: np.ndarray  # float32[N, pos_dim]
    depth: np.ndarray  # int32[N]
    fractal_dim: np.ndarray  # float32[N]
    meta: dict[str, int]
    variables: tuple[tuple[int, int], ...] = ()
    #: A static clone's dynamic model (``model.prepare.placement_graph``): HETERO's stateful rule 2 is judged there.
    dynamic: "GraphArrays | None" = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GraphArrays":
        """Builds from the dict ``_native.extract_graph`` (or the reference) returns.

        Checks dtypes and lengths, and makes the arrays read-only.
        """
        kw: dict[str, Any] = {}
        n = len(d["names"])
        e = len(d["edge_src"])
        for name in _LIST_FIELDS:
            kw[name] = tuple(d[name])
            if len(kw[name]) != n:
                raise ValueError(f"graph field {name!r} has {len(kw[name])} entries, expected {n}")
        for name, dtype, ndim in _ARRAY_FIELDS:
            arr = np.asarray(d[name])
            if arr.dtype != dtype or arr.ndim != ndim:
                raise ValueError(
                    f"graph field {name!r} is {arr.dtype}[{arr.ndim}d], expected {np.dtype(dtype)}[{ndim}d]"
                )
            expected = e if name.startswith("edge_") else n
            if arr.shape[0] != expected:
                raise ValueError(f"graph field {name!r} has length {arr.shape[0]}, expected {expected}")
            arr = arr.view()
            arr.setflags(write=False)
            kw[name] = arr
        kw["meta"] = dict(d["meta"])
        kw["variables"] = tuple((int(r), int(a)) for r, a in d.get("variables", ()))
        return cls(**kw)

    @property
    def num_nodes(self) -> int:
        return len(self.names)

    @property
    def num_edges(self) -> int:
        return int(self.edge_src.shape[0])

    @property
    def pos_dim(self) -> int:
        return int(self.pos_enc.shape[1])

    @staticmethod
    def _csr(keys: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(keys, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys, minlength=n), out=indptr[1:])
        indices = values[order].astype(np.int32)
        indptr.setflags(write=False)
        indices.setflags(write=False)
        return indptr, indices

    @cached_property
    def successors_csr(self) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, indices)``: consumers of node v are ``indices[indptr[v]:indptr[v+1]]``.

        One entry per edge (multi-edges repeat), in edge order.
        """
        return self._csr(self.edge_src, self.edge_dst, self.num_nodes)

    @cached_property
    def predecessors_csr(self) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, indices)``: producers of node v in input-port order."""
        return self._csr(self.edge_dst, self.edge_src, self.num_nodes)

    def successors(self, v: int) -> np.ndarray:
        indptr, indices = self.successors_csr
        return indices[indptr[v] : indptr[v + 1]]

    def predecessors(self, v: int) -> np.ndarray:
        indptr, indices = self.predecessors_csr
        return indices[indptr[v] : indptr[v + 1]]

    def __repr__(self) -> str:
        return (
            f"GraphArrays(num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
            f"pos_dim={self.pos_dim}, fractal_radius={self.meta.get('fractal_radius')})"
        )


def _check_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return int(value)


def constant_subgraph_mask(graph: GraphArrays) -> np.ndarray:
    """Nodes whose value depends on Constants only (they follow their consumers)."""
    const = graph.role == NodeRole.CONSTANT
    is_compute = graph.role == NodeRole.COMPUTE
    num_inputs = np.bincount(graph.edge_dst, minlength=graph.num_nodes)
    const_inputs = np.zeros(graph.num_nodes, dtype=np.int64)
    # Edges are listed by destination in topological order, so every input of a
    # node is decided before the node's own out-edges are reached.
    for s, t in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()):
        if const[s]:
            const_inputs[t] += 1
            if is_compute[t] and const_inputs[t] == num_inputs[t]:
                const[t] = True
    return const


def extract_graph(model, *, pos_dim: int = 16, fractal_radius: int = 4) -> GraphArrays:
    """Node/edge arrays of ``model`` (an ``openvino.Model``), computed in C++.

    ``pos_dim``: width of the sin/cos positional encoding (positive, even).
    ``fractal_radius``: largest BFS radius R of the fractal dimension (>= 2).
    """
    import openvino as ov

    if not isinstance(model, ov.Model):
        got = f"{type(model).__module__}.{type(model).__qualname__}"
        raise TypeError(f"extract_graph expects an openvino.Model, got {got}")
    pos_dim = _check_int("pos_dim", pos_dim)
    fractal_radius = _check_int("fractal_radius", fractal_radius)
    if pos_dim <= 0 or pos_dim % 2:
        raise ValueError(f"pos_dim must be a positive even integer, got {pos_dim}")
    if fractal_radius < 2:
        raise ValueError(f"fractal_radius must be >= 2 (the slope needs two radii), got {fractal_radius}")

    from ov_autoplace._native_loader import load_native

    arrays = load_native().extract_graph(model, pos_dim=pos_dim, fractal_radius=fractal_radius)
    if "ReadValue" in arrays["op_types"]:
        arrays["variables"] = _variable_pairs(model)
    return GraphArrays.from_dict(arrays)


def _variable_pairs(model) -> list[tuple[int, int]]:
    """(ReadValue, Assign) node ids per variable id; the node ids are ``get_ordered_ops()`` positions."""
    reads: dict[str, int] = {}
    writes: dict[str, int] = {}
    for i, op in enumerate(model.get_ordered_ops()):
        kind = op.get_type_name()
        if kind in ("ReadValue", "Assign"):
            (reads if kind == "ReadValue" else writes).setdefault(op.get_variable_id(), i)
    return [(reads[v], writes[v]) for v in sorted(reads) if v in writes]
