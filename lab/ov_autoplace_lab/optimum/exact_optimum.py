"""Exact placement optima under a CostModel: the result type and the s-t min cut (2 devices).

The MILP for any number of devices is in ``milp.py``; both are the reference
the heuristics and the learned policy are measured against ("exact optima as
the reference", Tarnawski et al. 2020). They need scipy (in the ``dev`` and
``train`` extras). The execution model they optimise is documented in
``cost_terms.py``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Sequence

import numpy as np

from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.costmodel.cost_model import CostModel
from ov_autoplace.costmodel.cost_terms import CostTerms

logger = logging.getLogger("ov_autoplace.optimum")

#: A MILP optimum counts as proven only when the solver says optimal AND its objective equals the simulator's
#: latency of the placement it returned within this fraction: the objective is what the solver minimised, the
#: simulator is what every table reports, and a gap between them means the two disagree about that placement.
PROVEN_TOLERANCE = 0.005


def proven_optimal(solver_optimal: bool, objective_ms: float | None, simulated_ms: float | None,
                   tolerance: float = PROVEN_TOLERANCE) -> tuple[bool, str]:
    """(proven, why): the rule above. A solver stopped at its time limit is never proven, whatever its gap."""
    if not solver_optimal:
        return False, "the MILP stopped before proving optimality (time limit)"
    if objective_ms is None or simulated_ms is None or not simulated_ms > 0:
        return False, "the MILP's placement has no finite simulated latency to compare its objective with"
    gap = abs(objective_ms - simulated_ms) / simulated_ms
    if gap > tolerance:
        return False, (f"MILP objective {objective_ms:.6f} ms differs from the simulator's {simulated_ms:.6f} ms by "
                       f"{100 * gap:.2f} % (> {100 * tolerance:.1f} %): the solver optimised another number")
    return True, f"MILP optimal; objective within {100 * gap:.2f} % of the simulator's latency"


def require_scipy():
    try:
        import scipy  # noqa: F401
    except ImportError:  # pragma: no cover - scipy is in the dev group the tests run with
        raise ImportError("the exact optimum needs scipy: pip install scipy "
                          "(or pip install 'ov_autoplace[optimum]')") from None


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
    dual_bound_ms: float | None = None  # the MILP's proven lower bound on its objective (HiGHS's dual bound)
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def proven(self) -> bool:
        """Optimal by the solver and its objective within ``PROVEN_TOLERANCE`` of the simulator's latency."""
        return proven_optimal(self.optimal, self.objective_ms, self.simulated_ms)[0]

    def summary(self) -> str:
        gap = "" if self.mip_gap is None else f", gap {self.mip_gap:.2e}"
        return (f"{self.method}: objective {self.objective_ms:.4f} ms, predicted {self.predicted_ms:.4f} ms, "
                f"{self.num_submodels} submodel(s), {self.status}{gap}, {self.wall_s:.2f} s")


def _simulate(cost: CostModel, graph: GraphArrays, device: np.ndarray) -> float | None:
    """The independent simulator's latency, when that module is present."""
    try:
        from ov_autoplace.costmodel.simulator import Simulator
    except ImportError:
        return None
    return float(Simulator(cost, graph)(device))


def finish_result(terms: CostTerms, method: str, active_device: np.ndarray, objective: float, status: str, optimal: bool,
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
    require_scipy()
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
    return finish_result(terms, "min_cut", device, objective, "optimal", True, None, start, notes, None)


__all__ = ["OptimumResult", "PROVEN_TOLERANCE", "finish_result", "min_cut_placement", "proven_optimal",
           "require_scipy"]
