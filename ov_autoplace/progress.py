"""Progress bars for long work (profiling a model, a measured search): tqdm when it is installed.

tqdm is not a runtime dependency (inference apps get openvino and numpy);
without it, or when stderr is not a terminal (``disable=None``), the bar is
silent and the library's log lines say what happened.
"""

from __future__ import annotations

import contextlib
from typing import Iterator


class _SilentBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass


@contextlib.contextmanager
def progress_bar(total: int, desc: str, unit: str = "step") -> Iterator[object]:
    """A tqdm bar over ``total`` steps on stderr (a silent stand-in without tqdm or a terminal)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        yield _SilentBar()
        return
    bar = tqdm(total=total, desc=desc, unit=unit, disable=None, leave=False)
    try:
        yield bar
    finally:
        bar.close()


__all__ = ["progress_bar"]
