"""The probe's cases by name, in the order they are defined, each with the outcomes it accepts."""

from __future__ import annotations

import dataclasses
from typing import Callable

from tools.hostile_cases.context import FINE, Ctx


@dataclasses.dataclass(frozen=True)
class Case:
    """One probe case: its name, its family (a row group of the table), what it runs, the outcomes it accepts."""
    name: str
    family: str
    fn: Callable[[Ctx], None]
    expect: frozenset


CASES: dict[str, Case] = {}


def case(name: str, family: str, expect=FINE):
    def register(fn):
        CASES[name] = Case(name, family, fn, frozenset(expect))
        return fn
    return register
