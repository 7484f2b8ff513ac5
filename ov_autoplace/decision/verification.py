"""Verification by measurement: a placement other than the plain call's is kept only if it measurably wins.

How and why, in full: docs/default-path.md, "Module notes", ov_autoplace/decision/verification.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import statistics
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from ov_autoplace.costmodel.cost_terms import CostTerms
from ov_autoplace.measuring.noise import LOADED_OTHER_CORES, LoadProbe, busy_now
from ov_autoplace.decision.placement_pipeline import placement_pipeline
from ov_autoplace.compile.placed_compile import compile_on_one_device, compile_plain_call, compile_with_affinities
from ov_autoplace.devices.properties import with_runtime_options
from ov_autoplace.devices.facts import twin_of
from ov_autoplace.devices.timing import measure_latency, random_inputs, round_order, set_step, time_generation
from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import NodeRole
from ov_autoplace.model.generation import decode_pasts, generation_parts
from ov_autoplace.placement.legalizer import legalize, query_support
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace.strategies.heft import HeftStrategy

if TYPE_CHECKING:
    from ov_autoplace.decision.request import PlacementRequest

logger = logging.getLogger("ov_autoplace")

#: An alternative must be this much faster than the plain call (at the confidence below) to be kept.
MIN_GAIN = 0.02
#: One-sided confidence of the paired test (split over the alternatives: Bonferroni).
CONFIDENCE = 0.95
#: Rounds of interleaved timing (each contender once per round); fewer when the time budget runs out.
ROUNDS = 9
MIN_ROUNDS = 4
#: More rounds, up to this, where the first round shows half the budget holds them (why: the docs).
MAX_ROUNDS = 25
#: Timed runs of a contender per round (its median is the round's sample).
ITERATIONS = 5
#: Default time budget of the timing rounds (compiles excluded), seconds.
BUDGET_S = 20.0
#: The budget and the most rounds are this many times as large where the machine is loaded over the compiles.
LOADED_SCALE = 3
#: The plain call's per-round medians varying by more than this (coefficient of variation) make the machine noisy:
#: a loss is then no verdict.
MAX_ROUND_CV = 0.15
#: Share of the level a win may spend at a first look after ROUNDS rounds where more follow (the rest at the end;
#: 0: no look).
FIRST_LOOK = 0.2
#: Bumped when the rule changes: evidence of another version is verified again.
RULE_VERSION = 7
RULE = (f"v{RULE_VERSION}: kept only if at least {MIN_GAIN:.0%} faster than each of two compiles of the plain call "
        f"at {CONFIDENCE:.0%} one-sided confidence (paired t on per-round log ratios, Bonferroni over the "
        "alternatives); on a "
        f"noisy machine (the plain call's rounds vary by more than {MAX_ROUND_CV:.0%}) a loss abstains; when other "
        f"processes keep more than {LOADED_OTHER_CORES} of its cores busy, a win must also clear (bound and median) "
        "what the plain call's two compiles read apart at that confidence, and is used provisionally (not a "
        f"verdict: verified again on a quiet machine), and a loss abstains; where rounds follow the first {ROUNDS}, "
        f"a win there at {FIRST_LOOK:.0%} of the level ends them (the rest at the end)")

PLAIN = "plain"
#: The plain call compiled a second time: what two compiles of one call differ by, measured in the same rounds.
PLAIN_SECOND = "plain'"
CANDIDATE = "candidate"
ALTERNATIVE = "alternative:"  # + the runner-up's strategy name
#: The methods whose placement on the candidate's cost model is measured beside it (:func:`runner_ups`).
RUNNER_UP_METHODS = ("heft",)


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What a verification measured and decided (JSON-able through :meth:`to_dict`)."""

    #: "kept" (an alternative won) | "plain" (none won) | "abstained" (too noisy to decide) | "provisional" (won by
    #: a wide margin on a loaded machine: used under that load, not a verdict)
    decision: str
    chosen: str  # "candidate", "alternative:<strategy>", "single:<DEVICE>" or "plain"
    rule: str
    rounds: int
    median_ms: Mapping[str, float]  # contender -> median of its round medians
    spread: Mapping[str, float]  # contender -> coefficient of variation of its round medians
    ratio: Mapping[str, float]  # alternative -> median paired ratio to the plain call
    upper: Mapping[str, float]  # alternative -> the one-sided upper confidence bound of that ratio
    reason: str
    measured_at: float  # unix time
    #: A decoder's generation and each contender's parts: prompt_tokens, new_tokens, ttft_ms, per_token_ms
    #: ({contender: median ms}); empty for single-shot latency (and then left out of :meth:`to_dict`).
    generation: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def verified(self) -> bool:
        """Whether the decision rests on a verdict (an abstention does not)."""
        return self.decision in ("kept", "plain")

    def describe(self) -> str:
        alts = ", ".join(f"{c} {self.median_ms[c]:.3f} ms (x{self.ratio[c]:.3f}, <= x{self.upper[c]:.3f})"
                         for c in self.ratio)
        plain = self.median_ms.get(PLAIN)
        head = f"plain call {plain:.3f} ms" if plain is not None else "plain call not measured"
        gen = self.generation
        parts = "" if not gen else (f"; a generation of {gen['prompt_tokens']} + {gen['new_tokens']} tokens, time "
                                    "to first token / per token (ms): " + ", ".join(
                                        f"{c} {gen['ttft_ms'][c]:.3f} / {gen['per_token_ms'][c]:.3f}"
                                        for c in gen["ttft_ms"]))
        return (f"verification ({self.rounds} paired rounds): {head}; {alts or 'no alternative'} -> {self.chosen}: "
                f"{self.reason}{parts}")

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self) | {"median_ms": dict(self.median_ms), "spread": dict(self.spread),
                                          "ratio": dict(self.ratio), "upper": dict(self.upper)}
        return out if self.generation else {k: v for k, v in out.items() if k != "generation"}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Evidence":
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: data[k] for k in fields if k in data})


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (Cornish-Fisher; < 0.5 % off for df >= 3)."""
    z = statistics.NormalDist().inv_cdf(p)
    if df <= 0:
        return math.inf
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4


def decide(rounds_ms: Mapping[str, Sequence[float]], *, min_gain: float = MIN_GAIN, confidence: float = CONFIDENCE,
           max_round_cv: float = MAX_ROUND_CV, other_cores: float = math.nan,
           measured_at: float | None = None) -> Evidence:
    """The rule on per-round medians (ms) of ``"plain"``, its second compile ``"plain'"`` and the alternatives
    (same round order for all); ``other_cores``: other processes' busy cores while they were compiled and timed
    (nan: unknown). Without the second compile's rounds it abstains."""
    plain = np.asarray(rounds_ms.get(PLAIN, ()), dtype=np.float64)
    second = np.asarray(rounds_ms[PLAIN_SECOND], dtype=np.float64) if PLAIN_SECOND in rounds_ms else None
    alts = {c: np.asarray(s, dtype=np.float64) for c, s in rounds_ms.items() if c not in (PLAIN, PLAIN_SECOND)}
    stamp = time.time() if measured_at is None else measured_at
    medians = {c: float(np.median(s)) for c, s in rounds_ms.items() if len(s)}
    spread = {c: float(np.std(s, ddof=1) / np.mean(s)) if len(s) > 1 else math.inf
              for c, s in rounds_ms.items() if len(s)}
    n = len(plain)
    if n < 2 or any(len(s) != n for s in alts.values()) or second is None or len(second) != n:
        return Evidence("abstained", PLAIN, RULE, n, medians, spread, {}, {},
                        "too few paired rounds of the plain call's two compiles and each alternative", stamp)
    # A win over both compiles of the plain call (why, and why Bonferroni over the alternatives only: the docs)
    t = t_quantile(1 - (1 - confidence) / max(1, len(alts)), n - 1)
    loaded = other_cores > LOADED_OTHER_CORES  # nan compares False: an OS that does not say is not called loaded
    control = np.log(second / plain)  # loaded: what two compiles of one call read apart (at the bound) is no win
    gain = max(min_gain, 1.0 - math.exp(-max(_upper(control, t), _upper(-control, t)))) if loaded else min_gain
    ratio, upper, robust = {}, {}, []
    for c, s in alts.items():
        against = (np.log(s / plain), np.log(s / second))
        ratio[c] = float(np.exp(np.median(against[0])))
        upper[c] = max(float(np.exp(_upper(d, t))) for d in against)
        if not loaded or max(np.median(d) for d in against) < math.log(1.0 - gain):
            robust.append(c)  # load bursts can pull the mean (so the bound) far from the median
    noisy = spread.get(PLAIN, math.inf) > max_round_cv
    apart = math.exp(abs(float(np.median(control))))  # reported: what two compiles of one call differ by
    clears = f"{gain:.0%} (the plain call's two compiles measured x{apart:.3f} apart)"
    condition = (f"the machine was loaded (other processes kept {other_cores:.2f} of this process's cores busy, "
                 f"limit {LOADED_OTHER_CORES})" if loaded else
                 f"the plain call's rounds vary by {spread[PLAIN]:.0%} > {max_round_cv:.0%}" if noisy else "")
    winners = [c for c in robust if upper[c] < 1.0 - gain]
    if winners:
        best = min(winners, key=lambda c: ratio[c])
        won = (f"{best} is x{ratio[best]:.3f} of the plain call (<= x{upper[best]:.3f} at {confidence:.0%} against "
               f"either compile), beyond {clears}")
        if loaded:  # a load that lasts can make one device far faster (one thread against two contended ones)
            return Evidence("provisional", best, RULE, n, medians, spread, ratio, upper,
                            f"{condition}: {won}; used under this load, verified again when the machine is quiet",
                            stamp)
        return Evidence("kept", best, RULE, n, medians, spread, ratio, upper,
                        won + (f" ({condition})" if condition else ""), stamp)
    lost = f"no alternative is faster at {confidence:.0%} confidence beyond {clears}; kept the plain call"
    if condition:  # a smaller win may hide in the noise or the load: no verdict, verified again later
        return Evidence("abstained", PLAIN, RULE, n, medians, spread, ratio, upper,
                        f"too noisy or loaded to decide ({condition}): {lost}", stamp)
    return Evidence("plain", PLAIN, RULE, n, medians, spread, ratio, upper, lost, stamp)


def _upper(d: np.ndarray, t: float) -> float:
    """The one-sided upper confidence bound (quantile ``t``) of the mean of paired log ratios ``d``."""
    return d.mean() + t * d.std(ddof=1) / math.sqrt(len(d))


def all_slower(rounds_ms: Mapping[str, Sequence[float]], *, confidence: float = CONFIDENCE) -> bool:
    """Whether every alternative is slower than each compile of the plain call (median and bound): no win to come."""
    plains = [np.asarray(rounds_ms[c]) for c in (PLAIN, PLAIN_SECOND) if c in rounds_ms]
    alts = [np.asarray(s) for c, s in rounds_ms.items() if c not in (PLAIN, PLAIN_SECOND)]
    if not plains or not alts or len(plains[0]) < 2:
        return False
    t = t_quantile(1 - (1 - confidence) / len(alts), len(plains[0]) - 1)
    return all(np.median(d) > 0 and _upper(-d, t) < 0 for a in alts for p in plains for d in [np.log(a / p)])


def time_rounds(contenders: Mapping[str, Any], inputs: Sequence[np.ndarray], *, rounds: int = ROUNDS,
                min_rounds: int = MIN_ROUNDS, iterations: int = ITERATIONS, budget_s: float = BUDGET_S,
                generation=None, parts: dict | None = None, max_rounds: int | None = None,
                futile: Callable[[dict], bool] | None = None) -> dict[str, list[float]]:
    """Per-round medians (ms) of each compiled contender, interleaved, the order rotated every round; when it stops,
    ``max_rounds``, ``futile`` and a ``generation``: docs/architecture.md, "Module notes", verification.py."""
    labels = list(contenders)
    out: dict[str, list[float]] = {c: [] for c in labels}
    started = time.perf_counter()
    planned, r = rounds, 0
    while r < planned:
        for c in round_order(labels, r):
            if generation is not None:
                times = generation_parts(generation, *time_generation(
                    contenders[c], generation.prompt_tokens, decode_pasts(generation), repeats=max(1, iterations // 2),
                    seed=r))
                out[c].append(times["generation_ms"])
                (parts if parts is not None else {}).setdefault(c, []).append(times)
                continue
            stats = measure_latency(contenders[c], inputs, warmup=1, iterations=iterations)
            out[c].append(stats.median_ms)
        elapsed = time.perf_counter() - started
        if r == 0 and max_rounds is not None and max_rounds > rounds:
            planned = max(rounds, min(max_rounds, int(0.5 * budget_s / max(elapsed, 1e-9))))
        r += 1
        if (r >= min_rounds and elapsed > budget_s) or (rounds <= r < planned and futile is not None and futile(out)):
            break
    return out


def plain_placement(graph, devices: Sequence[str], support: np.ndarray, *, strategy: str = "plain"):
    """HETERO's own affinity as a Placement: every node on the first listed device that supports it."""

    return legalize(graph, np.argmax(support, axis=1).astype(np.int64), tuple(devices), support,
                    max_submodels=None, strategy=strategy)


def single_device_of(placement) -> str | None:
    """The device when every compute node of ``placement`` is on one device, else None."""
    used = {placement.assignment[n] for n in placement.compute_nodes}
    return next(iter(used)) if len(used) == 1 else (placement.devices[0] if not used else None)


def runner_ups(graph, devices: Sequence[str], support: np.ndarray, cost, *, max_submodels: int | None,
               pins: Sequence[Any] = (), core: Any = None, generation=None) -> list:
    """The runner-ups measured beside a candidate placed on ``cost``: :data:`RUNNER_UP_METHODS`, then a device; none
    for pinned requests. Which, and why: docs/architecture.md, "Module notes"."""
    if pins:
        return []
    devices = tuple(devices)
    out = []
    if cost is not None:
        try:
            heft = HeftStrategy(cost)
            proposal = heft.propose(PlacementContext(graph=graph, devices=devices, support=support))
            out.append(placement_pipeline(graph, proposal, devices, support, strategy="heft", cost=heft.last_cost,
                                          max_submodels=max_submodels))
        except (PlacementError, ValueError) as exc:
            logger.warning("verification: no HEFT runner-up for this model (%s: %s); verifying the candidate alone",
                           type(exc).__name__, exc)
        faster = faster_single_device(graph, devices, support, cost, core=core)
        if faster is not None:
            out.append(faster)
    if generation is not None:
        there = {single_device_of(p) for p in out}
        out.extend(other_single_devices(graph, devices, support, core=core, skip=there))
    return out


def devices_timed_alone(graph, devices: Sequence[str], support: np.ndarray, plain: str | None, *,
                        core: Any = None) -> list[str]:
    """The devices :func:`verify_placement` times as ``single:<device>``: each that supports every compute node,
    but for the plain call's device ``plain`` (None: a split) and it under another name (``twin_of``, with
    ``core``: only noise to time)."""
    devices = tuple(devices)
    first = {devices[d]: devices[t] for d, t in twin_of(core, devices).items()} if core is not None else {}
    compute = graph.role == NodeRole.COMPUTE
    return [device for k, device in enumerate(devices) if support[compute, k].all()
            and (plain is None or first.get(device, device) != first.get(plain, plain))]


def _alone(graph, devices: tuple, support: np.ndarray, device: str, strategy: str):
    """The legal placement of every node on ``device``."""
    return legalize(graph, np.full(graph.num_nodes, devices.index(device), dtype=np.int64), devices, support,
                    max_submodels=None, strategy=strategy)


def other_single_devices(graph, devices: Sequence[str], support: np.ndarray, *, core: Any = None,
                         skip=()) -> list:
    """A one-device placement on each device :func:`devices_timed_alone` names beside a one-device plain call
    (none beside a split), but for those in ``skip``."""
    devices = tuple(devices)
    plain = single_device_of(plain_placement(graph, devices, support))
    if plain is None:
        return []
    out = []
    for device in devices_timed_alone(graph, devices, support, plain, core=core):
        if device not in skip:
            out.append(_alone(graph, devices, support, device, "single"))
            out[-1].notes.append(f"{device} alone: measured beside the plain call's {plain} on the generation")
    return out


def faster_single_device(graph, devices: Sequence[str], support: np.ndarray, cost, *, core: Any = None):
    """The one-device placement ``cost`` predicts fastest if it beats the plain call's device by > :data:`MIN_GAIN`
    (spreads ignored) and is not that device under another name (``twin_of``, with ``core``); else None. Also on a
    loaded profile. Why: docs/architecture.md, "Module notes", verification.py."""

    devices = tuple(devices)
    plain = single_device_of(plain_placement(graph, devices, support))
    if plain is None or set(cost.devices) != set(devices):  # a loaded profile too: this only asks for a measurement
        return None
    cost = cost if tuple(cost.devices) == devices else cost.with_devices(devices)
    terms = CostTerms(cost, graph, support)
    able = [d for d in range(len(devices)) if terms.allowed[terms.compute, d].all()]
    predicted = {d: terms.latency_ms(np.full(graph.num_nodes, d, dtype=np.int64)) for d in able}
    reference = devices.index(plain)
    if reference not in predicted or not np.isfinite(predicted[reference]):
        return None
    best = min(predicted, key=predicted.get)
    if best == reference or predicted[best] >= (1 - MIN_GAIN) * predicted[reference]:
        return None
    if core is not None:
        first = twin_of(core, devices)
        if first.get(best, best) == first.get(reference, reference):
            return None
    placement = _alone(graph, devices, support, devices[best], "single")
    placement.notes.append(f"{cost.label} predicts {devices[best]} alone {predicted[best]:.2f} ms, the plain call's "
                           f"{plain} {predicted[reference]:.2f} ms: measured beside the candidate")
    return placement


def _compute_assignment(placement) -> tuple:
    return tuple(sorted((n, placement.assignment[n]) for n in placement.compute_nodes))


def _distinct_splits(alternatives: Sequence[Any], devices: tuple, seen: set) -> dict[str, Any]:
    """``alternatives`` by label, without one-device placements (measured as single devices anyway) and
    without repeats of a placement already in ``seen`` (the candidate's, the plain call's)."""
    out: dict[str, Any] = {}
    for alt in alternatives:
        key = _compute_assignment(alt)
        if tuple(alt.devices) != devices or single_device_of(alt) is not None or key in seen:
            continue
        seen.add(key)
        label = ALTERNATIVE + alt.strategy.split("+")[0]
        while label in out:
            label += "'"
        out[label] = alt
    return out


def _outputs_sane(compiled, inputs, generation=None) -> bool:
    """Whether one inference (a decoder's prefill) gives finite outputs (a broken split shows up here first)."""
    request = compiled.create_infer_request()
    if generation is not None:
        request.reset_state()
        set_step(request, 0, generation.prompt_tokens, np.random.default_rng(0), None)
    result = request.infer() if generation is not None else request.infer(list(inputs))
    return all(np.all(np.isfinite(np.asarray(v))) for v in result.values()
               if np.issubdtype(np.asarray(v).dtype, np.floating))


def measuring_props(properties: Mapping[str, Any] | None) -> dict[str, Any]:
    """The call's properties for a compile that is measured: without ``CACHE_DIR`` (measuring writes no blobs)."""
    return {k: v for k, v in dict(properties or {}).items() if k != "CACHE_DIR"}


def verify_placement(core, prepared, graph, candidate, *, support: np.ndarray, properties: Mapping[str, Any] | None = None,
                     budget_s: float | None = None, model=None, device_name: str | None = None,
                     rounds: int | None = None, iterations: int = ITERATIONS, alternatives: Sequence[Any] = (),
                     generation=None, kept: KeptCompile | None = None, plain_compiled=None,
                     max_rounds: int | None = None):
    """Measure ``candidate`` (and the runner-up splits ``alternatives``) against the plain call and the single
    devices; return ``(placement, Evidence)``.

    ``kept``: gets the compile of what was chosen, for ``compile_decided`` to return; not where ``generation`` was
    timed (docs/default-path.md, "What a verified decision returns").
    ``plain_compiled``: the plain call's first compile, made already.

    The rest: docs/architecture.md, "Module notes", ov_autoplace/decision/verification.py (verify_placement).
    """
    devices = tuple(candidate.devices)
    device_name = device_name or candidate.device_string
    props = measuring_props(properties)
    model = prepared if model is None else model
    plain = plain_placement(graph, devices, support)
    plain_single = single_device_of(plain)
    cand_single = single_device_of(candidate)

    def single(device: str, how: str = "verified"):
        return _alone(graph, devices, support, device, f"{candidate.strategy}+{how}")

    def compile_split(placement):
        if generation is not None:  # the dynamic model with the placement carried over, as the app gets it
            return compile_with_affinities(core, model, placement, placement.device_string, props)
        clone = prepared.clone()
        placement.apply(clone)
        return core.compile_model(clone, placement.device_string,
                                  with_runtime_options(core, prepared, placement.devices, props))

    builds: dict[str, Callable[[], Any]] = {}
    strings = {PLAIN: device_name, PLAIN_SECOND: device_name}  # the device string each contender is compiled with
    if cand_single is None:
        builds[CANDIDATE], strings[CANDIDATE] = (lambda: compile_split(candidate)), candidate.device_string
    runner_up = _distinct_splits(alternatives, devices, {_compute_assignment(candidate), _compute_assignment(plain)})
    for label, alt in runner_up.items():
        builds[label], strings[label] = (lambda p=alt: compile_split(p)), alt.device_string
    # a single device as compile_decided compiles it (one submodel through the HETERO string); not the plain call's
    # device under another name (why: the docs)
    for device in devices_timed_alone(graph, devices, support, plain_single, core=core):
        builds[f"single:{device}"] = lambda d=device: compile_on_one_device(core, model, candidate.device_string, d,
                                                                             props)
        strings[f"single:{device}"] = candidate.device_string
    probe = LoadProbe().start()  # over the compiles and the rounds: what the decision rests on
    compiled = {PLAIN: plain_compiled if plain_compiled is not None else  # as a plain decision returns it
                compile_plain_call(core, model, device_name, devices, props)}
    inputs = random_inputs(compiled[PLAIN]) if generation is None else ()
    for label, build in builds.items():
        try:
            compiled[label] = build()
            if not _outputs_sane(compiled[label], inputs, generation):
                raise RuntimeError("non-finite outputs")
        except Exception as exc:  # noqa: BLE001 - an alternative that cannot run is not an alternative
            compiled.pop(label, None)
            logger.warning("verification: %s cannot be compiled or run on %s (%s: %s); it is not considered",
                           label, label.split(":", 1)[-1] if label.startswith("single:") else devices,
                           type(exc).__name__, exc)
    if len(compiled) > 1:  # the control, compiled after the others: a compile's position is no advantage either
        try:
            compiled[PLAIN_SECOND] = compile_plain_call(core, model, device_name, devices, props)
        except Exception as exc:  # noqa: BLE001 - without it the rule cannot decide: it abstains (see decide)
            logger.warning("verification: the plain call's second compile failed (%s: %s); the verification "
                           "abstains", type(exc).__name__, exc)
    parts: dict[str, list] = {}
    more = LOADED_SCALE if len(compiled) > 1 and busy_now(probe) else 1
    most, budget_s = MAX_ROUNDS if rounds is None else max_rounds, BUDGET_S if budget_s is None else budget_s
    looked: list[Evidence] = []  # a first look, taken where rounds follow ROUNDS: a win there ends them (the docs)

    def stop(out) -> bool:
        if FIRST_LOOK and not looked and len(out[PLAIN]) >= ROUNDS:
            looked.append(decide(out, confidence=1 - (1 - CONFIDENCE) * FIRST_LOOK, other_cores=probe.other_cores()))
            if looked[0].decision in ("kept", "provisional"):
                return True
        return all_slower(out)
    rounds_ms = time_rounds(compiled, inputs, rounds=ROUNDS if rounds is None else rounds, iterations=iterations,
                            generation=generation, parts=parts, budget_s=more * budget_s,
                            max_rounds=most and more * most, futile=stop) if len(compiled) > 1 else {}
    if looked and looked[0].decision in ("kept", "provisional"):
        evidence = looked[0]
    elif rounds_ms:  # after a first look, with the rest of the level
        evidence = decide(rounds_ms, confidence=1 - (1 - CONFIDENCE) * (1 - FIRST_LOOK) if looked else CONFIDENCE,
                          other_cores=probe.other_cores())
    else:
        evidence = Evidence("plain", PLAIN, RULE, 0, {}, {}, {}, {}, "no alternative to the plain call could be "
                            "measured (or each was its device under another name)", time.time())
    if parts:
        evidence = dataclasses.replace(evidence, generation={
            "prompt_tokens": generation.prompt_tokens, "new_tokens": generation.new_tokens,
            **{part: {c: float(np.median([t[part] for t in ts])) for c, ts in parts.items()}
               for part in ("ttft_ms", "per_token_ms")}})
    logger.info("%s (%s)", evidence.describe(), candidate.strategy)
    if evidence.chosen == CANDIDATE:
        chosen = candidate
    elif evidence.chosen in runner_up:  # the cache's tags stay the candidate's source (e.g. hsdag:profile+heft)
        chosen = dataclasses.replace(runner_up[evidence.chosen],
                                     strategy=f"{candidate.strategy}+{evidence.chosen[len(ALTERNATIVE):]}")
    elif evidence.chosen.startswith("single:"):
        device = evidence.chosen.split(":", 1)[1]
        chosen = candidate if device == cand_single else single(device, "provisional" if evidence.decision ==
                                                                         "provisional" else "verified")
    else:
        chosen = plain if plain_single is None else single(plain_single)
        chosen.strategy = f"{candidate.strategy}+plain"
    chosen = dataclasses.replace(chosen, notes=list(candidate.notes) + [evidence.describe()],
                                 measured_latency_ms=evidence.median_ms.get(evidence.chosen),
                                 reference_latency_ms={c.split(":", 1)[1]: ms for c, ms in evidence.median_ms.items()
                                                       if c.startswith("single:")})
    chosen.verification = seal(evidence, chosen)
    if kept is not None and generation is None:  # a decoder timed on generations runs slower after: compiled anew
        kept.keep(evidence.chosen, chosen, compiled, rounds_ms, strings)
    return chosen, evidence


@dataclasses.dataclass
class KeptCompile:
    """The compile a verification timed of what it chose, for ``compile_decided`` to return instead of compiling
    the same thing again: filled by :meth:`keep`, emptied by :meth:`take`."""

    compiled: Any = None
    kind: str = ""  # "plain", "single" or "split"
    device: str | None = None
    device_string: str = ""
    assignment: Mapping[str, str] | None = None

    def keep(self, label: str, chosen, compiled: Mapping[str, Any], rounds_ms, strings) -> None:
        """Keep ``compiled[label]`` (the plain call: the faster of its two compiles) as ``chosen``'s compile."""
        if label == PLAIN:
            label = faster_plain(rounds_ms)
        if label in compiled:
            kind = "plain" if label in (PLAIN, PLAIN_SECOND) else "single" if label.startswith("single:") else "split"
            self.compiled, self.kind, self.device_string = compiled[label], kind, strings[label]
            self.device, self.assignment = single_device_of(chosen), chosen.assignment

    def take(self, kind: str, device_string: str, device: str | None, assignment) -> Any:
        """The kept compile if it is this one (``kind``, device string, and the device or the split), else None."""
        if self.compiled is None or (kind, device_string) != (self.kind, self.device_string) or \
                (kind == "single" and device != self.device) or (kind == "split" and assignment != self.assignment):
            return None
        compiled, self.compiled = self.compiled, None
        return compiled


def faster_plain(rounds_ms: Mapping[str, Sequence[float]]) -> str:
    """The plain call's compile (``PLAIN`` or ``PLAIN_SECOND``) with the lower median; ``PLAIN`` if only it was
    timed. Why: docs/default-path.md, "What a verified decision returns"."""
    first, second = rounds_ms.get(PLAIN, ()), rounds_ms.get(PLAIN_SECOND, ())
    if len(first) == 0 or len(second) == 0:
        return PLAIN
    return PLAIN_SECOND if float(np.median(second)) < float(np.median(first)) else PLAIN


def verified_placement(req: "PlacementRequest", prepared, graph, placement, support: np.ndarray | None = None, *,
                       kept: KeptCompile | None = None):
    """``placement`` held to the rule for ``req``: what the plain call would run, or an alternative that measurably
    wins (:func:`verify_placement`). Pinned placements are the user's call and are compiled as asked, and so are
    placements within ``memory_caps`` (the plain call they would be measured against may break a cap).

    ``support``: the caller's device-support matrix when it has one (a ``query_model`` per device otherwise). The
    runner-up splits are placed on the costs the strategy placed with (none on a cache hit: it did not run).
    ``kept``: filled as :func:`verify_placement` fills it, when what is measured is the caller's own model.
    """
    if req.pins or req.memory_caps:
        return placement
    if support is None:
        support = query_support(req.core, prepared, graph, req.devices)
    alternatives = runner_ups(graph, req.devices, support, getattr(req.strategy, "last_cost", None),
                              max_submodels=req.max_submodels, core=req.core, generation=req.generation)
    if not any(needs_verification(p, graph, support) for p in (placement, *alternatives)):
        return placement
    model = req.model if req.generation else req.placement_model
    verified, _ = verify_placement(req.core, prepared, graph, placement, support=support, properties=req.props,
                                   model=model, device_name=req.spec.text, alternatives=alternatives,
                                   generation=req.generation, kept=kept if model is req.model else None)
    return verified


def _assignment_digest(placement) -> str:
    text = json.dumps(sorted(placement.assignment.items()), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def seal(evidence: Evidence, placement) -> dict[str, Any]:
    """The evidence as stored with ``placement``, with a digest over both (edits are detected)."""
    body = evidence.to_dict() | {"assignment_sha256": _assignment_digest(placement)}
    return body | {"digest": hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()}


def _intact_decision(placement) -> str | None:
    """The decision ``placement``'s evidence records, if the evidence is of this rule and its digest matches."""
    stored = getattr(placement, "verification", None)
    if not isinstance(stored, Mapping) or "digest" not in stored:
        return None
    body = {k: v for k, v in stored.items() if k != "digest"}
    try:
        ok = (hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest() == stored["digest"]
              and body.get("assignment_sha256") == _assignment_digest(placement) and body.get("rule") == RULE)
    except (TypeError, ValueError):
        return None
    return body.get("decision") if ok else None


def evidence_intact(placement) -> bool:
    """Whether ``placement`` carries a verdict of this rule version whose digest matches it."""
    return _intact_decision(placement) in ("kept", "plain")


def provisional_intact(placement) -> bool:
    """Whether ``placement`` carries an intact provisional win of this rule (measured on a loaded machine)."""
    return _intact_decision(placement) == "provisional"


def needs_verification(placement, graph, support: np.ndarray) -> bool:
    """Whether ``placement`` differs from the plain call's (a split, or another single device than HETERO's)."""
    plain = plain_placement(graph, placement.devices, support)
    return any(placement.assignment[n] != plain.assignment.get(n) for n in placement.compute_nodes)

