"""Progress for long work (profiling a model, a measured search, a bench): on every install, on a terminal only.

tqdm is not a runtime dependency (inference apps get openvino and numpy).
With tqdm installed the bar is tqdm's; without it, a one-line bar of our own
on stderr, redrawn in place every second (so work whose steps are long, such
as profiling a device, still shows it is alive). Either appears only after
``DELAY_S`` (a call that ends sooner prints nothing) and only when stderr is a
terminal: in a log file, a pipe or CI the bar is silent and the library's log
lines say what happened. ``OV_AUTOPLACE_PROGRESS=0`` silences it, ``=1``
shows it even without a terminal.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Iterator, TextIO

#: Seconds of work before a bar appears: shorter calls stay quiet.
DELAY_S = 2.0
#: Seconds between redraws of the built-in bar (its elapsed time keeps moving between steps).
REFRESH_S = 1.0


def progress_wanted(stream: TextIO | None = None) -> bool:
    """Whether to draw: ``OV_AUTOPLACE_PROGRESS`` if set (0/1), else whether ``stream`` is a terminal."""
    setting = os.environ.get("OV_AUTOPLACE_PROGRESS", "").strip()
    if setting in ("0", "1"):
        return setting == "1"
    stream = stream if stream is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


class _SilentBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass


class LineBar:
    """A one-line bar on ``stream``: ``desc: 3/8 units [12 s] postfix``, redrawn in place by a daemon thread."""

    def __init__(self, total: int | None, desc: str, unit: str, stream: TextIO, *, delay: float = DELAY_S,
                 refresh: float = REFRESH_S):
        self.total, self.desc, self.unit, self.stream = total, desc, unit, stream
        self.n, self.postfix, self.delay = 0, "", delay
        self.start = time.monotonic()
        self.drawn = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, args=(refresh,), daemon=True, name="ov_autoplace-progress")
        self._thread.start()

    def line(self) -> str:
        count = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        elapsed = time.monotonic() - self.start
        return f"{self.desc}: {count} {self.unit}s [{elapsed:.0f} s]" + (f" {self.postfix}" if self.postfix else "")

    def _draw(self, final: bool = False) -> None:
        with self._lock:
            if not final and time.monotonic() - self.start < self.delay:
                return
            if final and not self.drawn:
                return  # ended before the delay: nothing was shown, nothing to clear
            text = self.line()
            self.stream.write("\r" + text.ljust(79) + ("\n" if final else ""))
            self.stream.flush()
            self.drawn = True

    def _tick(self, refresh: float) -> None:
        while not self._stop.wait(refresh):
            self._draw()

    def update(self, n: int = 1) -> None:
        self.n += n
        self._draw()

    def set_postfix_str(self, text: str) -> None:
        self.postfix = text

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._draw(final=True)


@contextlib.contextmanager
def progress_bar(total: int | None, desc: str, unit: str = "step") -> Iterator[object]:
    """A bar over ``total`` steps (None: unknown) on stderr, shown after DELAY_S on a terminal; else silent."""
    if not progress_wanted():
        yield _SilentBar()
        return
    try:
        from tqdm.auto import tqdm
    except ImportError:
        bar: object = LineBar(total, desc, unit, sys.stderr)
    else:
        bar = tqdm(total=total, desc=desc, unit=unit, leave=False, delay=DELAY_S, file=sys.stderr)
    try:
        yield bar
    finally:
        bar.close()  # type: ignore[attr-defined]


__all__ = ["DELAY_S", "LineBar", "progress_bar", "progress_wanted"]
