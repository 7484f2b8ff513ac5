"""compile_with_affinities: the shared compile step; a dynamic split HETERO cannot run is caught before it is returned."""

from __future__ import annotations

import logging

import pytest

import ov_autoplace as oa
from tests import synthetic_graphs as sg
from tests.placement.test_dynamic_model import _check_outputs


def test_split_hetero_cannot_run_dynamic_is_named_and_compile_model_falls_back(f32_testbed, caplog):
    """OpenVINO 2026.4's HETERO compiles this 20+-submodel dynamic split but its first inference fails.

    ``compile_placement`` says so (DynamicSplitError: the split, the devices, the runtime's reason);
    ``compile_model`` times the split against the plain call first; a kept split that cannot run falls back to a
    plain compile with that reason in the WARNING; outputs intact either way.
    """
    model = sg.dynamic_attention()
    placement = oa.place(model, f32_testbed.hetero, core=f32_testbed.core, strategy="random", seed=0,
                         max_submodels=None)
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
