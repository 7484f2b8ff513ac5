"""The exact optimum for any number of devices: a MILP solved by HiGHS (``scipy.optimize.milp``).

Decision variables are the active nodes' devices; Parameters and
constant-subgraph nodes are tied to the legalizer's majority vote, so the MILP
optimises what the legal placement costs. Compute, lost fusion, transfers
(once per producer output and consumer device), per-submodel overhead (one
root per same-device island, proven by a flow) and memory capacity are all
modelled exactly; see ``cost_terms.py`` for the execution model. On a time
limit with no solution, or a worse one than HEFT / critical path, the better
heuristic placement is returned and the result says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sys
import tempfile
import time
from typing import Sequence

import numpy as np

from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.graph.components import component_roots
from ov_autoplace.placement.legalizer import effective_max_submodels
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace_lab.optimum.exact_optimum import OptimumResult, finish_result, require_scipy

logger = logging.getLogger("ov_autoplace.optimum")


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

    def solve_from(self, time_limit: float, mip_rel_gap: float, start: dict[int, float], random_seed: int = 0):
        """As :meth:`solve`, with HiGHS given ``start`` (column -> value, a partial solution) as its first
        incumbent, so the search and its dual bound start from the best placement known. scipy's ``milp`` takes
        no start, so this drives the HiGHS that scipy bundles directly; ``None`` when that is missing.

        HiGHS completes a partial start with a small sub-MIP of its own, which gives up on large graphs (flows,
        levels and transfers of hundreds of nodes) and leaves the search without its incumbent. So the start is
        completed here first: the same model with the start's columns fixed, solved within a tenth of the limit
        (the placement decided, what is left is bookkeeping), and HiGHS gets every column."""
        try:
            from scipy.optimize._highspy import _core as highs_core  # scipy's bundled HiGHS (>= 1.15)
        except ImportError:
            return None
        from scipy.optimize import OptimizeResult

        began = time.perf_counter()
        cols = np.fromiter(start, dtype=np.int64, count=len(start))
        values = np.fromiter(start.values(), dtype=np.float64, count=len(start))
        lower, upper = np.zeros(len(self.cost)), np.asarray(self.upper, dtype=np.float64).copy()
        lower[cols], upper[cols] = values, values
        completer = self._highs(highs_core, lower, upper, max(1.0, 0.1 * time_limit), mip_rel_gap, random_seed)
        completer.run()
        if completer.getInfo().objective_function_value != highs_core.kHighsInf and completer.getModelStatus() in (
                highs_core.HighsModelStatus.kOptimal, highs_core.HighsModelStatus.kTimeLimit):
            values = np.asarray(completer.getSolution().col_value, dtype=np.float64)
            cols = np.arange(len(values))
        solver = self._highs(highs_core, np.zeros(len(self.cost)), np.asarray(self.upper, dtype=np.float64),
                             max(1.0, time_limit - (time.perf_counter() - began)), mip_rel_gap, random_seed)
        accepted = solver.setSolution(len(cols), cols.astype(np.int32), values)
        solver.run()
        status, info = solver.getModelStatus(), solver.getInfo()
        codes = {highs_core.HighsModelStatus.kOptimal: 0, highs_core.HighsModelStatus.kTimeLimit: 1,
                 highs_core.HighsModelStatus.kInfeasible: 2}
        has_x = info.objective_function_value != highs_core.kHighsInf and status in codes and status != \
            highs_core.HighsModelStatus.kInfeasible
        return OptimizeResult(
            status=codes.get(status, 4), message=solver.modelStatusToString(status),
            x=np.asarray(solver.getSolution().col_value) if has_x else None,
            fun=float(info.objective_function_value) if has_x else None, mip_gap=float(info.mip_gap),
            mip_dual_bound=float(info.mip_dual_bound), start_accepted=accepted == highs_core.HighsStatus.kOk,
            start_completed=len(cols) == len(self.cost))

    def _highs(self, highs_core, lower: np.ndarray, upper: np.ndarray, time_limit: float, mip_rel_gap: float,
               random_seed: int = 0):
        """A HiGHS instance holding this model with the given column bounds."""
        import scipy.sparse as sp

        n, rows = len(self.cost), len(self.row_lb)
        a = sp.csc_array((self.vals, (self.rows, self.cols)), shape=(rows, n))
        a.sum_duplicates()
        lp = highs_core.HighsLp()
        lp.num_col_, lp.num_row_ = n, rows
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, rows
        lp.a_matrix_.format_ = highs_core.MatrixFormat.kColwise
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = np.asarray(self.cost), lower, upper
        lp.row_lower_, lp.row_upper_ = np.asarray(self.row_lb), np.asarray(self.row_ub)
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = a.indptr, a.indices, a.data
        lp.integrality_ = [highs_core.HighsVarType(int(i)) for i in self.integer]
        solver = highs_core._Highs()
        for key, value in (("output_flag", False), ("time_limit", float(time_limit)),
                           ("mip_rel_gap", float(mip_rel_gap)), ("random_seed", int(random_seed))):
            solver.setOptionValue(key, value)
        solver.passModel(lp)
        return solver


def milp_placement(cost: CostModel, graph: GraphArrays, *, time_limit: float = 10.0, max_submodels: int | None = None,
                   support: np.ndarray | None = None, mip_rel_gap: float = 1e-6,
                   start: np.ndarray | None = None, random_seed: int = 0) -> OptimumResult:
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
      equal; each root is priced at its device's overhead, as the cost model
      prices islands;
    * the bound (``legalize.effective_max_submodels``, never below what the
      devices' op support forces) is on HETERO's submodels, which are not the
      islands: islands sharing a Parameter or Constant are one submodel, and a
      path that leaves a submodel never re-enters it. So two lower bounds of
      HETERO's count are kept within it (``_add_bound``): the parts of a second
      flow that also passes through Parameters, Constants and followers, and
      one plus the device changes along any path (levels). Both hold for every
      legal placement, so no legal placement is cut away and the dual bound is
      a bound;
    * memory: weights (a Constant on every device of its consumers) plus
      ``A_d >= out_bytes[i] x[i,d]`` within each finite capacity.

    Stops after ``time_limit`` seconds with the best placement found and its
    relative gap (``optimal`` False then). ``start`` (a device index per node,
    e.g. the best placement another method found) is given to HiGHS as its first
    incumbent, completed first (``_start_columns``, ``_Milp.solve_from``);
    ``dual_bound_ms`` is HiGHS's proven lower bound. ``random_seed`` is HiGHS's (warm-started runs only: scipy's
    ``milp`` takes none): another seed takes the search down another path to another valid bound.
    """
    require_scipy()
    if random_seed and start is None:
        raise ValueError("random_seed needs a warm start (scipy's milp takes no seed): pass start=")
    started = time.perf_counter()
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
    notes = []
    max_submodels, raised = effective_max_submodels(graph, terms.allowed | ~terms.compute[:, None], max_submodels)
    if raised:
        notes.append(raised)
    overhead = np.asarray(cost.submodel_overhead_ms, dtype=np.float64)
    islands: dict[tuple[int, int], int] = {}
    if (overhead > 0).any():
        islands = _add_parts(m, terms, x, terms.active_edges, np.zeros(n, bool), overhead)
    bound_columns = _add_bound(m, terms, x, max_submodels) if max_submodels is not None else None
    _add_memory(m, terms, x)
    res = None
    if start is not None:
        with _stdout_to_log():
            res = m.solve_from(time_limit, mip_rel_gap, _start_columns(terms, x, np.asarray(start), islands,
                                                                          bound_columns), random_seed)
        notes.append("warm start unavailable (scipy without its bundled HiGHS bindings): solved cold" if res is None
                     else f"warm-started from the given placement (HiGHS {'accepted' if res.start_accepted else 'refused'}"
                          f" it{', completed' if res.start_completed else ', partial'})")
    if res is None:
        with _stdout_to_log():
            res = m.solve(time_limit, mip_rel_gap)
    notes.insert(0, f"MILP: {len(m.cost)} variables ({sum(m.integer)} binary), {len(m.row_lb)} rows")
    bound = getattr(res, "mip_dual_bound", None)
    bound = None if bound is None or not np.isfinite(bound) else float(bound)
    status = _MILP_STATUS.get(res.status, f"HiGHS: {res.message}")
    if res.x is None:
        if res.status != 1:
            raise PlacementError(f"the placement MILP has no solution ({status}: {res.message}); check memory "
                                 "capacities, max_submodels and unsupported nodes")
        fallback = _heuristic_fallback(terms, started, notes, max_submodels, warm=start)
        fallback.dual_bound_ms = bound
        return fallback
    sol = np.asarray(res.x)
    active_device = np.zeros(n, dtype=np.int64)
    act = np.flatnonzero(terms.active)
    if act.size:
        active_device[act] = np.argmax(sol[x[act]], axis=1)
    gap = getattr(res, "mip_gap", None)
    optimal = res.status == 0
    result = finish_result(terms, "milp", active_device, float(res.fun), status, optimal,
                     None if gap is None else float(gap), started, notes, max_submodels)
    result.dual_bound_ms = bound
    if not optimal:
        result.notes.append("not proven optimal: objective_ms is the incumbent's value, which may count redundant "
                            "submodel roots; predicted_ms is its model latency")
        fallback = _heuristic_fallback(terms, started, [], max_submodels, quiet=True, warm=start)
        if fallback.predicted_ms < result.predicted_ms:  # a weak incumbent: a heuristic or the start does better
            fallback.dual_bound_ms = bound
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
                        quiet: bool = False, warm: np.ndarray | None = None) -> OptimumResult:
    """The best heuristic placement, clearly marked: for a MILP stopped with no (or a weak) incumbent. The warm
    start, where one was given, is a candidate too: under a submodel bound the MILP's incumbent can be a placement
    whose HETERO split the legalizer merges above what the MILP priced, and worse than where it started."""
    from ov_autoplace.search.list_scheduling import heft_placement
    from ov_autoplace_lab.baselines.critical_path import critical_path_placement

    best = None
    candidates = [("heft heuristic", heft_placement(terms)), ("critical_path heuristic", critical_path_placement(terms))]
    if warm is not None:
        candidates.append(("warm start", np.asarray(warm)))
    for name, proposal in candidates:
        latency = terms.latency_ms(terms.legal_devices(proposal, max_submodels=max_submodels)[0])
        if best is None or latency < best[0]:
            best = (latency, proposal, name)
    if quiet:
        notes.append(f"this is the {best[2]}'s placement, better than the MILP's")
    else:
        notes.append(f"time limit reached before any MILP solution: this is the {best[2]}'s placement")
        logger.warning("%s", notes[-1])
    return finish_result(terms, "milp", best[1], best[0], "time limit, no solution", False, None, start, notes,
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


def _add_parts(m: _Milp, terms: CostTerms, x: np.ndarray, links: list[tuple[int, int]], joiner: np.ndarray,
               overhead: np.ndarray) -> dict[tuple[int, int], int]:
    """Roots and flow rows (``milp_placement``'s docstring) over ``links``: on each device, the active nodes on it
    and the ``joiner`` nodes (through which flow passes, needing no root: on the device their ``x`` says, or on
    every device where they have none or are a Parameter, which ``Placement.apply`` moves to its readers' device
    with the fewest parts) form parts, each with a root priced at ``overhead[d]``.
    Returns the root column of each (active node, device)."""
    root_columns: dict[tuple[int, int], int] = {}
    neighbours: dict[int, list[int]] = {}
    for u, v in links:
        neighbours.setdefault(u, []).append(v), neighbours.setdefault(v, []).append(u)
    for i in np.flatnonzero(terms.active).tolist():
        neighbours.setdefault(i, [])
    for d in range(terms.num_devices):
        anywhere = (x[:, d] < 0) | terms.parameter  # joins on d whatever its own device
        on_d = [i for i in sorted(neighbours) if terms.active[i] and terms.allowed[i, d]]
        big = float(max(len(on_d), 1))  # a root emits one unit per other node of its part, and absorbs its own
        r = {i: m.var(float(overhead[d]), integer=True) for i in on_d}
        root_columns.update({(i, d): col for i, col in r.items()})
        balance: dict[int, list[tuple[int, float]]] = {i: [(x[i, d], -1.0), (r[i], big)] for i in on_d}
        balance.update({i: [] for i in neighbours if joiner[i]})
        for i in on_d:
            m.row([(r[i], 1.0), (x[i, d], -1.0)], ub=0.0)  # a root sits on d
            if any(anywhere[j] for j in neighbours[i]):
                continue  # it may be joined through a Constant or a Parameter: not provably isolated
            # an isolated node on d is its own root (valid, and tightens the LP bound)
            near = [(x[j, d], 1.0) for j in neighbours[i] if terms.allowed[j, d]]
            m.row([(r[i], 1.0), (x[i, d], -1.0)] + near, lb=0.0)
        for u, v in links:
            if not all(anywhere[k] or terms.allowed[k, d] for k in (u, v)):
                continue
            f_uv, f_vu = m.var(upper=big), m.var(upper=big)
            for k in (u, v):  # an end with a device carries flow only there
                if not anywhere[k]:
                    m.row([(f_uv, 1.0), (f_vu, 1.0), (x[k, d], -big)], ub=0.0)
            balance[v] += [(f_uv, 1.0), (f_vu, -1.0)]
            balance[u] += [(f_vu, 1.0), (f_uv, -1.0)]
        for row in balance.values():  # inflow - outflow >= x - big * r: a non-root on d absorbs one unit
            if row:  # (a joiner passes on what it receives)
                m.row(row, lb=0.0)
        # Valid, and what makes the LP bound useful: a device that runs anything has a root.
        if on_d:
            used = m.var()
            for i in on_d:
                m.row([(used, 1.0), (x[i, d], -1.0)], lb=0.0)
            m.row([(r[i], 1.0) for i in on_d] + [(used, -1.0)], lb=0.0)
    return root_columns


@dataclasses.dataclass
class _Bound:
    """The columns ``_add_bound`` made: the parts' roots, the levels, and the links the parts' flow runs along."""
    roots: dict[tuple[int, int], int]
    levels: dict[int, int]
    links: list[tuple[int, int]]


def _add_bound(m: _Milp, terms: CostTerms, x: np.ndarray, max_submodels: int) -> _Bound:
    """Two lower bounds of HETERO's submodel count, each kept within ``max_submodels``.

    Parts: HETERO's first step cuts only the edges between devices, so islands that share a Parameter, a Constant
    or a constant-subgraph node on their device are one part. Constant-subgraph nodes sit where ``x`` says (their
    consumers' majority, as the legalizer puts them: ``_tie_anchors_to_votes``); a Constant has no ``x``, and a
    Parameter's is not where HETERO gets it (``Placement.apply`` moves it to the device of its readers with the
    fewest parts, as the legalizer counts it), so both join on every device (each sits on one in HETERO), which
    joins at least as much. So the parts are at most HETERO's, and ``sum roots <= bound`` keeps every legal
    placement.

    Levels: HETERO's submodels form a DAG, so a path never re-enters a submodel it left, and ``1 + the most
    device changes along a path`` is at most its count. A level per active node, ``L_v >= L_u + 1`` across an
    edge whose ends sit on different devices and ``L_v >= L_u`` along it, within ``[0, bound - 1]``: a placement
    whose parts fit but whose split does not is merged by the legalizer, above what the MILP priced; this keeps
    most of those out, and every legal placement in (its own depths are levels)."""
    if max_submodels < 1:
        raise PlacementError(f"max_submodels must be >= 1, got {max_submodels}")
    joiner = ~(terms.active | terms.result)
    links = sorted({(min(s, t), max(s, t)) for s, t in terms.edges if s != t and not (terms.result[s] or
                    terms.result[t]) and (terms.active[s] or terms.active[t] or (joiner[s] and joiner[t]))})
    roots = _add_parts(m, terms, x, links, joiner, np.zeros(terms.num_devices))
    m.row([(col, 1.0) for col in roots.values()], ub=float(max_submodels))
    levels = {int(i): m.var(upper=float(max_submodels - 1)) for i in np.flatnonzero(terms.active)}
    for u, v in terms.active_edges:  # (earlier, later) in the graph's topological order: the edge's direction
        for d in range(terms.num_devices):
            if x[u, d] < 0:
                continue
            row = [(levels[v], 1.0), (levels[u], -1.0), (x[u, d], -1.0)]
            m.row(row + ([(x[v, d], 1.0)] if x[v, d] >= 0 else []), lb=0.0)
    return _Bound(roots, levels, links)


def _start_columns(terms: CostTerms, x: np.ndarray, device: np.ndarray, islands: dict[tuple[int, int], int],
                   bound: _Bound | None) -> dict[int, float]:
    """A complete-enough MILP solution from a placement: each active node's device, one root per island and per
    part (the lowest node), and each node's level (its most device changes on a path reaching it). Anchors,
    transfers, fusion, flows and memory follow from these (``_Milp.solve_from`` completes them: once the
    integers are fixed, what is left is an LP)."""
    out: dict[int, float] = {}
    active = np.flatnonzero(terms.active).tolist()
    for i in active:
        for d in range(terms.num_devices):
            if x[i, d] >= 0:
                out[int(x[i, d])] = float(d == device[i])
    if islands:
        out.update(_root_values(terms, device, islands, terms.active_edges))
    if bound is not None:
        out.update(_root_values(terms, device, bound.roots, bound.links))
        depth = dict.fromkeys(active, 0)
        for u, v in terms.active_edges:  # (earlier, later): topological order
            depth[v] = max(depth[v], depth[u] + int(device[u] != device[v]))
        out.update({bound.levels[i]: float(depth[i]) for i in bound.levels})
    return out


def _root_values(terms: CostTerms, device: np.ndarray, roots: dict[tuple[int, int], int],
                 links: list[tuple[int, int]]) -> dict[int, float]:
    """1 for the lowest active node of each part of ``device`` (every node's, the legalizer's) on each device
    (``_add_parts``; a Constant or a Parameter joins on every device), else 0."""
    constant = ~(terms.placed | terms.result) | terms.parameter
    chosen: set[tuple[int, int]] = set()
    active = np.flatnonzero(terms.active).tolist()
    for d in range(terms.num_devices):
        kept = np.array([(u, v) for u, v in links if all(constant[k] or device[k] == d for k in (u, v))],
                        np.int64).reshape(-1, 2)
        part = component_roots(terms.num_nodes, kept[:, 0], kept[:, 1])
        first: dict[int, int] = {}
        for i in active:
            if device[i] == d:
                first.setdefault(int(part[i]), i)
        chosen.update((i, d) for i in first.values())
    return {col: float(key in chosen) for key, col in roots.items()}


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


__all__ = ["milp_placement"]
