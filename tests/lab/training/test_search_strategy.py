"""compile_model's default (the shipped HSDAG policy) and ``search_budget`` (measured fine-tuning + guard)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import openvino as ov
import pytest

import ov_autoplace
from ov_autoplace.errors import PlacementError
from ov_autoplace_lab.training.search_strategy import check_search_budget
from tests import synthetic_graphs
from ov_autoplace.api import DEFAULT_STRATEGY

REPO = Path(__file__).resolve().parents[3]

#: compile_model with the default strategy in a process where `import torch` fails.
NO_TORCH = """
import logging, sys
sys.modules["torch"] = None  # any import of torch now raises ImportError
logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s", stream=sys.stdout)
import numpy as np, openvino as ov
import ov_autoplace
from ov_autoplace.api import DEFAULT_STRATEGY
from ov_autoplace.devices.testbed import make_testbed
from tests import synthetic_graphs
assert DEFAULT_STRATEGY == ov_autoplace.StrategyName.HSDAG
tb = make_testbed()
model = synthetic_graphs.residual()
compiled = ov_autoplace.compile_model(model, tb.hetero, core=tb.core)  # default: prior/cache, no profile
assert isinstance(compiled, ov.CompiledModel)
compiled = ov_autoplace.compile_model(model, tb.hetero, core=tb.core, strategy="hsdag")  # the policy, profiled
assert isinstance(compiled, ov.CompiledModel)
x = np.random.default_rng(0).standard_normal(tuple(model.inputs[0].shape)).astype(np.float32)
out = compiled({0: x})[0]
assert np.isfinite(out).all()
try:
    ov_autoplace.compile_model(model, tb.hetero, core=tb.core, search_budget=3)
except ov_autoplace.PlacementError as exc:
    print("search refused:", exc)
print("torch imported:", sys.modules.get("torch") is not None)
"""


def test_default_strategy_is_the_policy_and_needs_no_torch(tmp_path):
    env = dict(os.environ, OV_AUTOPLACE_CACHE_DIR=str(tmp_path / "cache"),
               OV_AUTOPLACE_PROFILE_DIR=str(tmp_path / "profiles"))
    run = subprocess.run([sys.executable, "-c", NO_TORCH], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "placement source: " in run.stdout  # the default path decided, no fallback
    assert "placed" in run.stdout and "with hsdag" in run.stdout  # the policy placed it, no fallback
    assert "falling back" not in run.stdout + run.stderr
    assert "search refused:" in run.stdout and "ov-autoplace-lab[train]" in run.stdout
    assert "torch imported: False" in run.stdout


@pytest.mark.parametrize("budget", [0, -3, True, 2.0 * float("inf"), float("nan"), -1.5, "10", [5]])
def test_bad_budgets_are_rejected(budget):
    with pytest.raises(ValueError, match="search_budget must be"):
        check_search_budget(budget)


def test_bad_budget_fails_before_any_compile(testbed):
    with pytest.raises(PlacementError, match="search_budget must be an int >= 1"):
        ov_autoplace.compile_model(synthetic_graphs.branching(), testbed.hetero, core=testbed.core, search_budget=0)
    with pytest.raises(PlacementError, match="cannot be combined with strategy='priority'"):
        ov_autoplace.place(synthetic_graphs.branching(), testbed.hetero, core=testbed.core, strategy="priority",
                           search_budget=5)


pytest.importorskip("torch")


def test_search_never_loses_to_a_single_device_measured_in_the_same_run(testbed):
    placement = ov_autoplace.place(synthetic_graphs.residual(), testbed.hetero, core=testbed.core, search_budget=5)
    assert placement.strategy == "hsdag+search"
    assert set(placement.reference_latency_ms) == {"CPU", "CPUF"}
    assert placement.measured_latency_ms <= min(placement.reference_latency_ms.values())
    note = next(n for n in placement.notes if n.startswith("search:"))
    evaluated = int(note.split()[1])
    assert 1 <= evaluated <= 5


def test_a_seconds_budget_stops(testbed):
    placement = ov_autoplace.place(synthetic_graphs.branching(), testbed.hetero, core=testbed.core,
                                   search_budget=0.5)
    assert placement.strategy == "hsdag+search" and placement.measured_latency_ms is not None
    assert "budget 0.5" in " ".join(placement.notes)


def test_searched_placement_compiles_and_is_cached(testbed, tmp_path, caplog):
    model = synthetic_graphs.attention_like()
    kwargs = dict(core=testbed.core, cache_dir=tmp_path, search_budget=3)
    compiled = ov_autoplace.compile_model(model, testbed.hetero, **kwargs)
    assert isinstance(compiled, ov.CompiledModel)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        again = ov_autoplace.compile_model(model, testbed.hetero, **kwargs)
    assert "placement cache hit (hsdag+search)" in caplog.text
    assert "search: best of" not in caplog.text  # nothing measured the second time
    x = np.random.default_rng(1).standard_normal(tuple(model.inputs[0].shape)).astype(np.float32)
    assert np.isfinite(again({0: x})[0]).all()
    # another budget is another search, not the cached one
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        ov_autoplace.compile_model(model, testbed.hetero, **dict(kwargs, search_budget=2))
    assert "placement cache hit" not in caplog.text


def test_a_decoder_is_searched_on_its_generation_not_its_prefill(distinct_testbed, caplog):
    """search_budget on a stateful decoder: every placement (the single devices the guard compares with included)
    is compiled on the dynamic model and timed on whole generations, as the verification then judges it; a
    generation of 32 + 16 tokens is the prefill and 15 decode steps, several times the prefill alone."""
    from ov_autoplace.devices.timing import measure_latency
    from ov_autoplace.model.shapes import default_static_clone

    core, hetero = distinct_testbed.core, distinct_testbed.hetero
    model = synthetic_graphs.llm_like(layers=2, hidden=16, positions=None)
    with caplog.at_level(logging.INFO):
        placement = ov_autoplace.place(model, hetero, core=core, search_budget=2, generation=(32, 16))
    assert placement.strategy == "hsdag+search" and set(placement.reference_latency_ms) == set(distinct_testbed.devices)
    _, prefill_clone = default_static_clone(model, 32)
    for device, generation_ms in placement.reference_latency_ms.items():
        prefill_ms = measure_latency(core.compile_model(prefill_clone, device), warmup=2, iterations=10).median_ms
        assert generation_ms > 3 * prefill_ms, (device, generation_ms, prefill_ms)
