"""The public entry points: ``compile_model`` (drop-in for ``core.compile_model``) and ``place``.

Both validate everything first (device string, devices present, properties,
model, options: ``call_request.py``), then delegate: model -> graph arrays -> strategy proposal -> legalize
-> affinities on a clone -> HETERO compile. Validation errors are raised before
any compile. A failure *inside* the placement path never leaves the caller
without a compiled model: ``compile_model`` logs a warning and falls back to
plain ``core.compile_model`` on the requested device string.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Mapping, Sequence

import numpy as np
import openvino as ov

from ov_autoplace.devices.call_forms import compile_as_openvino
from ov_autoplace.cache.root import cache_root, private_blob_files
from ov_autoplace.devices.device_strings import normalized_exclusions
from ov_autoplace.devices.timing import input_sample
from ov_autoplace.errors import DeviceError, MemoryCapError, PlacementError, PolicyFormatError, ShapeError
from ov_autoplace.decision.memory_path import memory_request
from ov_autoplace.decision.first_start import Profiling, check_profiling, compile_default_path, default_path_placement
from ov_autoplace.decision.placement_pipeline import placement_pipeline
from ov_autoplace.decision.request import PlacementRequest
from ov_autoplace.decision.stored_placement import compile_carried_placement
from ov_autoplace.decision.strategy_path import compile_with_strategy, place_with_strategy
from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS, Pin, query_support
from ov_autoplace.compile.placed_compile import compile_with_affinities
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.generation import Generation
from ov_autoplace.model.input_sample import check_input_sample, sample_shapes
from ov_autoplace.model.shapes import ShapesLike
from ov_autoplace.placement.user_checks import USER_ERRORS
from ov_autoplace.reentry import ov_autoplace_call
from ov_autoplace.strategies.base import PlacementStrategy
# the request (call_request.py); saved_model, the CLI, tests and the lab read these names here
from ov_autoplace.call_request import (  # noqa: F401
    DEFAULT_STRATEGY, ModelLike, StrategyName, build_request, check_search_budget, default_core, load_model,
    pretrained_policy_path, validated_call)

logger = logging.getLogger("ov_autoplace")


@ov_autoplace_call()
def place(
    model: ModelLike,
    device_name: str,
    config: Mapping[str, Any] | None = None,
    *,
    core: ov.Core | None = None,
    strategy: StrategyName | str | PlacementStrategy | None = None,
    pins: Mapping[str, str] | Sequence[Pin] | None = None,
    exclude_devices: Sequence[str] | None = None,
    max_submodels: int | None = DEFAULT_MAX_SUBMODELS,
    seed: int = 0,
    search_budget: int | float | None = None,
    shapes: ShapesLike = None,
    inputs: Mapping[str, Any] | None = None,
    memory_caps: Mapping[str, int | str] | None = None,
    generation: Generation | tuple[int, int] | None = None,
) -> Placement:
    """Choose a device for every node of ``model`` over ``device_name``'s devices, without compiling.

    ``device_name`` is a HETERO string (``"HETERO:GPU,CPU"``) or a single device
    (everything goes there). ``pins`` maps a node name, a name pattern
    (``"*attention*"``) or ``"type:MatMul"`` to a device. The placement names
    the nodes of the *prepared* model (``prepare_model``: constant subgraphs
    folded); ``compile_placement`` prepares the model the same way. Raises
    DeviceError, PropertyError, ModelLoadError/ModelNotFoundError or PlacementError.
    ``strategy`` unset (and no ``search_budget``): the placement ``compile_model``'s default path would
    use, measuring nothing: the policy on a stored profile of this model and these devices (``ov-autoplace
    profile``), else on the prior, with the prior's margin rule (see :func:`compile_model`).
    ``strategy="hsdag"`` profiles the devices first when no profile is stored (seconds).
    ``search_budget``: fine-tune on the real devices first, see :func:`compile_model`.
    ``shapes``: for a model with dynamic dimensions, the static shapes to place
    for (see :func:`compile_model`); the placement names the nodes of the
    prepared *static clone*, and ``compile_placement`` carries it over to the
    dynamic model.
    ``memory_caps``: bytes each device may hold, see :func:`compile_model`.

    Example::

        placement = ov_autoplace.place("model.xml", "HETERO:GPU,CPU", pins={"MatMul": "GPU"})
        print(placement.summary())          # nodes per device, submodels; nothing compiled
        placement.save("placement.json")
    """
    model, sample, shapes = _with_sample(model, core, shapes, inputs)
    req = build_request(model, device_name, config, core=core, strategy=strategy, pins=pins,
                        exclude_devices=exclude_devices, max_submodels=max_submodels, seed=seed,
                        search_budget=search_budget, shapes=shapes, memory_caps=memory_caps,
                        generation=generation)
    if req.spec.meta is not None and req.spec.meta != "HETERO":
        raise DeviceError(f"place() needs a HETERO device string or one device, got {req.spec.meta} in {req.spec.text!r}")
    if req.unplaceable:
        raise ShapeError(req.unplaceable)
    prepared = prepare_model(req.placement_model)
    with input_sample(sample):
        if req.strategy is None:  # what compile_model's default path would place: a stored profile, else the prior
            return default_path_placement(req, prepared, req.placement_graph(prepared))
        return place_with_strategy(req, prepared, req.placement_graph(prepared))


def _with_sample(model: ModelLike, core: ov.Core | None, shapes: ShapesLike, inputs: Mapping[str, Any] | None):
    """``(model, sample, shapes)``: the model loaded when a sample must be checked against it, the checked sample
    (None without one), and the placement shapes: ``shapes``, else the sample's (``model/input_sample.py``)."""
    if inputs is None:
        return model, None, shapes
    if not isinstance(model, ov.Model):
        model = load_model(model, core if core is not None else default_core(), None)
    sample = check_input_sample(model, inputs)
    implied = sample_shapes(model, sample)
    if shapes is None:
        return model, sample, implied
    if isinstance(shapes, Mapping):
        differ = {n: (list(shapes[n]), implied[n]) for n in sample if n in shapes and list(shapes[n]) != implied[n]}
        if differ:
            raise ShapeError(f"inputs= and shapes= disagree on {differ} (shapes=, inputs=): the sample is fed at the "
                             "placement shapes; drop shapes= to place at the sample's")
    return model, sample, shapes


@ov_autoplace_call()
def compile_placement(
    model: ModelLike,
    placement: Placement,
    config: Mapping[str, Any] | None = None,
    *,
    core: ov.Core | None = None,
) -> ov.CompiledModel:
    """Compile ``model`` with an explicit placement (affinities are set on a prepared clone, never on ``model``).

    For a model with dynamic dimensions, ``placement`` (made on its static
    clone by :func:`place`) is carried over to the dynamic model, which is
    compiled dynamic.

    Example::

        placement = ov_autoplace.Placement.load("placement.json")
        compiled = ov_autoplace.compile_placement("model.xml", placement, {"PERFORMANCE_HINT": "LATENCY"})
    """
    core, spec, props, ov_model = validated_call(model, placement.device_string, config, core)
    return compile_with_affinities(core, ov_model, placement, spec.hetero_string, props)


def _pinned_fallback(req: PlacementRequest, exc: Exception) -> ov.CompiledModel:
    """The fallback when pins were given: HETERO's own affinity plus the pins, legalized; never a silent drop."""
    try:
        prepared = prepare_model(req.placement_model)
        graph = req.placement_graph(prepared)
        support = query_support(req.core, prepared, graph, req.devices)
        placement = placement_pipeline(graph, np.argmax(support, axis=1).astype(np.int64), req.devices, support,
                                       strategy="plain+pins", pins=req.pins, max_submodels=None)
        return compile_with_affinities(req.core, req.model, placement, req.spec.hetero_string, req.props, shapes=req.shapes)
    except USER_ERRORS:
        raise
    except Exception as again:  # noqa: BLE001 - say both failures; the pins are the user's request
        raise PlacementError(f"the placement path failed ({type(exc).__name__}: {exc}) and the pinned fallback "
                             f"(HETERO's own affinity plus your pins) failed too ({type(again).__name__}: {again}); "
                             "remove the pins to get a plain compile_model") from again


@ov_autoplace_call()
def compile_model(
    model: ModelLike,
    device_name: str | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    weights: Any = None,
    core: ov.Core | None = None,
    strategy: StrategyName | str | PlacementStrategy | None = None,
    pins: Mapping[str, str] | Sequence[Pin] | None = None,
    exclude_devices: Sequence[str] | None = None,
    max_submodels: int | None = DEFAULT_MAX_SUBMODELS,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    search_budget: int | float | None = None,
    profile: Profiling | str = Profiling.STORED,
    cache_blobs: bool = False,
    shapes: ShapesLike = None,
    inputs: Mapping[str, Any] | None = None,
    memory_caps: Mapping[str, int | str] | None = None,
    generation: Generation | tuple[int, int] | None = None,
) -> ov.CompiledModel:
    """Drop-in for ``core.compile_model(model, device_name, config)`` that places nodes first.

    Every device string and config ``core.compile_model`` takes keeps OpenVINO's
    meaning (docs/call-forms.md, ``devices/call_forms.py``). With no device (OpenVINO's
    default, AUTO) it places over the devices AUTO chooses among, and on a
    machine with one of them it is ``core.compile_model(model, "CPU", config)``
    with the config AUTO hands its device (AUTO's hint added when none is given,
    keys no device knows dropped). With one device, or an AUTO/MULTI/BATCH string, it is exactly
    ``core.compile_model``; ``weights=`` reads an IR from memory as OpenVINO
    does. Errors OpenVINO raises as RuntimeError are typed errors that are
    RuntimeErrors too. With ``HETERO:<devices>`` the chosen strategy
    assigns every node a device (see :func:`place`) and the model is compiled
    with those affinities. By default (``strategy`` unset) nothing is measured
    during the call (``first_start.py``, ``placement_sources.py``): the
    placement comes from the cache, a stored profile, or a prior built from
    the graph and the devices' own properties; a split is kept only when the
    prior predicts it faster than one device beyond its error, and a
    placement on one device is compiled exactly as ``core.compile_model``
    would (same model object, device and config). ``profile``: ``"stored"``
    (default), ``"background"`` (a detached worker measures the model and
    stores a better placement for the next start) or ``"now"`` (measure
    before placing: seconds). ``strategy="hsdag"`` profiles on first use, as
    it always did. The INFO log names the source: prior, profile, cache, search.
    ``search_budget`` (needs the ``train`` extra): fine-tune the policy on the
    real devices for this model, within ``int`` measured placements or
    ``float`` seconds; the result is never slower than the best single device
    measured in the same run, and is cached like any placement.

    A model with dynamic dimensions is placed on a static clone at
    ``shapes`` (``{"input_ids": [1, 128], ...}``, benchmark_app's
    ``"input_ids[1,128],..."``, or one shape for a one-input model; default:
    1 for a dynamic axis 0, 128 for other dynamic axes, within the bounds, see
    :mod:`ov_autoplace.model.shapes`); the affinities are carried over and the
    returned model stays dynamic. The placement shapes are part of the cache key.

    Measuring feeds each input an array: an LLM's (``input_ids``, ``attention_mask``, ``position_ids``,
    ``beam_idx``) as a generation's prefill feeds it, from a reset state every run (docs/llm.md), others random.
    ``inputs`` (a mapping input name -> array) is fed instead where a convention cannot guess; its shapes are the
    placement shapes unless ``shapes`` is given. A sample the model rejects (unknown input, dtype, shape, an LLM
    rule such as ``beam_idx`` outside the batch) raises ShapeError before anything is compiled. The background
    worker (``profile="background"``) is handed the sample too.

    ``memory_caps`` (``{"GPU": "2 GB", "CPU": 3_000_000_000}``): bytes each device may hold (weights and an LLM's
    KV cache), the split chosen by latency within them; MemoryCapError when no split can meet them, before any
    compile. Without caps, a device is capped at the memory its plugin reports where the plain call would put
    more there (docs/llm.md, "Memory").
    ``generation`` (a stateful decoder only; default ``Generation(prompt_tokens=128, new_tokens=128)``, or a
    ``(prompt, new)`` tuple): the generation an LLM app runs, placed (at the prompt's prefill shapes) and verified
    for its whole time, time to first token plus every decode step (docs/llm.md, ``model/generation.py``); part of
    the cache key. ShapeError for a model that is not a stateful decoder or a generation past its position table.

    The placement is cached (``cache_dir``, default
    ``$OV_AUTOPLACE_CACHE_DIR`` or ``$XDG_CACHE_HOME/ov_autoplace`` or
    ``~/.cache/ov_autoplace``; profiles beside it). OpenVINO's blob cache is
    the user's: a ``CACHE_DIR`` in ``config`` or on the core is used as set,
    none is enabled when the user enabled none, unless ``cache_blobs=True``
    (then ``<cache_dir>/openvino``). Errors in the arguments raise before any compile; a
    failure while placing falls back to plain ``core.compile_model`` with a
    warning, so a model OpenVINO can compile is always returned compiled.

    Example::

        import openvino as ov, ov_autoplace
        core = ov.Core()
        compiled = ov_autoplace.compile_model("model.xml", "HETERO:GPU,CPU", {"PERFORMANCE_HINT": "LATENCY"}, core=core)
        result = compiled(inputs)  # a real ov.CompiledModel
    """
    cache_root(cache_dir)  # PropertyError now, before any compile, for a cache_dir that names no directory
    compiled = _compile_model(model, device_name, config, weights=weights, core=core, strategy=strategy, pins=pins,
                              exclude_devices=exclude_devices, max_submodels=max_submodels, seed=seed,
                              cache_dir=cache_dir, use_cache=use_cache, search_budget=search_budget, profile=profile,
                              cache_blobs=cache_blobs, shapes=shapes, inputs=inputs, memory_caps=memory_caps,
                              generation=generation)
    if cache_blobs:  # OpenVINO writes its blobs read-only for the group (0440/0640, whatever the umask): ours are 0600
        private_blob_files(cache_root(cache_dir))
    return compiled


def _compile_model(model, device_name, config, *, weights, core, strategy, pins, exclude_devices, max_submodels,
                   seed, cache_dir, use_cache, search_budget, profile, cache_blobs, shapes, inputs,
                   memory_caps, generation) -> ov.CompiledModel:
    """:func:`compile_model`'s work, its arguments as given: validate, decide, compile."""
    profiling = check_profiling(profile)
    if weights is not None:  # core.compile_model(xml_text, weights=...): the IR in memory
        model = load_model(model, core if core is not None else default_core(), weights)
    exclude_devices = normalized_exclusions(exclude_devices)  # "CPUF" is one device, not 'C', 'P', 'U', 'F'
    model, sample, shapes = _with_sample(model, core, shapes, inputs)  # a sample the model rejects raises here
    try:  # validate: every mistake of the caller's raises here, before anything is compiled
        req = build_request(model, device_name, config, core=core, strategy=strategy, pins=pins,
                            exclude_devices=exclude_devices, max_submodels=max_submodels, seed=seed,
                            search_budget=search_budget, shapes=shapes, compiles_alone=True, memory_caps=memory_caps,
                            generation=generation)
    except PolicyFormatError as exc:  # the shipped policy file is damaged: our machinery, not the caller's input
        if memory_caps:  # the fallbacks below would ignore the caps
            raise PlacementError(f"the placement policy cannot be loaded ({exc}), so nothing can be placed within "
                                 "memory_caps; reinstall ov_autoplace, or remove memory_caps to get a plain "
                                 "compile_model") from exc
        return _without_policy(exc, model, device_name, config, core, pins, exclude_devices, max_submodels, shapes)
    if not req.spec.is_placement:  # single device, AUTO, MULTI, BATCH, PIPELINE_PARALLEL: OpenVINO's own compile
        if req.memory_caps:  # nothing is placed: the caps can only be checked (MemoryCapError if they cannot hold it)
            memory_request(req, req.placement_graph(prepare_model(req.placement_model)))
        return compile_as_openvino(req.core, req.model, req.spec, req.spec.without(req.exclude_devices), req.props)
    if req.strategy is not None and profiling is not Profiling.STORED:
        raise PlacementError(f"profile={profiling.value!r} applies to the default placement; leave strategy and "
                             "search_budget unset to use it")
    if req.unplaceable:  # our default shapes do not fit: not the caller's mistake, and OpenVINO compiles it
        if req.memory_caps:  # ... but the plain compile would ignore the caps
            raise ShapeError(f"{req.unplaceable}; memory_caps needs the model placed")
        logger.warning("%s; compiling as plain compile_model on %s", req.unplaceable, req.spec.text)
        return req.core.compile_model(req.model, req.spec.text, req.props)
    try:  # decide and compile
        with input_sample(sample):
            if req.strategy is not None:
                return compile_with_strategy(req, cache_dir=cache_dir, use_cache=use_cache, cache_blobs=cache_blobs)
            compiled = None
            if profiling is Profiling.STORED:  # an IR that carries its placement (save_model): used, not placed again
                compiled = compile_carried_placement(req, cache_dir=cache_dir, cache_blobs=cache_blobs)
            if compiled is None:
                compiled = compile_default_path(req, profiling=profiling, cache_dir=cache_dir, use_cache=use_cache,
                                                cache_blobs=cache_blobs)
            return compiled
    except USER_ERRORS as exc:  # the user's own request is wrong (or plain OpenVINO cannot compile it either)
        if not isinstance(exc, MemoryCapError) or req.pins or set(req.memory_caps) - set(req.reported_caps):
            raise
        logger.warning("%s; the caps are the plugins' reports: compiling as plain OpenVINO would", exc)
        return req.core.compile_model(req.model, req.spec.text, req.props)
    except Exception as exc:  # noqa: BLE001 - any failure in the placement path must not cost the user a model
        if set(req.memory_caps) - set(req.reported_caps):  # the plain call would ignore the caller's caps
            raise PlacementError(f"placing within memory_caps failed ({type(exc).__name__}: {exc})"
                                 f"{_state_note(req.model, exc)}; the plain compile_model would ignore the caps, so "
                                 "nothing is compiled: remove memory_caps to get a plain compile_model") from exc
        if req.pins:
            logger.warning("placement path failed (%s: %s)%s; compiling HETERO's own affinity with your pins on %s",
                           type(exc).__name__, exc, _state_note(req.model, exc), req.spec.hetero_string)
            return _pinned_fallback(req, exc)
        # req.spec.text is OpenVINO's meaning of the call ("AUTO" when none was given, "HETERO:CPU,GPU" for
        # "HETERO" + MULTI_DEVICE_PRIORITIES): what the plain call compiles (devices/call_forms.py)
        logger.warning("placement path failed (%s: %s)%s; falling back to plain compile_model on %s",
                       type(exc).__name__, exc, _state_note(req.model, exc), req.spec.text)
        return req.core.compile_model(req.model, req.spec.text, req.props)


#: What HETERO or the CPU plugin says when a stateful rule is broken -> the rule (placement/stateful.py, docs/llm.md).
_STATE_SYMPTOMS = (
    ("sibling output", "stateful rule 1/2: a variable's ReadValue and Assign on one device, in one submodel"),
    ("unordered_map::at", "stateful rule 1: a variable's ReadValue, the nodes between and its Assign on one device"),
    ("undeclared parameters", "stateful rules 2/3/4: a variable in one submodel, its initializer with it, no path "
                              "out of its device and back"),
    ("clone with new dims", "stateful rule 5: a layer's K and V caches with the attention that reads them"),
    ("has to extend (relax)", "stateful rule 3: a variable's initializer on its device, no shape value crossing"),
    ("beam", "the measuring feed's LLM rule: beam_idx within the batch"),
)


def _state_note(model: ov.Model, exc: Exception) -> str:
    """For a fallback's WARNING on a stateful model: the LLM rule the failure points at, else the rules to check."""
    try:
        variables = sum(op.get_type_name() == "ReadValue" for op in model.get_ops())
    except Exception:  # noqa: BLE001 - a note must not fail the fallback
        return ""
    if not variables:
        return ""
    text = str(exc)
    rules = [rule for symptom, rule in _STATE_SYMPTOMS if symptom in text]
    return (f"; the model holds {variables} state variable(s), and the LLM rule that failed is "
            + ("; ".join(rules) if rules else "not one ov_autoplace knows (its stateful rules: placement/stateful.py, "
                                              "its measuring feed: devices/timing.py)"))


def _without_policy(exc: PolicyFormatError, model, device_name, config, core, pins, exclude_devices, max_submodels,
                    shapes) -> ov.CompiledModel:
    """The shipped policy cannot be loaded: HETERO's own affinity with the user's pins, else the plain call."""
    if pins:  # the user's pins still hold: HETERO's own affinity plus the pins needs no policy
        req = build_request(model, device_name, config, core=core, strategy=StrategyName.PRIORITY, pins=pins,
                            exclude_devices=exclude_devices, max_submodels=max_submodels, shapes=shapes)
        if req.spec.is_placement:
            logger.warning("the placement policy cannot be loaded (%s); compiling HETERO's own affinity with your "
                           "pins on %s (reinstall ov_autoplace to restore placement)", exc, req.spec.hetero_string)
            return _pinned_fallback(req, exc)
    core, spec, props, ov_model = validated_call(model, device_name, config, core)
    logger.warning("the placement policy cannot be loaded (%s); falling back to plain compile_model on %s "
                   "(reinstall ov_autoplace to restore placement)", exc, spec.text)
    return core.compile_model(ov_model, spec.without(exclude_devices), props)


__all__ = ["DEFAULT_MAX_SUBMODELS", "DEFAULT_STRATEGY", "Profiling", "StrategyName", "compile_model", "compile_placement",
           "default_core", "load_model", "place"]
