"""The lab's re-derivation of OpenVINO 2026.4's HETERO split (ov_autoplace_lab/hetero_collector.py) against HETERO's
own: the parts its ``OPENVINO_HETERO_VISUALIZE`` dump draws and its ``HETERO_NUMBER_OF_SUBMODELS``."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

import ov_autoplace as oa
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace_lab.hetero_collector import dumped_parts, hetero_parts, hetero_submodels, same_parts
from tests import synthetic_graphs as sg


@pytest.fixture
def dump(tmp_path, monkeypatch):
    """A working directory HETERO dumps its parts in, per compile."""
    monkeypatch.setenv("OPENVINO_HETERO_VISUALIZE", "1")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _hetero(core, model, dump) -> tuple[dict[str, int], int]:
    for old in dump.glob("*.dot"):
        old.unlink()
    compiled = core.compile_model(model, "HETERO:CPU,CPUF")
    return dumped_parts(dump), int(compiled.get_property("HETERO_NUMBER_OF_SUBMODELS"))


def test_a_single_reader_of_graph_inputs_stays_with_its_reader_and_the_cycle_is_cut_at_the_parameter(f32_testbed,
                                                                                                      dump):
    """``x`` on CPU feeds ``n2`` on CPU and ``n0`` on CPUF, whose result comes back to CPU's ``n1``; ``n3`` joins
    both. Before the 2026.4 exception the edge ``n2 -> n3`` was cut (``n2`` with ``x``); now ``n2``, the one reader
    of nothing but ``x``, stays with ``n3``, the cycle is left to the SCC step, which cuts ``x -> n2``: three
    submodels, one of them the Parameter alone."""
    x = ops.parameter([1, 4], np.float32, name="x")
    n2, n0 = ops.relu(x), ops.relu(x)
    n1 = ops.relu(n0)
    n3 = ops.add(n2, n1)
    for node, name in ((x, "x"), (n2, "n2"), (n0, "n0"), (n1, "n1"), (n3, "n3")):
        node.set_friendly_name(name)
    model = ov.Model([ops.result(n3)], [x], "reentered")
    for op in model.get_ops():
        op.get_rt_info()["affinity"] = "CPUF" if op.get_friendly_name() == "n0" else "CPU"
    parts = hetero_parts(model)
    assert parts["n2"] == parts["n1"] == parts["n3"] != parts["x"] and parts["n0"] not in (parts["x"], parts["n3"])
    assert hetero_submodels(model) == 3
    dumped, count = _hetero(f32_testbed.core, model, dump)
    assert same_parts(dumped, parts, ["n0", "n1", "n2", "n3"]) and count == 3


def test_random_dags_split_as_hetero_splits_them(f32_testbed, dump):
    """Seeded Relu / Add DAGs with random affinities: the same parts over the compute nodes and the same submodel
    count as HETERO's, in every one (the benchmark runs 600: docs/bench/hetero-collector.md)."""
    for seed in range(40):
        model = sg.random_elementwise_dag(seed, 4 + seed % 17)
        dumped, count = _hetero(f32_testbed.core, model, dump)
        names = [name for name in dumped if name.startswith("n")]
        assert same_parts(dumped, hetero_parts(model), names), seed
        assert hetero_submodels(model) == count, seed


def test_the_attention_with_its_softmaxes_elsewhere_is_cut_as_finely_as_hetero_cuts_it(f32_testbed, dump):
    """Two layers, their softmaxes pinned to CPUF: HETERO compiles 10 submodels (the runtime's mirror counts 5:
    docs/architecture.md, "Submodels"), and the re-derivation finds those 10 parts."""
    model = sg.attention_like(layers=2)
    placement = oa.place(model, f32_testbed.hetero, core=f32_testbed.core, pins={"type:Softmax": "CPUF"},
                         strategy="priority", max_submodels=None)
    prepared = prepare_model(model)
    placement.apply(prepared)
    dumped, count = _hetero(f32_testbed.core, prepared, dump)
    assert count == hetero_submodels(prepared) == 10
    assert same_parts(dumped, hetero_parts(prepared), list(dumped))
