"""One line to adopt ov_autoplace where the compile call lives in a library: route OpenVINO's compile to it.

    import ov_autoplace
    ov_autoplace.route_openvino()                    # every Core.compile_model / openvino.compile_model from here on
    ov_autoplace.unroute_openvino()                  # OpenVINO's own again

    with ov_autoplace.routed_openvino(profile="background"):   # only inside the block
        model = OVModelForCausalLM.from_pretrained(path)          # optimum-intel compiles through its own Core()

From the shell, without changing the app: ``ov-autoplace run -- python app.py`` (or ``python -m
ov_autoplace.run app.py``).

How the routing works: docs/architecture.md, "Module notes", routing.py.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import runpy
import sys
import threading
from typing import Any, Sequence

import openvino as ov

from ov_autoplace import api
from ov_autoplace.placement.pins import Pin, parse_pins
from ov_autoplace.reentry import inside_ov_autoplace

logger = logging.getLogger("ov_autoplace")

#: OpenVINO's own method, as it was when this module was imported.
OPENVINO_COMPILE_MODEL = ov.Core.compile_model
#: The keyword options of ``ov_autoplace.compile_model`` a route may set (not core=, weights=, inputs=: each call
#: has its own model and weights, and a sample fits one model).
ROUTE_OPTIONS = tuple(name for name, p in inspect.signature(api.compile_model).parameters.items()
                      if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in ("core", "weights", "inputs"))

_lock = threading.Lock()
_options: dict[str, Any] | None = None  # None: not routed; else compile_model's options (and "core", if given)


@functools.wraps(OPENVINO_COMPILE_MODEL)
def _routed_compile_model(self, model, device_name=None, config=None, *, weights=None):
    with _lock:
        options = None if _options is None else dict(_options)
    if options is None or inside_ov_autoplace():  # unrouted meanwhile, or ov_autoplace's own compile
        return OPENVINO_COMPILE_MODEL(self, model, device_name, config, weights=weights)
    core = options.pop("core", None) or self
    if options.get("pins"):
        options["pins"] = _pins_for(core, model, options["pins"])
    return api.compile_model(model, device_name, config, weights=weights, core=core, **options)


#: The route's pins -> how many routed models had a node each names (under ``_lock``), said by :func:`_unmatched`.
_pins_seen: dict[Pin, int] = {}


def _pins_for(core: ov.Core, model, pins) -> list[Pin]:
    """The route's ``pins`` that name a node of ``model``. A route's pins apply to each of the app's models that
    has what they name: an encoder-decoder's decoder pins are no mistake in its encoder. One that names nothing in
    any model is a WARNING when the route ends (:func:`_unmatched`), the route having no one model to refuse."""
    parsed = parse_pins(pins)
    try:
        ops = (model if isinstance(model, ov.Model) else core.read_model(model)).get_ops()
    except Exception:  # noqa: BLE001 - not a model we can read here: compile_model says what is wrong with it
        return parsed
    named = [(op.get_friendly_name(), op.get_type_name()) for op in ops]
    kept = [pin for pin in parsed if any(pin.matches(name, kind) for name, kind in named)]
    with _lock:
        for pin in parsed:
            _pins_seen[pin] = _pins_seen.get(pin, 0) + (pin in kept)
    if len(kept) < len(parsed):
        logger.info("route: %d pin(s) name no node of this model (%d nodes) and are not applied to it: %s",
                    len(parsed) - len(kept), len(named), [pin for pin in parsed if pin not in kept])
    return kept


def _unmatched() -> None:
    """WARNING for each pin of the route that named no node of any model compiled through it (a typo)."""
    with _lock:
        never = [pin for pin, count in _pins_seen.items() if not count]
        _pins_seen.clear()
    if never:
        logger.warning("route: pin(s) %s named no node of any model compiled through the route, so none was "
                       "applied; check the names (`ov-autoplace place -o placement.json` lists them)", never)


def _checked(options: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(ROUTE_OPTIONS) - {"core"})
    if unknown:
        raise TypeError(f"route_openvino() got {', '.join(unknown)}: not options of ov_autoplace.compile_model; "
                        f"use some of {', '.join(ROUTE_OPTIONS)} (or core=)")
    if options.get("core") is not None and not isinstance(options["core"], ov.Core):
        raise TypeError(f"route_openvino(core=...) must be an openvino.Core, got {type(options['core']).__name__}")
    return {k: v for k, v in options.items() if k != "core" or v is not None}


def route_openvino(**options: Any) -> None:
    """Send every ``openvino.Core.compile_model`` (and ``openvino.compile_model``) of this process through
    ``ov_autoplace.compile_model`` with ``options`` (its keyword options: ``profile``, ``strategy``, ``cache_dir``,
    ...). ``core=``: compile every routed call on this core (where the app registered its virtual devices and set
    its properties) instead of the core the call was made on (a library's own). ``pins=`` go to each model that has
    what they name (:func:`_pins_for`). Calling it again while routed replaces the options. Thread-safe; undone by
    :func:`unroute_openvino`.

    Example::

        ov_autoplace.route_openvino(profile="background")
        compiled = ov.Core().compile_model("model.xml", "HETERO:GPU,CPU")   # placed by ov_autoplace
    """
    global _options
    checked = _checked(options)
    with _lock:
        if _options is not None:
            logger.info("OpenVINO's compile_model is already routed through ov_autoplace; options now %s", checked)
        _options = checked
        ov.Core.compile_model = _routed_compile_model


def unroute_openvino() -> None:
    """Give ``openvino.Core.compile_model`` back to OpenVINO (a no-op, said at INFO, when it is not routed).

    Example::

        ov_autoplace.route_openvino()
        ...                                  # the app's compiles are placed
        ov_autoplace.unroute_openvino()      # plain OpenVINO again
    """
    global _options
    with _lock:
        if _options is None:
            logger.info("OpenVINO's compile_model is not routed through ov_autoplace; nothing to undo")
            return
        _options = None
        ov.Core.compile_model = OPENVINO_COMPILE_MODEL
    _unmatched()


def is_routed() -> bool:
    """Whether OpenVINO's compile_model goes through ov_autoplace now."""
    with _lock:
        return _options is not None


@contextlib.contextmanager
def routed_openvino(**options: Any):
    """:func:`route_openvino` for the block only; the state before it (routed with other options, or not) returns.

    Example::

        with ov_autoplace.routed_openvino(profile="background"):
            model = OVModelForCausalLM.from_pretrained(path, device="HETERO:GPU,CPU")  # optimum-intel's own compile
    """
    global _options
    checked = _checked(options)
    with _lock:
        before = _options
    route_openvino(**checked)
    try:
        yield
    finally:
        with _lock:
            _options = before
            ov.Core.compile_model = OPENVINO_COMPILE_MODEL if before is None else _routed_compile_model
        _unmatched()


def run(target: Sequence[str], **options: Any) -> None:
    """Run a Python program with OpenVINO's compile routed: ``["app.py", *args]`` or ``["-m", "module", *args]``.

    Raises FileNotFoundError naming a script that does not exist, ValueError for an empty target.
    """
    if not target or (target[0] == "-m" and len(target) < 2):
        raise ValueError("nothing to run: give a script (app.py ...) or a module (-m package.app ...)")
    module = target[1] if target[0] == "-m" else None
    script = None if module else target[0]
    if script is not None and not os.path.isfile(script):
        raise FileNotFoundError(f"no such script: {script!r} (run from the folder that holds it, or give its path)")
    route_openvino(**options)
    sys.argv = [script or module, *target[2 if module else 1:]]
    try:
        if module:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            runpy.run_path(script, run_name="__main__")
    finally:
        _unmatched()


def main(argv: Sequence[str] | None = None) -> int:
    """``ov-autoplace run [--profile P] [--strategy S] [--cache-dir D] [--] [python] app.py args...`` (also
    ``python -m ov_autoplace.run ...``): the app runs in this interpreter with OpenVINO's compile routed."""
    import argparse

    parser = argparse.ArgumentParser(prog="ov-autoplace run", description=" ".join(main.__doc__.split()))
    parser.add_argument("--profile", choices=["stored", "background", "now"], help="compile_model(profile=...)")
    parser.add_argument("--strategy", help="compile_model(strategy=...)")
    parser.add_argument("--cache-dir", help="compile_model(cache_dir=...)")
    parser.add_argument("target", nargs=argparse.REMAINDER, help="[python] app.py args... or -m module args...")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    target = args.target[1:] if args.target[:1] == ["--"] else args.target
    if target and os.path.basename(target[0]).startswith("python") and not target[0].endswith(".py"):
        target = target[1:]  # "ov-autoplace run -- python app.py": this interpreter runs it
    options = {k: v for k, v in (("profile", args.profile), ("strategy", args.strategy),
                                 ("cache_dir", args.cache_dir)) if v is not None}
    try:
        run(target, **options)
    except (FileNotFoundError, ValueError) as exc:
        print(f"ov-autoplace run: error: {exc}", file=sys.stderr)
        return 2
    return 0


__all__ = ["OPENVINO_COMPILE_MODEL", "ROUTE_OPTIONS", "is_routed", "route_openvino", "routed_openvino", "run",
           "unroute_openvino"]
