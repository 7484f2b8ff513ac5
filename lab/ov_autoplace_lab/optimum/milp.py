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
import logging
import os
import sys
import tempfile
import time
from typing import Sequence

import numpy as np

from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import GraphArrays
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

    def solve_from(self, time_limit: float, mip_rel_gap: float, start: dict[int, float]):
        """As :meth:`solve`, with HiGHS given ``start`` (column -> value, a partial solution it completes) as its
        first incumbent, so the search and its dual bound start from the best placement known. scipy's ``milp``
        takes no start, so this drives the HiGHS that scipy bundles directly; ``None`` when that is missing."""
        try:
            from scipy.optimize._highspy import _core as highs_core  # scipy's bundled HiGHS (>= 1.15)
        except ImportError:
            return None
        import scipy.sparse as sp
        from scipy.optimize import OptimizeResult

        n, rows = len(self.cost), len(self.row_lb)
        a = sp.csc_array((self.vals, (self.rows, self.cols)), shape=(rows, n))
        a.sum_duplicates()
        lp = highs_core.HighsLp()
        lp.num_col_, lp.num_row_ = n, rows
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, rows
        lp.a_matrix_.format_ = highs_core.MatrixFormat.kColwise
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = np.asarray(self.cost), np.zeros(n), np.asarray(self.upper)
        lp.row_lower_, lp.row_upper_ = np.asarray(self.row_lb), np.asarray(self.row_ub)
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = a.indptr, a.indices, a.data
        lp.integrality_ = [highs_core.HighsVarType(int(i)) for i in self.integer]
        solver = highs_core._Highs()
        for key, value in (("output_flag", False), ("time_limit", float(time_limit)),
                           ("mip_rel_gap", float(mip_rel_gap))):
            solver.setOptionValue(key, value)
        solver.passModel(lp)
        cols = np.fromiter(start, dtype=np.int32, count=len(start))
        accepted = solver.setSolution(len(cols), cols, np.fromiter(start.values(), dtype=np.float64, count=len(start)))
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
            mip_dual_bound=float(info.mip_dual_bound), start_accepted=accepted == highs_core.HighsStatus.kOk)


def milp_placement(cost: CostModel, graph: GraphArrays, *, time_limit: float = 10.0, max_submodels: int | None = None,
                   support: np.ndarray | None = None, mip_rel_gap: float = 1e-6,
                   start: np.ndarray | None = None) -> OptimumResult:
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
      equal. ``sum r <= bound`` bounds the count, with the bound of
      ``legalize.effective_max_submodels`` (never below what the devices' op
      support forces);
    * memory: weights (a Constant on every device of its consumers) plus
      ``A_d >= out_bytes[i] x[i,d]`` within each finite capacity.

    Stops after ``time_limit`` seconds with the best placement found and its
    relative gap (``optimal`` False then). ``start`` (a device index per node,
    e.g. the best placement another method found) is given to HiGHS as its first
    incumbent: its active nodes' devices and one submodel root per island, the
    rest completed by HiGHS; ``dual_bound_ms`` is HiGHS's proven lower bound.
    """
    require_scipy()
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
    roots: dict[tuple[int, int], int] = {}
    if (overhead > 0).any() or max_submodels is not None:
        roots = _add_submodels(m, terms, x, overhead, max_submodels)
    _add_memory(m, terms, x)
    res = None
    if start is not None:
        with _stdout_to_log():
            res = m.solve_from(time_limit, mip_rel_gap, _start_columns(terms, x, roots, np.asarray(start)))
        notes.append("warm start unavailable (scipy without its bundled HiGHS bindings): solved cold" if res is None
                     else f"warm-started from the given placement (HiGHS {'accepted' if res.start_accepted else 'refused'}"
                          " it)")
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
        fallback = _heuristic_fallback(terms, started, notes, max_submodels)
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
        fallback = _heuristic_fallback(terms, started, [], max_submodels, quiet=True)
        if fallback.predicted_ms < result.predicted_ms:  # a weak incumbent: a heuristic does better
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
                        quiet: bool = False) -> OptimumResult:
    """The best heuristic placement, clearly marked: for a MILP stopped with no (or a weak) incumbent."""
    from ov_autoplace.search.list_scheduling import heft_placement
    from ov_autoplace_lab.baselines.critical_path import critical_path_placement

    best = None
    for name, place in (("heft", heft_placement), ("critical_path", critical_path_placement)):
        proposal = place(terms)
        latency = terms.latency_ms(terms.legal_devices(proposal, max_submodels=max_submodels)[0])
        if best is None or latency < best[0]:
            best = (latency, proposal, name)
    if quiet:
        notes.append(f"this is the {best[2]} heuristic's placement, better than the MILP's")
    else:
        notes.append(f"time limit reached before any MILP solution: this is the {best[2]} heuristic's placement")
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


def _add_submodels(m: _Milp, terms: CostTerms, x: np.ndarray, overhead: np.ndarray,
                   max_submodels: int | None) -> dict[tuple[int, int], int]:
    """The root and flow rows (``milp_placement``'s docstring); returns the root column of each (node, device)."""
    nd = terms.num_devices
    root_columns: dict[tuple[int, int], int] = {}
    neighbours: dict[int, list[int]] = {int(i): [] for i in np.flatnonzero(terms.active)}
    for u, v in terms.active_edges:
        neighbours[u].append(v), neighbours[v].append(u)
    roots = []
    for d in range(nd):
        on_d = [i for i in neighbours if terms.allowed[i, d]]
        big = float(max(len(on_d), 1))  # a root emits one unit per other node of its island, and absorbs its own
        r = {i: m.var(float(overhead[d]), integer=True) for i in on_d}
        roots.extend(r.values())
        root_columns.update({(i, d): col for i, col in r.items()})
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
    return root_columns


def _start_columns(terms: CostTerms, x: np.ndarray, roots: dict[tuple[int, int], int],
                   device: np.ndarray) -> dict[int, float]:
    """A partial MILP solution from a placement: each active node's device and one root per same-device island
    (its lowest node); anchors, transfers, fusion, flows and memory are left to HiGHS to complete."""
    out: dict[int, float] = {}
    active = np.flatnonzero(terms.active).tolist()
    for i in active:
        for d in range(terms.num_devices):
            if x[i, d] >= 0:
                out[int(x[i, d])] = float(d == device[i])
    if roots:
        parent = {i: i for i in active}

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for u, v in terms.active_edges:
            if device[u] == device[v]:
                parent[max(find(u), find(v))] = min(find(u), find(v))
        for (i, d), col in roots.items():
            out[col] = float(device[i] == d and find(i) == i)
    return out


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
