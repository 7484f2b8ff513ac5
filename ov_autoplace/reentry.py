"""Whether the running call is inside ov_autoplace, so that its own compiles reach OpenVINO and never the route back
(how: docs/architecture.md, "Module notes")."""

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
