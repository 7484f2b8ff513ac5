"""Whether the running call is inside ov_autoplace, so that its own compiles reach OpenVINO and never the route back.

``routing.route_openvino`` sends every ``openvino.Core.compile_model`` of the process to ``ov_autoplace.compile_model``,
which itself calls ``core.compile_model``. Every public entry point marks its call (:func:`ov_autoplace_call`) in a
context variable, which a thread ov_autoplace starts inherits (``contextvars.copy_context``), so a compile made on
the inside goes to OpenVINO's own method, from any of ov_autoplace's threads, while the app's other threads are
still routed.
"""

from __future__ import annotations

import contextlib
import contextvars

_INSIDE: contextvars.ContextVar[bool] = contextvars.ContextVar("ov_autoplace_inside", default=False)


def inside_ov_autoplace() -> bool:
    """Whether the current call runs inside an ov_autoplace entry point."""
    return _INSIDE.get()


@contextlib.contextmanager
def ov_autoplace_call():
    """Mark the block (or, as a decorator, the function) as running inside ov_autoplace."""
    token = _INSIDE.set(True)
    try:
        yield
    finally:
        _INSIDE.reset(token)


__all__ = ["inside_ov_autoplace", "ov_autoplace_call"]
