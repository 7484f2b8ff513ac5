"""The default placement of ``compile_model``: from the cache, a stored profile, or the prior - never a blocking profile.

How and why, in full: docs/default-path.md, "Module notes", ov_autoplace/decision/placement_sources.py.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import numpy as np
import openvino as ov

from ov_autoplace.cache.placement_cache import PlacementCache
from ov_autoplace.cache.profile_store import MODEL_PROFILE_FORMAT, profile_key
from ov_autoplace.compile.placed_compile import compile_plain_call
from ov_autoplace.costmodel.prior_costs import predicted_single_ms, prior_cost_model
from ov_autoplace.measuring.profiler import ModelProfile
from ov_autoplace.measuring.quick_profile import quick_model_profile
from ov_autoplace.decision.memory_path import capped_cost, note_residency
from ov_autoplace.decision.placement_pipeline import fit_to_caps, placement_pipeline
from ov_autoplace.decision.prior_rule import LIVE_DRAWS, policy_proposal, prior_outcome, survives_prior_error
from ov_autoplace.decision.request import PlacementRequest
from ov_autoplace.decision.verification import (PLAIN, KeptCompile, devices_timed_alone, evidence_intact,
                                                measuring_props, needs_verification, plain_placement,
                                                provisional_intact, runner_ups, single_device_of, verify_placement)
from ov_autoplace.measuring.generation_profile import DecodeNotProfiled, generation_profile, profile_links_of
from ov_autoplace.measuring.noise import busy_now
from ov_autoplace.devices.facts import read_device_facts
from ov_autoplace.graph.arrays import GraphArrays, NodeRole
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.model.generation import Generation, generation_costs
from ov_autoplace.placement.legalizer import query_support
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.strategies.hsdag import HSDAGStrategy

logger = logging.getLogger("ov_autoplace")

#: Cache token of the default placement (bump when its decision rule changes).
DEFAULT_SOURCE_TOKEN = "default-sources-v3"  # v3: deviations from the plain call verified by measurement
#: Time budget of the local search on the profile path (BERT-base takes 1.2-2.0 s, 20,002 nodes stop here).
REFINE_SECONDS = 2.0
#: The first start's check of a decoder's devices: its generation, rounds, budget, and the plain call's compile
#: time past which it is left to the worker (docs/default-path.md, "Module notes").
CHECK_GENERATION = Generation(32, 16)
CHECK_ROUNDS = 4
CHECK_MAX_ROUNDS = 12
CHECK_BUDGET_S = 6.0
CHECK_MAX_COMPILE_S = 5.0


@dataclasses.dataclass
class Decision:
    """Where the model goes: one device (compiled as plain OpenVINO would) or a HETERO placement."""
    source: str  # prior / profile / cache (...) / search
    single_device: str | None = None
    placement: Placement | None = None
    prepared: ov.Model | None = None
    spawn_worker: bool = False  # profile="background": the worker should measure this model
    reason: str = ""
    #: the prior recognized every device and its deviation beat the plain call in every draw of the prior's own
    #: error (``survives_prior_error``): it may run before it is verified
    calibrated: bool = False
    pending: bool = False  # a deviation from the plain call awaits verification by the background worker
    evidence: "dict | None" = None  # the measured verdict this decision rests on (verification.py)
    stored_as: Placement | None = None  # a demoted cache entry: what to store instead
    runner_up_cost: Any = None  # the costs it was placed on: their runner-up splits are verified beside it
    #: a win measured under a load that is still there: used, not final, and not measured again while it lasts
    provisional: bool = False
    #: the verification's compile of what it chose, for compile_decided
    kept: KeptCompile = dataclasses.field(default_factory=KeptCompile, repr=False, compare=False)
    #: a decoder on the plain call's device: the devices the prior cannot tell from it (``_alike``)
    alike: tuple[str, ...] = ()

    @property
    def final(self) -> bool:
        """Whether nothing about this decision is left to verify (a warm start may skip the graph for it)."""
        return not self.pending


def _single_placement(graph: GraphArrays, devices: tuple[str, ...], device: str, strategy: str) -> Placement:


    # what the legalizer makes of "everything on one device", built directly (it is on every first start); the
    # roles compared as one array (comparing each int8 with the IntEnum took 2 ms on BERT-base's 501 nodes)
    is_compute = (np.asarray(graph.role) == NodeRole.COMPUTE).tolist()
    compute = frozenset(n for n, k in zip(graph.names, is_compute) if k)
    return Placement(assignment=dict.fromkeys(graph.names, device), devices=tuple(devices), strategy=strategy,
                     compute_nodes=compute, num_submodels=1 if compute else 0)


def place_from_prior(req: PlacementRequest, prepared: ov.Model, graph: GraphArrays, policy_path) -> Decision:
    """Source 4: the HSDAG policy on the prior's costs, kept only beyond the margin."""


    devices = req.devices
    prior = prior_cost_model(graph, [read_device_facts(req.core, d) for d in devices])
    if prior.cost is None:
        logger.warning("device(s) %s report none of the properties the prior reads (%s); placing everything on %s, "
                       "the device HETERO itself would pick; use profile='background' or `ov-autoplace profile` "
                       "to measure them", list(prior.unknown), "DEVICE_TYPE, OPTIMIZATION_CAPABILITIES, ...",
                       devices[0])
        if req.pins:  # the user's pins still hold: HETERO's priority order for the rest
            support = _support(req, prepared, graph)
            placement = placement_pipeline(graph, np.zeros(graph.num_nodes, dtype=np.int64), devices, support,
                                           strategy="hsdag:prior", pins=req.pins, max_submodels=req.max_submodels)
            return Decision("prior", placement=placement, prepared=prepared, spawn_worker=True)
        return Decision("prior", single_device=devices[0], spawn_worker=True,
                        reason=f"{list(prior.unknown)} unknown to the prior")

    def support():
        return _support(req, prepared, graph)

    # a decoder: the prior costs its whole generation (the policy still reads the prefill's graph and costs)
    terms_graph, cost = _generation_prior(req, graph, prior) if req.generation else (graph, prior.cost)
    single, placement, reason = prior_outcome(cost, terms_graph, devices, support,
                                              lambda c: policy_proposal(prior.cost, graph, devices, policy_path),
                                              pins=req.pins, max_submodels=req.max_submodels, margin=prior.margin)
    if req.generation:
        reason += f" (a generation of {req.generation.prompt_tokens} + {req.generation.new_tokens} tokens)"
    live, note = False, ""
    if set(prior.recognized) == set(devices) and (placement is not None or single != devices[0]):
        matrix = support()
        candidate = (np.full(graph.num_nodes, list(devices).index(single), dtype=np.int64) if placement is None
                     else placement.device_indices(graph.names, devices))
        share = survives_prior_error(cost, terms_graph, matrix, candidate, np.argmax(matrix, axis=1))
        live = share >= 1.0
        note = f"; faster than the plain call in {share:.0%} of {LIVE_DRAWS} draws of the prior's error"
    if placement is None:
        alike = _alike(cost, devices, prior.margin) if req.generation and single == devices[0] else ()
        return Decision("prior", single_device=single, spawn_worker=True, reason=reason + note, calibrated=live,
                        alike=alike)
    return Decision("prior", placement=placement, prepared=prepared, spawn_worker=True, reason=reason + note,
                    calibrated=live)


def _alike(cost, devices: tuple[str, ...], margin: float) -> tuple[str, ...]:
    """The devices but the first not predicted slower than it beyond ``margin`` (the switch rule's mirror): the
    prior cannot tell them from it (a bf16 CPU without AMX: docs/llm.md, "The LLM objective")."""
    singles = predicted_single_ms(cost)
    first = singles[devices[0]]
    return tuple(d for d in devices[1:] if singles[d] * (1.0 - margin) < first)


def place_within_caps(req: PlacementRequest, prepared: ov.Model, graph: GraphArrays, policy_path,
                      store) -> Decision:
    """Sources 3 and 4 under ``memory_caps``: the placement within the caps on a stored profile's costs, else the
    prior's (``memory_path.py``), neither margin nor verification against the plain call, which may break a cap."""
    profile = _stored_profile(req, graph, store)
    source = "profile" if profile is not None else "prior"
    measured = None  # capped_cost's own: the prior's (it raises if the prior knows no device)
    if profile is not None:
        measured = generation_measured(req, graph, profile.cost_model, store)[1]
    elif req.generation:  # a decoder: the prior's costs of its whole generation
        prior = prior_cost_model(graph, [read_device_facts(req.core, d) for d in req.devices])
        measured = _generation_prior(req, graph, prior)[1] if prior.cost is not None else None
    cost = capped_cost(req, graph, measured)
    placement = place_on_measured_costs(req, prepared, graph, policy_path, cost, f"hsdag:{source}+memory",
                                        enforce_memory=True)
    note_residency(placement, graph, cost)
    device = single_device_of(placement)
    return Decision(source, single_device=device, placement=None if device else placement, prepared=prepared,
                    reason="; ".join(placement.notes))


def _stored_profile(req: PlacementRequest, graph: GraphArrays, store) -> ModelProfile | None:
    key = profile_key(req.core, req.devices, kind="model", graph=graph, extra={"format": MODEL_PROFILE_FORMAT})
    return store.load(key, lambda payload: ModelProfile.from_dict(payload, graph)) if store.path_for(key).exists() \
        else None


def _generation_prior(req: PlacementRequest, graph: GraphArrays, prior) -> tuple[GraphArrays, Any]:
    """The prior's graph and costs of ``req.generation`` (``model/generation.py``); the prefill's, with a
    WARNING, when the decode steps cannot be costed (our machinery, not the caller's model)."""
    try:
        return generation_costs(req.model, graph, prior.cost, req.generation,
                                lambda g, _: prior_cost_model(g, prior.facts).cost)
    except Exception as exc:  # noqa: BLE001 - costing is a prediction: the verification still measures
        logger.warning("the prior cannot cost the decode steps of %s (%s: %s); it costs the prefill alone",
                       req.generation, type(exc).__name__, exc)
        return graph, prior.cost


def place_from_profile(req: PlacementRequest, prepared: ov.Model, graph: GraphArrays, policy_path, store) -> Decision | None:
    """Source 3: a stored measured profile (None if there is none)."""
    profile = _stored_profile(req, graph, store)
    if profile is None:
        return None
    placing_graph, cost = generation_measured(req, graph, profile.cost_model, store)
    placement = place_on_measured_costs(req, prepared, placing_graph, policy_path, cost, "hsdag:profile")
    profile = dataclasses.replace(profile, cost_model=cost)
    device = single_device_of(placement)
    decision = Decision("profile", single_device=device, placement=None if device else placement, prepared=prepared,
                        reason="; ".join(placement.notes) if device else "", runner_up_cost=profile.cost_model)
    if getattr(profile.cost_model, "loaded", False):  # proves nothing: the plain call, and measured again
        return dataclasses.replace(decision, pending=True, spawn_worker=True,
                                   reason=f"{decision.reason}; the profile was taken on a loaded machine: the "
                                          "background worker measures it again")
    return decision


def generation_measured(req: PlacementRequest, graph: GraphArrays, cost, store) -> tuple[GraphArrays, Any]:
    """``(graph, cost)`` a decoder is placed on: the stored prefill profile ``cost`` with each decode step's stored
    profile at the objective's weights (``measuring/generation_profile.py``); the prefill's alone for a model with no
    generation, or when the decode steps were not profiled (an earlier release's ``ov-autoplace profile``) or
    cannot be costed."""
    if not req.generation:
        return graph, cost
    try:
        return generation_profile(req.model, graph, cost, req.generation, req.core, store=store,
                                  links=profile_links_of(cost), measure=False)
    except DecodeNotProfiled:
        logger.info("the stored profile has no decode steps (measured without the generation): placing on the "
                    "prefill's costs; the verification still decides on the whole generation")
    except Exception as exc:  # noqa: BLE001 - a prediction only: the verification still measures
        logger.warning("the decode steps of %s cannot be costed from the stored profiles (%s: %s); placing on the "
                       "prefill's costs", req.generation, type(exc).__name__, exc)
    return graph, cost


def place_on_measured_costs(req: PlacementRequest, prepared, graph, policy_path, cost, strategy: str, *,
                            enforce_memory: bool = False) -> Placement:
    """The HSDAG policy on ``cost`` refined by the local search, legalized and guarded (profile path, worker;
    under memory caps ``cost`` carries them and ``enforce_memory`` holds the result to them).

    The local search (``search/local_search.py``) prices region moves on the same measured ``cost`` and keeps
    its result only if predicted no slower (why: docs/default-path.md). It costs up to ``REFINE_SECONDS`` once
    per model: this path runs when a profile exists and its placement is cached.
    """
    support = _support(req, prepared, graph)
    context = PlacementContext(graph=graph, devices=req.devices, support=support, core=req.core, model=prepared,
                               seed=req.seed)
    hsdag = HSDAGStrategy(policy_path, cost, refine=True,
                          refine_options={"pins": tuple(req.pins or ()), "max_submodels": req.max_submodels,
                                          "max_seconds": REFINE_SECONDS})
    proposal = hsdag.propose(context)

    def note_refine(placement: Placement) -> None:
        if hsdag.last_refine is not None:
            note = hsdag.last_refine.note(cost.label)
            placement.notes.append(note)
            logger.info("placement of the profile path: %s", note)

    if enforce_memory:
        return fit_to_caps(graph, proposal, req.devices, support, cost=hsdag.last_cost, strategy=strategy,
                           pins=req.pins or (), max_submodels=req.max_submodels, refine=hsdag.last_refine,
                           annotate=note_refine)
    return placement_pipeline(graph, proposal, req.devices, support, strategy=strategy, cost=hsdag.last_cost,
                              pins=req.pins, max_submodels=req.max_submodels, annotate=note_refine)


def cache_key(req: PlacementRequest, cache: PlacementCache, graph: GraphArrays, policy_digest: str) -> dict:
    return cache.key(req.core, graph, req.devices, strategy=f"{DEFAULT_SOURCE_TOKEN}(weights={policy_digest[:16]})",
                     pins=req.pins, exclude_devices=req.exclude_devices, max_submodels=req.max_submodels,
                     shapes=req.shapes, memory_caps=req.memory_caps, generation=req.generation)


def decision_to_placement(decision: Decision, graph: GraphArrays, devices: tuple[str, ...]) -> Placement:
    """The placement to cache for ``decision`` (a one-device decision becomes a one-device placement)."""
    if decision.stored_as is not None:  # carries its tags (+pending, +live) or its verification evidence
        return decision.stored_as
    if decision.placement is not None:
        return decision.placement
    placement = _single_placement(graph, devices, decision.single_device, f"hsdag:{decision.source}")
    if decision.reason:
        placement.notes.append(decision.reason)
    return placement


def measure_profile_now(req: PlacementRequest, prepared, graph: GraphArrays, store) -> None:
    """The cheap profile (one compile and a few PERF_COUNT runs per device), stored for every later start; for a
    decoder also each decode step of its generation (``measuring/generation_profile.py``; ``graph``: ``prepared``'s)."""
    profile = quick_model_profile(prepared, req.core, req.devices, store=store)
    if req.generation:
        try:
            generation_profile(req.model, graph, profile.cost_model, req.generation, req.core, store=store,
                               links=profile_links_of(profile.cost_model), measure=True)
        except Exception as exc:  # noqa: BLE001 - the prefill's profile still places; the verification decides
            logger.warning("the decode steps of %s could not be profiled (%s: %s); placing on the prefill's "
                           "profile", req.generation, type(exc).__name__, exc)


def _support(req: PlacementRequest, prepared, graph):
    return query_support(req.core, prepared, graph, req.devices)


def _tags(strategy: str) -> list[str]:
    """``"hsdag:prior+live"`` -> ``["prior", "live"]``."""
    return (strategy.split(":", 1)[1] if ":" in strategy else strategy).split("+")


def settle(req: PlacementRequest, decision: Decision, prepared, graph: GraphArrays, *, verify_now: bool,
           ahead=None) -> Decision:
    """Apply the rule to a new decision: a deviation from the plain call is measured before it is trusted.

    ``verify_now`` (``profile="now"``): verified now. Else a calibrated prior's deviation goes live, anything
    else runs the plain call's placement; both are marked ``pending`` and the background worker verifies them.
    ``ahead``: the plain call's compile ahead, which a decoder's check reuses.
    Pinned decisions are the user's call and are not verified.
    """
    if req.pins or req.memory_caps:
        return decision  # the user's call (the plain call breaks a cap)
    if decision.single_device == req.devices[0] and decision.runner_up_cost is None:
        if req.generation and decision.source == "prior":
            return _devices_to_measure(req, decision, prepared, graph, ahead)
        return decision  # HETERO's own first device
    candidate = decision_to_placement(decision, graph, req.devices)
    support = _support(req, prepared, graph)
    # The runner-ups (HEFT on the same costs) are placed here only when they are measured now or decide whether
    # anything needs measuring; a candidate that already needs it goes to the worker, which places its own.
    alternatives = ()
    if verify_now or not needs_verification(candidate, graph, support):
        alternatives = runner_ups(graph, req.devices, support, decision.runner_up_cost,
                                  max_submodels=req.max_submodels, core=req.core, generation=req.generation)
        if not any(needs_verification(p, graph, support) for p in (candidate, *alternatives)):
            return decision
    if verify_now:
        model, kept = req.model if req.generation else req.placement_model, KeptCompile()
        verified, evidence = verify_placement(req.core, prepared, graph, candidate, support=support,
                                              properties=req.props, model=model, device_name=req.spec.text,
                                              alternatives=alternatives, generation=req.generation,
                                              kept=kept if model is req.model else None)
        device = single_device_of(verified)
        return Decision(decision.source, single_device=device, placement=None if device else verified,
                        prepared=prepared, reason=evidence.describe(), evidence=verified.verification,
                        stored_as=verified, kept=kept)
    if decision.source == "prior" and decision.calibrated:
        candidate.strategy = f"hsdag:{decision.source}+live"
        device = single_device_of(candidate)
        return dataclasses.replace(decision, single_device=device, placement=None if device else candidate,
                                   pending=True, stored_as=candidate, reason=f"{decision.reason}; every device is calibrated: live now, "
                                                        "verified by measurement in the background")
    plain = plain_placement(graph, req.devices, support, strategy=f"hsdag:{decision.source}+pending")
    note, kept = "", KeptCompile()
    if req.generation and decision.source == "prior":  # a decoder: its devices are timed now, on a short generation
        checked, note = _check_decoder_now(req, decision, prepared, graph, support, plain, ahead, kept)
        if checked is not None:
            return checked
    proposed = candidate.counts_per_device()
    plain.notes += [f"{decision.source} proposed {proposed}; the plain call's placement runs until it is verified",
                    *([note] if note else [])]
    device = single_device_of(plain)
    return Decision(decision.source, single_device=device, placement=None if device else plain, prepared=prepared,
                    spawn_worker=True, pending=True, stored_as=plain, kept=kept,
                    reason=f"{decision.source} proposes {proposed}, not yet verified by measurement: the plain call's "
                           "placement runs now and the background worker verifies the proposal"
                           + (f"; {note}" if note else ""))


def _check_decoder_now(req: PlacementRequest, decision: Decision, prepared, graph: GraphArrays, support, plain,
                       ahead, kept: KeptCompile):
    """``(decision or None, note)``: a decoder's devices timed against the plain call (``plain``: its placement) on
    a short generation; ``kept``: the plain call's compile made here if nothing was timed."""
    device = single_device_of(plain)
    if device is None or not devices_timed_alone(graph, req.devices, support, device, core=req.core):
        return None, ""
    started, first = time.perf_counter(), None
    if ahead is None:  # a deviation noted last time: compiled here, then timed, or returned if it is not
        first = compile_plain_call(req.core, req.model, req.spec.text, req.devices, measuring_props(req.props))
    seconds = ahead.wait() if ahead is not None else time.perf_counter() - started
    if seconds > CHECK_MAX_COMPILE_S:  # it would cost a few such compiles: the worker's
        if first is not None:  # never run: what the plain call returns
            kept.keep(PLAIN, plain, {PLAIN: first}, {}, {PLAIN: req.spec.text})
        return None, f"no first-start check: the plain call compiled in {seconds:.1f} s > {CHECK_MAX_COMPILE_S} s"
    gen = Generation(*map(min, dataclasses.astuple(req.generation), dataclasses.astuple(CHECK_GENERATION)))
    try:
        checked = dataclasses.replace(plain, strategy="hsdag:prior+checked")
        chosen, evidence = verify_placement(req.core, prepared, graph, checked, support=support, properties=req.props,
                                            model=req.model, device_name=req.spec.text, rounds=CHECK_ROUNDS,
                                            max_rounds=CHECK_MAX_ROUNDS, budget_s=CHECK_BUDGET_S,
                                            iterations=2, generation=gen, kept=kept,
                                            plain_compiled=ahead.take(device) if ahead is not None else first)
    except Exception as exc:  # noqa: BLE001 - our machinery: the plain call runs and the worker measures
        logger.warning("the first-start check of the decoder's devices failed (%s: %s); the plain call's placement "
                       "runs and the background worker times them", type(exc).__name__, exc)
        return None, ""
    note = f"first-start check on a generation of {gen.prompt_tokens} + {gen.new_tokens} tokens: {evidence.describe()}"
    won = single_device_of(chosen)
    if won is None or not evidence.chosen.startswith("single:"):
        return None, note
    stored = _single_placement(graph, req.devices, won, "hsdag:prior+checked+live")
    stored.notes.append(note)
    return Decision("prior", single_device=won, prepared=prepared, pending=True, spawn_worker=True, stored_as=stored,
                    kept=kept, reason=f"{decision.reason}; {note}; it runs now and the background worker verifies "
                                      f"{req.generation} for the next start"), note


def _devices_to_measure(req: PlacementRequest, decision: Decision, prepared, graph: GraphArrays, ahead) -> Decision:
    """A decoder the prior keeps on the plain call's device: that runs, and the worker times the other devices on
    the generation (per-op costs misjudge a decode step: ``verification.runner_ups``) for the next start; devices
    the prior cannot tell from it (``decision.alike``) are timed now (``_check_decoder_now``)."""
    support = _support(req, prepared, graph)
    plain = plain_placement(graph, req.devices, support, strategy="hsdag:prior+pending")
    device = single_device_of(plain)
    others = devices_timed_alone(graph, req.devices, support, device, core=req.core) if device else []
    if not others:
        return decision
    kept = KeptCompile()
    checked, note = _check_decoder_now(req, decision, prepared, graph, support, plain, ahead, kept) \
        if decision.alike else (None, "")
    if checked is not None:
        return checked
    plain.notes.append(f"a decoder: the background worker times {', '.join(others)} against {device} on the "
                       f"generation, and the next start runs the faster" + (f"; {note}" if note else ""))
    return dataclasses.replace(decision, pending=True, spawn_worker=True, stored_as=plain, kept=kept,
                               reason=f"{decision.reason}; {plain.notes[-1]}")


def decision_from_cache(req: PlacementRequest, placement: Placement, prepared, graph: GraphArrays) -> Decision:
    """A cached decision, trusted only as the rule allows (see ``first_start.decide``)."""
    tags = _tags(placement.strategy)
    source = "+".join(tags)
    device = single_device_of(placement)
    base = Decision(f"cache ({source})", single_device=device, placement=None if device else placement,
                    prepared=prepared, spawn_worker=tags[0] == "prior")
    if evidence_intact(placement):
        return dataclasses.replace(base, evidence=placement.verification, spawn_worker=False)
    provisional = provisional_intact(placement)
    if provisional and busy_now():  # won under a load that is still there: no verdict, still used
        return dataclasses.replace(base, pending=True, spawn_worker=False, provisional=True)
    if "live" in tags or "pending" in tags:
        return dataclasses.replace(base, pending=True)
    if device == req.devices[0] or req.pins or req.memory_caps:  # with caps the plain call is no fallback
        return base
    support = _support(req, prepared, graph)
    if not needs_verification(placement, graph, support):
        return base
    plain = plain_placement(graph, req.devices, support, strategy=f"hsdag:{tags[0]}+pending")
    why = "won on a loaded machine, now quiet" if provisional else "verification evidence missing or edited"
    plain.notes.append(f"a cached deviation from the plain call was demoted: {why}")
    device = single_device_of(plain)
    # a provisional win whose load has gone is the rule working (INFO); missing or edited evidence is not
    logger.log(logging.INFO if provisional else logging.WARNING, "the cached placement %s differs from the plain "
               "call's (%s); running the plain call's placement and verifying again in the background",
               placement.counts_per_device(), why)
    return Decision(f"cache ({tags[0]}, demoted)", single_device=device, placement=None if device else plain,
                    prepared=prepared, pending=True, stored_as=plain, reason=why)


__all__ = ["DEFAULT_SOURCE_TOKEN", "Decision", "cache_key", "decision_from_cache", "decision_to_placement",
           "measure_profile_now", "place_from_prior", "place_from_profile", "place_within_caps",
           "place_on_measured_costs", "settle"]
