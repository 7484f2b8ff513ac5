"""A call's arguments, validated into one request before anything is compiled.

``compile_model``, ``place`` and ``save_model`` start here: the core (given or the process-wide one), the device
argument and config with OpenVINO's meaning (``devices/call_forms.py``), the model loaded (a path, an
``ov.Model``, or XML + weights in memory), placement shapes of a dynamic model, excluded devices, the submodel
bound, pins, the memory caps (``devices/memory_caps.py``) and the strategy (a name of the registry, an instance,
or ``search_budget``'s fine-tuner from the lab) - every user mistake raised here as a typed error, never fallen
back from. :class:`StrategyName` lists the runtime's own strategies.
"""

from __future__ import annotations

import enum
import functools
import importlib.util
import os
from pathlib import Path
from typing import Any, Union

import numpy as np
import openvino as ov
from openvino import _pyopenvino  # the binding's Model class, which openvino.compile_model passes on

from ov_autoplace.measuring.providers import MeasuredCostProvider
from ov_autoplace.decision.memory_path import with_reported_caps
from ov_autoplace.decision.request import PlacementRequest
from ov_autoplace.devices.call_forms import check_property_values, resolve_device_request
from ov_autoplace.devices.device_strings import DeviceSpec, check_properties, normalized_exclusions
from ov_autoplace.devices.memory_caps import parse_memory_caps
from ov_autoplace.errors import DeviceError, ExcludedDeviceError, ModelLoadError, PlacementError
from ov_autoplace.model.generation import Generation, check_generation
from ov_autoplace.model.loading import check_model_path
from ov_autoplace.model.shapes import ShapesLike, placement_clone, resolve_shapes
from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS
from ov_autoplace.placement.pins import Pin, parse_pins
from ov_autoplace.placement.user_checks import check_pins_devices
from ov_autoplace.policy import pretrained
from ov_autoplace.strategies.base import PlacementStrategy
from ov_autoplace.strategies.registry import REGISTRY, make_strategy, search_budget_factory

ModelLike = Union[ov.Model, str, os.PathLike]


#: Built-in placement strategies selectable by name, generated from the strategy registry
#: (``ov_autoplace/strategies/registry.py``: one line of description each; ``ov-autoplace strategies`` lists them).
StrategyName = enum.Enum("StrategyName", {name.upper(): name for name in REGISTRY}, type=str,
                         module=__name__)
StrategyName.__doc__ = """The runtime's placement strategies, selectable by name (``strategies/registry.py``; the lab's
strategies, where it is installed, are selectable by their string names too).

Example::

    compiled = ov_autoplace.compile_model(model, "HETERO:GPU,CPU", strategy=ov_autoplace.StrategyName.HEFT)
    [s.value for s in ov_autoplace.StrategyName]   # "hsdag", "hsdag_local_search", "heavy_ops", ...
"""


DEFAULT_STRATEGY = StrategyName.HSDAG


@functools.lru_cache(maxsize=1)
def default_core() -> ov.Core:
    """The process-wide core used when no ``core=`` is given."""
    return ov.Core()


def resolve_strategy(strategy: StrategyName | str | PlacementStrategy | None, search_budget: int | float | None,
                     max_submodels: int | None) -> PlacementStrategy | None:
    """The strategy instance that places, or None for the default path (no strategy, no ``search_budget``)."""
    if search_budget is not None:
        return _search_strategy(strategy, search_budget, max_submodels)
    if strategy is None or isinstance(strategy, PlacementStrategy):
        return strategy
    return make_strategy(strategy)  # raises PlacementError naming the registered strategies


def _search_strategy(strategy, search_budget, max_submodels) -> PlacementStrategy:
    """The budgeted, measured fine-tuning of the pretrained policy (the lab's, entry-point group
    ``ov_autoplace.search_budget``; needs torch)."""
    check_search_budget(search_budget)
    if strategy is not None and strategy != StrategyName.HSDAG and strategy != StrategyName.HSDAG.value:
        raise PlacementError(f"search_budget fine-tunes the HSDAG policy; it cannot be combined with strategy="
                             f"{strategy!r} (leave strategy unset or use {StrategyName.HSDAG.value!r})")
    make_search = search_budget_factory()  # LabNotInstalledError naming pip install ov-autoplace-lab
    if importlib.util.find_spec("torch") is None:
        raise PlacementError("search_budget fine-tunes the policy with torch, which is not installed; install it "
                             "with pip install 'ov-autoplace-lab[train]' or leave search_budget unset")
    return make_search(pretrained_policy_path(), MeasuredCostProvider(), search_budget, max_submodels=max_submodels)


#: The largest ``search_budget``: measured placements (each one a compile and a timing, seconds on a big model) and
#: seconds (a day). The API, the CLI's ``--search-budget`` and the lab's search all check with
#: :func:`check_search_budget`, so one value is accepted or refused alike everywhere.
MAX_SEARCH_PLACEMENTS = 10_000
MAX_SEARCH_SECONDS = 24 * 3600.0


def check_search_budget(budget: object) -> None:
    """Raise PlacementError unless ``budget`` is an int in [1, MAX_SEARCH_PLACEMENTS] (placements) or a float in
    (0, MAX_SEARCH_SECONDS] (seconds)."""
    ok = (isinstance(budget, int) and not isinstance(budget, bool) and 1 <= budget <= MAX_SEARCH_PLACEMENTS) or (
        isinstance(budget, float) and np.isfinite(budget) and 0 < budget <= MAX_SEARCH_SECONDS)
    if not ok:
        raise PlacementError(f"search_budget must be an int >= 1 and <= {MAX_SEARCH_PLACEMENTS} (measured "
                             f"placements, e.g. 30) or a float > 0 and <= {MAX_SEARCH_SECONDS:.0f} (seconds, e.g. "
                             f"60.0), got {budget!r}")


def check_seed(seed: object) -> int:
    """``seed`` as given if it is an int (not a bool: ``seed=True`` is a slip, not a seed); PlacementError else."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise PlacementError(f"seed must be an int (e.g. 0), got {type(seed).__name__} {seed!r}")
    return int(seed)


def pretrained_policy_path() -> Path:
    """The HSDAG policy shipped inside the package (read from its module at each call, so a test may replace it)."""
    path = pretrained.PRETRAINED_POLICY
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
    if isinstance(model, _pyopenvino.Model):  # what openvino.compile_model hands Core.compile_model
        return ov.Model(model)
    if isinstance(model, bytes):  # OpenVINO reads a bytes path as the file system's encoding of it
        model = os.fsdecode(model)
    if not isinstance(model, (str, os.PathLike)):
        # OpenVINO reads str(model) as a path and names it in this sentence, which apps and its own tests match
        raise ModelLoadError(f"Path: '{model}' does not exist. Please provide valid model's path either as a string, "
                             f"bytes or pathlib.Path: model must be an openvino.Model or a path to a model file, got "
                             f"{type(model).__name__}")
    path = Path(model)
    check_model_path(path)  # a FIFO or /dev/zero would hang OpenVINO's read: refused before it opens anything
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


def validated_call(model: ModelLike, device_name: str | None, config: Any, core: ov.Core | None
                   ) -> tuple[ov.Core, DeviceSpec, dict[str, Any], ov.Model]:
    """Core, DeviceSpec with OpenVINO's meaning (devices/call_forms.py), checked props, model; nothing compiled."""
    core = core if core is not None else default_core()
    if not isinstance(core, ov.Core):
        raise PlacementError(f"core must be an openvino.Core (or left out for the process-wide one), got "
                             f"{type(core).__name__}")
    spec, props = resolve_device_request(core, device_name, check_properties(config))
    check_property_values(core, spec, props)
    return core, spec, props, load_model(model, core)


def build_request(model: ModelLike, device_name: str | None, config: Any = None, *, core: ov.Core | None = None,
                  strategy: StrategyName | str | PlacementStrategy | None = None,
                  pins: Any = None, exclude_devices: Any = None, max_submodels: int | None = DEFAULT_MAX_SUBMODELS,
                  seed: int = 0, search_budget: int | float | None = None, shapes: ShapesLike = None,
                  compiles_alone: bool = False, memory_caps: Any = None,
                  generation: Generation | tuple[int, int] | None = None) -> PlacementRequest:
    """The call validated into a :class:`PlacementRequest` (typed errors for every user mistake, nothing compiled).

    ``strategy`` and ``search_budget`` both None: the default path (``request.strategy`` is None).
    ``compiles_alone``: a call that is not a placement (one device, AUTO, ...) is compiled by OpenVINO itself
    (``compile_model``), so a dynamic model gets no static clone (``place`` places even on one device).
    """
    core, spec, props, ov_model = validated_call(model, device_name, config, core)
    caps = parse_memory_caps(memory_caps, spec.devices)  # PropertyError: a malformed size, a device not in the string
    generation = check_generation(generation, ov_model, model)  # a decoder's generation, else None (ShapeError)
    if spec.is_placement or not compiles_alone:  # a static model as it is, a dynamic one's static clone
        placement_shapes, placement_model, unplaceable = placement_clone(
            ov_model, shapes, generation.prompt_tokens if generation else None)
    else:  # one device, AUTO, ...: OpenVINO compiles the model itself, nothing is placed
        resolve_shapes(ov_model, shapes)  # ShapeError if shapes= does not fit, as for a placement
        placement_shapes, placement_model, unplaceable = None, ov_model, ""
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
    seed = check_seed(seed)
    parsed_pins = tuple(parse_pins(pins))
    if parsed_pins:
        check_pins_devices(parsed_pins, spec.devices, excluded)
    resolved = resolve_strategy(strategy, search_budget, max_submodels)
    req = PlacementRequest(core, spec, props, ov_model, devices, resolved, parsed_pins, tuple(excluded),
                           max_submodels, seed, placement_shapes, placement_model, unplaceable, caps, generation)
    return with_reported_caps(req) if spec.is_placement and not unplaceable else req
