"""Reading JSON files so that every way they can be damaged becomes one typed error.

A JSON file can be missing, a directory, empty, truncated, not UTF-8, nested
deeper than the parser's recursion limit, or valid JSON of the wrong shape;
Python reports these as seven different exception types (FileNotFoundError,
IsADirectoryError, JSONDecodeError, UnicodeDecodeError, RecursionError,
KeyError/TypeError/AttributeError from the parser of the contents). Callers
that load user files get :class:`~ov_autoplace.errors.FileFormatError` (or
FileNotFoundError for a missing file) naming the file, what it should be and
what went wrong.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, TypeVar

from .errors import FileFormatError

T = TypeVar("T")

#: What reading or parsing a damaged file raises (JSONDecodeError and UnicodeDecodeError are ValueErrors).
DAMAGED_FILE_ERRORS = (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError)


def read_json_file(path: str | Path, what: str, parse: Callable[[Any], T]) -> T:
    """``parse(json of path)``; FileNotFoundError if missing, FileFormatError for any other damage."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no {what} file at {path}")
    try:
        data = json.loads(path.read_text())
    except DAMAGED_FILE_ERRORS as exc:
        raise FileFormatError(f"{path} is not a readable {what} file: {_reason(exc)}; expected the JSON that "
                              f"ov_autoplace writes for a {what}") from exc
    if not isinstance(data, dict):
        raise FileFormatError(f"{path} holds a JSON {type(data).__name__}, expected the JSON object of a {what}")
    try:
        return parse(data)
    except DAMAGED_FILE_ERRORS as exc:
        raise FileFormatError(f"{path} is not a valid {what} file: {_reason(exc)}") from exc


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply"
    if isinstance(exc, IsADirectoryError):
        return "it is a directory"
    text = str(exc)
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


__all__ = ["DAMAGED_FILE_ERRORS", "read_json_file"]
