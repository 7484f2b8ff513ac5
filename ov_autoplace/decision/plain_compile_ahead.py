"""The plain call's compile, started on a thread while the default path decides, used when the decision keeps it.

The rest: docs/architecture.md, "Module notes", ov_autoplace/decision/plain_compile_ahead.py.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ov_autoplace.cache.root import private_subdir
from ov_autoplace.costmodel.device_names import may_all_be_recognized
from ov_autoplace.devices.properties import with_runtime_options
from ov_autoplace.decision.compile_decided import is_plain_call
from ov_autoplace.decision.single_device_index import key_digest
from ov_autoplace.devices.facts import read_device_facts
from ov_autoplace.model.loading import write_private_atomic

if TYPE_CHECKING:  # the request is built above this module, which only reads its fields
    from ov_autoplace.decision.request import PlacementRequest

logger = logging.getLogger("ov_autoplace")


class PlainCompileAhead:
    """``core.compile_model(model, target, properties)`` running on a thread; :meth:`take` or :meth:`discard` it.

    ``device`` is the decision it serves (the plain call's device); ``target`` the device string compiled (the
    plain call's own, by default ``device``).
    """

    def __init__(self, core: Any, model: Any, device: str, properties: dict, target: str | None = None):
        self.device = device
        self.compiled = None
        self.error: BaseException | None = None
        self.seconds = float("nan")
        self._taken = False
        # in the caller's context: the thread is inside ov_autoplace as its caller is (reentry.py), so a routed
        # OpenVINO (routing.py) hands this compile to OpenVINO's own method
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run,
                                        args=(self._run, core, model, target or device, properties),
                                        name=f"ov_autoplace plain compile ({device})", daemon=False)
        self._thread.start()

    def _run(self, core, model, target, properties) -> None:
        started = time.perf_counter()
        try:
            self.compiled = core.compile_model(model, target, properties)
        except BaseException as exc:  # noqa: BLE001 - kept: the main thread compiles again and raises it there
            self.error = exc
        self.seconds = time.perf_counter() - started

    def take(self, device: str | None):
        """The compiled model if ``device`` is the one compiled ahead and it compiled, else None (discarded).

        Joins the thread first, whatever the answer; only the first call answers (later ones return None).
        """
        self._thread.join()
        if self._taken:
            return None
        self._taken = True
        compiled, self.compiled = self.compiled, None
        if device != self.device or compiled is None:
            logger.debug("plain compile ahead on %s discarded (%s; %.0f ms)", self.device,
                         f"error: {self.error!r}" if self.error is not None else f"the decision is {device}",
                         1e3 * self.seconds)
            return None
        logger.debug("plain compile ahead on %s used (%.0f ms, overlapped with the decision)", device,
                     1e3 * self.seconds)
        return compiled

    def wait(self) -> float:
        """Seconds the compile took, once done (nan if it raised)."""
        self._thread.join()
        return self.seconds if self.error is None else float("nan")

    def discard(self) -> None:
        """Join the thread and drop what it compiled (nothing to do after :meth:`take`)."""
        self.take(None)


def _note_path(root: Path, index_key: dict) -> Path:

    return Path(root) / "placements" / f"deviates-{key_digest(index_key)}.json"


def deviation_noted(root: Path, index_key: dict | None) -> bool:
    """Whether the last decision for this model (``single_device_index.index_key``) was not the plain call's."""
    return index_key is not None and os.path.lexists(_note_path(root, index_key))


def note_decision(root: Path, index_key: dict, *, deviates: bool, noted: bool) -> None:
    """Keep the note in step with the decision just made (best effort: it only steers :func:`start`)."""
    if deviates == noted:
        return
    path = _note_path(root, index_key)
    try:
        if deviates:

            private_subdir(root, "placements")
            write_private_atomic(path, json.dumps({"key": index_key, "why": "the decision was not the plain call's "
                                                   "device: do not compile it ahead"}))
        else:
            os.unlink(path)
    except (OSError, TypeError, ValueError) as exc:  # an untrusted root was warned about by the index lookup
        logger.debug("compile-ahead note not %s (%s)", "written" if deviates else "removed", exc)


def start(req: PlacementRequest, properties: dict, *, noted: bool) -> PlainCompileAhead | None:
    """Start the plain call's compile (``core.compile_model(req.model, device_name, properties)``) when the decision
    is unlikely to deviate (see the module docstring)."""
    if noted or not is_plain_call(req, req.devices[0]):  # a device excluded: the plain call is not the decision
        return None
    try:
        if may_all_be_recognized(read_device_facts(req.core, d).full_name for d in req.devices):
            return None
    except Exception as exc:  # noqa: BLE001 - a damaged platform file: the prior reports it; just do not start
        logger.debug("plain compile ahead not started (%s: %s)", type(exc).__name__, exc)
        return None
    return PlainCompileAhead(req.core, req.model, req.devices[0],
                             with_runtime_options(req.core, req.model, req.devices, properties), target=req.spec.text)


__all__ = ["PlainCompileAhead", "deviation_noted", "note_decision", "start"]
