"""The public entry points: ``compile_model`` (drop-in for ``core.compile_model``) and ``place``.

Both validate everything first (device string, devices present, properties,
model), then delegate: model -> graph arrays -> strategy proposal -> legalize
-> affinities on a clone -> HETERO compile. Validation errors are raised before
any compile. A failure *inside* the placement path never leaves the caller
without a compiled model: ``compile_model`` logs a warning and falls back to
plain ``core.compile_model`` on the requested device string.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib.util
import logging
import os
from pathlib import Path
from typing import Any, Mapping, Sequence, Union

import numpy as np
import openvino as ov

from .device_requests import check_property_values, compile_plain, properties_for, resolve_device_request
from .devices import DeviceSpec, check_properties, normalized_exclusions
from .errors import (DeviceError, ExcludedDeviceError, ModelLoadError, ModelNotFoundError, PlacementError,
                     PolicyFormatError)
from .cache import PlacementCache
from .graph import GraphArrays, extract_graph
from .guard import guard_placement
from .legality import ensure_legal
from .support_store import device_support
from .cache_root import blob_cache_props, cache_root
from .first_start import Profiling, check_profiling, compile_default  # light: every default compile uses it
from .legalize import Pin, legalize, parse_pins, query_support
from .placed_compile import compile_placed
from .placement import Placement
from .stored_compile import compile_stored
from .verification import evidence_intact, needs_verification, runner_ups, single_device_of, verify_placement
from .prepare import prepare_model
from .shapes import PlacementShapes, ShapesLike, is_dynamic, resolve_shapes, static_clone
from .user_checks import USER_ERRORS, check_pins_devices
from .strategies.base import PlacementContext, PlacementStrategy
from .strategies.registry import make_strategy, strategy_names

logger = logging.getLogger("ov_autoplace")

ModelLike = Union[ov.Model, str, os.PathLike]


#: Built-in placement strategies selectable by name, generated from the strategy registry
#: (``ov_autoplace/strategies/registry.py``: one line of description each; ``ov-autoplace strategies`` lists them).
StrategyName = enum.Enum("StrategyName", {name.upper(): name for name in strategy_names()}, type=str,
                         module=__name__)
StrategyName.__doc__ = "Built-in placement strategies selectable by name (see strategies.registry.REGISTRY)."


DEFAULT_STRATEGY = StrategyName.HSDAG
#: Default bound on HETERO submodels: each costs a switch and two tensor copies.
DEFAULT_MAX_SUBMODELS = 8


@functools.lru_cache(maxsize=1)
def default_core() -> ov.Core:
    """The process-wide core used when no ``core=`` is given."""
    return ov.Core()


def _resolve_strategy(strategy: StrategyName | str | PlacementStrategy | None, search_budget: int | float | None,
                      max_submodels: int | None) -> PlacementStrategy:
    if search_budget is not None:
        return _search_strategy(strategy, search_budget, max_submodels)
    if isinstance(strategy, PlacementStrategy):
        return strategy
    if strategy is None:
        strategy = DEFAULT_STRATEGY
    return make_strategy(strategy)  # raises PlacementError naming the registered strategies


def _search_strategy(strategy, search_budget, max_submodels) -> PlacementStrategy:
    """The budgeted, measured fine-tuning of the pretrained policy (needs torch, the ``train`` extra)."""
    from .policy.search_strategy import HSDAGSearchStrategy, check_search_budget

    try:
        check_search_budget(search_budget)
    except ValueError as exc:
        raise PlacementError(str(exc)) from None
    if strategy is not None and strategy != StrategyName.HSDAG and strategy != StrategyName.HSDAG.value:
        raise PlacementError(f"search_budget fine-tunes the HSDAG policy; it cannot be combined with strategy="
                             f"{strategy!r} (leave strategy unset or use {StrategyName.HSDAG.value!r})")
    if importlib.util.find_spec("torch") is None:
        raise PlacementError("search_budget fine-tunes the policy with torch, which is not installed; install it "
                             "with pip install 'ov_autoplace[train]' or leave search_budget unset")
    from .costmodel.providers import MeasuredCostProvider

    return HSDAGSearchStrategy(pretrained_policy_path(), MeasuredCostProvider(), search_budget,
                               max_submodels=max_submodels)


def pretrained_policy_path() -> Path:
    """The HSDAG policy shipped inside the package."""
    from .policy.pretrained import PRETRAINED_POLICY as path  # data only: no torch

    if not path.is_file():
        raise PlacementError(f"the pretrained policy {path} is missing from this installation; reinstall ov_autoplace")
    return path


def load_model(model: ModelLike, core: ov.Core, weights: Any = None) -> ov.Model:
    """Accept an ``ov.Model``, a path OpenVINO can read (IR, ONNX, ..., a TensorFlow SavedModel directory), or
    with ``weights`` (as ``core.compile_model(xml, weights=...)``) the IR's XML text and its weights in memory."""
    if weights is not None:
        return _model_from_memory(model, weights, core)
    if isinstance(model, ov.Model):
        return model
    if not isinstance(model, (str, os.PathLike)):
        raise ModelLoadError(f"model must be an openvino.Model or a path to a model file, got {type(model).__name__}")
    path = Path(model)
    if path.is_dir() and not (path / "saved_model.pb").is_file():
        raise ModelLoadError(f"model path {str(path)!r} is a directory, not a model file; expected an IR .xml, "
                             ".onnx, ... file (or a TensorFlow SavedModel directory, which holds saved_model.pb)")
    if not path.exists():
        raise ModelNotFoundError(f"model file {str(path)!r} does not exist (expected an IR .xml, .onnx, ... file)")
    try:
        return core.read_model(str(path))
    except Exception as exc:  # OpenVINO raises RuntimeError subclasses with long traces
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"OpenVINO cannot read model file {str(path)!r}: {first_line}") from exc


def _model_from_memory(xml: Any, weights: Any, core: ov.Core) -> ov.Model:
    """``core.compile_model(xml, weights=...)``'s model: the IR's XML text (str or bytes) and its weights."""
    if not isinstance(xml, (str, bytes, bytearray)) or (isinstance(xml, str) and not xml.lstrip().startswith("<")):
        raise ModelLoadError(f"with weights=, model must be the IR's XML text (str or bytes), as for "
                             f"core.compile_model(xml, weights=...), got {type(xml).__name__} {str(xml)[:60]!r}")
    try:
        if isinstance(weights, ov.Tensor):
            return core.read_model(xml if isinstance(xml, str) else bytes(xml).decode(), weights)
        return core.read_model(xml.encode() if isinstance(xml, str) else bytes(xml), bytes(weights))
    except Exception as exc:  # noqa: BLE001 - OpenVINO's parse errors are RuntimeErrors with long traces
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"OpenVINO cannot read the in-memory IR (XML text + weights): {first_line}") from exc


def _validated(model: ModelLike, device_name: str | None, config: Any, core: ov.Core | None):
    """Core, DeviceSpec with OpenVINO's meaning (device_requests.py), checked props, model; nothing compiled."""
    core = core if core is not None else default_core()
    if not isinstance(core, ov.Core):
        raise TypeError(f"core must be an openvino.Core, got {type(core).__name__}")
    spec, props = resolve_device_request(core, device_name, check_properties(config))
    check_property_values(core, spec, props)
    return core, spec, props, load_model(model, core)


@dataclasses.dataclass
class _Request:
    """Everything a placement depends on, validated."""

    core: ov.Core
    spec: DeviceSpec
    props: dict[str, Any]
    model: ov.Model
    devices: tuple[str, ...]
    strategy: PlacementStrategy
    pins: list[Pin]
    exclude_devices: tuple[str, ...]
    max_submodels: int | None
    seed: int
    #: Dynamic models: the static shapes placed for (None for a static model).
    shapes: PlacementShapes | None = None
    #: What the strategy places: ``model`` itself, or its static clone at ``shapes``.
    placement_model: ov.Model | None = None


def _request(model, device_name, config, core, strategy, pins, exclude_devices, max_submodels, seed,
             search_budget=None, shapes: ShapesLike = None) -> _Request:
    core, spec, props, ov_model = _validated(model, device_name, config, core)
    placement_shapes = resolve_shapes(ov_model, shapes)  # ShapeError if shapes= does not fit
    if placement_shapes is not None and not is_dynamic(ov_model):
        placement_shapes = None  # shapes= only repeated the static model's own shapes
    excluded = normalized_exclusions(exclude_devices) or ()  # "CPUF" is one device, place() and compile_model
    unknown = [d for d in excluded if d not in spec.devices]
    if unknown:
        raise ExcludedDeviceError(f"exclude_devices names {unknown}, which are not in {spec.text!r}; "
                                  f"exclude some of {list(spec.devices)}")
    devices = tuple(d for d in spec.devices if d not in excluded)
    if not devices:
        raise DeviceError(f"every device of {spec.text!r} is excluded by exclude_devices={list(excluded)}")
    if max_submodels is not None and (not isinstance(max_submodels, int) or max_submodels < 1):
        raise PlacementError(f"max_submodels must be a positive int or None, got {max_submodels!r}")
    parsed_pins = parse_pins(pins)
    if parsed_pins:
        check_pins_devices(parsed_pins, spec.devices, excluded)
    resolved = _resolve_strategy(strategy, search_budget, max_submodels)
    placement_model = static_clone(ov_model, placement_shapes) if placement_shapes is not None else ov_model
    return _Request(core, spec, props, ov_model, devices, resolved, parsed_pins, excluded, max_submodels, seed,
                    placement_shapes, placement_model)


def _place(req: _Request, prepared: ov.Model, graph: GraphArrays, support_dir: Path | None = None) -> Placement:
    support = device_support(req.core, prepared, graph, req.devices, support_dir)
    context = PlacementContext(graph=graph, devices=req.devices, support=support, core=req.core, model=prepared,
                               seed=req.seed)
    proposal = req.strategy.propose(context)
    placement = legalize(graph, proposal, req.devices, support, pins=req.pins, max_submodels=req.max_submodels,
                         strategy=req.strategy.name)
    annotate = getattr(req.strategy, "annotate", None)
    if annotate is not None:  # e.g. the measured latencies of a budgeted search
        annotate(placement)
    cost = getattr(req.strategy, "last_cost", None)
    if cost is not None and not req.pins:  # pinned placements are the user's call, not the guard's
        placement = guard_placement(placement, graph, cost, support)
    placement = ensure_legal(placement, graph, req.devices, support, pins=req.pins, max_submodels=req.max_submodels,
                             source="new")
    logger.info("placed %d nodes with %s: %s, %d submodel(s)", graph.num_nodes, req.strategy.name,
                placement.counts_per_device(), placement.num_submodels)
    return placement


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
    """
    default = strategy is None and search_budget is None
    req = _request(model, device_name, config, core, strategy if not default else StrategyName.PRIORITY, pins,
                   exclude_devices, max_submodels, seed, search_budget, shapes)
    if req.spec.meta is not None and req.spec.meta != "HETERO":
        raise DeviceError(f"place() needs a HETERO device string or one device, got {req.spec.meta} in {req.spec.text!r}")
    prepared = prepare_model(req.placement_model)
    if default:  # what compile_model's default path would place: a stored profile, else the prior; nothing run
        from .first_start import default_placement

        return default_placement(req, prepared, extract_graph(prepared))
    return _place(req, prepared, extract_graph(prepared))


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
    """
    core, spec, props, ov_model = _validated(model, placement.device_string, config, core)
    return compile_placed(core, ov_model, placement, spec.hetero_string, props)


def _cached_or_new_placement(req: _Request, prepared: ov.Model, cache: PlacementCache | None) -> Placement:
    graph = extract_graph(prepared)
    if cache is None:
        return _verified(req, prepared, graph, _place(req, prepared, graph))
    key = cache.key(req.core, graph, req.devices, strategy=req.strategy.cache_token(), pins=req.pins,
                    exclude_devices=req.exclude_devices, max_submodels=req.max_submodels, shapes=req.shapes)
    support = device_support(req.core, prepared, graph, req.devices, cache.directory / "support")
    placement = cache.get(key, graph, support=support, pins=req.pins)  # legality-checked
    if placement is not None:
        if req.pins or evidence_intact(placement) or not needs_verification(placement, graph, support):
            logger.info("placement cache hit (%s): %s", req.strategy.name, placement.counts_per_device())
            return placement
        logger.info("placement cache hit (%s) without intact verification evidence: verifying it again",
                    req.strategy.name)
    else:
        placement = _place(req, prepared, graph, cache.directory / "support")
    placement = _verified(req, prepared, graph, placement, support)
    cache.put(key, placement, graph)
    return placement


def _verified(req: _Request, prepared: ov.Model, graph: GraphArrays, placement: Placement,
              support: np.ndarray | None = None) -> Placement:
    """The measured verification (``verification.py``) of a placement that differs from the plain call's.

    Pinned placements are the user's call and are compiled as asked. Anything else that is not what
    ``core.compile_model(model, device_name, config)`` would run is kept only if it measurably wins.
    """
    if req.pins:
        return placement
    if support is None:  # the caller's support matrix when it has one (a query_model per device otherwise)
        support = query_support(req.core, prepared, graph, req.devices)
    # the runner-up splits on the costs the strategy placed with (none on a cache hit: the strategy did not run)
    alternatives = runner_ups(graph, req.devices, support, getattr(req.strategy, "last_cost", None),
                              max_submodels=req.max_submodels)
    if not any(needs_verification(p, graph, support) for p in (placement, *alternatives)):
        return placement
    verified, _ = verify_placement(req.core, prepared, graph, placement, support=support, properties=req.props,
                                   model=req.placement_model, device_name=req.spec.text, alternatives=alternatives)
    return verified


def _pinned_fallback(req: _Request, exc: Exception) -> ov.CompiledModel:
    """The fallback when pins were given: HETERO's own affinity plus the pins, legalized; never a silent drop."""
    try:
        prepared = prepare_model(req.placement_model)
        graph = extract_graph(prepared)
        support = query_support(req.core, prepared, graph, req.devices)
        placement = legalize(graph, np.argmax(support, axis=1).astype(np.int64), req.devices, support, pins=req.pins,
                             strategy="plain+pins")
        return compile_placed(req.core, req.model, placement, req.spec.hetero_string, req.props, shapes=req.shapes)
    except USER_ERRORS:
        raise
    except Exception as again:  # noqa: BLE001 - say both failures; the pins are the user's request
        raise PlacementError(f"the placement path failed ({type(exc).__name__}: {exc}) and the pinned fallback "
                             f"(HETERO's own affinity plus your pins) failed too ({type(again).__name__}: {again}); "
                             "remove the pins to get a plain compile_model") from again


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
) -> ov.CompiledModel:
    """Drop-in for ``core.compile_model(model, device_name, config)`` that places nodes first.

    Every device string and config ``core.compile_model`` takes keeps OpenVINO's
    meaning (docs/call-forms.md, ``device_requests.py``). With no device (OpenVINO's
    default, AUTO) it places over the devices AUTO chooses among, and on a
    machine with one of them it is exactly ``core.compile_model(model, "CPU",
    config)``. With one device, or an AUTO/MULTI/BATCH string, it is exactly
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
    :mod:`ov_autoplace.shapes`); the affinities are carried over and the
    returned model stays dynamic. The placement shapes are part of the cache key.

    The placement is cached (``cache_dir``, default
    ``$OV_AUTOPLACE_CACHE_DIR`` or ``$XDG_CACHE_HOME/ov_autoplace`` or
    ``~/.cache/ov_autoplace``; profiles beside it). OpenVINO's blob cache is
    the user's: a ``CACHE_DIR`` in ``config`` or on the core is used as set,
    none is enabled when the user enabled none, unless ``cache_blobs=True``
    (then ``<cache_dir>/openvino``). Errors in the arguments raise before any compile; a
    failure while placing falls back to plain ``core.compile_model`` with a
    warning, so a model OpenVINO can compile is always returned compiled.
    """
    profiling = check_profiling(profile)
    default = strategy is None and search_budget is None
    if weights is not None:  # core.compile_model(xml_text, weights=...): the IR in memory
        model = load_model(model, core if core is not None else default_core(), weights)
    exclude_devices = normalized_exclusions(exclude_devices)  # "CPUF" is one device, not 'C', 'P', 'U', 'F'
    try:
        # the default path chooses its own source (first_start.py); PRIORITY is only a cheap placeholder here
        req = _request(model, device_name, config, core, strategy if not default else StrategyName.PRIORITY, pins,
                       exclude_devices, max_submodels, seed, search_budget, shapes)
    except PolicyFormatError as exc:  # the shipped policy file is damaged: our machinery, not the caller's input
        if pins:  # the user's pins still hold: HETERO's own affinity plus the pins needs no policy
            req = _request(model, device_name, config, core, StrategyName.PRIORITY, pins, exclude_devices,
                           max_submodels, seed, None, shapes)
            if req.spec.is_placement:
                logger.warning("the placement policy cannot be loaded (%s); compiling HETERO's own affinity with your "
                               "pins on %s (reinstall ov_autoplace to restore placement)", exc, req.spec.hetero_string)
                return _pinned_fallback(req, exc)
        core, spec, props, ov_model = _validated(model, device_name, config, core)
        logger.warning("the placement policy cannot be loaded (%s); falling back to plain compile_model on %s "
                       "(reinstall ov_autoplace to restore placement)", exc, spec.text)
        return core.compile_model(ov_model, spec.without(exclude_devices), props)
    # From here on device_name is OpenVINO's meaning of the call ("AUTO" when none was given,
    # "HETERO:CPU,GPU" for "HETERO" + MULTI_DEVICE_PRIORITIES): what a fallback compiles (device_requests.py).
    device_name = req.spec.text
    if not req.spec.is_placement:  # single device, AUTO, MULTI, BATCH, PIPELINE_PARALLEL: OpenVINO's own compile
        return compile_plain(req.core, req.model, req.spec, req.spec.without(req.exclude_devices), req.props)
    if not default and profiling is not Profiling.STORED:
        raise PlacementError(f"profile={profiling.value!r} applies to the default placement; leave strategy and "
                             "search_budget unset to use it")
    try:
        if default:
            compiled = None
            if profiling is Profiling.STORED:  # an IR that carries its placement (save_model): used, not placed again
                compiled = compile_stored(req, _verified, cache_dir=cache_dir, cache_blobs=cache_blobs)
            if compiled is None:
                compiled = compile_default(req, profiling=profiling, cache_dir=cache_dir, use_cache=use_cache,
                                           cache_blobs=cache_blobs)
            return compiled
        cache = PlacementCache(cache_dir) if use_cache else None
        prepared = prepare_model(req.placement_model)  # a dynamic model is placed on its static clone
        placement = _cached_or_new_placement(req, prepared, cache)
        props = blob_cache_props(req.core, req.props, cache_root(cache_dir), cache_blobs)
        device = single_device_of(placement)
        if device is not None:  # one device: exactly the plain call on it (the user's model, not through HETERO)
            compiled = req.core.compile_model(req.model, device, properties_for(req.core, device, props))
        elif req.shapes is None:
            placement.apply(prepared)
            compiled = req.core.compile_model(prepared, req.spec.hetero_string, props)
        else:  # carried over to the dynamic model, compiled dynamic, run once (DynamicSplitError -> fallback)
            compiled = compile_placed(req.core, req.model, placement, req.spec.hetero_string, props,
                                      shapes=req.shapes)
    except USER_ERRORS:
        raise  # the user's own request is wrong (or plain OpenVINO cannot compile it either): no fallback
    except Exception as exc:  # noqa: BLE001 - any failure in the placement path must not cost the user a model
        if req.pins:
            logger.warning("placement path failed (%s: %s); compiling HETERO's own affinity with your pins on %s",
                           type(exc).__name__, exc, req.spec.hetero_string)
            return _pinned_fallback(req, exc)
        logger.warning("placement path failed (%s: %s); falling back to plain compile_model on %s",
                       type(exc).__name__, exc, device_name)
        return req.core.compile_model(req.model, device_name, req.props)
    logger.info("compiled %s with placement %s", req.spec.hetero_string, placement.counts_per_device())
    return compiled


__all__ = ["DEFAULT_MAX_SUBMODELS", "DEFAULT_STRATEGY", "Profiling", "StrategyName", "compile_model", "compile_placement",
           "default_core", "load_model", "place"]
