"""What HETERO (OpenVINO 2026.4) needs of a model that holds state (ReadValue / Assign: an LLM's KV cache), and
of a dynamic one's shape values.

The rules, what HETERO says when each is broken and what the legalizer does: docs/architecture.md, "Stateful
models"; this module's notes: its "Module notes".
"""

from __future__ import annotations

import dataclasses
import weakref

import numpy as np

from ov_autoplace.errors import PinError
from ov_autoplace.graph.arrays import GraphArrays, NodeRole, constant_subgraph_mask
from ov_autoplace.graph.components import reach
from ov_autoplace.placement.assignment import fill_by_neighbours
from ov_autoplace.placement.merge_to_bound import follow_consumers
from ov_autoplace.placement.submodels import move_parameters_to_fewest_parts, submodel_partition

#: How a WARNING or a note names the rules (the fallbacks' messages quote it).
ONE_DEVICE_RULE = ("stateful rules 1 and 3 (a variable's ReadValue, its own initializer, the nodes between it and its "
                   "Assign, and the Assign on one device)")
ONE_SUBMODEL_RULE = "stateful rule 2 (a variable's ReadValue and Assign in one HETERO submodel)"
REENTRY_RULE = ("stateful rule 4 (no path leaves a device holding state and comes back to where the device also "
                "reaches directly)")
SHAPE_REENTRY_RULE = ("rule 4 of a dynamic model (no path leaves a device and comes back to where a shape value "
                      "computed before it is read)")


@dataclasses.dataclass(frozen=True)
class StateGroup:
    """Nodes that must share a device: one variable's ReadValue, what lies between it and its Assign, the Assign and
    the initializer nodes no other variable uses."""

    rule: str
    members: np.ndarray  # int64 node ids
    label: str  # the variable's ReadValue and Assign names, for messages
    voters: np.ndarray  # the members that choose the device: the variable's own nodes, not its initializer


def _reach(graph: GraphArrays, start, forward: bool, through: np.ndarray | None = None) -> np.ndarray:
    """The nodes ``start`` reaches (itself included) along edges forward or backward, entering only ``through``."""
    return reach(graph.num_nodes, graph.successors_csr if forward else graph.predecessors_csr, start, through)


def _next(graph: GraphArrays, nodes: np.ndarray, among: np.ndarray) -> np.ndarray:
    """The nodes of ``among`` an edge from ``nodes`` leads to."""
    out = np.zeros(graph.num_nodes, dtype=bool)
    out[graph.edge_dst[nodes[graph.edge_src]]] = True
    return out & among


#: Per graph, its state groups: finding them was most of what legalizing a decoder cost.
_STATE_GROUPS: "weakref.WeakKeyDictionary[GraphArrays, tuple[StateGroup, ...]]" = weakref.WeakKeyDictionary()


def state_groups(graph: GraphArrays) -> tuple[StateGroup, ...]:
    """One group per variable: rules 1 and 3 (its ReadValue, Assign, what lies between, its own initializer).
    Computed once per graph."""
    if not graph.variables:
        return ()
    found = _STATE_GROUPS.get(graph)
    if found is None:
        found = _STATE_GROUPS[graph] = tuple(_find_state_groups(graph))
    return found


def _find_state_groups(graph: GraphArrays) -> list[StateGroup]:
    groups = []
    compute = graph.role == NodeRole.COMPUTE
    for read, write in graph.variables:
        between = _reach(graph, [read], True) & _reach(graph, [write], False)
        between[[read, write]] = True
        groups.append(StateGroup(ONE_DEVICE_RULE, np.flatnonzero(between),
                                 f"ReadValue {graph.names[read]!r} / Assign {graph.names[write]!r}",
                                 np.flatnonzero(between)))
    # Initializers: every compute ancestor of a ReadValue's inputs (Parameters and Constants are placed with their
    # consumers anyway). A node only one variable's initializer uses joins that variable's group; one several share
    # (optimum-intel: one ShapeOf(input_ids) -> Gather for all) may sit anywhere: Placement.apply gives every
    # device its own copy (assignment.copy_crossing_values).
    users = np.zeros(graph.num_nodes, dtype=np.int64)
    inits = []
    for read, _ in graph.variables:
        init = _reach(graph, graph.predecessors(read).tolist(), False) & compute
        users += init
        inits.append(init)
    for k, init in enumerate(inits):
        private = init & (users == 1)
        if private.any():
            groups[k] = dataclasses.replace(groups[k], members=np.union1d(groups[k].members, np.flatnonzero(private)))
    return _with_attention(graph, groups)


def _with_attention(graph: GraphArrays, groups: list[StateGroup]) -> list[StateGroup]:
    """Rule 5: the attention that reads a variable joins its group, with the nodes between; a layer's K and V
    variables, read by one attention, become one group (why: docs/architecture.md, "Module notes")."""
    attention = np.array([op == _ATTENTION for op in graph.op_types], bool)
    walk = ~attention & ~np.array([op in _SHAPE_OPS for op in graph.op_types], bool)
    found = []
    for group in groups:
        reached = _reach(graph, group.members.tolist(), True, walk)
        ends = _next(graph, reached, attention)
        if ends.any():
            path = (reached & _reach(graph, np.flatnonzero(ends).tolist(), False)) | ends
            group = dataclasses.replace(group, members=np.union1d(group.members, np.flatnonzero(path)))
        found.append(group)
    return _merge_overlapping(found)


_ATTENTION = "ScaledDotProductAttention"
_SHAPE_OPS = frozenset({"ShapeOf"})


def _merge_overlapping(groups: list[StateGroup]) -> list[StateGroup]:
    """Groups that share a node, as one (in the order of their first variable)."""
    merged: list[StateGroup] = []
    for group in groups:
        hits = [k for k, m in enumerate(merged) if np.intersect1d(m.members, group.members).size]
        for k in reversed(hits):
            other = merged.pop(k)
            group = StateGroup(group.rule, np.union1d(other.members, group.members), f"{other.label}; {group.label}",
                               np.union1d(other.voters, group.voters))
        merged.insert(min(hits) if hits else len(merged), group)
    return merged


def _names(graph: GraphArrays, nodes, limit: int = 4) -> str:
    nodes = list(nodes)
    shown = ", ".join(repr(graph.names[i]) for i in nodes[:limit])
    return shown + (f" and {len(nodes) - limit} more" if len(nodes) > limit else "")


def keep_state_together(graph: GraphArrays, device: np.ndarray, active: np.ndarray, support: np.ndarray,
                        locked: np.ndarray, devices, notes: list[str]) -> None:
    """Rules 1 and 3, in place on ``device`` (index per node; active nodes decide). ``locked``: pinned nodes.

    A group goes to its pinned members' device, else to the device most of the variable's own nodes are on
    (ReadValue, beam reorder, KV ``Concat``, Assign), else to the first device that runs all of it. Pins that put one group on
    two devices cannot be honoured: ``PinError`` naming the rule, the nodes and what would work.
    """
    moved = 0
    for group in state_groups(graph):
        members = group.members[active[group.members]]
        if members.size == 0:
            continue
        pinned = sorted(set(device[members[locked[members]]].tolist()))
        if len(pinned) > 1:
            by_device = {devices[d]: [i for i in members.tolist() if locked[i] and device[i] == d] for d in pinned}
            raise PinError(
                f"pins cannot be honoured under {group.rule}: {group.label} would be split across "
                + "; ".join(f"{_names(graph, nodes)} pinned to {d}" for d, nodes in by_device.items())
                + f". HETERO cannot run a variable split this way. Pin all of {_names(graph, members.tolist(), 6)} "
                  f"to one device (e.g. the whole layer with its state), or drop one of these pins")
        if pinned:
            target = pinned[0]
        else:  # the device most of the variable's own nodes are on (an initializer's tiny shape ops do not vote)
            voters = group.voters[active[group.voters]]
            voters = voters if voters.size else members
            target = int(np.argmax(np.bincount(device[voters], minlength=len(devices))))
        if not support[members, target].all():
            able = np.flatnonzero(support[members].all(axis=0))
            if pinned or able.size == 0:
                raise PinError(f"{group.rule}: {group.label} needs one device that runs all of "
                               f"{_names(graph, members.tolist())}; {devices[target]} cannot and "
                               f"{'it is pinned there' if pinned else 'no listed device can'}")
            target = int(able[0])
        moved += int((device[members] != target).sum())
        device[members] = target
    if moved:
        notes.append(f"{moved} node(s) moved to keep each state variable and each initializer on one device")


def split_variables(graph: GraphArrays, full: np.ndarray, active: np.ndarray) -> list[tuple[int, int]]:
    """Variables whose ReadValue and Assign fall into different HETERO submodels under ``full`` (rule 2) as applied
    (the initializer's copies and Parameters moved); on a static clone's ``dynamic`` graph where it has one."""
    if not graph.variables:
        return []
    if graph.dynamic is not None:
        return _split_on_dynamic(graph, np.asarray(full))
    copies, full = with_initializer_copies(graph, np.asarray(full)), np.array(full)
    move_parameters_to_fewest_parts(copies, full)
    sub = submodel_partition(copies, full, active).submodel

    def submodel_of(i: int) -> int:
        # A ReadValue whose initializer is constant (the static clone folds ShapeOf) is not active: it follows
        # its consumers, so it runs in theirs
        if active[i]:
            return int(sub[i])
        found = {int(sub[j]) for j in graph.successors(i).tolist() if active[j]}
        return found.pop() if len(found) == 1 else -1
    return [(r, a) for r, a in graph.variables if submodel_of(r) != submodel_of(a) or submodel_of(a) < 0]


#: Per graph: its ReadValue initializer nodes (:func:`initializer_nodes`).
_INITIALIZERS: "weakref.WeakKeyDictionary[GraphArrays, np.ndarray]" = weakref.WeakKeyDictionary()


def initializer_nodes(graph: GraphArrays) -> np.ndarray:
    """bool [N]: the compute ancestors of a ReadValue short of the ReadValues, once per graph."""
    init = _INITIALIZERS.get(graph)
    if init is None:
        reads = [r for r, _ in graph.variables]
        init = _INITIALIZERS[graph] = _reach(graph, reads, False) & (graph.role == NodeRole.COMPUTE)
        init[reads] = False
    return init


def with_initializer_copies(graph: GraphArrays, full: np.ndarray) -> GraphArrays:
    """``graph``'s edges as HETERO meets them once ``Placement.apply`` has copied the shared initializer (rule 3;
    why: docs/architecture.md, "Module notes"); ``graph`` itself when no copy is made."""
    init = initializer_nodes(graph)
    src, dst = graph.edge_src, graph.edge_dst
    crossing = init[src] & (full[src] != full[dst])
    if not crossing.any():
        return graph
    indptr, indices = graph.predecessors_csr
    sources: dict[int, set[int]] = {}

    def parameters_of(node: int) -> set[int]:  # what a copy of ``node`` reads, on whichever device it is made
        if node not in sources:
            found: set[int] = set()
            for p in indices[indptr[node]:indptr[node + 1]].tolist():
                if graph.role[p] == NodeRole.PARAMETER:
                    found.add(p)
                elif init[p]:
                    found |= parameters_of(p)
            sources[node] = found  # a Constant is cloned with the copy: it joins nothing
        return sources[node]

    kept = np.flatnonzero(~crossing)
    extra = [(s, e) for e in np.flatnonzero(crossing).tolist() for s in sorted(parameters_of(int(src[e])))]
    edges = np.concatenate([kept, np.array([e for _, e in extra], np.int64)])
    new_src = np.concatenate([src[kept], np.array([s for s, _ in extra], src.dtype)])
    order = np.argsort(dst[edges], kind="stable")  # listed by destination, as extracted
    edges = edges[order]
    return dataclasses.replace(graph, edge_src=new_src[order], edge_dst=dst[edges],
                               edge_src_port=np.where(crossing[edges], 0, graph.edge_src_port[edges]),
                               edge_dst_port=graph.edge_dst_port[edges], edge_bytes=graph.edge_bytes[edges])


#: Per static clone: (its dynamic graph's node -> the clone's namesake, -1: none; the nodes without one; the dynamic
#: graph's active nodes; the clone's variable per dynamic variable).
_DYNAMIC_MAPS: "weakref.WeakKeyDictionary[GraphArrays, tuple]" = weakref.WeakKeyDictionary()


def _dynamic_map(graph: GraphArrays) -> tuple:
    found = _DYNAMIC_MAPS.get(graph)
    if found is None:
        dyn = graph.dynamic
        index = {name: i for i, name in enumerate(graph.names)}
        namesake = np.array([index.get(name, -1) for name in dyn.names], dtype=np.int64)
        static = {graph.names[r]: (r, a) for r, a in graph.variables}
        pairs = {(r, a): static.get(dyn.names[r], graph.variables[0]) for r, a in dyn.variables}
        found = (namesake, np.flatnonzero(namesake < 0), (dyn.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(dyn),
                 pairs)
        _DYNAMIC_MAPS[graph] = found
    return found


def carried_to_dynamic(graph: GraphArrays, full: np.ndarray) -> np.ndarray:
    """A static clone's placement ``full`` on its ``graph.dynamic`` as ``dynamic_model.transfer_placement``
    proposes it: by name, a node the clone folded away with its neighbours."""
    namesake, folded, _, _ = _dynamic_map(graph)
    return fill_by_neighbours(np.where(namesake >= 0, full[np.maximum(namesake, 0)], -1), graph.dynamic, folded)


def _split_on_dynamic(graph: GraphArrays, full: np.ndarray) -> list[tuple[int, int]]:
    """Rule 2 for a static clone's placement ``full``, checked on its dynamic graph, as the clone's variables: the
    clone's placement carried over (:func:`carried_to_dynamic`), a Parameter by its readers there."""
    _, _, active, pairs = _dynamic_map(graph)
    device = follow_consumers(graph.dynamic, carried_to_dynamic(graph, full), active, np.zeros(active.size, bool))
    return sorted({pairs[pair] for pair in split_variables(graph.dynamic, device, active)})


def _reentries(graph: GraphArrays, device: np.ndarray, active: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``(between, reentered)`` for device ``d``: the active nodes on another device on a path that leaves ``d`` and
    comes back to it, and the nodes of ``d`` downstream of them; both empty unless ``d`` also reaches one of the
    latter on its own (from a node at or before where the way out starts, through ``d`` alone)."""
    on_d = active & (device == d)
    off, ids = active & ~on_d, np.flatnonzero(on_d).tolist()
    between = _reach(graph, ids, True, off) & _reach(graph, ids, False, off) & off
    none = np.zeros(graph.num_nodes, dtype=bool)
    if not between.any():
        return none, none
    out = np.flatnonzero(between).tolist()
    upstream = _reach(graph, out, False, on_d) & on_d  # the way out and before it
    direct = _reach(graph, np.flatnonzero(_next(graph, upstream, on_d)).tolist(), True, on_d)
    after = _reach(graph, out, True, active) & on_d
    return (between, after) if (direct & after).any() else (none, none)


def keep_state_devices_whole(graph: GraphArrays, device: np.ndarray, active: np.ndarray, support: np.ndarray,
                             locked: np.ndarray) -> tuple[int, bool]:
    """Rule 4, in place: no path leaves a device that holds a variable and comes back to it where the device also
    gets there directly (:func:`_reentries`). Returns how many nodes moved and whether the rule holds in the end
    (False: only one device would do; the caller decides). Evidence and the moves: docs/architecture.md, "Module
    notes". Pinned nodes never move."""
    groups = state_groups(graph)
    if not groups:
        return 0, True
    group_of = np.full(graph.num_nodes, -1, np.int64)
    for k, group in enumerate(groups):
        group_of[group.members] = k
    weight = np.maximum(graph.flops, 0.0) + 1.0
    moved = 0
    for _ in range(4 * len(groups) + 4):  # each round undoes one re-entry; a move can make another
        reentry, copies = None, with_initializer_copies(graph, device)  # the edges HETERO meets, as for rule 2
        for d in sorted({int(x) for x in device[(group_of >= 0) & active].tolist()}):
            between, after = _reentries(copies, device, active, d)
            if between.any():
                reentry = d, between, after
                break
        if reentry is None:
            return moved, True
        d, between, after = reentry
        pull = between.copy()  # the way out, with every variable it touches whole
        for k in np.unique(group_of[between & (group_of >= 0)]).tolist():
            pull[groups[k].members] = True
        pull &= active & (device != d)
        target = int(np.bincount(device[between], minlength=support.shape[1]).argmax())
        can_pull = not (pull & locked).any() and support[pull, d].all()
        can_push = not (after & (locked | (group_of >= 0))).any() and support[after, target].all()
        if can_pull and (not can_push or weight[pull].sum() <= weight[after].sum()):
            device[pull], count = d, int(pull.sum())
        elif can_push:
            device[after], count = target, int(after.sum())
        else:
            return moved, False
        moved += count
    return moved, False


#: Per dynamic graph: its shape values.
_SHAPE_VALUES: "weakref.WeakKeyDictionary[GraphArrays, np.ndarray]" = weakref.WeakKeyDictionary()


def _shape_values(dyn: GraphArrays) -> np.ndarray:
    """bool [N] of a dynamic graph: ShapeOf outputs and the integer compute nodes that read only them and Constants."""
    if dyn in _SHAPE_VALUES:
        return _SHAPE_VALUES[dyn]
    shape = np.array([t in _SHAPE_OPS for t in dyn.op_types])
    integer = np.array([t.startswith(("i", "u")) for t in dyn.out_element_type]) & (dyn.role == NodeRole.COMPUTE)
    for v in range(dyn.num_nodes):  # node ids are a topological order
        reads = dyn.predecessors(v)
        if integer[v] and not shape[v] and reads.size and all(shape[u] or dyn.role[u] == NodeRole.CONSTANT
                                                               for u in reads.tolist()):
            shape[v] = True
    _SHAPE_VALUES[dyn] = shape
    return shape


def keep_shape_values_whole(graph: GraphArrays, device: np.ndarray, active: np.ndarray, support: np.ndarray,
                            locked: np.ndarray) -> int:
    """The dynamic model's rule 4, in place on a static clone's ``device``, judged on its ``dynamic`` graph: a shape
    value read behind a way out of its device and back crosses HETERO's submodels as a Parameter of unknown value
    (docs/architecture.md, "Module notes"). Moves as :func:`keep_state_devices_whole`; returns how many."""
    dyn, (namesake, _, dyn_active, _) = graph.dynamic, _dynamic_map(graph)
    shape, weight, moved = _shape_values(dyn), np.maximum(graph.flops, 0.0) + 1.0, 0
    src, dst = dyn.edge_src, dyn.edge_dst
    for _ in range(2 * int(shape.sum()) + 4):  # each round undoes one re-entry; a move can make another
        full = follow_consumers(graph, device, active, locked & ~active)  # a folded shape value: by its readers
        on = follow_consumers(dyn, carried_to_dynamic(graph, full), dyn_active, np.zeros(dyn.num_nodes, bool))
        for d in np.unique(on[dyn_active]).tolist():
            between, after = _reentries(dyn, on, dyn_active, d)
            if (shape[src] & after[dst] & ~after[src]).any():  # a shape value from outside read in the part
                break
        else:
            return moved
        pull = np.zeros(graph.num_nodes, bool)
        pull[namesake[between & (namesake >= 0)]] = True
        push = np.zeros(graph.num_nodes, bool)
        push[namesake[after & (namesake >= 0)]] = True
        pull, push = pull & active & (device != d), push & active
        target = int(np.bincount(on[between], minlength=support.shape[1]).argmax())
        can_pull = pull.any() and not (pull & locked).any() and support[pull, d].all()
        can_push = push.any() and not (push & locked).any() and support[push, target].all()
        if can_pull and (not can_push or weight[pull].sum() <= weight[push].sum()):
            device[pull], count = d, int(pull.sum())
        elif can_push:
            device[push], count = target, int(push.sum())
        else:
            return moved
        moved += count
    return moved


def _nearest_locked(graph: GraphArrays, device: np.ndarray, locked: np.ndarray, forward: bool) -> np.ndarray:
    """Per node, the device of the nearest pinned nodes along ``forward`` (downstream) or upstream edges; -1 where
    none is reached or the nearest ones disagree."""
    indptr, indices = graph.successors_csr if forward else graph.predecessors_csr
    order = range(graph.num_nodes - 1, -1, -1) if forward else range(graph.num_nodes)
    best = np.full(graph.num_nodes, -2, dtype=np.int64)  # -2: nothing reached, -1: disagreement
    dist = np.full(graph.num_nodes, np.iinfo(np.int64).max, dtype=np.int64)
    for v in order:  # node ids are a topological order, so every neighbour is settled first
        if locked[v]:
            best[v], dist[v] = device[v], 0
            continue
        for w in indices[indptr[v]:indptr[v + 1]].tolist():
            if best[w] == -2:
                continue
            d = dist[w] + 1
            if d < dist[v]:
                best[v], dist[v] = best[w], d
            elif d == dist[v] and best[v] != best[w]:
                best[v] = -1
    return best


def fill_between_pins(graph: GraphArrays, device: np.ndarray, active: np.ndarray, locked: np.ndarray,
                      support: np.ndarray) -> int:
    """Rule 2's repair for pinned splits: an unpinned node whose nearest pinned nodes upstream and downstream are
    all on one device goes there (in place; returns how many moved). Pins by layer name leave a layer's unnamed
    nodes (reshapes, the beam reorder) to the strategy, and one of them on the other device makes the cycle that
    cuts the layer's variables apart."""
    up, down = _nearest_locked(graph, device, locked, False), _nearest_locked(graph, device, locked, True)
    fill = active & ~locked & (up >= 0) & (up == down) & (device != up)
    fill[fill] = support[np.flatnonzero(fill), up[fill]]  # never onto a device that cannot run the node
    device[fill] = up[fill]
    return int(fill.sum())


def one_device_for_state(graph: GraphArrays, device: np.ndarray, active: np.ndarray, support: np.ndarray,
                         locked: np.ndarray, devices, broken: list[tuple[int, int]]) -> int:
    """Rule 2's fallback: the device every active node moves to (the one holding most FLOPs that runs them all).

    Raises PinError when pins hold nodes on another device: the pins themselves make the split.
    """
    weight = np.maximum(graph.flops, 0.0) + 1.0
    load = np.bincount(device[active], weights=weight[active], minlength=len(devices))
    able = [d for d in np.argsort(-load).tolist() if support[active, d].all()]
    pinned = sorted(set(device[locked & active].tolist()))
    label = "; ".join(f"ReadValue {graph.names[r]!r} / Assign {graph.names[a]!r}" for r, a in broken[:3])
    if len(pinned) > 1 or (pinned and pinned[0] not in able) or not able:
        raise PinError(
            f"pins cannot be honoured under {ONE_SUBMODEL_RULE}: with them HETERO cuts {len(broken)} variable(s) "
            f"apart ({label}), because a part on one device feeds another device and is fed back by it. "
            "Pin contiguous layers with their state (a pipeline split: layers k..n on one device, everything "
            "before on the other), or pin fewer nodes")
    return pinned[0] if pinned else able[0]


__all__ = ["ONE_DEVICE_RULE", "ONE_SUBMODEL_RULE", "REENTRY_RULE", "StateGroup", "carried_to_dynamic",
           "initializer_nodes", "keep_state_devices_whole", "keep_state_together", "one_device_for_state",
           "split_variables", "state_groups", "with_initializer_copies"]
