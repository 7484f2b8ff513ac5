"""What a capped device holds in every placement the legalizer keeps: the proof behind a decoder row with no split.

A row of the capped decoder table can have no placement within the caps at all, not merely none found: the other
devices cannot run the attention, the KV cache's ops or the mask (they are *held* on the capped device in every
placement), and stateful rule 4 (``ov_autoplace/placement/stateful.py``) keeps much of what lies between two held
nodes with them. The placement MILP (``milp.py``) does not model rule 4, so its optimum under the caps is no proof
(docs/llm.md, "Not built yet"). This module's MILP models nothing but what the legalizer's rules ask of the capped
device, and minimises the bytes left on it: its dual bound is a floor on what any placement the legalizer returns
(without pins) keeps there, and a floor over the cap proves that the row has no split.

Why it is a floor. The legalizer ends every unpinned placement with rule 4 kept for each device that holds state
(``stateful.keep_state_devices_whole``: no re-entry found), or with every node on one device (the capped one, the
only one that runs the held nodes). Rule 4 for the capped
device ``d`` is written here as the legalizer computes it (``stateful._reentries``), one indicator per node, each
forced to 1 where the sets say so: the nodes off ``d`` reached from ``d`` through nodes off ``d`` and reaching ``d``
through them (the ways out), the nodes of ``d`` reaching a way out through ``d`` (upstream), the nodes of ``d``
reached through ``d`` from a node of ``d`` after an upstream one (direct), and the nodes of ``d`` reached from a way
out (after); no node may be both direct and after. Every placement the legalizer returns satisfies the rows, so the
MILP's optimum (and its dual bound, at a time limit) is at most the bytes that placement keeps on ``d``.

The graph is the legalizer's less the edges that leave a ReadValue's initializer: ``with_initializer_copies`` may
redirect those, and a re-entry found on fewer edges is one the legalizer finds on its own (each set only grows
with edges). Rules 1-3 and the submodel bound are left out: a weaker floor, still a floor (the merges to the bound
may move a variable's nodes after rule 1 put them together, so rule 1 is not written as if it held at the end).
The rules are the legalizer's, not HETERO's own (which no one has written down): sufficient conditions found by
compiling; ``benchmarks/bench_memory_bound.py`` asks HETERO beside them.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from ov_autoplace.graph.arrays import GraphArrays, NodeRole, constant_subgraph_mask
from ov_autoplace.graph.components import reach
from ov_autoplace.placement.stateful import initializer_nodes, state_groups

MIB = 2 ** 20


def node_sets(graph: GraphArrays, support: np.ndarray, capped: int) -> dict[str, np.ndarray]:
    """Masks over the active nodes: ``held`` (no other device runs it), ``chain`` (another device runs it and no
    held node reaches it, or it reaches none), ``between`` (another device runs it, on a path from a held node to a
    held node), and ``active``."""
    support = np.asarray(support, bool)
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    others = np.delete(support, capped, axis=1)
    held = active & ~others.any(axis=1)
    ids = np.flatnonzero(held).tolist()
    reached = reach(graph.num_nodes, graph.successors_csr, ids) & ~held
    reaches = reach(graph.num_nodes, graph.predecessors_csr, ids) & ~held
    movable = active & ~held
    return {"held": held, "chain": movable & (~reached | ~reaches), "between": movable & reached & reaches,
            "active": active}


def floor_milp(graph: GraphArrays, sets: dict[str, np.ndarray], node_bytes, *, seconds: float = 60.0):
    """``(floor bytes, whether proven optimal, bool [N] off the capped device in the MILP's placement)``: the
    fewest bytes of active nodes the capped device keeps under rule 4 (module doc); the held nodes' bytes where no
    held node is a variable's (then the device need not hold state, and rule 4 need not bind it)."""
    import scipy.sparse as sp
    from scipy.optimize import Bounds, LinearConstraint, milp

    active, n = sets["active"], graph.num_nodes
    mem = np.where(active, np.asarray(node_bytes, np.float64), 0.0)
    if not any(sets["held"][group.members].any() for group in state_groups(graph)):
        # rule 4 binds a device only while it holds state: without a held variable some placement may hold none
        return float(mem[sets["held"]].sum()), True, active & ~sets["held"]
    keep = active[graph.edge_src] & active[graph.edge_dst] & ~initializer_nodes(graph)[graph.edge_src]
    src, dst = graph.edge_src[keep].astype(np.int64), graph.edge_dst[keep].astype(np.int64)
    # columns: y (off d) per node, then per node F (reached from d off d), G (reaches d off d), W (a way out),
    # U (upstream), R (reached from a way out), A (after), D (direct)
    names = ("y", "F", "G", "W", "U", "R", "A", "D")
    col = {k: np.arange(n) + i * n for i, k in enumerate(names)}
    rows, cols, vals, lower = [], [], [], []

    def at_least(terms, lb):  # sum(coef * col) >= lb, one row per element of the arrays in terms
        size, base = len(lb), sum(len(b) for b in lower)
        for c, v in terms:
            rows.append(base + np.arange(size)), cols.append(np.asarray(c)), vals.append(np.full(size, float(v)))
        lower.append(np.asarray(lb, np.float64))

    y, ones_e = col["y"], np.ones(src.size)
    # F[w] >= y[w] - y[p] and >= F[p] + y[w] - 1 for each edge p -> w (p on d, or p reached that way)
    at_least([(col["F"][dst], 1), (y[dst], -1), (y[src], 1)], 0 * ones_e)
    at_least([(col["F"][dst], 1), (col["F"][src], -1), (y[dst], -1)], -ones_e)
    # G[w] >= y[w] - y[s] and >= G[s] + y[w] - 1 for each edge w -> s
    at_least([(col["G"][src], 1), (y[src], -1), (y[dst], 1)], 0 * ones_e)
    at_least([(col["G"][src], 1), (col["G"][dst], -1), (y[src], -1)], -ones_e)
    # W >= F + G - 1: off d, on a way out and back
    at_least([(col["W"], 1), (col["F"], -1), (col["G"], -1)], -np.ones(n))
    # U[p] >= W[s] - y[p] and >= U[s] - y[p] for each edge p -> s (p on d reaches a way out through d)
    at_least([(col["U"][src], 1), (col["W"][dst], -1), (y[src], 1)], 0 * ones_e)
    at_least([(col["U"][src], 1), (col["U"][dst], -1), (y[src], 1)], 0 * ones_e)
    # D[s] >= U[p] - y[s] and >= D[p] - y[s] for each edge p -> s (reached through d after an upstream node)
    at_least([(col["D"][dst], 1), (col["U"][src], -1), (y[dst], 1)], 0 * ones_e)
    at_least([(col["D"][dst], 1), (col["D"][src], -1), (y[dst], 1)], 0 * ones_e)
    # R >= W, R[s] >= R[p] for each edge p -> s; A >= R - y (after: on d, downstream of a way out)
    at_least([(col["R"], 1), (col["W"], -1)], np.zeros(n))
    at_least([(col["R"][dst], 1), (col["R"][src], -1)], 0 * ones_e)
    at_least([(col["A"], 1), (col["R"], -1), (y, 1)], np.zeros(n))
    # no node both direct and after: -A - D >= -1
    at_least([(col["A"], -1), (col["D"], -1)], -np.ones(n))
    upper = np.ones(len(names) * n)
    upper[y[sets["held"] | ~active]] = 0.0  # held: on d; inactive: not placed here (their bytes are not counted)
    a = sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                     shape=(sum(len(b) for b in lower), len(names) * n))
    cost = np.zeros(len(names) * n)
    cost[y] = -mem  # minimise what stays: mem.sum() - bytes moved off
    integer = np.zeros(len(names) * n)
    integer[y] = 1
    result = milp(cost, integrality=integer, bounds=Bounds(np.zeros(len(names) * n), upper),
                  constraints=LinearConstraint(a, np.concatenate(lower), np.inf),
                  options={"time_limit": seconds, "mip_rel_gap": 0.0})
    bound = getattr(result, "mip_dual_bound", None)
    if bound is None or not np.isfinite(bound):
        bound = result.fun if result.status == 0 else -mem.sum()  # no bound: everything could leave
    off = np.asarray(result.x[y] > 0.5) if result.x is not None else np.zeros(n, bool)
    return float(mem.sum() + bound), result.status == 0, off


@dataclasses.dataclass(frozen=True)
class CappedFloor:
    """What the capped device holds in every placement the legalizer keeps (bytes are the cost model's)."""

    device: str
    cap_bytes: float
    held_bytes: float  # the nodes no other device runs
    floor_bytes: float  # the MILP's dual bound on what the device keeps (:func:`floor_milp`)
    optimal: bool  # the MILP finished (else its bound at the time limit)
    movable_bytes: float  # what the MILP's own placement moves off the device (a relaxation: not a split)
    seconds: float  # the MILP's wall time

    @property
    def proves_no_split(self) -> bool:
        """Whether no placement the legalizer keeps fits the cap: the floor alone is over it."""
        return self.floor_bytes > self.cap_bytes

    def describe(self) -> str:
        verdict = "over" if self.proves_no_split else "within"
        return (f"{self.device} keeps at least {self.floor_bytes / MIB:.1f} MiB in every placement the legalizer "
                f"returns ({self.held_bytes / MIB:.1f} MiB on nodes no other device runs; the rest kept by stateful "
                f"rule 4; the floor MILP {'optimal' if self.optimal else 'at its time limit, its bound'} in "
                f"{self.seconds:.0f} s), "
                f"{verdict} its cap of {self.cap_bytes / MIB:.1f} MiB")


def capped_floor(graph: GraphArrays, support: np.ndarray, node_bytes, devices, device: str, cap_bytes: float, *,
                 seconds: float = 60.0) -> CappedFloor:
    """The floor of ``device`` (capped at ``cap_bytes``) on ``graph`` with ``support`` [N, D] and ``node_bytes``
    [N] (weights read and KV cache, as the row's costs charge them)."""
    sets = node_sets(graph, support, list(devices).index(device))
    mem, started = np.asarray(node_bytes, np.float64), time.perf_counter()
    floor, optimal, off = floor_milp(graph, sets, mem, seconds=seconds)
    return CappedFloor(device, float(cap_bytes), float(mem[sets["held"]].sum()), floor, optimal,
                       float(mem[off].sum()), time.perf_counter() - started)


__all__ = ["CappedFloor", "capped_floor", "floor_milp", "node_sets"]
