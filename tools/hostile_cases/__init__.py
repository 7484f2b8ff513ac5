"""The hostile probe's cases (``tools/hostile_probe.py`` runs them): the case context and outcomes
(``context.py``), the registry (``registry.py``), hostile state (``state_cases.py``) and hostile calls
(``call_cases.py``), registered in that order."""

from tools.hostile_cases import call_cases, state_cases
from tools.hostile_cases.registry import CASES

state_cases.define()
call_cases.define()

__all__ = ["CASES"]
