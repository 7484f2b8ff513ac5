"""progress_bar: a bar on a terminal on every install (tqdm or the built-in line), silent otherwise."""

from __future__ import annotations

import io
import sys
import time

import pytest

from ov_autoplace.progress import LineBar, progress_bar, progress_wanted


def test_line_bar_redraws_in_place_and_ends_the_line():
    out = io.StringIO()
    bar = LineBar(3, "profiling 12 nodes", "device", out, delay=0.0, refresh=0.05)
    bar.update()
    bar.set_postfix_str("CPU")
    time.sleep(0.15)  # the ticker redraws between steps: the elapsed time keeps moving
    bar.update(2)
    bar.close()
    text = out.getvalue()
    assert text.startswith("\rprofiling 12 nodes: 1/3 devices [0 s]") and text.endswith("\n")
    assert "3/3 devices" in text and text.count("\r") >= 3 and "CPU" in text


def test_work_shorter_than_the_delay_prints_nothing():
    out = io.StringIO()
    bar = LineBar(None, "search", "placement", out, delay=60.0, refresh=0.01)
    bar.update()
    time.sleep(0.05)
    bar.close()
    assert out.getvalue() == ""


def test_silent_without_a_terminal_and_the_environment_overrides(monkeypatch):
    monkeypatch.delenv("OV_AUTOPLACE_PROGRESS", raising=False)
    assert not progress_wanted(io.StringIO())  # a pipe, a log file, CI
    with progress_bar(2, "x") as bar:
        assert type(bar).__name__ == "_SilentBar"  # pytest's captured stderr is no terminal
    monkeypatch.setenv("OV_AUTOPLACE_PROGRESS", "1")
    assert progress_wanted(io.StringIO())
    monkeypatch.setenv("OV_AUTOPLACE_PROGRESS", "0")
    assert not progress_wanted(sys.__stderr__)


def test_without_tqdm_the_builtin_bar_is_used(monkeypatch, capsys):
    """A runtime install (openvino and numpy only) still shows progress."""
    monkeypatch.setenv("OV_AUTOPLACE_PROGRESS", "1")
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with progress_bar(2, "measured search", unit="placement") as bar:
        assert isinstance(bar, LineBar)
        bar.delay = 0.0
        bar.update(2)
    assert "measured search: 2/2 placements" in capsys.readouterr().err


@pytest.mark.parametrize("total", [None, 4])
def test_with_tqdm_the_bar_is_tqdms(monkeypatch, total):
    tqdm = pytest.importorskip("tqdm")
    monkeypatch.setenv("OV_AUTOPLACE_PROGRESS", "1")
    with progress_bar(total, "profiling", unit="device") as bar:
        assert isinstance(bar, tqdm.tqdm)
        bar.update()
