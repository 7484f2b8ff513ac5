"""Step 3 of ``legalizer.py``: merge a placement until HETERO compiles at most ``bound`` submodels.

More: docs/architecture.md, "Module notes".
"""

from __future__ import annotations

import heapq

import numpy as np

from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.model.quant_patterns import quantization_groups
from ov_autoplace.placement.submodels import SubmodelPartition, count_hetero_submodels, count_islands, edge_lists, \
    island_roots, island_sets, submodel_partition

#: Submodel moves x graph nodes before the merge halves the island target instead: 144 moves on the 1,737-node GRU.
MERGE_BUDGET_NODE_MOVES = 250_000
#: Placements priced x graph nodes before the priced moves leave the rest to the flops order (docs/training.md).
PRICED_BUDGET_NODE_PRICINGS = 2_000_000
#: Single submodels moved without a new fewest count before whole islands move (architecture.md, "Module notes").
STALLED_SUBMODEL_MOVES = 3
#: Island moves in batches (module notes); False: one per pricing, what ``bench_priced_walk.py`` compares against.
HALVE_ISLAND_MOVES = True


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


def follow_consumers(graph: GraphArrays, device: np.ndarray, active: np.ndarray,
                      pinned_anchor: np.ndarray) -> np.ndarray:
    """Steps 4 and 5 of the legalizer (docs/architecture.md, "Module notes"): the whole placement from the active
    nodes' devices. More: docs/architecture.md, "Module notes", merge_to_bound.py."""
    lists = edge_lists(graph)
    consumers, is_result = lists.consumers, lists.is_result
    src, dst = graph.edge_src, graph.edge_dst
    follows = ~(active | (graph.role == NodeRole.RESULT) | pinned_anchor)
    dev = np.asarray(device, dtype=np.int64).copy()
    votes = follows[src] & (graph.role[dst] != NodeRole.RESULT)  # edges from a follower to what it follows
    chained = np.zeros(graph.num_nodes, bool)
    chained[src[votes & follows[dst]]] = True  # a consumer is a follower too: its device is not known yet
    counted = votes & ~chained[src] & (dev[dst] >= 0)
    count = np.zeros((graph.num_nodes, max(int(dev.max(initial=0)) + 1, 1)), np.int64)
    np.add.at(count, (src[counted], dev[dst[counted]]), 1)
    simple = follows & ~chained
    dev[simple] = np.where(count[simple].any(axis=1), count[simple].argmax(axis=1), 0)  # argmax: lowest on a tie
    # Plain lists in this loop: numpy scalars and enum lookups per element made it 2x slower.
    dev_list = dev.tolist()
    for i in np.flatnonzero(follows & chained)[::-1].tolist():
        ballot = [dev_list[j] for j in consumers[i] if dev_list[j] >= 0 and not is_result[j]]
        dev_list[i] = max(set(ballot), key=lambda d: (ballot.count(d), -d)) if ballot else 0
    dev = np.asarray(dev_list, dtype=np.int64)
    into = lists.to_result[~pinned_anchor[dst[lists.to_result]]]  # Results: their producer's
    dev[dst[into]] = dev[src[into]]
    return dev


def _with_groups(nodes: np.ndarray, groups: list[list[int]], group_of: np.ndarray) -> np.ndarray:
    """``nodes`` and every quantization group they touch (the groups stay on one device, step 2b)."""
    if not groups:
        return nodes
    touched = np.unique(group_of[nodes][group_of[nodes] >= 0])
    if touched.size:
        nodes = np.union1d(nodes, np.concatenate([np.asarray(groups[k]) for k in touched.tolist()]))
    return nodes


def _group_index(graph, groups: list[list[int]]) -> np.ndarray:
    group_of = np.full(graph.num_nodes, -1, dtype=np.int64)
    for k, members in enumerate(groups):
        group_of[members] = k
    return group_of


def _neighbour_devices(sub, device, active, src, dst, locked, support):
    """(submodel p, its active nodes, its neighbours' devices, none locked, which devices support all) for every
    submodel in order, in a few passes over all nodes and edges (module notes)."""
    nodes = np.flatnonzero(active)
    nodes = nodes[np.argsort(sub.submodel[nodes], kind="stable")]
    node_starts = np.searchsorted(sub.submodel[nodes], np.arange(sub.num_submodels + 1))
    part_src, part_dst = sub.submodel[src], sub.submodel[dst]
    between = part_src != part_dst
    num_devices = int(device.max()) + 1 if device.size else 1
    pairs = np.unique(np.concatenate([part_src[between] * num_devices + device[dst[between]],
                                      part_dst[between] * num_devices + device[src[between]]]))
    part, target = pairs // num_devices, pairs % num_devices
    starts = np.searchsorted(part, np.arange(sub.num_submodels + 1))
    free = (~np.logical_or.reduceat(np.append(locked[nodes], False), node_starts[:-1])).tolist()
    takes = np.logical_and.reduceat(np.vstack([support[nodes], support[:1] | True]), node_starts[:-1]).tolist()
    for p in range(sub.num_submodels):
        yield p, nodes[node_starts[p]:node_starts[p + 1]], target[starts[p]:starts[p + 1]].tolist(), free[p], takes[p]


def _island_partition(graph, device: np.ndarray, active: np.ndarray) -> SubmodelPartition:
    """The same-device islands as parts to move (not in execution order): each move joins islands."""
    _, inverse = np.unique(island_roots(graph, device, active)[active], return_inverse=True)
    island = np.full(graph.num_nodes, -1, dtype=np.int64)
    island[active] = inverse
    island_device = np.zeros(int(inverse.max(initial=-1)) + 1, dtype=np.int64)
    island_device[inverse] = device[active]
    return SubmodelPartition(submodel=island, device=island_device, islands=island_device.size)


def _priced_moves(graph, device, active, support, locked, pinned_anchor, bound, price, budget, pins) -> int:
    """Move whole HETERO submodels to a neighbouring device (in place on ``device``), each time the move
    ``price`` predicts fastest, until the split fits ``bound``; returns the moves made (module notes)."""
    groups = quantization_groups(graph, active)
    group_of = _group_index(graph, groups)
    both = active[graph.edge_src] & active[graph.edge_dst]
    src, dst = graph.edge_src[both], graph.edge_dst[both]
    moves = priced = stalled = 0
    fewest, left, halving, undo = np.inf, {device[active].tobytes()}, HALVE_ISLAND_MOVES, None
    while (moves + 1) * graph.num_nodes <= budget:
        sub = submodel_partition(graph, follow_consumers(graph, device, active, pinned_anchor), active)
        if sub.num_submodels <= bound and undo is not None:
            # a batch reached the bound: from before it, one move at a time (module notes)
            left.discard(device[active].tobytes())
            device[:], (stalled, fewest, moves), halving, undo = undo[0], undo[1], False, None
            continue
        if sub.num_submodels <= bound:
            break
        state = (stalled, fewest, moves)
        stalled, fewest = (0, sub.num_submodels) if sub.num_submodels < fewest else (stalled + 1, fewest)
        by_islands = stalled >= STALLED_SUBMODEL_MOVES
        if by_islands:
            sub = _island_partition(graph, device, active)
        rows, parts = [], []
        for p, members, targets, free, takes in _neighbour_devices(sub, device, active, src, dst, locked, support):
            nodes = _with_groups(members, groups, group_of)
            if groups:  # the part with the quantization groups it touches
                free, takes = not locked[nodes].any(), support[nodes].all(axis=0).tolist()
            if not free:
                continue
            for d in targets:
                if d != sub.device[p] and takes[d]:
                    row = device.copy()
                    row[nodes] = d
                    if row[active].tobytes() not in left:
                        rows.append(row)
                        parts.append(p)
        priced += len(rows) + 1
        if not rows or priced * graph.num_nodes > PRICED_BUDGET_NODE_PRICINGS:
            break
        rows = np.stack(rows)
        ms = price(np.concatenate([device[None], rows]))  # with the placement itself: does it overflow?
        fitted = not np.isfinite(ms[0]) or not np.isfinite(ms[1:]).any()
        if fitted:
            ms = np.concatenate([ms[:1], price(rows, fitted=True, pins=pins, max_submodels=bound)])
        order = np.argsort(ms[1:], kind="stable")
        before, undo = device.copy(), None
        device[:] = rows[order[0]]
        moves += 1
        if by_islands and not fitted and halving:
            added, batches = _halve_islands(device, before, rows, parts, ms[1:], order, sub, src, dst, price, ms[0],
                                            active, left)
            moves, priced, undo = moves + added, priced + batches, (before, state) if added else None
        left.add(device[active].tobytes())
    return moves


def _halve_islands(device, before, rows, parts, ms, order, islands: SubmodelPartition, src, dst, price,
                   current_ms: float, active, left: set[bytes]) -> tuple[int, int]:
    """More island moves of the pricing whose fastest move ``device`` has taken, kept as one batch where a second
    pricing says they do not interact (docs/architecture.md, "Module notes"); (moves added, placements priced)."""
    a, b = islands.submodel[src], islands.submodel[dst]
    a, b = a[a != b], b[a != b]
    near: dict[int, set[int]] = {}  # each island with the islands it shares an edge with
    for x, y in zip(np.concatenate([a, b]).tolist(), np.concatenate([b, a]).tolist()):
        near.setdefault(x, {x}).add(y)
    chosen, touched = [], set()
    for k in order.tolist():  # the fastest first, each of an island that neither moved nor touches one that did
        if len(chosen) >= islands.num_submodels // 2 or not np.isfinite(ms[k]):
            break
        if parts[k] not in touched:
            chosen.append(k)
            touched |= near.get(parts[k], {parts[k]})
    sizes = [len(chosen) >> j for j in range(len(chosen).bit_length()) if len(chosen) >> j >= 2]
    if not sizes:
        return 0, 0
    moved = [rows[k] != before for k in chosen]  # each island's nodes (with the quantization groups they touch)
    batches = np.repeat(before[None], len(sizes), axis=0)
    for batch, size in zip(batches, sizes):
        for k, nodes in zip(chosen[:size], moved):
            batch[nodes] = rows[k][nodes]
    for batch, size, ms_together in zip(batches, sizes, price(batches)):  # the largest batch first
        alone = current_ms + float(np.sum(ms[chosen[:size]] - current_ms))
        if ms_together <= alone + 1e-9 * abs(alone) and batch[active].tobytes() not in left:
            device[:] = batch
            return size - 1, len(sizes)
    return 0, len(sizes)


def _move_one_part(graph, device, active, support, locked, partition, groups: list[list[int]]) -> bool:
    """Move the lightest HETERO submodel that can move to the neighbouring device it exchanges most bytes
    with (in place on ``device``), with every quantization group it touches (``groups``: they stay on one
    device, step 2b); False when none can (pinned, or no neighbour device supports it)."""
    group_of = _group_index(graph, groups)
    weight = np.maximum(graph.flops, 0.0) + 1.0
    sub = partition.submodel
    order = np.argsort(np.bincount(sub[active], weights=weight[active], minlength=partition.num_submodels),
                       kind="stable")
    src, dst = graph.edge_src, graph.edge_dst
    both = active[src] & active[dst]
    src, dst = src[both], dst[both]
    nbytes = np.maximum(graph.edge_bytes[both], 1).astype(np.float64)
    for p in order.tolist():
        nodes = _with_groups(np.flatnonzero(sub == p), groups, group_of)
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


def merge_to_bound(graph, device, active, support, locked, pinned_anchor, bound, notes: list[str] | None = None,
                    budget: float | None = None, price=None, pins=()) -> tuple[np.ndarray, int]:
    """Merge (in place on ``device``) until HETERO's submodels fit ``bound``; (whole placement, count). The order of
    the merges, ``budget`` and ``price``: docs/architecture.md, "Module notes"."""
    budget = MERGE_BUDGET_NODE_MOVES if budget is None else budget
    if price is not None:
        priced = _priced_moves(graph, device, active, support, locked, pinned_anchor, bound, price, budget, pins)
        budget -= priced * graph.num_nodes
        if notes is not None and priced:
            notes.append(f"{priced} submodel move(s) priced on the cost model")
    _merge_islands(graph, device, active, support, locked, bound)
    full = follow_consumers(graph, device, active, pinned_anchor)
    partition = submodel_partition(graph, full, active)
    groups = quantization_groups(graph, active) if partition.num_submodels > bound else []
    moves, over_budget, fewest, stalled = 0, False, partition.num_submodels, 0
    for _ in range(partition.num_submodels):
        if partition.num_submodels <= bound or stalled >= STALLED_SUBMODEL_MOVES:  # the islands' merge goes on
            break
        if (moves + 1) * graph.num_nodes > budget:
            over_budget = True
            break
        if not _move_one_part(graph, device, active, support, locked, partition, groups):
            break
        moves += 1
        full = follow_consumers(graph, device, active, pinned_anchor)
        partition = submodel_partition(graph, full, active)
        stalled, fewest = (0, partition.num_submodels) if partition.num_submodels < fewest else (stalled + 1, fewest)
    submodels = partition.num_submodels
    islands = count_islands(graph, device, active)
    while submodels > bound and islands > 1:
        target = max(1, islands // 2) if over_budget else islands - 1
        merged = _merge_islands(graph, device, active, support, locked, target)
        full = follow_consumers(graph, device, active, pinned_anchor)
        submodels = count_hetero_submodels(graph, full, active)
        if merged > target:
            break  # nothing left that can move
        islands = merged
    if over_budget and notes is not None:
        notes.append(f"submodel merge over its budget after {moves} move(s) ({budget:g} moves x nodes): islands "
                     f"merged in halving steps")
    return full, submodels
