"""Placement headroom of one model on one simulated suite platform: does a split pay, and who finds it?

``headroom_row(platform, model, graph)`` simulates (never measures) the best
feasible single device, the exact optimum (MILP, the legalizer's submodel
bound), HEFT, the shipped HSDAG policy in one pass (with the guard, as
``compile_model`` runs it), the policy fine-tuned on at most ``finetune_budget``
evaluated placements, both again with the cost-model local search after the
policy (``search/local_search.py``: it prices placements on the same
CostModel, which on these platforms is the simulator's), and OpenVINO's HETERO auto and PIPELINE_PARALLEL
(emulated from their rules: the devices are simulated). Every latency is the
:class:`Simulator`'s on the platform's batch-1 CostModel.

A split *pays* when the optimum is at least ``SPLIT_PAYS`` faster than the best
feasible single device, or when no single device can run the model.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ov_autoplace.costmodel.device_model import SuitePlatform
from ov_autoplace_lab.optimum.exact_optimum import proven_optimal
from ov_autoplace.costmodel.sim_costs import simulated_support
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.legalizer import effective_max_submodels
from ov_autoplace_lab.paper_bench.methods import MAX_SUBMODELS, Case, default_methods, local_search_methods

#: The optimum must beat the best single device by this fraction for a split to count as paying.
SPLIT_PAYS = 0.05
#: Methods of the headroom table, as named in ``bench.methods.default_methods``, and their JSON keys.
METHOD_KEYS = {
    "Optimum (MILP)": "milp_ms",
    "HSDAG (pretrained, one pass)": "hsdag_ms",
    "HSDAG (pretrained + fine-tune)": "hsdag_finetuned_ms",
    "HSDAG (pretrained, one pass) + local search": "hsdag_refined_ms",
    "HSDAG (pretrained + fine-tune) + local search": "hsdag_finetuned_refined_ms",
    "HEFT": "heft_ms",
    "OpenVINO HETERO auto": "openvino_hetero_auto_ms",
    "OpenVINO PIPELINE_PARALLEL": "openvino_pipeline_parallel_ms",
    "Placeto": "placeto_ms",
    "RNN placer": "rnn_placer_ms",
}
#: What a row runs unless told otherwise (the learned baselines cost a search each: ``bench_platforms --baselines``).
DEFAULT_METHODS = tuple(m for m in METHOD_KEYS if m not in ("Placeto", "RNN placer"))


def single_device_latencies(platform: SuitePlatform, graph: GraphArrays, cost=None) -> dict[str, float | None]:
    """Simulated latency of the whole model on each device alone; None where the device cannot run it
    (an unsupported op, a dynamic shape on the NPU, or weights + largest activation beyond its memory)."""
    cost = cost if cost is not None else platform.cost_model(graph)
    simulator = Simulator(cost, graph)
    out: dict[str, float | None] = {}
    for d, name in enumerate(cost.devices):
        row = np.full(graph.num_nodes, d, np.int64)
        ms = simulator.feasible_ms(row)
        out[name] = ms if math.isfinite(ms) else None
    return out


def headroom_row(platform: SuitePlatform, model: str, graph: GraphArrays, *, finetune_budget: int = 50,
                 seed: int = 0, milp_seconds: float = 20.0, methods: tuple[str, ...] | None = None,
                 placements_out: dict | None = None, milp_warm_start: bool = False, cost=None,
                 milp_seed: int = 0) -> dict:
    """One row of the headroom table (all latencies simulated, in ms; None where a method failed).

    ``milp_warm_start``: the MILP runs last, started from the best placement the other methods (and the single
    devices) found, so its incumbent is never worse than the best known and its dual bound proves a gap for it.

    ``placements_out`` (a dict) receives every method's placement under its JSON key (device index per node),
    ``"plain_call"`` (HETERO's own affinity: what ``core.compile_model`` with the HETERO string runs) and
    ``"single:<DEVICE>"`` per device: what ``bench.truth`` scores under models other than this one.

    ``milp_seed``: HiGHS's random seed for the warm-started MILP (another search path, another valid bound).

    ``cost``: the row's CostModel of ``graph`` when it is not the platform's single-shot one (a decoder's whole
    generation: ``decoder_rows.py``); every method and latency of the row then prices on it.
    """
    cost = cost if cost is not None else platform.cost_model(graph)
    support = simulated_support(cost, graph)
    singles = single_device_latencies(platform, graph, cost)
    feasible = {d: ms for d, ms in singles.items() if ms is not None}
    best_device = min(feasible, key=feasible.get) if feasible else None
    row: dict = {"platform": platform.name, "platform_kind": platform.kind, "model": model,
                 "nodes": graph.num_nodes, "simulated": True, "single_device_ms": singles,
                 "best_single_device": best_device,
                 "best_single_device_ms": feasible[best_device] if best_device else None}
    case = Case(model, graph, platform.device_names, support, cost, True, milp_seconds=milp_seconds)
    # the bound every bounded method gets from legalize / the local search / the MILP (raised when the devices'
    # op support forces more submodels than MAX_SUBMODELS)
    row["max_submodels"], raised = effective_max_submodels(graph, support, MAX_SUBMODELS)
    simulator = Simulator(cost, graph)
    wanted = set(methods or DEFAULT_METHODS)
    notes, seconds = [raised] if raised else [], {}
    row["optimum_exact"], row["optimum_proof"] = False, "the MILP did not run or failed"
    placements: dict[str, np.ndarray] = {}
    order = [m for m in default_methods(platform.device_names) + local_search_methods()
             if m.name in wanted and m.name in METHOD_KEYS]
    if milp_warm_start:  # the MILP last, from the best of the rest
        order.sort(key=lambda m: METHOD_KEYS[m.name] == "milp_ms")
    for method in order:
        key = METHOD_KEYS[method.name]
        start = time.perf_counter()
        warm = _warm_start(row, placements, graph, best_device, case.devices) if (
            milp_warm_start and key == "milp_ms") else None
        try:
            outcome = _run_milp(case, milp_seconds, seed, warm, milp_seed) if key == "milp_ms" else method.run(
                case, finetune_budget, seed)
        except Exception as exc:  # a failed method is a cell of the table, not the end of the run
            row[key] = None
            notes.append(f"{method.name}: {type(exc).__name__}: {exc}")
            continue
        finally:
            seconds[key] = round(time.perf_counter() - start, 2)
        placement = outcome.placement.device_indices(graph.names, case.devices)
        ms = simulator.feasible_ms(placement)
        feasible_ms = ms if math.isfinite(ms) else None
        row[key] = feasible_ms
        if key in ("hsdag_refined_ms", "hsdag_finetuned_refined_ms"):  # what the local search priced, and when
            row.setdefault("local_search", {})[key] = [n for n in outcome.notes if "local search" in n]
        if feasible_ms is not None:
            placements[key] = placement
        if placements_out is not None:
            placements_out[key] = placement
        if key == "milp_ms":  # proven only when the solver is optimal AND its objective is the simulator's latency
            result = outcome.milp_result
            row["optimum_exact"], row["optimum_proof"] = proven_optimal(
                result is not None and result.optimal, None if result is None else result.objective_ms, feasible_ms)
            row["milp_objective_ms"] = None if result is None else float(result.objective_ms)
            _milp_bound(row, result, warm, feasible_ms)
    if placements_out is not None:
        placements_out["plain_call"] = plain_call_placement(case)
        for d, name in enumerate(case.devices):
            placements_out[f"single:{name}"] = np.full(graph.num_nodes, d, np.int64)
    _best_known(row, placements, simulator, graph, case.devices, best_device, notes)
    row["split_pays"] = split_pays(row)
    row["seconds"], row["notes"] = seconds, notes
    return row


def _run_milp(case: Case, milp_seconds: float, seed: int, warm: tuple[str, float, np.ndarray] | None = None,
              milp_seed: int = 0):
    """The exact optimum (as ``default_methods`` runs it), keeping whether HiGHS proved it optimal."""
    from ov_autoplace_lab.optimum.strategy import OptimumStrategy
    from ov_autoplace_lab.paper_bench.methods import Outcome

    strategy = OptimumStrategy(case.cost, method="milp", max_submodels=MAX_SUBMODELS, time_limit=milp_seconds,
                               start=None if warm is None else warm[2], random_seed=milp_seed)
    placement = case.legal(strategy.propose(case.context(seed)), "Optimum (MILP)")
    outcome = Outcome(placement)
    outcome.milp_result = strategy.last_result
    return outcome


#: Who found a best-known placement, by the JSON key of the method whose placement it is.
SOURCE_LABELS = {"milp_ms": "MILP", "hsdag_refined_ms": "local search", "hsdag_finetuned_refined_ms": "local search",
                 "hsdag_ms": "policy", "hsdag_finetuned_ms": "policy (fine-tuned)", "heft_ms": "HEFT",
                 "best single device": "single device", "openvino_hetero_auto_ms": "OpenVINO mode",
                 "openvino_pipeline_parallel_ms": "OpenVINO mode", "placeto_ms": "Placeto",
                 "rnn_placer_ms": "RNN placer"}
#: A best-known value is "proven within" its gap only when the MILP's own model prices the placement it returned
#: like the simulator (the dual bound bounds the MILP's objective, which must be the simulator's latency).
MODEL_AGREEMENT = 0.005


def _warm_start(row: dict, placements: dict, graph: GraphArrays, best_device: str | None,
                devices: tuple[str, ...]) -> tuple[str, float, np.ndarray] | None:
    """(source, ms, placement): the best feasible placement known before the MILP runs."""
    known = {k: (row[k], p) for k, p in placements.items() if row.get(k) is not None}
    if best_device is not None:
        known["best single device"] = (row["best_single_device_ms"],
                                       np.full(graph.num_nodes, devices.index(best_device), np.int64))
    if not known:
        return None
    source = min(known, key=lambda k: known[k][0])
    return source, known[source][0], known[source][1]


def _milp_bound(row: dict, result, warm: tuple[str, float, np.ndarray] | None, milp_ms: float | None) -> None:
    """The MILP's dual bound, whether its model agrees with the simulator, and where it was started."""
    bound = None if result is None else result.dual_bound_ms
    agrees = (result is not None and result.simulated_ms is not None and result.simulated_ms > 0
              and abs(result.predicted_ms - result.simulated_ms) <= MODEL_AGREEMENT * result.simulated_ms)
    row["milp_dual_bound_ms"] = bound
    row["milp_gap"] = None if result is None else result.mip_gap
    row["milp_model_agrees"] = bool(agrees)
    if warm is not None:
        improved = milp_ms is not None and milp_ms < warm[1] * (1 - 1e-6)
        row["milp_warm_start"] = {"source": warm[0], "ms": warm[1], "improved": bool(improved),
                                  "notes": [] if result is None else [n for n in result.notes if "warm" in n]}


def best_known_label(row: dict) -> tuple[str, float | None]:
    """(who found the best-known placement, its proven gap to the MILP's dual bound or None = unproven).

    A MILP warm-started from another method's placement that did not improve on it credits that method."""
    source = row.get("optimum_source")
    warm = row.get("milp_warm_start")
    if source == "milp_ms" and warm and not warm["improved"]:
        source = warm["source"]
    opt, bound = row.get("optimum_ms"), row.get("milp_dual_bound_ms")
    single = row.get("best_single_device_ms")
    if opt is not None and single is not None and single <= opt * (1 + 1e-9):  # a tie with one device: say so
        source = "best single device"
    label = SOURCE_LABELS.get(source, str(source))
    if row.get("optimum_exact") and row.get("optimum_source") == "milp_ms":  # HiGHS optimal and its objective the simulator's (0.5 %)
        return label, 0.0
    if opt is None or bound is None or not row.get("milp_model_agrees") or not opt > 0:
        return label, None
    return label, max(0.0, (opt - bound) / opt)


def plain_call_placement(case: Case) -> np.ndarray:
    """What ``core.compile_model(model, "HETERO:<devices>")`` runs: each node on the first device of the list that
    supports it (HETERO's own affinity, emulated from its rule on simulated devices; not bounded in submodels)."""
    from ov_autoplace_lab.baselines.openvino_modes import OpenVINOHeteroAutoStrategy

    placement = case.legal(OpenVINOHeteroAutoStrategy().propose(case.context()), "plain call", bound=None)
    return placement.device_indices(case.graph.names, case.devices)


def reference_placements(case: Case) -> dict[str, np.ndarray]:
    """Each device alone (``single:<DEVICE>``), then the plain call (``plain_call``, :func:`plain_call_placement`):
    the reference points ``bench.truth`` scores a method against, and the searches' starts."""
    out = {f"single:{d}": np.full(case.graph.num_nodes, k, np.int64) for k, d in enumerate(case.devices)}
    out["plain_call"] = plain_call_placement(case)
    return out


def _best_known(row: dict, placements: dict, simulator, graph, devices, best_device, notes: list) -> None:
    """``optimum_ms``: the MILP's placement, or - when its time limit stopped it above another feasible
    placement (a single device or another method's) - the best one known, flagged ``optimum_exact=False``."""
    candidates = {k: row[k] for k in placements}
    if row["best_single_device_ms"] is not None:
        candidates["best single device"] = row["best_single_device_ms"]
    if not candidates:
        row["optimum_ms"], row["optimum_devices"] = None, []
        return
    source = min(candidates, key=candidates.get)
    if "milp_ms" in candidates and candidates[source] >= candidates["milp_ms"] * (1 - 1e-9):
        source = "milp_ms"
    row["optimum_ms"], row["optimum_source"] = candidates[source], source
    if source == "best single device":
        row["optimum_devices"] = [best_device]
    else:
        placement = placements[source]
        row["optimum_devices"] = sorted({devices[d] for d in np.unique(placement[_active(graph)])})
    if source != "milp_ms":
        row["optimum_exact"] = False
        row["optimum_proof"] = f"the best known placement is {source}'s, not the MILP's"
        notes.append(f"the MILP (time limit) did not reach the best known placement; optimum = {source}")


def _active(graph: GraphArrays) -> np.ndarray:
    from ov_autoplace.graph.arrays import NodeRole
    from ov_autoplace.placement.legalizer import constant_subgraph_mask

    return (np.asarray(graph.role) == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)


def split_pays(row: dict) -> bool | None:
    """True when the optimum beats the best feasible single device by ``SPLIT_PAYS`` (or none can run the model)."""
    if row.get("optimum_ms") is None:
        return None
    if row["best_single_device_ms"] is None:
        return True
    return row["optimum_ms"] <= (1.0 - SPLIT_PAYS) * row["best_single_device_ms"]


__all__ = ["DEFAULT_METHODS", "METHOD_KEYS", "SOURCE_LABELS", "SPLIT_PAYS", "best_known_label", "headroom_row",
           "plain_call_placement", "reference_placements", "single_device_latencies", "split_pays"]
