"""The lab's placement strategies, registered with the runtime through the entry-point group
``ov_autoplace.strategies`` (``lab/pyproject.toml``), and the ``search_budget`` fine-tuner (group
``ov_autoplace.search_budget``).

Each entry point is a function returning a :class:`~ov_autoplace.strategies.registry.StrategyInfo`; the
runtime calls it when a strategy name is looked up, so this module stays light (torch is imported only when a
strategy is built). The learned baselines run as budgeted searches on the real devices
(:class:`~ov_autoplace_lab.baselines.search.LearnedSearchStrategy` over a measured environment).
"""

from __future__ import annotations

from ov_autoplace.strategies.registry import StrategyInfo

#: Distinct legal placements a learned search compiles and times when selected by name (as ``bench --quick``).
NAMED_SEARCH_BUDGET = 20


def _measured_search(make_search):
    from ov_autoplace.measuring.providers import MeasuredCostProvider
    from ov_autoplace.strategies.cost_based import resolve_cost
    from ov_autoplace_lab.baselines.search import LearnedSearchStrategy
    from ov_autoplace_lab.training.env import MeasuredEnv

    provider = MeasuredCostProvider()

    def make_env(context):
        return MeasuredEnv(context.model, context.core, context.devices, cost=resolve_cost(provider, context))

    return LearnedSearchStrategy(make_search(), make_env, budget_samples=NAMED_SEARCH_BUDGET)


def _placeto():
    from ov_autoplace_lab.baselines.placeto import PlacetoSearch

    return _measured_search(PlacetoSearch)


def _rnn_placer():
    from ov_autoplace_lab.baselines.rnn_placer import RNNPlacerSearch

    return _measured_search(RNNPlacerSearch)


def _hsdag_paper():
    from ov_autoplace_lab.baselines.hsdag_search import HSDAGPaperSearch

    return _measured_search(HSDAGPaperSearch)


def _optimum():
    from ov_autoplace.measuring.providers import MeasuredCostProvider
    from ov_autoplace_lab.optimum.strategy import OptimumStrategy

    return OptimumStrategy(MeasuredCostProvider())


def _openvino_mode(name: str):
    from ov_autoplace_lab.baselines import openvino_modes

    def make():
        if name == "openvino_pipeline_parallel":
            from ov_autoplace.measuring.providers import MeasuredCostProvider

            return openvino_modes.OpenVINOPipelineParallelStrategy(MeasuredCostProvider())
        return {"openvino_hetero_auto": openvino_modes.OpenVINOHeteroAutoStrategy,
                "openvino_auto": openvino_modes.OpenVINOAutoStrategy}[name]()

    return make


def _critical_path():
    from ov_autoplace.measuring.providers import MeasuredCostProvider
    from ov_autoplace_lab.baselines.critical_path import CriticalPathGreedyStrategy

    return CriticalPathGreedyStrategy(MeasuredCostProvider())


def critical_path() -> StrategyInfo:
    return StrategyInfo("critical_path", "ops on the critical path first, each to its cheapest device by the cost "
                                         "model (lab baseline)", _critical_path, True, "Critical path")


def openvino_hetero_auto() -> StrategyInfo:
    return StrategyInfo("openvino_hetero_auto", "OpenVINO HETERO without affinities, core.query_model's greedy split "
                                                "(lab baseline)", _openvino_mode("openvino_hetero_auto"), False,
                        "OpenVINO HETERO auto")


def openvino_auto() -> StrategyInfo:
    return StrategyInfo("openvino_auto", "OpenVINO AUTO: the whole model on the one device AUTO selects (lab baseline)",
                        _openvino_mode("openvino_auto"), False, "OpenVINO AUTO")


def openvino_pipeline_parallel() -> StrategyInfo:
    return StrategyInfo("openvino_pipeline_parallel", "OpenVINO HETERO MODEL_DISTRIBUTION_POLICY=PIPELINE_PARALLEL, "
                                                      "in contiguous stages by device memory (lab baseline)",
                        _openvino_mode("openvino_pipeline_parallel"), True, "OpenVINO PIPELINE_PARALLEL")


def optimum() -> StrategyInfo:
    return StrategyInfo("optimum", "the exact optimum under the measured cost model, min cut or MILP in 10 s (lab, "
                                   "scipy)", _optimum, True, "Optimum (MILP)")


def placeto() -> StrategyInfo:
    return StrategyInfo("placeto", f"Placeto (Addanki et al. 2019) as a measured search of {NAMED_SEARCH_BUDGET} "
                                   "placements (lab, torch)", _placeto, True)


def rnn_placer() -> StrategyInfo:
    return StrategyInfo("rnn_placer", f"the RNN placer (Mirhoseini et al. 2017) as a measured search of "
                                      f"{NAMED_SEARCH_BUDGET} placements (lab, torch)", _rnn_placer, True)


def hsdag_paper() -> StrategyInfo:
    return StrategyInfo("hsdag_paper", f"HSDAG in the paper's mode (trained from scratch on this model), "
                                       f"{NAMED_SEARCH_BUDGET} measured placements (lab, torch)", _hsdag_paper, True)


def search_budget_strategy(policy_path, cost_provider, budget, *, max_submodels):
    """``compile_model(..., search_budget=...)``: the pretrained policy fine-tuned on the real devices."""
    from ov_autoplace_lab.training.search_strategy import HSDAGSearchStrategy

    return HSDAGSearchStrategy(policy_path, cost_provider, budget, max_submodels=max_submodels)


__all__ = ["critical_path", "hsdag_paper", "openvino_auto", "openvino_hetero_auto", "openvino_pipeline_parallel", "optimum",
           "placeto", "rnn_placer", "search_budget_strategy"]
