"""Turn any node -> device assignment into one HETERO compiles and runs.

A strategy (heuristic, learned policy, random) proposes a device for every
compute node; it need not know HETERO's rules. The legalizer then, in order:

1. applies user pins (exact name, ``fnmatch`` name pattern, or op type);
2. moves nodes a device cannot run (per ``core.query_model``) to the first
   device, in priority order, that can - or raises UnsupportedOpError;
2b. keeps quantization patterns (FakeQuantize and the op it feeds, int8
   dequantization chains) on one device (``quant_patterns``), so int8 ops stay int8;
3. optionally merges the smallest same-device islands into a neighbour until
   HETERO compiles at most ``max_submodels`` submodels (each costs a submodel
   switch and two tensor copies at run time; an island that another device
   feeds back is more than one, ``submodels.py``) - but never below what the
   devices' op support itself forces (:func:`effective_max_submodels`);
4. puts Constants (and pure-constant subgraphs, e.g. weight decompression) and
   Parameters on the device of their consumers - a Constant on another device
   than its consumer made HETERO fail with "Can't set the input tensor";
5. puts Results on their producer's device.
"""

from __future__ import annotations

import heapq
from typing import Sequence

import numpy as np
import openvino as ov

from ov_autoplace.errors import PinError, PlacementError, UnsupportedOpError
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.model.quant_patterns import keep_groups_together, quantization_groups
from ov_autoplace.placement.submodels import count_hetero_submodels, count_islands, island_sets, submodel_partition
from ov_autoplace.placement.pins import Pin, parse_pins, unmatched_pin_message


def _plugin_identity(core: ov.Core, device: str) -> tuple[str, str] | None:
    try:
        version = core.get_versions(device)[device]
        return version.description, version.build_number
    except Exception:  # noqa: BLE001 - unknown: query this device on its own
        return None


def query_support(core: ov.Core, model: ov.Model, graph: GraphArrays, devices: Sequence[str]) -> np.ndarray:
    """Boolean (nodes x devices): can device d run node i? From ``core.query_model``.

    Parameters, Constants and Results are placeable anywhere. Devices served
    by the same plugin build (a virtual device and the device it clones) are
    queried once: which ops a plugin supports does not depend on its
    properties, and ``query_model`` runs the plugin's transformations, which
    on a 20,000-node graph takes seconds per call.
    """
    support = np.zeros((graph.num_nodes, len(devices)), dtype=bool)
    index = {name: i for i, name in enumerate(graph.names)}
    queried: dict[tuple[str, str], int] = {}
    for d, device in enumerate(devices):
        identity = _plugin_identity(core, device)
        if identity is not None and identity in queried:
            support[:, d] = support[:, queried[identity]]
            continue
        for name in core.query_model(model, device):
            i = index.get(name)
            if i is not None:
                support[i, d] = True
        if identity is not None:
            queried[identity] = d
    support[graph.role != NodeRole.COMPUTE] = True
    return support


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


def effective_max_submodels(graph: GraphArrays, support: np.ndarray,
                            max_submodels: int | None) -> tuple[int | None, str | None]:
    """The submodel bound every placement method enforces: ``max(max_submodels, forced)`` and a note when it
    raises the bound (else None).

    ``forced`` is HETERO's submodel count (``submodels.py``) of the support-forced placement: every active
    node on the first device in priority order that supports it, which is what HETERO without affinities
    does. When a device lacks ops a model needs, that split is unavoidable for anyone who wants to use the
    device; a bound below it would force supported ops off the device only to save submodels its op support
    creates, and make every bounded method slower than plain HETERO. ``support``: bool [N, D], as given to
    :func:`legalize`. ``None`` (no bound) stays None.
    """
    if max_submodels is None:
        return None, None
    compute = graph.role == NodeRole.COMPUTE
    return _effective_bound(graph, support, compute & ~(constant_subgraph_mask(graph) & compute), max_submodels)


def _effective_bound(graph: GraphArrays, support: np.ndarray, active: np.ndarray,
                     max_submodels: int) -> tuple[int, str | None]:
    """:func:`effective_max_submodels` given the active nodes (``legalize`` has them already)."""
    if max_submodels < 1:
        raise PlacementError(f"max_submodels must be >= 1, got {max_submodels}")
    forced_device = np.where(active, np.argmax(np.asarray(support, bool), axis=1), -1)
    forced_whole = _follow_consumers(graph, forced_device, active, np.zeros_like(active))
    forced = count_hetero_submodels(graph, forced_whole, active)
    if forced <= max_submodels:
        return max_submodels, None
    return forced, (f"the devices' op support forces {forced} submodels; bound raised from {max_submodels} "
                    f"to {forced}")


def _merge_islands(graph, device, active, support, locked, max_submodels) -> int:
    """Greedily move the lightest unlocked island to its best-connected neighbour device."""
    uf = island_sets(graph, device, active)
    members: dict[int, list[int]] = {}
    for i in np.flatnonzero(active).tolist():
        members.setdefault(uf.find(i), []).append(i)
    weight = np.maximum(graph.flops, 0.0) + 1.0
    island_weight = {root: float(weight[m].sum()) for root, m in members.items()}
    heap = [(w, root) for root, w in island_weight.items()]
    heapq.heapify(heap)
    src, dst = graph.edge_src.tolist(), graph.edge_dst.tolist()
    edge_bytes = np.maximum(graph.edge_bytes, 1).tolist()
    adjacency: list[list[int]] = [[] for _ in range(graph.num_nodes)]
    for e, (s, t) in enumerate(zip(src, dst)):
        adjacency[s].append(e)
        adjacency[t].append(e)
    count = len(members)
    while count > max_submodels and heap:
        w, root = heapq.heappop(heap)
        if uf.find(root) != root or island_weight.get(root) != w:
            continue  # stale heap entry (the island has been merged or has grown since)
        nodes = members[root]
        if locked[nodes].any():
            continue
        traffic: dict[int, float] = {}
        for i in nodes:
            for e in adjacency[i]:
                j = dst[e] if src[e] == i else src[e]
                if active[j] and uf.find(j) != root:
                    traffic[device[j]] = traffic.get(device[j], 0.0) + edge_bytes[e]
        for target in sorted(traffic, key=lambda d: -traffic[d]):
            if support[nodes, target].all():
                break
        else:
            continue  # no neighbour device can take the whole island; leave it
        device[nodes] = target
        merged = {root}
        for i in nodes:
            for e in adjacency[i]:
                j = dst[e] if src[e] == i else src[e]
                if active[j] and device[j] == target:
                    rj = uf.find(j)
                    if rj not in merged:
                        merged.add(rj)
        new_root = root
        for r in merged - {root}:
            new_root = uf.union(new_root, r)
            new_root = uf.find(new_root)
        # Extend the largest member list in place: re-copying the growing island would be quadratic.
        parts = sorted((members.pop(r) for r in merged), key=len, reverse=True)
        combined = parts[0]
        for part in parts[1:]:
            combined.extend(part)
        members[new_root] = combined
        total = sum(island_weight.pop(r) for r in merged)
        island_weight[new_root] = total
        count -= len(merged) - 1
        heapq.heappush(heap, (total, new_root))
    return count


def _follow_consumers(graph: GraphArrays, device: np.ndarray, active: np.ndarray,
                      pinned_anchor: np.ndarray) -> np.ndarray:
    """Steps 4 and 5 of the module docstring: the whole placement from the active nodes' devices."""
    n = graph.num_nodes
    consumers: list[list[int]] = [[] for _ in range(n)]
    for s, t in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()):
        consumers[s].append(t)
    # Plain lists in these loops: numpy scalars and enum lookups per element made them 2x slower, and a cached
    # placement is re-legalized on every warm start.
    is_result = (graph.role == NodeRole.RESULT).tolist()
    skip = (active | (graph.role == NodeRole.RESULT) | pinned_anchor).tolist()
    pinned = pinned_anchor.tolist()
    dev = np.asarray(device).tolist()
    for i in range(n - 1, -1, -1):  # Constants, constant subgraphs, Parameters: their consumers' majority
        if skip[i]:
            continue
        votes = [dev[j] for j in consumers[i] if dev[j] >= 0 and not is_result[j]]
        dev[i] = max(set(votes), key=lambda d: (votes.count(d), -d)) if votes else 0
    for s, t in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()):  # Results: their producer
        if is_result[t] and not pinned[t]:
            dev[t] = dev[s]
    return np.asarray(dev, dtype=np.int64)


def _move_one_part(graph, device, active, support, locked, partition, groups: list[list[int]]) -> bool:
    """Move the lightest HETERO submodel that can move to the neighbouring device it exchanges most bytes
    with (in place on ``device``), with every quantization group it touches (``groups``: they stay on one
    device, step 2b); False when none can (pinned, or no neighbour device supports it)."""
    group_of = np.full(graph.num_nodes, -1, dtype=np.int64)
    for k, members in enumerate(groups):
        group_of[members] = k
    weight = np.maximum(graph.flops, 0.0) + 1.0
    sub = partition.submodel
    order = np.argsort(np.bincount(sub[active], weights=weight[active], minlength=partition.num_submodels),
                       kind="stable")
    src, dst = graph.edge_src, graph.edge_dst
    both = active[src] & active[dst]
    src, dst = src[both], dst[both]
    nbytes = np.maximum(graph.edge_bytes[both], 1).astype(np.float64)
    for p in order.tolist():
        nodes = np.flatnonzero(sub == p)
        touched = np.unique(group_of[nodes][group_of[nodes] >= 0])
        if touched.size:
            nodes = np.union1d(nodes, np.concatenate([np.asarray(groups[k]) for k in touched.tolist()]))
        if locked[nodes].any():
            continue
        own = int(partition.device[p])
        inside_src, inside_dst = sub[src] == p, sub[dst] == p
        other = np.concatenate([dst[inside_src & ~inside_dst], src[inside_dst & ~inside_src]])
        traffic = np.concatenate([nbytes[inside_src & ~inside_dst], nbytes[inside_dst & ~inside_src]])
        per_device = np.bincount(device[other], weights=traffic, minlength=support.shape[1])
        per_device[own] = -1.0
        for target in np.argsort(-per_device, kind="stable").tolist():
            if per_device[target] <= 0:
                break
            if support[nodes, target].all():
                device[nodes] = target
                return True
    return False


def _merge_to_bound(graph, device, active, support, locked, pinned_anchor, bound) -> tuple[np.ndarray, int]:
    """Merge (in place on ``device``) until HETERO's submodels fit ``bound``; (whole placement, count).

    First the islands, down to ``bound`` (cheap, and they never outnumber the submodels by much). An island
    that another device feeds back is more than one submodel, and merging whole islands does not remove those
    splits (the feedback stays), so then the lightest submodel moves to its neighbours' device, one at a
    time with HETERO's count taken after each. Should that not get there in as many moves as there were
    submodels, the islands are merged further, down to one device if need be.
    """
    _merge_islands(graph, device, active, support, locked, bound)
    full = _follow_consumers(graph, device, active, pinned_anchor)
    partition = submodel_partition(graph, full, active)
    groups = quantization_groups(graph, active) if partition.num_submodels > bound else []
    for _ in range(partition.num_submodels):
        if partition.num_submodels <= bound or not _move_one_part(graph, device, active, support, locked,
                                                                  partition, groups):
            break
        full = _follow_consumers(graph, device, active, pinned_anchor)
        partition = submodel_partition(graph, full, active)
    submodels = partition.num_submodels
    target = count_islands(graph, device, active) - 1
    while submodels > bound and target >= 1:
        islands = _merge_islands(graph, device, active, support, locked, target)
        full = _follow_consumers(graph, device, active, pinned_anchor)
        submodels = count_hetero_submodels(graph, full, active)
        if islands > target:
            break  # nothing left that can move
        target = islands - 1
    return full, submodels


def legalize(
    graph: GraphArrays,
    proposal: np.ndarray,
    devices: Sequence[str],
    support: np.ndarray,
    *,
    pins: Sequence[Pin] = (),
    max_submodels: int | None = None,
    strategy: str = "unknown",
) -> Placement:
    """Make ``proposal`` (device index per node; ignored for non-compute nodes) legal for HETERO."""
    n, num_devices = graph.num_nodes, len(devices)
    proposal = np.asarray(proposal)
    if proposal.shape != (n,):
        raise PlacementError(f"proposal must have one device index per node: expected shape ({n},), got {proposal.shape}")
    if num_devices == 0:
        raise PlacementError("no devices to place on")
    if support.shape != (n, num_devices):
        raise PlacementError(f"support must be ({n}, {num_devices}), got {support.shape}")
    compute = graph.role == NodeRole.COMPUTE
    follower = constant_subgraph_mask(graph) & compute
    active = compute & ~follower
    device = np.where(active, proposal, -1).astype(np.int64)
    bad = active & ((device < 0) | (device >= num_devices))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PlacementError(
            f"proposal gives node {graph.names[i]!r} device index {int(proposal[i])}; expected 0..{num_devices - 1}"
        )
    notes: list[str] = []

    # 1. pins
    locked = np.zeros(n, dtype=bool)
    for pin in pins:
        if pin.device not in devices:
            raise PinError(f"pin {pin} names device {pin.device!r}, which is not in {list(devices)}; "
                           f"pin to one of {list(devices)}")
        d = devices.index(pin.device)
        hits = [i for i in range(n) if pin.matches(graph.names[i], graph.op_types[i])]
        if not hits:  # a typo in the user's own request: say so rather than place as if it were not there
            raise PinError(unmatched_pin_message(pin, graph))
        for i in hits:
            if not support[i, d]:
                raise UnsupportedOpError(
                    f"node {graph.names[i]!r} ({graph.op_types[i]}) is pinned to {pin.device}, which cannot run it; "
                    f"devices that can: {[devices[k] for k in np.flatnonzero(support[i])] or 'none'}"
                )
            device[i] = d
            locked[i] = True
    pinned_anchor = locked & ~active

    # 2. device support
    unsupported = active & (device >= 0)
    unsupported[unsupported] = ~support[np.flatnonzero(unsupported), device[unsupported]]
    if unsupported.any():
        nowhere = [i for i in np.flatnonzero(unsupported) if not support[i].any()]
        if nowhere:
            listed = ", ".join(f"{graph.names[i]!r} ({graph.op_types[i]})" for i in nowhere[:10])
            raise UnsupportedOpError(
                f"{len(nowhere)} node(s) are supported by none of {list(devices)}: {listed}"
                f"{' ...' if len(nowhere) > 10 else ''}. Add a device that supports them (CPU runs every opset op)"
            )
        moved = np.flatnonzero(unsupported)
        device[moved] = np.argmax(support[moved], axis=1)  # first supporting device in priority order
        notes.append(f"{len(moved)} node(s) moved to a device that supports them")

    # 2b. quantization patterns on one device (a split FakeQuantize -> Convolution runs in f32)
    regrouped = keep_groups_together(graph, device, active, support, locked)
    if regrouped:
        notes.append(f"{regrouped} node(s) moved to keep quantization patterns on one device")

    # 3. submodel bound: merge islands until HETERO's split of the whole placement fits
    full = _follow_consumers(graph, device, active, pinned_anchor)
    num_submodels = count_hetero_submodels(graph, full, active)
    if max_submodels is not None and num_submodels > max_submodels:
        bound, raised = _effective_bound(graph, support, active, max_submodels)
        if raised:
            notes.append(raised)
        if num_submodels > bound:
            before = num_submodels
            full, num_submodels = _merge_to_bound(graph, device, active, support, locked, pinned_anchor, bound)
            notes.append(f"merged islands: {before} -> {num_submodels} submodels (bound {bound})")
    device = full

    assignment = {graph.names[i]: devices[int(device[i])] for i in range(n)}
    if len(assignment) != n:
        raise PlacementError("node friendly names are not unique; HETERO affinities need unique names")
    return Placement(
        assignment=assignment,
        devices=tuple(devices),
        strategy=strategy,
        compute_nodes=frozenset(graph.names[i] for i in np.flatnonzero(compute)),
        num_submodels=num_submodels,
        notes=notes,
    )


__all__ = ["Pin", "constant_subgraph_mask", "effective_max_submodels", "legalize", "parse_pins",
           "query_support"]
