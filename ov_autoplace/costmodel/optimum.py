"""Exact placement optima under a CostModel: s-t min cut (2 devices) and a MILP (any device count).

They are the reference the heuristics and the learned policy are measured
against ("exact optima as the reference", Tarnawski et al. 2020). Both need
scipy (``pip install scipy``; it is in the ``dev`` and ``train`` extras).

The execution model is the CostModel's, made precise here for the solvers
(``CostTerms.latency_ms`` evaluates it for one placement; the simulator is the
batched, independent implementation the tests compare against):

* Decision variables are the *active* nodes: compute nodes outside constant
  subgraphs (``legalize.constant_subgraph_mask``). Everything else is placed
  by the legalizer's rules: Parameters and constant-subgraph compute nodes
  ("followers") go to the majority device of their non-Result consumers
  (one vote per edge, ties to the earlier device, device 0 without votes);
  Constants too, and they are duplicated per consumer device, so they never
  cross; Results take their producer's device and cost nothing.
* Compute: ``compute_ms[i, d]`` for every compute node (followers included).
  A node of a fused pair (``fused_into[i] = j``) whose pair is split across
  devices costs ``unfused_ms`` instead; a node belonging to several pairs does
  as soon as any of them is split. Pairs involving a Parameter, Constant or
  Result are ignored (a Constant always sits with its consumer).
* Transfers: once per (producer output, consumer device other than the
  producer's), for producers that are active nodes or Parameters (a constant
  or constant-subgraph value stays beside its consumers), with the producing
  output's bytes (``max(edge_bytes, 0)``; unknown sizes pay the link latency
  only). Result consumers never count.
* Submodels: connected components of active nodes joined by same-device edges
  (``legalize.count_submodels``); each costs ``submodel_overhead_ms`` of its device.
* Memory (a constraint): on device d, ``node_memory_bytes`` of every node on d
  (a Constant counts on each device that holds a copy of it) plus the largest
  ``out_bytes`` of an active node or Parameter on d must fit ``device_memory_bytes[d]``.
* Unsupported: ``compute_ms = inf`` (or a ``support`` matrix entry False)
  forbids the device; an ``unfused_ms = inf`` forbids splitting that pair there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sys
import tempfile
import time
from typing import Callable, Sequence, Union

import numpy as np

from ..errors import PlacementError
from ..graph import GraphArrays, NodeRole
from ..legalize import _islands, constant_subgraph_mask, legalize
from ..placement import Placement
from ..strategies.base import PlacementContext, PlacementStrategy
from .cost_model import CostModel

logger = logging.getLogger("ov_autoplace.optimum")


def _require_scipy():
    try:
        import scipy  # noqa: F401
    except ImportError:  # pragma: no cover - scipy is in the dev extra the tests run with
        raise ImportError("the exact optimum needs scipy: pip install scipy "
                          "(or pip install 'ov_autoplace[dev]')") from None


class CostTerms:
    """The CostModel's terms indexed for solvers and heuristics (one model, one graph).

    ``placed`` nodes (active, followers, Parameters) have a device; ``outputs``
    lists every producer output that can cross (source node, bytes, consumer
    nodes); ``votes[i]`` the consumers (one per edge) that decide an anchor's
    device; ``fusion_pairs`` the (i, j) pairs the model fuses.
    """

    def __init__(self, cost: CostModel, graph: GraphArrays, support: np.ndarray | None = None) -> None:
        if tuple(cost.node_names) != tuple(graph.names):
            raise PlacementError(
                f"the CostModel describes {cost.num_nodes} nodes that do not match the graph's {graph.num_nodes} "
                "(names differ); build the CostModel for the prepared model (ov_autoplace.prepare.prepare_model)"
            )
        self.cost, self.graph = cost, graph
        self.num_nodes, self.num_devices = graph.num_nodes, len(cost.devices)
        role = np.asarray(graph.role)
        self.compute = role == NodeRole.COMPUTE
        self.follower = constant_subgraph_mask(graph) & self.compute
        self.active = self.compute & ~self.follower
        self.parameter = role == NodeRole.PARAMETER
        self.constant = role == NodeRole.CONSTANT
        self.result = role == NodeRole.RESULT
        self.placed = self.active | self.follower | self.parameter
        allowed = np.ones((self.num_nodes, self.num_devices), dtype=bool)
        allowed[self.compute] = np.isfinite(cost.compute_ms[self.compute])
        if support is not None:
            allowed &= np.asarray(support, dtype=bool) | ~self.compute[:, None]
        self.allowed = allowed
        nowhere = np.flatnonzero(self.compute & ~allowed.any(axis=1))
        if nowhere.size:
            raise PlacementError(
                f"{nowhere.size} compute node(s), e.g. {graph.names[nowhere[0]]!r}, have no device with a finite cost "
                f"among {list(cost.devices)}; give them a finite compute_ms on some device"
            )
        self.compute_cost = np.where(self.compute[:, None] & allowed, cost.compute_ms, 0.0)
        with np.errstate(invalid="ignore"):  # inf - inf where a device cannot run the node; masked out
            self.unfused_delta = np.where(self.compute[:, None] & allowed, cost.unfused_ms - cost.compute_ms, 0.0)
        src, dst = graph.edge_src.astype(np.int64), graph.edge_dst.astype(np.int64)
        port, nbytes = graph.edge_src_port.astype(np.int64), np.maximum(graph.edge_bytes, 0)
        self.edges = list(zip(src.tolist(), dst.tolist()))
        self.votes: list[list[int]] = [[] for _ in range(self.num_nodes)]
        outputs: dict[tuple[int, int], tuple[int, set[int]]] = {}
        for s, t, p, b in zip(src.tolist(), dst.tolist(), port.tolist(), nbytes.tolist()):
            if self.result[t]:
                continue
            self.votes[s].append(t)
            if self.active[s] or self.parameter[s]:  # constant-derived values stay beside their consumers
                outputs.setdefault((s, p), (b, set()))[1].add(t)
        #: (source node, bytes, sorted consumer nodes) per producer output with consumers
        self.outputs = [(s, float(b), sorted(c)) for (s, _), (b, c) in sorted(outputs.items())]
        fused = np.asarray(cost.fused_into)
        self.fusion_pairs = [(int(i), int(fused[i])) for i in np.flatnonzero(fused >= 0)
                             if self.compute[i] and self.compute[fused[i]] and fused[i] != i]
        pairs_of: dict[int, list[tuple[int, int]]] = {}
        for pair in self.fusion_pairs:
            for k in pair:
                pairs_of.setdefault(k, []).append(pair)
        self.pairs_of = pairs_of
        self.active_edges = sorted({(min(s, t), max(s, t)) for s, t in self.edges
                                    if self.active[s] and self.active[t] and s != t})
        self.memory = np.asarray(cost.node_memory_bytes, dtype=np.float64)
        self.activation = np.where(self.active | self.parameter, np.maximum(graph.out_bytes, 0), 0).astype(np.float64)

    # ----------------------------------------------------------------- evaluation
    def link_ms(self, nbytes: float) -> np.ndarray:
        """[D, D] cost of moving ``nbytes`` from device a to device b (0 on the diagonal)."""
        out = self.cost.link_latency_ms + nbytes * self.cost.link_ms_per_byte
        np.fill_diagonal(out, 0.0)
        return out

    def legal_devices(self, proposal: np.ndarray, *, max_submodels: int | None = None) -> tuple[np.ndarray, Placement]:
        """Device index per node after the legalizer (anchors follow their consumers)."""
        support = self.allowed | ~self.compute[:, None]
        placement = legalize(self.graph, np.asarray(proposal, dtype=np.int64), self.cost.devices, support,
                             max_submodels=max_submodels)
        index = {d: k for k, d in enumerate(self.cost.devices)}
        return np.array([index[placement.assignment[n]] for n in self.graph.names], dtype=np.int64), placement

    def submodels_per_device(self, device: np.ndarray) -> np.ndarray:
        uf = _islands(self.graph, device, self.active)
        roots = {uf.find(i) for i in np.flatnonzero(self.active).tolist()}
        return np.bincount([int(device[r]) for r in roots], minlength=self.num_devices)

    def breakdown(self, device: np.ndarray) -> dict[str, float]:
        """Each term of the latency of a full placement (device per node), and memory feasibility."""
        device = np.asarray(device, dtype=np.int64)
        nodes = np.flatnonzero(self.compute)
        compute = float(self.cost.compute_ms[nodes, device[nodes]].sum())
        split = {k for i, j in self.fusion_pairs if device[i] != device[j] for k in (i, j)}
        fusion = float(sum(self.cost.unfused_ms[k, device[k]] - self.cost.compute_ms[k, device[k]] for k in split))
        transfer = 0.0
        for s, nbytes, consumers in self.outputs:
            link = self.link_ms(nbytes)
            for b in {int(device[c]) for c in consumers} - {int(device[s])}:
                transfer += link[device[s], b]
        counts = self.submodels_per_device(device)
        overhead = float(counts @ self.cost.submodel_overhead_ms)
        return {"compute": compute, "fusion": fusion, "transfer": transfer, "overhead": overhead,
                "submodels": float(counts.sum()), "memory_ok": float(self.memory_ok(device))}

    def memory_ok(self, device: np.ndarray) -> bool:
        caps = np.asarray(self.cost.device_memory_bytes, dtype=np.float64)
        if np.isinf(caps).all():
            return True
        used = np.zeros(self.num_devices)
        for i in np.flatnonzero(~self.constant & ~self.result):
            used[device[i]] += self.memory[i]
        for c in np.flatnonzero(self.constant & (self.memory > 0)):
            for d in ({int(device[t]) for t in self.votes[c]} or {int(device[c])}):
                used[d] += self.memory[c]
        for d in range(self.num_devices):
            on_d = device == d
            used[d] += self.activation[on_d].max(initial=0.0)
        return bool((used <= caps).all())

    def latency_ms(self, device: np.ndarray) -> float:
        """Model latency of a full placement; ``inf`` if a node sits where it cannot run or memory overflows."""
        device = np.asarray(device, dtype=np.int64)
        if not self.allowed[np.arange(self.num_nodes), device][self.compute].all():
            return float("inf")
        terms = self.breakdown(device)
        if not terms["memory_ok"]:
            return float("inf")
        return terms["compute"] + terms["fusion"] + terms["transfer"] + terms["overhead"]


@dataclasses.dataclass
class OptimumResult:
    """An exact (or gap-bounded) optimum and how it was found."""

    placement: np.ndarray  # int64 [N] device index per node, legal (anchors placed by the legalizer's rules)
    devices: tuple[str, ...]
    method: str  # "min_cut" or "milp"
    objective_ms: float  # the objective the solver minimised, at the solution it returned
    predicted_ms: float  # the full model's latency of `placement` (CostTerms.latency_ms)
    status: str
    optimal: bool
    mip_gap: float | None
    wall_s: float
    num_submodels: int
    legal: Placement | None = None
    simulated_ms: float | None = None  # the simulator's latency of `placement`, when the simulator is available
    notes: list[str] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        gap = "" if self.mip_gap is None else f", gap {self.mip_gap:.2e}"
        return (f"{self.method}: objective {self.objective_ms:.4f} ms, predicted {self.predicted_ms:.4f} ms, "
                f"{self.num_submodels} submodel(s), {self.status}{gap}, {self.wall_s:.2f} s")


def _simulate(cost: CostModel, graph: GraphArrays, device: np.ndarray) -> float | None:
    """The independent simulator's latency, when that module is present."""
    try:
        from .simulator import Simulator
    except ImportError:
        return None
    return float(Simulator(cost, graph)(device))


def _finish(terms: CostTerms, method: str, active_device: np.ndarray, objective: float, status: str, optimal: bool,
            gap: float | None, start: float, notes: list[str], max_submodels: int | None) -> OptimumResult:
    proposal = np.where(terms.active, active_device, 0)
    device, legal = terms.legal_devices(proposal, max_submodels=max_submodels)
    predicted = terms.latency_ms(device)
    result = OptimumResult(
        placement=device, devices=tuple(terms.cost.devices), method=method, objective_ms=float(objective),
        predicted_ms=predicted, status=status, optimal=optimal, mip_gap=gap, wall_s=time.perf_counter() - start,
        num_submodels=legal.num_submodels, legal=legal, simulated_ms=_simulate(terms.cost, terms.graph, device),
        notes=notes)
    logger.info("%s", result.summary())
    return result


# --------------------------------------------------------------------- min cut
def min_cut_placement(cost: CostModel, graph: GraphArrays, *, support: np.ndarray | None = None) -> OptimumResult:
    """Exact optimum of compute + fusion + transfers for exactly 2 devices, by an s-t min cut.

    Source side = device 0, sink side = device 1. Unary costs are terminal
    edges; a producer output that pays once if *any* consumer sits on the
    other device gets one auxiliary node per direction (p -> a with the link
    cost, a -> consumer infinite; mirrored for 1 -> 0); a node whose fusion is
    lost if any partner is split gets the same gadget with its unfused extra.
    Ignores submodel overhead and memory capacity, and treats Parameters and
    constant-subgraph compute as freely placed (the legal placement puts them
    with their consumers' majority, which costs the same with 2 devices and
    symmetric links); ``predicted_ms`` is the full model's latency of the result.
    Needs ``unfused_ms >= compute_ms`` (a lost fusion never saves time); other
    entries are clipped to 0, and noted.
    """
    _require_scipy()
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    start = time.perf_counter()
    if len(cost.devices) != 2:
        raise PlacementError(f"min_cut_placement needs exactly 2 devices, got {len(cost.devices)}; use milp_placement")
    terms = CostTerms(cost, graph, support)
    notes = ["min cut: submodel overhead and memory capacity are not modelled",
             "min cut: Parameters and constant-subgraph nodes placed freely, then by the legalizer's rules"]
    nodes = np.flatnonzero(terms.placed)
    vid = {int(i): 2 + k for k, i in enumerate(nodes)}  # 0 = source (device 0), 1 = sink (device 1)
    rows: list[int] = []
    cols: list[int] = []
    caps: list[float] = []
    inf = float("inf")

    def edge(u: int, v: int, c: float) -> None:
        if c > 0:
            rows.append(u), cols.append(v), caps.append(c)

    for i in nodes.tolist():
        c0 = terms.compute_cost[i, 0] if terms.allowed[i, 0] else inf
        c1 = terms.compute_cost[i, 1] if terms.allowed[i, 1] else inf
        low = min(c0, c1)
        edge(0, vid[i], c1 - low)  # cut when i is on device 1
        edge(vid[i], 1, c0 - low)  # cut when i is on device 0
    next_id = 2 + len(nodes)

    def any_other_side(p: int, others: Sequence[int], w01: float, w10: float) -> None:
        nonlocal next_id
        if w01 > 0:  # p on 0, some other on 1
            edge(vid[p], next_id, w01)
            for c in others:
                edge(next_id, vid[c], inf)
            next_id += 1
        if w10 > 0:  # p on 1, some other on 0
            edge(next_id, vid[p], w10)
            for c in others:
                edge(vid[c], next_id, inf)
            next_id += 1

    for s, nbytes, consumers in terms.outputs:
        link = terms.link_ms(nbytes)
        any_other_side(s, consumers, link[0, 1], link[1, 0])
    delta = terms.unfused_delta
    if (delta < 0).any():
        notes.append(f"min cut: {int((delta < 0).sum())} unfused_ms < compute_ms entries clipped to compute_ms")
    for k, pairs in terms.pairs_of.items():  # delta is inf where splitting is forbidden: an infinite edge
        partners = sorted({i if j == k else j for i, j in pairs})
        any_other_side(k, partners, max(delta[k, 0], 0.0), max(delta[k, 1], 0.0))

    caps_arr = np.asarray(caps, dtype=np.float64)
    finite = np.isfinite(caps_arr)
    total = float(caps_arr[finite].sum()) if finite.any() else 0.0
    big = 2**30
    scale = (2**29) / total if total > 0 else 1.0
    graph_f = sp.coo_array((np.where(finite, caps_arr * scale, big), (rows, cols)), shape=(next_id, next_id)).tocsr()
    graph_f.sum_duplicates()
    capacity = sp.csr_array((np.minimum(np.rint(graph_f.data), big).astype(np.int32), graph_f.indices, graph_f.indptr),
                            shape=graph_f.shape)
    flow = maximum_flow(capacity, 0, 1).flow
    residual = (capacity.astype(np.int64) - flow.astype(np.int64)).tocsr()
    residual.data[residual.data < 0] = 0
    residual.eliminate_zeros()
    source_side = np.zeros(next_id, dtype=bool)
    source_side[breadth_first_order(residual, 0, directed=True, return_predecessors=False)] = True
    device = np.zeros(terms.num_nodes, dtype=np.int64)
    device[nodes] = np.where(source_side[[vid[i] for i in nodes.tolist()]], 0, 1)
    # The min-cut objective, evaluated exactly rather than in scaled integers.
    b = terms.breakdown(device)
    split = {k for i, j in terms.fusion_pairs if device[i] != device[j] for k in (i, j)}
    objective = b["compute"] + b["transfer"] + sum(max(delta[k, device[k]], 0.0) for k in split)
    return _finish(terms, "min_cut", device, objective, "optimal", True, None, start, notes, None)


# --------------------------------------------------------------------- MILP
class _Milp:
    """Variables and sparse constraint rows for scipy.optimize.milp."""

    def __init__(self) -> None:
        self.cost: list[float] = []
        self.upper: list[float] = []
        self.integer: list[int] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.row_lb: list[float] = []
        self.row_ub: list[float] = []

    def var(self, cost: float = 0.0, upper: float = 1.0, integer: bool = False) -> int:
        self.cost.append(cost), self.upper.append(upper), self.integer.append(int(integer))
        return len(self.cost) - 1

    def row(self, terms: Sequence[tuple[int, float]], lb: float = -np.inf, ub: float = np.inf) -> None:
        r = len(self.row_lb)
        for col, val in terms:
            self.rows.append(r), self.cols.append(col), self.vals.append(val)
        self.row_lb.append(lb), self.row_ub.append(ub)

    def solve(self, time_limit: float, mip_rel_gap: float):
        import scipy.sparse as sp
        from scipy.optimize import Bounds, LinearConstraint, milp

        n = len(self.cost)
        a = sp.csr_array((self.vals, (self.rows, self.cols)), shape=(len(self.row_lb), n))  # duplicates are summed
        constraints = LinearConstraint(a, self.row_lb, self.row_ub) if self.row_lb else None
        return milp(np.asarray(self.cost), integrality=np.asarray(self.integer), bounds=Bounds(np.zeros(n), self.upper),
                    constraints=constraints, options={"time_limit": time_limit, "mip_rel_gap": mip_rel_gap})


def milp_placement(cost: CostModel, graph: GraphArrays, *, time_limit: float = 10.0, max_submodels: int | None = None,
                   support: np.ndarray | None = None, mip_rel_gap: float = 1e-6) -> OptimumResult:
    """Optimum of the full model (module docstring) for any number of devices, by a MILP (HiGHS).

    Exact formulation, no surrogate:

    * ``x[i,d]`` binary for active nodes, Parameters and followers; anchors'
      ``x`` are tied to the legalizer's majority vote (big-M rows ``votes_d -
      votes_e >= [e<d] - M (1 - x[a,d])``), so what is optimised is what the
      legal placement costs;
    * transfers: ``y[o,b] >= x[c,b] - x[p,b]`` per output o of p and consumer
      c (paid once per consumer device), priced at the cheapest link into b,
      plus ``t[o,a,b] >= x[p,a] + y[o,b] - 1`` for the extra of dearer links;
    * fusion: ``z`` = pair split (exact from both sides), ``u[k] = OR z``,
      ``w[k,d] = x[k,d] AND u[k]`` priced at ``unfused - compute``;
    * submodels: one root ``r[i,d]`` per same-device island, proven by a
      single-commodity flow: flow moves only along edges with both ends on d,
      every node on d absorbs one unit, only roots emit; an island without a
      root cannot balance, so ``sum r >= islands`` and minimisation makes it
      equal. ``sum r <= max_submodels`` bounds the count;
    * memory: weights (a Constant on every device of its consumers) plus
      ``A_d >= out_bytes[i] x[i,d]`` within each finite capacity.

    Stops after ``time_limit`` seconds with the best placement found and its
    relative gap (``optimal`` False then).
    """
    _require_scipy()
    start = time.perf_counter()
    terms = CostTerms(cost, graph, support)
    n, nd = terms.num_nodes, terms.num_devices
    m = _Milp()
    x = np.full((n, nd), -1, dtype=np.int64)
    for i in np.flatnonzero(terms.placed).tolist():
        for d in range(nd):
            x[i, d] = m.var(terms.compute_cost[i, d], float(terms.allowed[i, d]), integer=True)
        m.row([(x[i, d], 1.0) for d in range(nd)], 1.0, 1.0)
    _tie_anchors_to_votes(m, terms, x)
    _add_fusion(m, terms, x)
    _add_transfers(m, terms, x)
    overhead = np.asarray(cost.submodel_overhead_ms, dtype=np.float64)
    if (overhead > 0).any() or max_submodels is not None:
        _add_submodels(m, terms, x, overhead, max_submodels)
    _add_memory(m, terms, x)
    with _stdout_to_log():
        res = m.solve(time_limit, mip_rel_gap)
    notes = [f"MILP: {len(m.cost)} variables ({sum(m.integer)} binary), {len(m.row_lb)} rows"]
    status = _MILP_STATUS.get(res.status, f"HiGHS: {res.message}")
    if res.x is None:
        if res.status != 1:
            raise PlacementError(f"the placement MILP has no solution ({status}: {res.message}); check memory "
                                 "capacities, max_submodels and unsupported nodes")
        return _heuristic_fallback(terms, start, notes, max_submodels)
    sol = np.asarray(res.x)
    active_device = np.zeros(n, dtype=np.int64)
    act = np.flatnonzero(terms.active)
    if act.size:
        active_device[act] = np.argmax(sol[x[act]], axis=1)
    gap = getattr(res, "mip_gap", None)
    optimal = res.status == 0
    result = _finish(terms, "milp", active_device, float(res.fun), status, optimal,
                     None if gap is None else float(gap), start, notes, max_submodels)
    if not optimal:
        result.notes.append("not proven optimal: objective_ms is the incumbent's value, which may count redundant "
                            "submodel roots; predicted_ms is its model latency")
        fallback = _heuristic_fallback(terms, start, [], max_submodels, quiet=True)
        if fallback.predicted_ms < result.predicted_ms:  # a weak incumbent: a heuristic does better
            bound = getattr(res, "mip_dual_bound", None)
            fallback.mip_gap = None if bound is None else float((fallback.predicted_ms - bound) / fallback.predicted_ms)
            fallback.status = status
            fallback.notes = result.notes + [f"MILP incumbent {result.predicted_ms:.4f} ms; {fallback.notes[-1]}"]
            return fallback
    elif abs(result.predicted_ms - result.objective_ms) > 1e-6 * max(1.0, abs(result.objective_ms)):
        result.notes.append(f"MILP objective {result.objective_ms:.6f} != model latency {result.predicted_ms:.6f}")
        logger.warning("%s", result.notes[-1])
    return result


@contextlib.contextmanager
def _stdout_to_log():
    """HiGHS prints a few internal lines straight to fd 1 even with disp off; keep them out of the app's stdout."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no usable fd 1 (embedded interpreters): let it through
        yield
        return
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 1)
        try:
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            text = sink.read().decode(errors="replace").strip()
            if text:
                logger.debug("HiGHS: %s", text)


_MILP_STATUS = {0: "optimal", 1: "time limit", 2: "infeasible", 3: "unbounded"}


def _heuristic_fallback(terms: CostTerms, start: float, notes: list[str], max_submodels: int | None, *,
                        quiet: bool = False) -> OptimumResult:
    """The best heuristic placement, clearly marked: for a MILP stopped with no (or a weak) incumbent."""
    from ..strategies.critical_path import CriticalPathGreedyStrategy  # the strategies import this module
    from ..strategies.heft import HeftStrategy

    context = PlacementContext(graph=terms.graph, devices=tuple(terms.cost.devices),
                               support=terms.allowed | ~terms.compute[:, None])
    best = None
    for strategy in (HeftStrategy(terms.cost), CriticalPathGreedyStrategy(terms.cost)):
        proposal = strategy.propose(context)
        latency = terms.latency_ms(terms.legal_devices(proposal, max_submodels=max_submodels)[0])
        if best is None or latency < best[0]:
            best = (latency, proposal, strategy.name)
    if quiet:
        notes.append(f"this is the {best[2]} heuristic's placement, better than the MILP's")
    else:
        notes.append(f"time limit reached before any MILP solution: this is the {best[2]} heuristic's placement")
        logger.warning("%s", notes[-1])
    return _finish(terms, "milp", best[1], best[0], "time limit, no solution", False, None, start, notes,
                   max_submodels)


def _tie_anchors_to_votes(m: _Milp, terms: CostTerms, x: np.ndarray) -> None:
    """An anchor (Parameter, follower) sits where most of its consumers do; ties go to the earlier device."""
    nd = terms.num_devices
    for a in np.flatnonzero(terms.placed & ~terms.active).tolist():
        votes = [t for t in terms.votes[a] if terms.placed[t]]
        if not votes:
            m.row([(x[a, 0], 1.0)], 1.0, 1.0)
            continue
        big = len(votes) + 1.0
        for d in range(nd):
            for e in range(nd):
                if e != d:
                    row = [(x[t, d], 1.0) for t in votes] + [(x[t, e], -1.0) for t in votes] + [(x[a, d], -big)]
                    m.row(row, lb=float(e < d) - big)


def _add_fusion(m: _Milp, terms: CostTerms, x: np.ndarray) -> None:
    nd, delta = terms.num_devices, terms.unfused_delta
    priced = {k for k in terms.pairs_of if (delta[k] != 0).any()}
    split: dict[tuple[int, int], int] = {}
    for i, j in terms.fusion_pairs:
        if i not in priced and j not in priced:
            continue
        z = split[(i, j)] = m.var()
        for d in range(nd):
            m.row([(z, 1.0), (x[i, d], -1.0), (x[j, d], 1.0)], lb=0.0)  # z >= x_i,d - x_j,d
            m.row([(z, 1.0), (x[i, d], 1.0), (x[j, d], 1.0)], ub=2.0)  # z = 0 when both on d
    for k in sorted(priced):
        zs = [split[p] for p in terms.pairs_of[k]]
        u = m.var()
        for z in zs:
            m.row([(u, 1.0), (z, -1.0)], lb=0.0)
        m.row([(u, 1.0)] + [(z, -1.0) for z in zs], ub=0.0)
        for d in range(nd):
            if not terms.allowed[k, d]:
                continue
            finite = bool(np.isfinite(delta[k, d]))
            w = m.var(float(delta[k, d]) if finite else 0.0, 1.0 if finite else 0.0)
            m.row([(w, 1.0), (x[k, d], -1.0), (u, -1.0)], lb=-1.0)
            m.row([(w, 1.0), (x[k, d], -1.0)], ub=0.0)
            m.row([(w, 1.0), (u, -1.0)], ub=0.0)


def _add_transfers(m: _Milp, terms: CostTerms, x: np.ndarray) -> None:
    nd = terms.num_devices
    for s, nbytes, consumers in terms.outputs:
        link = terms.link_ms(nbytes)
        for b in range(nd):
            receivers = [c for c in consumers if terms.allowed[c, b]]
            if not receivers:
                continue
            base = min(link[a, b] for a in range(nd) if a != b)
            extra = {a: link[a, b] - base for a in range(nd) if a != b and terms.allowed[s, a] and link[a, b] > base}
            if base <= 0 and not extra:
                continue
            y = m.var(float(base))
            for c in receivers:
                m.row([(y, 1.0), (x[c, b], -1.0), (x[s, b], 1.0)], lb=0.0)
            for a, cost_ab in extra.items():
                t = m.var(float(cost_ab))
                m.row([(t, 1.0), (x[s, a], -1.0), (y, -1.0)], lb=-1.0)


def _add_submodels(m: _Milp, terms: CostTerms, x: np.ndarray, overhead: np.ndarray, max_submodels: int | None) -> None:
    nd = terms.num_devices
    neighbours: dict[int, list[int]] = {int(i): [] for i in np.flatnonzero(terms.active)}
    for u, v in terms.active_edges:
        neighbours[u].append(v), neighbours[v].append(u)
    roots = []
    for d in range(nd):
        on_d = [i for i in neighbours if terms.allowed[i, d]]
        big = float(max(len(on_d), 1))  # a root emits one unit per other node of its island, and absorbs its own
        r = {i: m.var(float(overhead[d]), integer=True) for i in on_d}
        roots.extend(r.values())
        balance: dict[int, list[tuple[int, float]]] = {i: [(x[i, d], -1.0), (r[i], big)] for i in on_d}
        for i in on_d:
            m.row([(r[i], 1.0), (x[i, d], -1.0)], ub=0.0)  # a root sits on d
            # an isolated node on d is its own root (valid, and tightens the LP bound)
            near = [(x[j, d], 1.0) for j in neighbours[i] if terms.allowed[j, d]]
            m.row([(r[i], 1.0), (x[i, d], -1.0)] + near, lb=0.0)
        for u, v in terms.active_edges:
            if not (terms.allowed[u, d] and terms.allowed[v, d]):
                continue
            f_uv, f_vu = m.var(upper=big), m.var(upper=big)
            m.row([(f_uv, 1.0), (f_vu, 1.0), (x[u, d], -big)], ub=0.0)
            m.row([(f_uv, 1.0), (f_vu, 1.0), (x[v, d], -big)], ub=0.0)
            balance[v] += [(f_uv, 1.0), (f_vu, -1.0)]
            balance[u] += [(f_vu, 1.0), (f_uv, -1.0)]
        for i in on_d:  # inflow - outflow >= x - big * r: a non-root on d absorbs one unit
            m.row(balance[i], lb=0.0)
        # Valid, and what makes the LP bound useful: a device that runs anything has a root.
        if on_d:
            used = m.var()
            for i in on_d:
                m.row([(used, 1.0), (x[i, d], -1.0)], lb=0.0)
            m.row([(r[i], 1.0) for i in on_d] + [(used, -1.0)], lb=0.0)
    if max_submodels is not None:
        if max_submodels < 1:
            raise PlacementError(f"max_submodels must be >= 1, got {max_submodels}")
        m.row([(r, 1.0) for r in roots], ub=float(max_submodels))


def _add_memory(m: _Milp, terms: CostTerms, x: np.ndarray) -> None:
    caps = np.asarray(terms.cost.device_memory_bytes, dtype=np.float64)
    placed = np.flatnonzero(terms.placed).tolist()
    constants = [c for c in np.flatnonzero(terms.constant & (terms.memory > 0)).tolist()]
    for d in np.flatnonzero(np.isfinite(caps)).tolist():
        row = [(x[i, d], terms.memory[i]) for i in placed if terms.memory[i] and terms.allowed[i, d]]
        fixed = 0.0
        for c in constants:
            holders = [t for t in terms.votes[c] if terms.placed[t]]
            if not holders:  # no consumer: the legalizer leaves it on device 0
                fixed += terms.memory[c] if d == 0 else 0.0
                continue
            copy = m.var()
            row.append((copy, terms.memory[c]))
            for t in holders:
                m.row([(copy, 1.0), (x[t, d], -1.0)], lb=0.0)
        largest = m.var(upper=np.inf)
        row.append((largest, 1.0))
        for i in placed:
            if terms.activation[i] > 0 and terms.allowed[i, d]:
                m.row([(largest, 1.0), (x[i, d], -terms.activation[i])], lb=0.0)
        m.row(row, ub=float(caps[d]) - fixed)


# --------------------------------------------------------------------- strategies
#: A CostModel, or a function building one for the context being placed.
CostProvider = Union[CostModel, Callable[[PlacementContext], CostModel]]


def resolve_cost(provider: CostProvider, context: PlacementContext) -> CostModel:
    """The provider's CostModel, with its device columns in the context's device order.

    Raises PlacementError when the model describes other nodes (it must be
    built for the prepared model being placed) or lacks one of the devices.
    """
    cost = provider if isinstance(provider, CostModel) else provider(context)
    if not isinstance(cost, CostModel):
        raise PlacementError(f"the cost provider returned {type(cost).__name__}, expected a CostModel")
    if tuple(cost.node_names) != tuple(context.graph.names):
        raise PlacementError(
            f"the CostModel describes {cost.num_nodes} nodes, not the {context.graph.num_nodes} of the model being "
            "placed; build it for the prepared model (ov_autoplace.prepare.prepare_model)")
    if tuple(cost.devices) == tuple(context.devices):
        return cost
    missing = [d for d in context.devices if d not in cost.devices]
    if missing:
        raise PlacementError(f"the CostModel has no costs for device(s) {missing}; it covers {list(cost.devices)}")
    cols = np.array([cost.devices.index(d) for d in context.devices])
    grid = np.ix_(cols, cols)
    return dataclasses.replace(
        cost, devices=tuple(context.devices), compute_ms=cost.compute_ms[:, cols], unfused_ms=cost.unfused_ms[:, cols],
        link_latency_ms=cost.link_latency_ms[grid], link_ms_per_byte=cost.link_ms_per_byte[grid],
        submodel_overhead_ms=cost.submodel_overhead_ms[cols], device_memory_bytes=cost.device_memory_bytes[cols])


class CostModelStrategy(PlacementStrategy):
    """Base of the strategies that read a CostModel (given, or built per context by a callable)."""

    def __init__(self, cost: CostProvider) -> None:
        if not isinstance(cost, CostModel) and not callable(cost):
            raise TypeError(f"cost must be a CostModel or a callable(PlacementContext) -> CostModel, got {type(cost)}")
        self.cost = cost

    def terms(self, context: PlacementContext) -> CostTerms:
        return CostTerms(resolve_cost(self.cost, context), context.graph, context.support)


class OptimumStrategy(CostModelStrategy):
    """Proposes the exact optimum under a CostModel.

    ``method="auto"`` uses the min cut when it is exact for the model (2
    devices, no submodel overhead, no memory limit, no submodel bound) and the
    MILP otherwise. ``max_submodels`` defaults to place()'s default bound, so
    the legalizer never has to merge islands of the optimum. The last
    OptimumResult is kept in ``last_result``.
    """

    name = "optimum"

    def __init__(self, cost: CostProvider, *, method: str = "auto", time_limit: float = 10.0,
                 max_submodels: int | None = 8) -> None:
        super().__init__(cost)
        if method not in ("auto", "min_cut", "milp"):
            raise ValueError(f"method must be 'auto', 'min_cut' or 'milp', got {method!r}")
        self.method, self.time_limit, self.max_submodels = method, time_limit, max_submodels
        self.last_result: OptimumResult | None = None

    def propose(self, context: PlacementContext) -> np.ndarray:
        cost = resolve_cost(self.cost, context)
        min_cut_exact = (len(cost.devices) == 2 and not (cost.submodel_overhead_ms > 0).any()
                         and np.isinf(cost.device_memory_bytes).all() and self.max_submodels is None)
        if self.method == "min_cut" or (self.method == "auto" and min_cut_exact):
            result = min_cut_placement(cost, context.graph, support=context.support)
        else:
            result = milp_placement(cost, context.graph, time_limit=self.time_limit, max_submodels=self.max_submodels,
                                    support=context.support)
        self.last_result = result
        return result.placement

    def __repr__(self) -> str:
        return (f"OptimumStrategy(method={self.method!r}, time_limit={self.time_limit}, "
                f"max_submodels={self.max_submodels})")


def optimum_strategy(cost: CostProvider, **options) -> OptimumStrategy:
    """``OptimumStrategy(cost, **options)``: plug the exact optimum into ``ov_autoplace.place``."""
    return OptimumStrategy(cost, **options)


__all__ = ["CostModelStrategy", "CostTerms", "OptimumResult", "OptimumStrategy", "min_cut_placement",
           "milp_placement", "optimum_strategy", "resolve_cost"]
