"""``submodels._hetero_split`` (in C++, ``_native.hetero_split``: the rounds, incremental, then the cycles their
exception leaves cut node by node) gives exactly the parts of the lab's re-derivation of OpenVINO 2026.4's HETERO split
(``ov_autoplace_lab.hetero_collector``: written apart from it, on an ``ov.Model``, and held to HETERO's own dump by
tests/lab/test_hetero_collector.py): the reference."""

from __future__ import annotations

import numpy as np
import pytest
from openvino import opset13 as ops

from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.placement import submodels
from ov_autoplace.placement.submodels import _hetero_split
from ov_autoplace_lab.hetero_collector import hetero_parts, same_parts
from ov_autoplace_lab.training.graph_family import build, family


def _matches_the_lab(model, graph, dev: list[int]) -> bool:
    """Whether the mirror's parts of ``dev`` (per node of ``graph``, extracted from ``model``) are the lab's on the
    model as ``Placement.apply`` leaves it: a Constant read on other devices copied once for each."""
    split = _hetero_split(graph, dev)
    at = {name: i for i, name in enumerate(graph.names)}
    model = model.clone()
    for op in model.get_ops():
        op.get_rt_info()["affinity"] = f"D{dev[at[op.get_friendly_name()]]}"
    for op in model.get_ops():
        copies = {}
        for reader in op.output(0).get_target_inputs() if op.get_type_name() == "Constant" else ():
            where = reader.get_node().get_rt_info()["affinity"].astype(str)
            if where != f"D{dev[at[op.get_friendly_name()]]}":
                if where not in copies:
                    copies[where] = ops.constant(op.get_data().copy())
                    copies[where].get_rt_info()["affinity"] = where
                reader.replace_source_output(copies[where].output(0))
    lab = hetero_parts(model)  # a Constant read only on other devices is gone from it, its copies read instead
    return same_parts({name: split[i] for name, i in at.items()}, lab, [n for n in graph.names if n in lab])


def _proposals(n: int, rng: np.random.Generator):
    """Random per node, alternating blocks, and a few nodes moved off the first device, on 2 or 3 devices."""
    for trial in range(6):
        num_devices = 2 + trial % 2
        if trial < 2:
            yield rng.integers(0, num_devices, n)
        elif trial < 4:
            yield (np.arange(n) // int(rng.integers(2, 40))) % num_devices
        else:
            dev = np.zeros(n, np.int64)
            moved = rng.random(n) < 0.1
            dev[moved] = rng.integers(1, num_devices, int(moved.sum()))
            yield dev


GRAPHS = [(name, make) for name, make in family("train", 6)] + [
    (f"{kind}_1", lambda kind=kind: build(1, kind)) for kind in ("detection", "multibranch", "state_space")]


@pytest.mark.parametrize("name,make", GRAPHS, ids=[name for name, _ in GRAPHS])
def test_the_split_matches_the_lab_collector(name, make):
    model = prepare_model(make())
    graph = extract_graph(model)
    rng = np.random.default_rng(22)
    for dev in _proposals(graph.num_nodes, rng):
        assert _matches_the_lab(model, graph, dev.tolist()), name


def test_the_gru_split_is_the_lab_collectors_and_found_in_cpp_alone(monkeypatch):
    """The 1,737-node GRU in 4-node blocks on two devices (dozens of rounds, hundreds of cycle cuts): the parts of the
    uncut edges are found in C++ with the rest (once, then kept up to date part by part), not by numpy first."""
    model = prepare_model(build(8, "state_space"))
    graph = extract_graph(model)
    dev = ((np.arange(graph.num_nodes) // 4) % 2).tolist()
    calls = []
    real = submodels.component_roots

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(submodels, "component_roots", counted)
    _hetero_split(graph, dev)
    assert not calls
    monkeypatch.setattr(submodels, "component_roots", real)
    assert _matches_the_lab(model, graph, dev)


def test_the_native_rounds_refuse_arrays_that_do_not_describe_one_graph():
    """``_native.hetero_split`` checks what it indexes with (an edge or a cut edge outside the graph, sizes that
    differ) and raises instead of reading outside its arrays."""
    from ov_autoplace._native_loader import load_native

    split = load_native().hetero_split
    src, dst, own = np.array([0, 1]), np.array([1, 2]), np.array([1, 0, 0])
    single, readers = np.ones(2, np.int64), np.array([1, 1, 0])
    assert split(src, dst, own, np.array([0]), single, readers).tolist() == [0, 1, 1]  # no cycle: the cut's parts
    assert split(src, dst, own, np.array([], np.int64), single, readers).tolist() == [0, 0, 0]  # nothing cut
    with pytest.raises(IndexError, match="edge"):
        split(src, np.array([1, 3]), own, np.array([0]), single, readers)
    with pytest.raises(IndexError, match="cut edge"):
        split(src, dst, own, np.array([2]), single, readers)
    with pytest.raises(ValueError, match="sizes differ"):
        split(src, dst, own[:2], np.array([0]), single, readers)
    with pytest.raises(ValueError, match="sizes differ"):
        split(src, dst, own, np.array([0]), single[:1], readers)
    with pytest.raises(ValueError, match="sizes differ"):
        split(src, dst, own, np.array([0]), single, readers[:2])
