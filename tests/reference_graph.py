"""Pure-Python reference for ``_native.extract_graph`` (the spec check).

Written from the definitions of every array in docs/graph-arrays.md,
using only the openvino Python API, numpy and plain loops; it shares no code
with ``csrc/graph_extract.cpp``. Slow by design: use it for tests and the
benchmark only.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
import openvino as ov

MAX_RANK = 8
_ROLES = {"Parameter": 1, "Constant": 2, "Result": 3}


def _is_static(ps: ov.PartialShape) -> bool:
    return (not ps.rank.is_dynamic) and all(not d.is_dynamic for d in ps)


def _dims(ps: ov.PartialShape) -> list[int]:
    return [d.get_length() for d in ps]


def _numel(ps: ov.PartialShape) -> int:
    n = 1
    for d in _dims(ps):
        n *= d
    return n


def _port_bytes(et: ov.Type, ps: ov.PartialShape) -> int:
    if et.is_dynamic() or et.get_type_name() == "string" or not _is_static(ps):
        return -1
    bits = et.bitwidth * _numel(ps)
    return -(-bits // 8)


def _node_flops(node, type_name: str) -> float:
    if type_name in _ROLES:
        return 0.0
    ins = [node.get_input_partial_shape(i) for i in range(node.get_input_size())]
    outs = [node.get_output_partial_shape(i) for i in range(node.get_output_size())]
    if not all(_is_static(ps) for ps in ins + outs):
        return -1.0
    in_dims = [_dims(ps) for ps in ins]
    out_dims = [_dims(ps) for ps in outs]
    proxy = float(sum(math.prod(d) for d in out_dims))

    if type_name == "Convolution":
        w = in_dims[1]  # [Cout, Cin, k...]
        return 2.0 * math.prod(out_dims[0]) * w[1] * math.prod(w[2:])
    if type_name == "GroupConvolution":
        w = in_dims[1]  # [G, Cout/G, Cin/G, k...]
        return 2.0 * math.prod(out_dims[0]) * w[2] * math.prod(w[3:])
    if type_name == "ConvolutionBackpropData":
        w = in_dims[1]  # [Cin, Cout, k...]
        return 2.0 * math.prod(in_dims[0]) * w[1] * math.prod(w[2:])
    if type_name == "GroupConvolutionBackpropData":
        w = in_dims[1]  # [G, Cin/G, Cout/G, k...]
        return 2.0 * math.prod(in_dims[0]) * w[2] * math.prod(w[3:])
    if type_name == "MatMul":
        a = in_dims[0]
        if len(a) == 1:
            k = a[0]
        else:
            k = a[-2] if node.get_attributes()["transpose_a"] else a[-1]
        return 2.0 * math.prod(out_dims[0]) * k
    if type_name == "ScaledDotProductAttention":
        q, k, v = in_dims[0], in_dims[1], in_dims[2]
        batch = np.broadcast_shapes(tuple(q[:-2]), tuple(k[:-2]), tuple(v[:-2]))
        b = math.prod(batch)
        length, e, s, ev = q[-2], q[-1], k[-2], v[-1]
        return 2.0 * b * length * s * e + 2.0 * b * length * s * ev
    if type_name == "Einsum":
        eq = node.get_attributes()["equation"].replace(" ", "")
        lhs = eq.split("->")[0]
        if "." in lhs:
            return proxy
        terms = lhs.split(",")
        if len(terms) != len(in_dims) or any(len(t) != len(d) for t, d in zip(terms, in_dims)):
            return proxy
        sizes: dict[str, int] = {}
        for t, d in zip(terms, in_dims):
            for label, size in zip(t, d):
                sizes[label] = max(sizes.get(label, 0), size)
        factor = 1.0 if len(terms) == 1 else 2.0 * (len(terms) - 1)
        return factor * math.prod(sizes.values())
    return proxy


def _fractal(n: int, src: list[int], dst: list[int], radius: int) -> np.ndarray:
    neigh: list[set[int]] = [set() for _ in range(n)]
    for a, b in zip(src, dst):
        if a != b:
            neigh[a].add(b)
            neigh[b].add(a)
    xs = np.log(np.arange(1, radius + 1, dtype=np.float64))
    out = np.zeros(n, dtype=np.float32)
    for v in range(n):
        dist = {v: 0}
        queue = deque([v])
        while queue:
            u = queue.popleft()
            if dist[u] == radius:
                continue
            for w in neigh[u]:
                if w not in dist:
                    dist[w] = dist[u] + 1
                    queue.append(w)
        counts = [sum(1 for d in dist.values() if d <= r) for r in range(1, radius + 1)]
        out[v] = np.polyfit(xs, np.log(np.asarray(counts, dtype=np.float64)), 1)[0]
    return out


def reference_extract(model: ov.Model, pos_dim: int = 16, fractal_radius: int = 4) -> dict:
    """Same keys, dtypes and values as ``_native.extract_graph(model, pos_dim, fractal_radius)``."""
    if pos_dim <= 0 or pos_dim % 2:
        raise ValueError("pos_dim must be a positive even integer")
    if fractal_radius < 2:
        raise ValueError("fractal_radius must be >= 2")
    ops = list(model.get_ordered_ops())
    n = len(ops)
    ids = {op.get_instance_id(): i for i, op in enumerate(ops)}

    names, types, versions, etypes = [], [], [], []
    role = np.zeros(n, np.int8)
    num_outputs = np.zeros(n, np.int32)
    out_rank = np.zeros(n, np.int32)
    out_shape = np.zeros((n, MAX_RANK), np.int64)
    out_bytes = np.zeros(n, np.int64)
    flops = np.zeros(n, np.float64)
    src, dst, sport, dport, ebytes = [], [], [], [], []

    for i, op in enumerate(ops):
        info = op.get_type_info()
        names.append(op.get_friendly_name())
        types.append(info.name)
        versions.append(info.version_id or "")
        role[i] = _ROLES.get(info.name, 0)
        num_outputs[i] = op.get_output_size()
        if op.get_output_size() == 0:
            etypes.append("")
            out_rank[i] = -1
        else:
            etypes.append(op.get_output_element_type(0).get_type_name())
            ps = op.get_output_partial_shape(0)
            if ps.rank.is_dynamic:
                out_rank[i] = -1
            else:
                dims = list(ps)
                out_rank[i] = len(dims)
                for j, d in enumerate(dims[:MAX_RANK]):
                    out_shape[i, j] = -1 if d.is_dynamic else d.get_length()
        per_port = [
            _port_bytes(op.get_output_element_type(k), op.get_output_partial_shape(k))
            for k in range(op.get_output_size())
        ]
        out_bytes[i] = -1 if any(b < 0 for b in per_port) else sum(per_port)
        flops[i] = _node_flops(op, info.name)

        for port, inp in enumerate(op.inputs()):
            so = inp.get_source_output()
            src.append(ids[so.get_node().get_instance_id()])
            dst.append(i)
            sport.append(so.get_index())
            dport.append(port)
            ebytes.append(_port_bytes(so.get_element_type(), so.get_partial_shape()))

    in_degree = np.zeros(n, np.int32)
    out_degree = np.zeros(n, np.int32)
    for a, b in zip(src, dst):
        out_degree[a] += 1
        in_degree[b] += 1

    # Longest path from a source: relax predecessors in topological order.
    preds: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(src, dst):
        preds[b].append(a)
    depth = np.zeros(n, np.int32)
    for v in range(n):
        depth[v] = max((depth[u] + 1 for u in preds[v]), default=0)

    pos_enc = np.zeros((n, pos_dim), np.float32)
    for i in range(n):
        for k in range(pos_dim // 2):
            angle = i / (10000.0 ** (2 * k / pos_dim))
            pos_enc[i, 2 * k] = math.sin(angle)
            pos_enc[i, 2 * k + 1] = math.cos(angle)

    return {
        "names": names,
        "op_types": types,
        "op_versions": versions,
        "role": role,
        "out_element_type": etypes,
        "num_outputs": num_outputs,
        "out_rank": out_rank,
        "out_shape": out_shape,
        "out_bytes": out_bytes,
        "flops": flops,
        "edge_src": np.asarray(src, np.int32),
        "edge_dst": np.asarray(dst, np.int32),
        "edge_src_port": np.asarray(sport, np.int32),
        "edge_dst_port": np.asarray(dport, np.int32),
        "edge_bytes": np.asarray(ebytes, np.int64),
        "in_degree": in_degree,
        "out_degree": out_degree,
        "topo_index": np.arange(n, dtype=np.int32),
        "pos_enc": pos_enc,
        "depth": depth,
        "fractal_dim": _fractal(n, src, dst, fractal_radius),
        "meta": {
            "num_nodes": n,
            "num_edges": len(src),
            "pos_dim": pos_dim,
            "fractal_radius": fractal_radius,
            "max_rank": MAX_RANK,
        },
    }
