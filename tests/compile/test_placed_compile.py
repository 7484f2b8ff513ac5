"""compile_with_affinities: the shared compile step; a dynamic split HETERO cannot run is caught before it is returned."""

from __future__ import annotations

import json
import logging

import pytest

import ov_autoplace as oa
from ov_autoplace.compile.placed_compile import say_hetero_count
from tests import synthetic_graphs as sg
from tests.placement.test_dynamic_model import _check_outputs


def _random_split(testbed):
    """``dynamic_attention`` and a random split of it, placed (and legalised) on its static clone. One model for
    both: its unnamed nodes are named anew by every build."""
    model = sg.dynamic_attention()
    return model, oa.place(model, testbed.hetero, core=testbed.core, strategy="random", seed=0, max_submodels=None)


def test_a_random_dynamic_split_that_reads_shape_values_across_its_parts_runs(f32_testbed):
    """Legalised on the clone alone, HETERO compiled this split dynamic and its first inference failed (a shape
    value read in two submodels of one device, ``stateful.keep_shape_values_whole``); judged on the dynamic graph
    it runs as the plain compile."""
    model, placement = _random_split(f32_testbed)
    assert any("shape value" in note for note in placement.notes) and min(placement.counts_per_device().values())
    _check_outputs(oa.compile_placement(model, placement, core=f32_testbed.core),
                   f32_testbed.core.compile_model(model, "CPU"))


def test_split_hetero_cannot_run_dynamic_is_named_and_compile_model_falls_back(f32_testbed, caplog, monkeypatch):
    """A dynamic split HETERO compiles and cannot run, as the one above was before its rule: without the rule the
    legalizer keeps it (the stand-in for a rule the legalizer does not know yet).

    ``compile_placement`` says so (DynamicSplitError: the split, the devices, the runtime's reason);
    ``compile_model`` times the split against the plain call first; a kept split that cannot run falls back to a
    plain compile with that reason in the WARNING; outputs intact either way.
    """
    from ov_autoplace.placement import legalizer

    monkeypatch.setattr(legalizer, "keep_shape_values_whole", lambda *args: 0)
    model, placement = _random_split(f32_testbed)
    assert placement.num_submodels > 20
    with pytest.raises(oa.DynamicSplitError, match=r"cannot run it with dynamic shapes: .*Can't set the input tensor"):
        oa.compile_placement(model, placement, core=f32_testbed.core)
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, f32_testbed.hetero, core=f32_testbed.core, strategy="random", seed=0,
                                    max_submodels=None, use_cache=False)
    # the random split is timed against the plain call first (identical f32 devices: it cannot win); should it
    # be kept, its dynamic compile fails and the WARNING names the reason
    assert "verification (" in caplog.text
    if "-> candidate" in caplog.text:
        assert "DynamicSplitError" in caplog.text and "falling back to plain compile_model" in caplog.text
    _check_outputs(compiled, f32_testbed.core.compile_model(model, "CPU"))


def test_a_split_hetero_compiles_into_another_count_than_its_placement_says_is_said_at_info(f32_testbed, caplog,
                                                                                             tmp_path):
    """``x`` is read by ``a``, pinned to CPUF, and by ``b`` on the CPU; both lead to the sum on the CPU. With ``x``
    on the CPU, ``a`` would return into its part (three parts); applied, ``x`` goes to CPUF, where nothing comes
    back (``submodels.move_parameters_to_fewest_parts``), and HETERO compiles two, which is what the placement
    counts: nothing is said. Every compile recounts a placement it is given (``ensure_legal``), so what the INFO
    guards is a count the legalizer gets wrong; the placement saved with the three parts an earlier legalizer
    counted before that move stands in for one: said, with both counts. A split counted right says nothing."""
    import numpy as np
    import openvino as ov
    from openvino import opset13 as ops

    x = ops.parameter([1, 4], np.float32, name="x")
    a, b = ops.relu(x), ops.tanh(x)
    a.set_friendly_name("a")
    model = ov.Model([ops.add(a, b)], [x])
    placement = oa.place(model, f32_testbed.hetero, core=f32_testbed.core, pins={"a": "CPUF"}, strategy="priority",
                         max_submodels=None)
    assert placement.device_of("x") == "CPU" and placement.num_submodels == 2
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_placement(model, placement, core=f32_testbed.core)
    assert int(compiled.get_property("HETERO_NUMBER_OF_SUBMODELS")) == 2
    assert "HETERO compiled" not in caplog.text
    caplog.clear()
    (tmp_path / "older.json").write_text(json.dumps({**placement.to_dict(), "num_submodels": 3}))
    older = oa.Placement.load(tmp_path / "older.json")
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        say_hetero_count(compiled, older)
    assert "HETERO compiled 2 submodel(s) where the placement counts 3" in caplog.text
    caplog.clear()
    residual = sg.residual()
    split = oa.place(residual, f32_testbed.hetero, core=f32_testbed.core, pins={"type:Convolution": "CPUF"},
                     strategy="priority")
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_placement(residual, split, core=f32_testbed.core)
    assert int(compiled.get_property("HETERO_NUMBER_OF_SUBMODELS")) == split.num_submodels > 1
    assert "HETERO compiled" not in caplog.text
