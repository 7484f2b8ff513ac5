"""`bench --strategies`: the rows come from the strategy registry; unknown or unbenched names fail clearly."""

from __future__ import annotations

import pytest

from ov_autoplace_lab.paper_bench.runner import BenchConfig, _methods
from ov_autoplace.cli.main import main
from ov_autoplace.strategies.registry import strategy_info, strategy_names


def test_registry_names_select_their_bench_rows():
    config = BenchConfig(strategies=("heft", "openvino_hetero_auto"))
    names = [m.name for m in _methods(config, ("CPU", "CPUF"))]
    assert names == ["CPU only", "CPUF only", "OpenVINO HETERO auto", "HEFT"]
    every = [m.name for m in _methods(BenchConfig(), ("CPU", "CPUF"))]
    # the runtime's strategies and the lab's (OpenVINO's own modes, the optimum) each have their row
    assert {strategy_info(n).bench_method for n in strategy_names() if strategy_info(n).bench_method} <= set(every)


def test_a_strategy_without_a_bench_row_is_refused():
    with pytest.raises(ValueError, match=r"strategies \['random'\] have no row in the benchmark; expected some of"):
        BenchConfig(strategies=("random",))


def test_bench_command_reports_the_bad_name(capsys):
    assert main(["bench", "--strategies", "heft,nonsense", "--settings", "paper"]) == 2
    assert "['nonsense'] have no row in the benchmark" in capsys.readouterr().err
