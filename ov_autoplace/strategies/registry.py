"""The strategy registry: every placement strategy selectable by name, in one place.

The rest: docs/architecture.md, "Module notes", ov_autoplace/strategies/registry.py.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

from ov_autoplace.strategies.base import PlacementStrategy
# the light heuristics are imported up front, as api.py always did: compile_model's fast start uses
# "priority" and must not import anything during the call
from ov_autoplace.strategies.heavy_ops import HeavyOpsStrategy
from ov_autoplace.strategies.priority import DevicePriorityStrategy
from ov_autoplace.strategies.random_strategy import RandomStrategy


@dataclasses.dataclass(frozen=True)
class StrategyInfo:
    """One registered strategy: its CLI name, a one-line description and how to build it."""

    name: str
    summary: str
    make: Callable[[], PlacementStrategy]
    #: True when building a placement profiles the model on the devices (first time; cached after).
    needs_profile: bool = False
    #: The row of ``ov-autoplace bench`` that runs this strategy (None: bench has no such row).
    bench_method: str | None = None


def _measured_cost():
    from ov_autoplace.measuring.providers import MeasuredCostProvider

    return MeasuredCostProvider()


def _hsdag(refine: bool = False) -> PlacementStrategy:
    from ov_autoplace.policy.pretrained import PRETRAINED_POLICY
    from ov_autoplace.strategies.hsdag import HSDAGStrategy

    if not PRETRAINED_POLICY.is_file():
        from ov_autoplace.errors import PlacementError

        raise PlacementError(f"the pretrained policy {PRETRAINED_POLICY} is missing from this installation; "
                             "reinstall ov_autoplace")
    return HSDAGStrategy(PRETRAINED_POLICY, _measured_cost(), refine=refine)


def _hsdag_local_search() -> PlacementStrategy:
    return _hsdag(refine=True)


def _heavy_ops() -> PlacementStrategy:
    return HeavyOpsStrategy()


def _priority() -> PlacementStrategy:
    return DevicePriorityStrategy()


def _random() -> PlacementStrategy:
    return RandomStrategy()


def _heft() -> PlacementStrategy:
    from ov_autoplace.strategies.heft import HeftStrategy

    return HeftStrategy(_measured_cost())



def _best_single() -> PlacementStrategy:
    from ov_autoplace.strategies.best_single import BestSingleDeviceStrategy

    return BestSingleDeviceStrategy(_measured_cost())



_ENTRIES = (
    StrategyInfo("hsdag", "the shipped pretrained HSDAG policy (GCN + graph parsing pooling), one numpy forward pass "
                          "on a measured profile (the default)", _hsdag, True, "HSDAG (pretrained, one pass)"),
    StrategyInfo("hsdag_local_search", "the HSDAG policy's placement refined by the cost-model local search "
                                       "(search/local_search.py, <= 2 s)", _hsdag_local_search, True),
    StrategyInfo("heavy_ops", "FLOP-heavy ops (conv, matmul, ...) on the first device, the rest on the next",
                 _heavy_ops, False, "Heavy ops"),
    StrategyInfo("priority", "everything on the first listed device that supports it (HETERO's own rule)",
                 _priority),
    StrategyInfo("random", "a uniformly random device per node (islands merged to the submodel bound); for testing",
                 _random),
    StrategyInfo("heft", "HEFT list scheduling on the measured per-op cost model", _heft, True, "HEFT"),
    StrategyInfo("best_single", "the whole model on the device the cost model predicts fastest", _best_single, True),
)

#: The runtime's own strategies by name, in the order ``ov-autoplace strategies`` lists them.
REGISTRY: dict[str, StrategyInfo] = {entry.name: entry for entry in _ENTRIES}

#: Where other installed distributions add strategies: each entry point is a function returning a StrategyInfo
#: of the entry point's name. The lab (``ov-autoplace-lab``, ``lab/pyproject.toml``) adds its baselines there.
STRATEGY_ENTRY_POINTS = "ov_autoplace.strategies"
#: The lab's ``search_budget`` fine-tuner (one entry point, ``hsdag``).
SEARCH_BUDGET_ENTRY_POINTS = "ov_autoplace.search_budget"
#: The distribution to install for the lab's strategies, commands and ``search_budget``.
LAB_DISTRIBUTION = "ov-autoplace-lab"
#: The lab's strategy names, known here only so that asking for one without the lab says what to install.
LAB_STRATEGIES = ("critical_path", "optimum", "placeto", "rnn_placer", "hsdag_paper", "openvino_hetero_auto", "openvino_auto",
                  "openvino_pipeline_parallel")


def _entry_points(group: str) -> list:
    from importlib.metadata import entry_points

    return list(entry_points(group=group))


@functools.lru_cache(maxsize=1)
def plugin_strategies() -> dict[str, StrategyInfo]:
    """The strategies installed distributions register (entry-point group ``ov_autoplace.strategies``)."""
    found = {}
    for point in _entry_points(STRATEGY_ENTRY_POINTS):
        if point.name in REGISTRY:
            continue  # a plugin never shadows a runtime strategy
        info = point.load()()
        if not isinstance(info, StrategyInfo) or info.name != point.name:
            from ov_autoplace.errors import PlacementError

            raise PlacementError(f"the entry point {point.name} = {point.value} (group {STRATEGY_ENTRY_POINTS}) "
                                 f"returned {info!r}, expected a StrategyInfo named {point.name!r}; reinstall the "
                                 "distribution that provides it")
        found[point.name] = info
    return found


def lab_missing(what: str) -> str:
    """The one line that says ``what`` needs the lab and how to install it."""
    return f"{what} is part of the lab, which is not installed; install it with pip install {LAB_DISTRIBUTION}"


def strategy_names() -> list[str]:
    """The selectable names, in listing order: the runtime's, then those of installed distributions."""
    return list(REGISTRY) + [n for n in plugin_strategies() if n not in REGISTRY]


def strategy_info(name: str) -> StrategyInfo:
    """The entry for ``name``; raises PlacementError naming the valid choices (LabNotInstalledError for a lab
    strategy where the lab is not installed)."""
    key = str(getattr(name, "value", name))
    if key in REGISTRY:
        return REGISTRY[key]
    plugins = plugin_strategies()
    if key in plugins:
        return plugins[key]
    from ov_autoplace.errors import LabNotInstalledError, PlacementError

    if key in LAB_STRATEGIES:
        raise LabNotInstalledError(lab_missing(f"the strategy {key!r}"))
    raise PlacementError(f"unknown strategy {name!r}; expected one of {strategy_names()} "
                         "(`ov-autoplace strategies` lists them) or a PlacementStrategy instance")


def search_budget_factory() -> Callable:
    """The lab's ``search_budget`` fine-tuner; LabNotInstalledError where the lab is not installed."""
    for point in _entry_points(SEARCH_BUDGET_ENTRY_POINTS):
        if point.name == "hsdag":
            return point.load()
    from ov_autoplace.errors import LabNotInstalledError

    raise LabNotInstalledError(lab_missing("search_budget (fine-tuning the policy on the real devices)"))


def make_strategy(name: str) -> PlacementStrategy:
    """A new instance of the registered strategy ``name``."""
    return strategy_info(name).make()


def strategy_listing() -> str:
    """One line per strategy, for ``ov-autoplace strategies``."""
    entries = (*_ENTRIES, *(plugin_strategies()[n] for n in strategy_names() if n not in REGISTRY))
    width = max(len(entry.name) for entry in entries)
    lines = []
    for entry in entries:
        tag = " [profiles the model]" if entry.needs_profile else ""
        lines.append(f"{entry.name:<{width}}  {entry.summary}{tag}")
    return "\n".join(lines)


__all__ = ["LAB_DISTRIBUTION", "LAB_STRATEGIES", "REGISTRY", "StrategyInfo", "lab_missing", "plugin_strategies",
           "search_budget_factory", "make_strategy", "strategy_info", "strategy_listing", "strategy_names"]
