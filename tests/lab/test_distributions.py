"""The lab's distribution (lab/pyproject.toml) ships every package it has and registers what the runtime reads."""

from __future__ import annotations

import tomllib
from importlib.metadata import entry_points
from pathlib import Path

from ov_autoplace.cli.main import COMMAND_ENTRY_POINTS, LAB_COMMANDS
from ov_autoplace.strategies.registry import LAB_STRATEGIES, SEARCH_BUDGET_ENTRY_POINTS, STRATEGY_ENTRY_POINTS, \
    StrategyInfo

REPO = Path(__file__).resolve().parents[2]
LAB = tomllib.loads((REPO / "lab" / "pyproject.toml").read_text())


def _package_dirs(root: Path, name: str) -> set[str]:
    return {".".join([name, *p.parent.relative_to(root).parts]) for p in root.rglob("__init__.py")}


def test_the_package_list_covers_every_package_directory():
    """Packages are listed, not found (models/ lives outside lab/): a new subpackage must be added there."""
    listed = set(LAB["tool"]["setuptools"]["packages"])
    on_disk = _package_dirs(REPO / "lab" / "ov_autoplace_lab", "ov_autoplace_lab") | \
        _package_dirs(REPO / "models", "ov_autoplace_lab.models")
    assert listed == on_disk
    assert LAB["tool"]["setuptools"]["package-dir"]["ov_autoplace_lab.models"] == "../models"


def test_the_lab_registers_what_the_runtime_names():
    groups = LAB["project"]["entry-points"]
    assert set(groups[STRATEGY_ENTRY_POINTS]) == set(LAB_STRATEGIES)
    assert set(groups[COMMAND_ENTRY_POINTS]) == set(LAB_COMMANDS)
    assert set(groups[SEARCH_BUDGET_ENTRY_POINTS]) == {"hsdag"}


def test_the_installed_entry_points_load():
    strategies = {p.name: p.load()() for p in entry_points(group=STRATEGY_ENTRY_POINTS)}
    assert set(LAB_STRATEGIES) <= set(strategies)
    assert all(isinstance(info, StrategyInfo) and info.name == name for name, info in strategies.items())
    assert all(callable(p.load()) for p in entry_points(group=COMMAND_ENTRY_POINTS))


def test_the_runtime_wheel_holds_only_the_runtime_package():
    runtime = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert runtime["tool"]["scikit-build"]["wheel"]["packages"] == ["ov_autoplace"]
    assert LAB["project"]["dependencies"][0] == f"ov_autoplace=={runtime['project']['version']}"
