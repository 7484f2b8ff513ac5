"""What every picture of a placement needs: the submodels HETERO will run, in order, and the tensors that cross
(the lab's: only the pictures and ``compare`` read a placement this way).

A *submodel* is what HETERO compiles as one part (``submodels.submodel_partition``):
an island of same-device active nodes (compute nodes that are not constant
subgraphs), split where another device feeds it back (a residual skip around
the other device's part) and joined to another island that shares its input,
as HETERO does both. HETERO runs submodels one after
another, in a topological order; :func:`analyze` numbers them in that order
(ties broken by the first node, as HETERO's ordered ops do).

A *transfer* is one producer output read on another device than its producer's,
counted once per (producer output, consumer device) like the simulator and
``CostModel``: Constants and constant subgraphs never cross (the legalizer
copies them beside each consumer) and Results are not inputs. A model input
(Parameter) read on a device other than its own is a transfer from "input".
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np

from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.placement.legalizer import constant_subgraph_mask
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.placement.submodels import submodel_partition


@dataclasses.dataclass(frozen=True)
class Transfer:
    """One tensor crossing devices: producer submodel (-1: model input) -> consumer submodel."""

    src_submodel: int
    dst_submodel: int
    producer: int  # node index of the producer
    nbytes: int


@dataclasses.dataclass(frozen=True, eq=False)
class PlacedGraph:
    """A placement laid over its graph: device per node, submodels in execution order, transfers."""

    graph: GraphArrays
    devices: tuple[str, ...]
    device: np.ndarray  # int64 [N], index into devices
    active: np.ndarray  # bool [N]
    submodel: np.ndarray  # int64 [N], execution-order submodel of each active node, -1 elsewhere
    submodel_device: np.ndarray  # int64 [S]
    transfers: tuple[Transfer, ...]
    strategy: str
    islands: int  # same-device islands (submodels.count_islands); differs from the submodels as above

    @property
    def num_submodels(self) -> int:
        return int(self.submodel_device.size)

    def submodel_nodes(self, s: int) -> np.ndarray:
        return np.flatnonzero(self.submodel == s)

    def op_type_counts(self, nodes: np.ndarray) -> Counter:
        return Counter(self.graph.op_types[i] for i in nodes.tolist())


def check_placement_matches(placement: Placement, graph: GraphArrays, *, source: str = "the placement") -> None:
    """Raise PlacementError naming the mismatch when ``placement`` was made for another model or devices."""
    names = set(graph.names)
    placed = set(placement.assignment)
    missing = [n for n in graph.names if n not in placed]
    extra = sorted(placed - names)
    if missing or extra:
        detail = []
        if missing:
            detail.append(f"{len(missing)} of the model's {len(names)} nodes are not in it (e.g. {missing[:3]})")
        if extra:
            detail.append(f"{len(extra)} of its {len(placed)} nodes are not in the model (e.g. {extra[:3]})")
        raise PlacementError(f"{source} was made for another model: " + "; ".join(detail) +
                             ". Place this model again (ov-autoplace place -m MODEL -o placement.json) "
                             "and draw that placement")
    unknown = sorted({d for d in placement.assignment.values() if d not in placement.devices})
    if unknown:
        raise PlacementError(f"{source} assigns nodes to {unknown}, which are not among its devices "
                             f"{list(placement.devices)}; the file is inconsistent, place the model again")


def analyze(graph: GraphArrays, placement: Placement) -> PlacedGraph:
    """Lay ``placement`` over ``graph`` (the prepared model's arrays); raises PlacementError on a mismatch."""
    check_placement_matches(placement, graph)
    device = placement.device_indices(graph.names)
    role = np.asarray(graph.role)
    follower = constant_subgraph_mask(graph)
    active = (role == NodeRole.COMPUTE) & ~follower
    partition = submodel_partition(graph, device, active)
    return _placed(graph, placement, device, active, partition.submodel, partition.islands)


def _placed(graph: GraphArrays, placement: Placement, device: np.ndarray, active: np.ndarray, submodel: np.ndarray,
            islands: int) -> PlacedGraph:
    """The PlacedGraph of a given partition (submodel numbers in execution order): devices and transfers."""
    role = np.asarray(graph.role)
    follower = constant_subgraph_mask(graph)
    submodel_device = np.zeros(int(submodel.max(initial=-1)) + 1, dtype=np.int64)
    submodel_device[submodel[active]] = device[active]
    transfers = []
    seen: set[tuple[int, int, int]] = set()
    src, dst, port = graph.edge_src.tolist(), graph.edge_dst.tolist(), graph.edge_src_port.tolist()
    nbytes = np.maximum(np.asarray(graph.edge_bytes), 0).tolist()
    for e in np.argsort([submodel[t] for t in dst], kind="stable").tolist():  # first consumer submodel first
        s, t = src[e], dst[e]
        if follower[s] or role[t] == NodeRole.RESULT or device[s] == device[t] or not active[t]:
            continue
        key = (s, port[e], int(device[t]))
        if key in seen:  # the simulator pays once per (output, consumer device)
            continue
        seen.add(key)
        transfers.append(Transfer(int(submodel[s]) if active[s] else -1, int(submodel[t]), s, int(nbytes[e])))
    return PlacedGraph(graph, tuple(placement.devices), device, active, submodel, submodel_device,
                       tuple(transfers), placement.strategy, islands)


def with_partition(placed: PlacedGraph, placement: Placement, submodel_of_node: np.ndarray) -> PlacedGraph:
    """``placed`` with another partition into submodels (numbered in execution order, -1 outside)."""
    return _placed(placed.graph, placement, placed.device, placed.active, np.asarray(submodel_of_node, np.int64),
                   placed.islands)


def repartition(placed: PlacedGraph, placement: Placement, subgraph_of_node: np.ndarray) -> PlacedGraph:
    """``placed`` with HETERO's own partition: ``subgraph_of_node`` holds HETERO's subgraph number (its
    execution order) of each active node, -1 where unknown; unknown nodes join the subgraph most known
    nodes of their own submodel are in, on the same device, else stay a submodel of their own."""
    known = np.asarray(subgraph_of_node, dtype=np.int64)
    key = np.full(placed.graph.num_nodes, -1.0)
    for s in range(placed.num_submodels):
        members = placed.submodel_nodes(s)
        named = members[known[members] >= 0]
        same = named[placed.device[named] == placed.submodel_device[s]]
        fallback = float(np.bincount(known[same]).argmax()) if same.size else None
        for i in members.tolist():
            if known[i] >= 0:
                key[i] = known[i]
            else:  # a fused or renamed node: its submodel's HETERO subgraph, or just after the known ones
                key[i] = fallback if fallback is not None else 1e6 + s
    active = placed.active
    order = {k: n for n, k in enumerate(sorted(set(key[active].tolist())))}
    submodel = np.array([order[k] if a else -1 for k, a in zip(key.tolist(), active.tolist())], dtype=np.int64)
    return _placed(placed.graph, placement, placed.device, active, submodel, placed.islands)


def group_label(graph: GraphArrays, nodes: np.ndarray, *, max_types: int = 2) -> str:
    """Main op types of ``nodes`` by FLOPs then count, e.g. ``MatMul x4, Softmax``."""
    counts = Counter(graph.op_types[i] for i in nodes.tolist())
    flops: Counter = Counter()
    for i in nodes.tolist():
        flops[graph.op_types[i]] += max(float(graph.flops[i]), 0.0)
    ranked = sorted(counts, key=lambda t: (-flops[t], -counts[t], t))[:max_types]
    return ", ".join(f"{t} x{counts[t]}" if counts[t] > 1 else t for t in ranked)


def name_scope(graph: GraphArrays, nodes: np.ndarray) -> str:
    """The model scope the nodes share, e.g. ``encoder.layer.3.attention`` (empty when none).

    Friendly names from PyTorch conversion look like ``__module.encoder.layer.3.attention.self/aten::linear/MatMul``;
    the scope is the common dotted prefix of the module paths, or the first..last span when it differs only
    in a layer number (``encoder.layer.0-5``).
    """
    paths = []
    for i in nodes.tolist():
        name = graph.names[i]
        head = name.split("/")[0]
        if head.startswith("__module."):
            paths.append(head[len("__module."):].split("."))
    if not paths:
        return ""
    common = []
    for parts in zip(*paths):
        if all(p == parts[0] for p in parts):
            common.append(parts[0])
        else:
            first, last = paths[0][len(common)], paths[-1][len(common)]
            if first.isdigit() and last.isdigit() and first != last:
                common.append(f"{first}-{last}")
            break
    return ".".join(common)


__all__ = ["PlacedGraph", "Transfer", "analyze", "check_placement_matches", "group_label", "name_scope",
           "repartition", "with_partition"]
