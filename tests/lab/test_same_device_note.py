"""The testbed says when CPU and CPUF are one device, and the simulated headroom is labelled simulated."""

from __future__ import annotations

import pytest

from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.devices.testbed import cpu_supports_bf16
from ov_autoplace_lab.same_device_note import SAME_DEVICE_NOTE, same_device_note, simulated_headroom_lines
from tests import synthetic_graphs as sg


def test_the_note_appears_exactly_when_the_cpu_has_no_bf16():
    note = same_device_note("HETERO:CPU,CPUF")
    assert (note == SAME_DEVICE_NOTE) == (not cpu_supports_bf16())
    assert same_device_note("HETERO:GPU,CPU") is None
    assert same_device_note("not a device string ,,") is None


def test_simulated_headroom_lines_are_labelled():
    pytest.importorskip("scipy")
    graph = extract_graph(prepare_model(sg.residual(blocks=2)))
    lines = simulated_headroom_lines("residual", graph, platforms=("cpu_igpu", "npu_cpu"), milp_seconds=2.0)
    assert "SIMULATED" in lines[0] and len(lines) == 3
    assert lines[1].lstrip().startswith("cpu_igpu") and "HSDAG one pass" in lines[1]
