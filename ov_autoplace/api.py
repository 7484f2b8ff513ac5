"""The public entry points: ``compile_model`` (drop-in for ``core.compile_model``) and ``place``.

Both validate everything first (device string, devices present, properties,
model), then delegate: model -> graph arrays -> strategy proposal -> legalize
-> affinities on a clone -> HETERO compile. Validation errors are raised before
any compile. A failure *inside* the placement path never leaves the caller
without a compiled model: ``compile_model`` logs a warning and falls back to
plain ``core.compile_model`` on the requested device string.
"""

from __future__ import annotations

import enum
import functools
import logging
import os
from pathlib import Path
from typing import Any, Mapping, Sequence, Union

import openvino as ov

from .devices import DeviceSpec, check_devices_present, check_properties, parse_device_string
from .errors import DeviceError, ModelLoadError, ModelNotFoundError, PlacementError, UnsupportedOpError
from .graph import extract_graph
from .legalize import Pin, legalize, parse_pins, query_support
from .placement import Placement
from .prepare import prepare_model
from .strategies.base import PlacementContext, PlacementStrategy
from .strategies.heavy_ops import HeavyOpsStrategy
from .strategies.priority import DevicePriorityStrategy
from .strategies.random_strategy import RandomStrategy

logger = logging.getLogger("ov_autoplace")

ModelLike = Union[ov.Model, str, os.PathLike]


class StrategyName(str, enum.Enum):
    """Built-in placement strategies selectable by name."""

    #: FLOP-heavy ops on the first (accelerator) device, the rest on the next; islands merged.
    HEAVY_OPS = "heavy_ops"
    #: OpenVINO HETERO's rule: everything on the first device that supports it.
    PRIORITY = "priority"
    #: Uniformly random per node (for testing the legalizer; slow placements).
    RANDOM = "random"


DEFAULT_STRATEGY = StrategyName.HEAVY_OPS
#: Default bound on HETERO submodels: each costs a switch and two tensor copies.
DEFAULT_MAX_SUBMODELS = 8


@functools.lru_cache(maxsize=1)
def default_core() -> ov.Core:
    """The process-wide core used when no ``core=`` is given."""
    return ov.Core()


def _resolve_strategy(strategy: StrategyName | str | PlacementStrategy | None) -> PlacementStrategy:
    if isinstance(strategy, PlacementStrategy):
        return strategy
    if strategy is None:
        strategy = DEFAULT_STRATEGY
    try:
        name = StrategyName(strategy)
    except ValueError:
        raise PlacementError(
            f"unknown strategy {strategy!r}; expected one of {[s.value for s in StrategyName]} "
            "or a PlacementStrategy instance"
        ) from None
    if name is StrategyName.PRIORITY:
        return DevicePriorityStrategy()
    if name is StrategyName.RANDOM:
        return RandomStrategy()
    return HeavyOpsStrategy()


def load_model(model: ModelLike, core: ov.Core) -> ov.Model:
    """Accept an ``ov.Model`` or a path OpenVINO can read (IR, ONNX, ...)."""
    if isinstance(model, ov.Model):
        return model
    if not isinstance(model, (str, os.PathLike)):
        raise ModelLoadError(f"model must be an openvino.Model or a path to a model file, got {type(model).__name__}")
    path = Path(model)
    if not path.is_file():
        raise ModelNotFoundError(f"model file {str(path)!r} does not exist (expected an IR .xml, .onnx, ... file)")
    try:
        return core.read_model(str(path))
    except Exception as exc:  # OpenVINO raises RuntimeError subclasses with long traces
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"OpenVINO cannot read model file {str(path)!r}: {first_line}") from exc


def _validated(model: ModelLike, device_name: str, config: Any, core: ov.Core | None):
    core = core if core is not None else default_core()
    if not isinstance(core, ov.Core):
        raise TypeError(f"core must be an openvino.Core, got {type(core).__name__}")
    spec = parse_device_string(device_name)
    props = check_properties(config)
    if spec.meta is None or spec.meta == "HETERO":
        check_devices_present(core, spec.devices)
    return core, spec, props, load_model(model, core)


def _place(
    core: ov.Core,
    ov_model: ov.Model,
    spec: DeviceSpec,
    *,
    strategy: StrategyName | str | PlacementStrategy | None,
    pins: Mapping[str, str] | Sequence[Pin] | None,
    exclude_devices: Sequence[str] | None,
    max_submodels: int | None,
    seed: int,
) -> Placement:
    devices = tuple(d for d in spec.devices if d not in set(exclude_devices or ()))
    if not devices:
        raise DeviceError(f"every device of {spec.text!r} is excluded by exclude_devices={list(exclude_devices or ())}")
    chosen = _resolve_strategy(strategy)
    graph = extract_graph(ov_model)
    support = query_support(core, ov_model, graph, devices)
    context = PlacementContext(graph=graph, devices=devices, support=support, core=core, model=ov_model, seed=seed)
    proposal = chosen.propose(context)
    placement = legalize(
        graph, proposal, devices, support, pins=parse_pins(pins), max_submodels=max_submodels, strategy=chosen.name
    )
    logger.info("placed %d nodes with %s: %s, %d submodel(s)", graph.num_nodes, chosen.name,
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
) -> Placement:
    """Choose a device for every node of ``model`` over ``device_name``'s devices, without compiling.

    ``device_name`` is a HETERO string (``"HETERO:GPU,CPU"``) or a single device
    (everything goes there). ``pins`` maps a node name, a name pattern
    (``"*attention*"``) or ``"type:MatMul"`` to a device. Raises DeviceError,
    PropertyError, ModelLoadError/ModelNotFoundError or PlacementError.
    """
    core, spec, _, ov_model = _validated(model, device_name, config, core)
    if spec.meta is not None and spec.meta != "HETERO":
        raise DeviceError(f"place() needs a HETERO device string or one device, got {spec.meta} in {spec.text!r}")
    return _place(core, prepare_model(ov_model), spec, strategy=strategy, pins=pins, exclude_devices=exclude_devices,
                  max_submodels=max_submodels, seed=seed)


def compile_placement(
    model: ModelLike,
    placement: Placement,
    config: Mapping[str, Any] | None = None,
    *,
    core: ov.Core | None = None,
) -> ov.CompiledModel:
    """Compile ``model`` with an explicit placement (affinities are set on a clone, never on ``model``)."""
    core, spec, props, ov_model = _validated(model, placement.device_string, config, core)
    prepared = prepare_model(ov_model)
    placement.apply(prepared)
    return core.compile_model(prepared, spec.hetero_string, props)


def compile_model(
    model: ModelLike,
    device_name: str = "HETERO:GPU,CPU",
    config: Mapping[str, Any] | None = None,
    *,
    core: ov.Core | None = None,
    strategy: StrategyName | str | PlacementStrategy | None = None,
    pins: Mapping[str, str] | Sequence[Pin] | None = None,
    exclude_devices: Sequence[str] | None = None,
    max_submodels: int | None = DEFAULT_MAX_SUBMODELS,
    seed: int = 0,
) -> ov.CompiledModel:
    """Drop-in for ``core.compile_model(model, device_name, config)`` that places nodes first.

    With one device, or an AUTO/MULTI/BATCH string, it is exactly
    ``core.compile_model``. With ``HETERO:<devices>`` the chosen strategy
    assigns every node a device (see :func:`place`), and the model is compiled
    with those affinities. Errors in the arguments raise before any compile;
    a failure while placing falls back to plain ``core.compile_model`` with a
    warning, so a model OpenVINO can compile is always returned compiled.
    """
    core, spec, props, ov_model = _validated(model, device_name, config, core)
    if not spec.is_placement:
        return core.compile_model(ov_model, device_name, props)
    # Argument errors surface now, before any work; what fails after this is ours to absorb.
    chosen, pin_list = _resolve_strategy(strategy), parse_pins(pins)
    try:
        prepared = prepare_model(ov_model)
        placement = _place(core, prepared, spec, strategy=chosen, pins=pin_list, exclude_devices=exclude_devices,
                           max_submodels=max_submodels, seed=seed)
        placement.apply(prepared)
        compiled = core.compile_model(prepared, spec.hetero_string, props)
    except (UnsupportedOpError, DeviceError):
        raise  # plain OpenVINO cannot compile this either, or the caller excluded every device
    except Exception as exc:  # noqa: BLE001 - any failure in the placement path must not cost the user a model
        logger.warning("placement path failed (%s: %s); falling back to plain compile_model on %s",
                       type(exc).__name__, exc, device_name)
        return core.compile_model(ov_model, device_name, props)
    logger.info("compiled with placement %s", placement.counts_per_device())
    return compiled


__all__ = ["DEFAULT_MAX_SUBMODELS", "DEFAULT_STRATEGY", "StrategyName", "compile_model", "compile_placement",
           "default_core", "load_model", "place"]
