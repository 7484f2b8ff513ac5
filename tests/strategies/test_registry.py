"""One registry for every strategy: the API enum, the CLI choices and `ov-autoplace strategies` all read it."""

from __future__ import annotations

import pytest

import ov_autoplace
from ov_autoplace.cli.main import build_parser, main
from ov_autoplace.errors import PlacementError
from ov_autoplace.strategies.base import PlacementStrategy
from ov_autoplace.strategies.registry import REGISTRY, make_strategy, strategy_names
from ov_autoplace.api import DEFAULT_STRATEGY


def test_every_strategy_in_the_package_is_registered():
    expected = {"hsdag", "heavy_ops", "priority", "random", "heft", "critical_path", "optimum", "best_single",
                "openvino_hetero_auto", "openvino_auto", "openvino_pipeline_parallel"}
    assert expected <= set(strategy_names())
    # StrategyName is the runtime's own; the lab's strategies follow them where the lab is installed
    assert [s.value for s in ov_autoplace.StrategyName] == list(REGISTRY) == strategy_names()[:len(REGISTRY)]
    assert ov_autoplace.StrategyName.HSDAG.value == "hsdag" and DEFAULT_STRATEGY.value == "hsdag"


@pytest.mark.parametrize("name", list(REGISTRY))
def test_each_name_builds_its_strategy(name):
    strategy = make_strategy(name)
    assert isinstance(strategy, PlacementStrategy)
    assert REGISTRY[name].summary and "\n" not in REGISTRY[name].summary


def test_unknown_name_lists_the_registered_ones():
    with pytest.raises(PlacementError, match=r"unknown strategy 'fastest'.*'heft'.*ov-autoplace strategies"):
        make_strategy("fastest")


@pytest.mark.parametrize("command", ["place", "show"])
def test_cli_strategy_choices_come_from_the_registry(command):
    action = next(a for a in build_parser()._subparsers._group_actions[0].choices[command]._actions
                  if a.dest == "strategy")
    assert list(action.choices) == strategy_names()


def test_strategies_command_prints_one_line_each(capsys):
    assert main(["strategies"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(strategy_names())
    assert [line.split()[0] for line in lines] == strategy_names()


@pytest.mark.parametrize("name", ["heavy_ops", "priority", "random", "heft", "critical_path", "best_single", "hsdag_local_search",
                                  "openvino_hetero_auto", "openvino_auto", "openvino_pipeline_parallel", "optimum"])
def test_place_accepts_every_registered_name(name, f32_testbed):
    from tests import synthetic_graphs as sg

    placement = ov_autoplace.place(sg.residual(blocks=2), f32_testbed.hetero, core=f32_testbed.core, strategy=name)
    assert set(placement.assignment.values()) <= set(placement.devices)
    assert sum(placement.counts_per_device().values()) == len(placement.compute_nodes)


@pytest.fixture()
def runtime_only(monkeypatch):
    """What the registry sees where only the runtime is installed: no distribution registers anything."""
    from ov_autoplace.strategies import registry

    monkeypatch.setattr(registry, "_entry_points", lambda group: [])
    registry.plugin_strategies.cache_clear()
    yield registry
    registry.plugin_strategies.cache_clear()


@pytest.mark.parametrize("name", ["placeto", "rnn_placer", "hsdag_paper"])
def test_a_lab_strategy_without_the_lab_is_one_typed_error_naming_the_install(runtime_only, name):
    from ov_autoplace.errors import LabNotInstalledError

    with pytest.raises(LabNotInstalledError, match=rf"'{name}' is part of the lab.*pip install ov-autoplace-lab$"):
        make_strategy(name)
    assert runtime_only.strategy_names() == list(REGISTRY)


def test_search_budget_without_the_lab_is_one_typed_error(runtime_only):
    from ov_autoplace.errors import LabNotInstalledError

    with pytest.raises(LabNotInstalledError, match="search_budget .* pip install ov-autoplace-lab"):
        runtime_only.search_budget_factory()


def test_the_installed_lab_registers_its_strategies():
    """In the development setup both distributions are installed: the lab's names are selectable."""
    from ov_autoplace.strategies.registry import LAB_STRATEGIES, plugin_strategies, strategy_info

    assert set(LAB_STRATEGIES) <= set(plugin_strategies()) and set(LAB_STRATEGIES) <= set(strategy_names())
    assert all("(lab" in strategy_info(n).summary for n in LAB_STRATEGIES)
    # the measured ones say so; OpenVINO's HETERO auto and AUTO read OpenVINO itself
    assert {n for n in LAB_STRATEGIES if not strategy_info(n).needs_profile} == {"openvino_hetero_auto", "openvino_auto"}
