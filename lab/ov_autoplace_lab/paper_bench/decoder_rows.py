"""Decoder rows of the headroom table: a stateful LLM on a simulated platform, placed for a whole generation.

A decoder is one graph run at two shapes: the prefill (the prompt at once: time to first token) and the decode
step (one token over a growing past). The row prices a placement as the runtime's LLM objective does
(``ov_autoplace/model/generation.py``): the prefill's static clone is the placement graph, and
``generation_costs`` adds each decode step at its weights, so a placement's simulated latency is the whole
generation (prefill + every decode step). Memory is charged as ``costmodel/memory_need.py`` charges it: the weights
each node reads plus every variable's KV cache at the generation's context on its ``ReadValue``. Every method of
the row (``headroom.headroom_row``) and every truth draw (``truth.score_draws``) prices on these costs.

Beside the headroom columns a decoder row carries what the first start does on that platform
(:func:`prior_placements`, as ``bench_prior.py`` runs it: the policy on the prior's prefill costs, judged on the
prior's generation costs by ``prior_outcome``; the first start keeps the plain call unless that choice survives
the prior's error), and each placement's time to first token and per-token latency (:func:`generation_parts`).

Under a user's memory caps (``caps``: ``memory_caps=`` of the runtime, bytes per device) every method and draw
prices on the capped costs (a placement over a cap costs inf), and the first start and the profile path are what
``memory_caps=`` runs (:func:`memory_path_placement`, as ``decision/memory_path.py``): the policy + local search on
the prior's (first start) or the measured (profile path, here the row's own) capped costs, held to the caps, and the
local search again from that fit (``placement_pipeline.fit_to_caps``).
Every number is SIMULATED.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import openvino as ov

from ov_autoplace.costmodel.device_model import SuitePlatform
from ov_autoplace.costmodel.memory_need import memory_need, with_caps
from ov_autoplace.costmodel.prior_costs import prior_cost_model
from ov_autoplace.costmodel.sim_costs import simulated_support
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.decision.first_start import POLICY_FILE
from ov_autoplace.decision.placement_pipeline import fit_to_caps
from ov_autoplace.decision.placement_sources import REFINE_SECONDS
from ov_autoplace.decision.prior_rule import policy_proposal, prior_outcome, survives_prior_error
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.model.generation import Generation, generation_costs
from ov_autoplace.model.prepare import placement_graph, prepare_model
from ov_autoplace.model.shapes import static_clone
from ov_autoplace.errors import PlacementError
from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.strategies.hsdag import HSDAGStrategy
from ov_autoplace_lab.optimum.capped_floor import capped_floor
from ov_autoplace_lab.paper_bench import truth
from ov_autoplace_lab.paper_bench.methods import Case, compiled_as, local_search_methods

#: The generation every decoder row is placed and scored for: the runtime's default (128-token prompt, 128 new).
GENERATION = Generation()


def prefill_graph(model: ov.Model, gen: Generation = GENERATION) -> GraphArrays:
    """The placement graph: the prefill's static clone (batch 1, the prompt's length), prepared and extracted, with
    the dynamic model's graph on which stateful rule 2 is checked, as the runtime's (``GraphArrays.dynamic``)."""
    n = gen.prompt_tokens
    clone = static_clone(model, {"input_ids": [1, n], "attention_mask": [1, n], "position_ids": [1, n],
                                 "beam_idx": [1]})
    return placement_graph(prepare_model(clone), model)


def generation_cost(model: ov.Model, prefill: GraphArrays, prefill_cost, cost_of,
                    gen: Generation = GENERATION, caps: np.ndarray | None = None):
    """``(graph, cost)`` of the whole generation (``generation_costs``; ``cost_of(graph)`` costs each decode step)
    with the KV cache charged on each ``ReadValue`` at the generation's context (``memory_need``); ``caps`` (bytes
    per device, inf: none) bound each device's memory as the runtime's ``memory_caps=`` does (``with_caps``)."""
    graph, cost = generation_costs(model, prefill, prefill_cost, gen, lambda g, _prepared: cost_of(g))
    need = memory_need(prefill, model, gen.prompt_tokens + gen.new_tokens)
    if caps is not None:
        return graph, with_caps(cost, need, caps)
    return graph, dataclasses.replace(cost, node_memory_bytes=need.node_bytes.astype(np.int64))


@dataclasses.dataclass
class DecoderCase:
    """One decoder on one platform: the prefill's graph and costs, the generation's graph and costs."""

    model: ov.Model
    prefill: GraphArrays
    prefill_cost: object
    graph: GraphArrays
    cost: object
    need_bytes: int  # what the whole model holds on one device: weights once per reader + KV cache
    caps: np.ndarray | None = None  # float64 [D]: the user's memory caps in bytes (inf: none), None: no caps


def decoder_case(platform: SuitePlatform, model: ov.Model, prefill: GraphArrays,
                 gen: Generation = GENERATION, caps: dict[str, float] | None = None) -> DecoderCase:
    """``caps``: a user's ``memory_caps`` (device -> bytes); the generation's costs then carry them."""
    prefill_cost = platform.cost_model(prefill)
    limit = np.array([float(caps.get(d, np.inf)) for d in prefill_cost.devices], np.float64) if caps else None
    graph, cost = generation_cost(model, prefill, prefill_cost, platform.cost_model, gen, limit)
    return DecoderCase(model, prefill, prefill_cost, graph, cost, int(np.asarray(cost.node_memory_bytes).sum()),
                       limit)


def memory_path_placement(case: DecoderCase, cost, devices: tuple[str, ...]) -> np.ndarray | None:
    """What ``memory_caps=`` places on ``cost`` (the generation's, carrying the caps): the policy + local search,
    legalized, guarded, held to the caps and searched again from the fit (``placement_sources.place_within_caps``);
    None when it refuses."""
    support = simulated_support(case.cost, case.graph)
    hsdag = HSDAGStrategy(POLICY_FILE, cost, refine=True, refine_options={
        "pins": (), "max_submodels": DEFAULT_MAX_SUBMODELS, "max_seconds": REFINE_SECONDS})
    try:
        proposal = hsdag.propose(PlacementContext(graph=case.graph, devices=devices, support=support))
        placement = fit_to_caps(case.graph, proposal, devices, support, cost=hsdag.last_cost, strategy="hsdag+memory",
                                max_submodels=DEFAULT_MAX_SUBMODELS, refine=hsdag.last_refine)
    except PlacementError:  # MemoryCapError among them: the runtime raises, nothing is placed over a cap
        return None
    return placement.device_indices(case.graph.names, devices)


def _memory_path_record(case: DecoderCase, placements: dict, row: dict, key: str, chosen) -> None:
    """``chosen`` as ``placements[key]`` and its simulated ms as ``row[key]`` (None: refused, or over a cap)."""
    row[key] = None
    if chosen is not None:
        ms = float(Simulator(case.cost, case.graph).feasible_ms(chosen))
        placements[key], row[key] = chosen, (ms if math.isfinite(ms) else None)


#: The floor MILP's time limit per capped device (``optimum/capped_floor.py``; qwen2_dec_l on npu_cpu: optimal in
#: about 150 s on the 2-core machine).
FLOOR_SECONDS = 600.0


def no_split_proof(case: DecoderCase, seconds: float = FLOOR_SECONDS) -> dict | None:
    """For a capped row no method fits: each capped device's floor (what it keeps in every placement the legalizer
    returns, ``capped_floor``), the first over its cap, which proves the row has no split, else the last; None
    without caps."""
    if case.caps is None:
        return None
    support, devices, record = simulated_support(case.cost, case.graph), tuple(case.cost.devices), None
    for device, cap in zip(devices, case.caps.tolist()):
        if not math.isfinite(cap):
            continue
        floor = capped_floor(case.graph, support, case.cost.node_memory_bytes, devices, device, cap, seconds=seconds)
        record = {"device": device, "floor_bytes": floor.floor_bytes, "cap_bytes": cap, "optimal": floor.optimal,
                  "proves": floor.proves_no_split, "text": floor.describe()}
        if floor.proves_no_split:
            break
    return record


def proves_no_split(row: dict) -> bool:
    """Whether ``row`` carries a floor (:func:`no_split_proof`) that proves it has no split."""
    return bool((row.get("no_split") or {}).get("proves"))


def generation_parts(case: DecoderCase, placement, gen: Generation = GENERATION) -> dict | None:
    """Simulated time to first token (the prefill) and mean per-token latency of one placement; None if it does
    not fit (or cannot run)."""
    total = Simulator(case.cost, case.graph).feasible_ms(np.asarray(placement, np.int64))
    if not math.isfinite(total):
        return None
    ttft = float(Simulator(case.prefill_cost, case.prefill)(np.asarray(placement, np.int64)))
    return {"generation_ms": float(total), "ttft_ms": ttft,
            "per_token_ms": (float(total) - ttft) / max(gen.new_tokens - 1, 1)}


def dynamic_moves(case: DecoderCase, placement) -> int:
    """How many of the clone's active nodes ``placement`` (device per node of ``case.graph``) moves once compiled
    (:func:`methods.compiled_as`). 0: the split priced here is the split compiled; else the table priced a placement
    the runtime would not run."""
    devices = tuple(case.cost.devices)
    return compiled_as(case.graph, placement, devices, simulated_support(case.cost, case.graph))[1]


def prior_placements(platform: SuitePlatform, case: DecoderCase, placements: dict, row: dict,
                     gen: Generation = GENERATION) -> None:
    """The prior's choice (``prior_ms``) and the first start's (``first_start_ms``) into ``row`` and ``placements``,
    as the runtime's default path makes them for a decoder (module doc); ms under the row's simulated costs."""
    devices = platform.device_names
    cpu = next((d.spec for d in platform.devices if d.spec.kind == "cpu"), None)
    facts = truth.platform_facts(platform)
    prior = prior_cost_model(case.prefill, facts, cpu_spec=cpu)
    if prior.cost is None:
        row["prior_choice"] = f"the prior does not know {list(prior.unknown)}"
        return
    terms_graph, cost = generation_costs(case.model, case.prefill, prior.cost, gen,
                                         lambda g, _prepared: prior_cost_model(g, facts, cpu_spec=cpu).cost)
    if case.caps is not None:  # memory_caps=: the memory path, on the prior's costs with the model's need and the caps
        need = memory_need(case.prefill, case.model, gen.prompt_tokens + gen.new_tokens)
        chosen = memory_path_placement(case, with_caps(cost, need, case.caps), devices)
        _memory_path_record(case, placements, row, "prior_ms", chosen)
        row["prior_choice"] = row["first_start_choice"] = "refused (MemoryCapError)" if chosen is None else (
            "memory path: " + ("split" if np.unique(chosen).size > 1 else "one device"))
        if "prior_ms" in placements:
            placements["first_start_ms"] = placements["prior_ms"]
        row["first_start_ms"] = row["prior_ms"]
        return
    support = simulated_support(case.cost, case.graph)
    single, placement, reason = prior_outcome(
        cost, terms_graph, devices, lambda: support,
        lambda c: policy_proposal(prior.cost, case.prefill, devices, POLICY_FILE),
        max_submodels=DEFAULT_MAX_SUBMODELS, margin=prior.margin)
    simulator = Simulator(case.cost, case.graph)
    if placement is None:
        chosen, what = placements[f"{truth.SINGLE_PREFIX}{single}"], f"{single} alone"
    else:
        chosen, what = placement.device_indices(case.graph.names, devices), f"split {placement.counts_per_device()}"
    ms = float(simulator.feasible_ms(chosen))
    placements["prior_ms"] = chosen
    row["prior_ms"], row["prior_choice"] = (ms if math.isfinite(ms) else None), what
    plain = np.asarray(placements[truth.PLAIN_CALL])
    live = (set(prior.recognized) == set(devices) and not np.array_equal(chosen, plain)
            and survives_prior_error(cost, terms_graph, support, chosen, plain) >= 1.0)
    placements["first_start_ms"] = chosen if live else plain
    first = float(simulator.feasible_ms(placements["first_start_ms"]))
    row["first_start_ms"] = first if math.isfinite(first) else None
    row["first_start_choice"] = what if live else "the plain call"


def profile_path_placement(platform: SuitePlatform, case: DecoderCase, placements: dict, row: dict,
                           seed: int = 0) -> None:
    """What the profile path places today (``profile_prefill_ms``): the policy + local search on a profile of the
    prefill alone (a measured profile times the prefill's static clone: docs/llm.md, "Not built yet"), legalized and
    guarded as in the headroom columns, then scored on the whole generation. Under caps, the memory path on the row's
    own capped generation costs (a profile's place: ``place_within_caps``)."""
    if case.caps is not None:
        chosen = memory_path_placement(case, case.cost, platform.device_names)
        _memory_path_record(case, placements, row, "memory_profile_ms", chosen)
        return
    support = simulated_support(case.prefill_cost, case.prefill)
    prefill = Case(row["model"], case.prefill, platform.device_names, support, case.prefill_cost, True)
    method = next(m for m in local_search_methods() if m.name == "HSDAG (pretrained, one pass) + local search")
    chosen = method.run(prefill, 0, seed).placement.device_indices(case.prefill.names, platform.device_names)
    ms = float(Simulator(case.cost, case.graph).feasible_ms(chosen))
    placements["profile_prefill_ms"] = chosen
    row["profile_prefill_ms"] = ms if math.isfinite(ms) else None


def leave_platform_out_cost(platform: SuitePlatform, case: DecoderCase, gen: Generation = GENERATION):
    """The leave-platform-out truth (``truth.score_leave_platform_out``) of the whole generation: the prior without
    the fits of the platform's own devices, prefill and decode steps; None when it cannot model some device."""
    excluded = truth.leave_out_platforms(platform)
    cpu = next((d.spec for d in platform.devices if d.spec.kind == "cpu"), None)
    facts = truth.platform_facts(platform)

    def cost_of(g):
        return prior_cost_model(g, facts, cpu_spec=cpu, exclude_platforms=excluded).cost

    prefill_cost = cost_of(case.prefill)
    if prefill_cost is None:
        return None
    return generation_cost(case.model, case.prefill, prefill_cost, cost_of, gen)[1]


#: The placements a decoder row judges against the targets (JSON key, title): what the first start compiles, the
#: prior's choice, the policy's one pass and the policy + local search on the generation's costs (the profile path's
#: placement once a profile covers the decode steps), and on the prefill's alone (the profile path's today).
PRODUCT_KEYS = (("first_start_ms", "first start (prior rule)"), ("prior_ms", "prior's choice"),
                ("hsdag_ms", "policy one pass"), ("hsdag_refined_ms", "policy + local search"),
                ("profile_prefill_ms", "policy + LS on the prefill"),
                ("memory_profile_ms", "memory path, profiled"))  # under caps only, in place of the prefill's
#: The JSON keys only decoder rows carry.
DECODER_KEYS = ("generation", "memory_need_bytes", "parts", "prior_ms", "prior_choice", "first_start_ms",
                "first_start_choice", "profile_prefill_ms", "memory_profile_ms", "memory_caps", "dynamic_moves",
                "no_split")


def draw_record(row: dict, key: str) -> tuple[int, int, int] | None:
    """(draws within 1.05x of the draw's best known, draws slower than the plain call, draws) of ``key``."""
    t = row.get("truth") or {}
    if not t.get(key):
        return None
    near = slower = n = 0
    for ms, opt, plain in zip(t[key], t["optimum_ms"], t["plain_call_ms"]):
        if ms is None or opt is None:
            continue
        n += 1
        near += ms <= 1.05 * opt * (1 + 1e-9)
        slower += plain is not None and ms > plain * (1 + 1e-9)
    return near, slower, n


def decoder_lines(rows: list[dict]) -> list[str]:
    """Per decoder row: memory, what each product placement is (time to first token, per token), its record under
    the truth draws; then the targets over the rows where a split pays."""
    rows = [r for r in rows if r.get("generation")]
    lines = []
    for r in rows:
        need = r["memory_need_bytes"] / 2 ** 30
        fits = [d for d, ms in r["single_device_ms"].items() if ms is not None]
        capped = ", ".join(f"{d} capped at {b / 2 ** 30:.3f} GiB" for d, b in (r.get("memory_caps") or {}).items())
        where = f"{r['platform']}{' (' + capped + ')' if capped else ''}/{r['model']}"
        proof = r.get("no_split") or {}
        best = (f"best known {r['optimum_ms']:.3f} ms on {'+'.join(r['optimum_devices'])}"
                if r.get("optimum_ms") is not None else "no method found a placement that fits" + (
                    f"; none exists (proven): {proof['text']}" if proves_no_split(r) else
                    f"; not proven that none exists: {proof['text']}" if proof else ""))
        lines.append(f"{where}: holds {need:.3f} GiB on one device (weights + KV cache at "
                     f"{sum(r['generation'])} tokens); fits alone on {', '.join(fits) or 'no device'}; split pays: "
                     f"{r['split_pays']}; {best}")
        for key, title in (("best_single", "best single device"), ("optimum", "best known"),
                           ("plain_call", "plain call")) + PRODUCT_KEYS:
            if key.endswith("_ms") and key not in r:  # a path this row does not run (caps or not)
                continue
            part = (r.get("parts") or {}).get(key)
            record = draw_record(r, key)
            what = {"first_start_ms": r.get("first_start_choice"), "prior_ms": r.get("prior_choice")}.get(key)
            text = "does not fit / not run" if part is None else (
                f"TTFT {part['ttft_ms']:.3f} ms, per token {part['per_token_ms']:.4f} ms, generation "
                f"{part['generation_ms']:.2f} ms")
            if record is not None and record[2]:
                text += (f"; truth draws: within 1.05x of the best known in {record[0]}/{record[2]}, slower than "
                         f"the plain call in {record[1]}/{record[2]}")
            moves = (r.get("dynamic_moves") or {}).get(key)
            if moves:  # the runtime legalizes it again on the dynamic model and would compile something else
                text += f"; NOT what compile_model compiles: the dynamic model's legalization moves {moves} node(s)"
            lines.append(f"    {title + ':':<27} {text}" + (f" [{what}]" if what else ""))
    split = [r for r in rows if r.get("split_pays")]
    lines.append(f"rows where a split pays: {len(split)} of {len(rows)}; no single device holds the model in "
                 f"{sum(r['best_single_device_ms'] is None for r in rows)}, a split found there in "
                 f"{sum(r['best_single_device_ms'] is None and len(r.get('optimum_devices') or ()) > 1 for r in rows)}"
                 f", none exists there (proven: a capped device's floor over its cap) in "
                 f"{sum(map(proves_no_split, rows))}")
    for key, title in (("optimum", "best known"),) + PRODUCT_KEYS:
        checked = [r for r in split if key in (r.get("dynamic_moves") or {})]
        if checked:
            lines.append(f"{title}: as compile_model compiles it (the dynamic model's legalization moves no node) in "
                         f"{sum(r['dynamic_moves'][key] == 0 for r in checked)}/{len(checked)} split rows")
    for key, title in PRODUCT_KEYS:
        records = [(r, draw_record(r, key)) for r in split]
        records = [(r, x) for r, x in records if x is not None and x[2]]
        if not records:
            continue
        meets = [r for r, (near, slower, n) in records if near >= 0.9 * n and slower == 0]
        near, slower, n = (sum(x[i] for _, x in records) for i in range(3))
        lines.append(f"{title}: meets the target (>= 90 % of draws within 1.05x, never slower than the plain call) "
                     f"in {len(meets)}/{len(records)} split rows; pooled: within 1.05x in {near}/{n} draws "
                     f"({100 * near / n:.1f} %), slower than the plain call in {slower}/{n}")
    return lines


__all__ = ["DECODER_KEYS", "PRODUCT_KEYS", "DecoderCase", "GENERATION", "decoder_case", "decoder_lines",
           "draw_record", "dynamic_moves", "generation_cost", "generation_parts", "leave_platform_out_cost",
           "no_split_proof", "prefill_graph", "prior_placements", "profile_path_placement", "proves_no_split"]
