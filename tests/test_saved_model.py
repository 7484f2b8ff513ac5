"""save_model: an IR that carries its placement, keyed by node identity, read back under old or new names."""

from __future__ import annotations

import json

import numpy as np
import openvino as ov
import pytest

import ov_autoplace
from ov_autoplace.errors import FileFormatError, ShapeError
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.assignment import AFFINITY_KEY
from ov_autoplace.placement.portable import RT_INFO_PATH, stored_placement
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.devices.testbed import make_testbed
from tests import synthetic_graphs as sg
from ov_autoplace.devices.timing import random_inputs

PINS = {"type:Convolution": "CPUF"}  # a real split: convolutions on CPUF, the rest where the strategy puts it


@pytest.fixture(scope="module")
def testbed():
    return make_testbed()


def _names(model):
    return list(extract_graph(prepare_model(model)).names)


def test_ov_save_model_keeps_no_affinity(testbed, tmp_path):
    """Why save_model exists: OpenVINO's IR writer drops every node's rt_info['affinity']."""
    prepared = prepare_model(sg.residual())
    placement = ov_autoplace.place(prepared, testbed.hetero, core=testbed.core, pins=PINS)
    placement.apply(prepared)
    ov.save_model(prepared, tmp_path / "plain.xml", compress_to_fp16=False)
    read = ov.Core().read_model(tmp_path / "plain.xml")
    assert not any(AFFINITY_KEY in op.get_rt_info() for op in read.get_ops())


def test_saved_placement_reads_back_with_its_names_and_evidence(testbed, tmp_path):
    model = sg.residual()
    # "priority" keeps the unpinned nodes on CPU: a split by construction. The default strategy may rightly put
    # them on CPUF beside the pinned convolutions (a fresh profile did in CI), and then nothing runs on CPU.
    placement = ov_autoplace.place(model, testbed.hetero, core=testbed.core, pins=PINS, strategy="priority")
    placement.verification = {"kept": "as stored"}  # stored verbatim: the digest check is verification.py's
    path = tmp_path / "placed.xml"
    assert ov_autoplace.save_model(model, path, placement, core=testbed.core, verify=False) is placement
    assert not model.has_rt_info(RT_INFO_PATH), "the user's model object is not changed"
    read, stored = ov_autoplace.load_placed(path, core=testbed.core)
    assert stored.assignment == placement.assignment and stored.verification == placement.verification
    assert stored.devices == ("CPU", "CPUF") and 0 not in stored.counts_per_device().values()
    compiled = ov_autoplace.compile_placement(read, stored, core=testbed.core)
    assert set(compiled.get_property("EXECUTION_DEVICES")) == {"CPU", "CPUF"}


def test_placement_survives_a_reconversion_under_new_names(testbed, tmp_path):
    """The same architecture built again gets new friendly names; the stored identities still match."""
    first = sg.residual()
    placement = ov_autoplace.place(first, testbed.hetero, core=testbed.core, pins=PINS)
    ov_autoplace.save_model(first, tmp_path / "first.xml", placement, core=testbed.core, verify=False)
    text = ov.Core().read_model(tmp_path / "first.xml").get_rt_info(RT_INFO_PATH).astype(str)
    second = sg.residual()  # "re-converted": same graph, new names from OpenVINO's counter
    ov.save_model(second, tmp_path / "second.xml", compress_to_fp16=False)
    second = ov.Core().read_model(tmp_path / "second.xml")
    renamed = sum(a != b for a, b in zip(_names(first), _names(second)))
    assert renamed > len(_names(first)) // 2  # most generated names changed (named inputs/outputs stay)
    second.set_rt_info(text, RT_INFO_PATH)
    moved = stored_placement(second)
    assert moved is not None and moved.verification is None  # new names: a proposal, no evidence carried
    old, new = _names(first), _names(second)
    assert [moved.assignment[n] for n in new] == [placement.assignment[n] for n in old]
    compiled = ov_autoplace.compile_placement(second, moved, core=testbed.core)
    inputs = random_inputs(compiled)
    assert np.allclose(compiled(inputs)[0], testbed.core.compile_model(second, "CPUF")(inputs)[0],
                       rtol=0.05, atol=0.05)


def test_another_graph_or_device_list_is_not_used_and_damage_is_named(testbed, tmp_path):
    model = sg.residual()
    placement = ov_autoplace.place(model, testbed.hetero, core=testbed.core, pins=PINS)
    ov_autoplace.save_model(model, tmp_path / "placed.xml", placement, core=testbed.core, verify=False)
    text = ov.Core().read_model(tmp_path / "placed.xml").get_rt_info(RT_INFO_PATH).astype(str)
    for other in (sg.residual(blocks=2), sg.residual(channels=4)):  # a block less; the same ops, other shapes
        other.set_rt_info(text, RT_INFO_PATH)
        assert stored_placement(other) is None  # another graph: placed again
    same = ov.Core().read_model(tmp_path / "placed.xml")
    assert stored_placement(same, devices=("CPUF", "CPU")) is None  # another device order: placed again
    damaged = json.loads(text) | {"format": 99}
    same.set_rt_info(json.dumps(damaged), RT_INFO_PATH)
    with pytest.raises(FileFormatError, match="save the model again"):
        stored_placement(same)


def test_save_model_places_when_no_placement_is_given(testbed, tmp_path):
    placement = ov_autoplace.save_model(sg.residual(), tmp_path / "p.xml", device_name=testbed.hetero,
                                        core=testbed.core, strategy="heavy_ops")
    assert placement.strategy.startswith("heavy_ops") and ov_autoplace.load_placed(tmp_path / "p.xml",
                                                                                   core=testbed.core)[1] is not None
    # dynamic models: tests/test_saved_model_dynamic.py; shapes= that do not fit are named before anything is placed
    with pytest.raises(ShapeError, match="x"):
        ov_autoplace.save_model(sg.dynamic_attention(), tmp_path / "d.xml", device_name=testbed.hetero,
                                core=testbed.core, shapes={"x": [2, 24, 31]})


def test_save_model_verifies_so_the_ir_carries_intact_evidence(testbed, tmp_path):
    """verify=True (default): the split is measured against the plain call now; the winner is stored, sealed."""
    from ov_autoplace.decision.verification import evidence_intact

    model = sg.residual()
    proposal = ov_autoplace.place(model, testbed.hetero, core=testbed.core, pins=PINS)
    assert not evidence_intact(proposal)
    stored = ov_autoplace.save_model(model, tmp_path / "placed.xml", proposal, core=testbed.core)
    decision = stored.verification["decision"]
    # kept or plain: a verdict, sealed; abstained (the plain call's rounds too noisy): no verdict to carry
    assert evidence_intact(stored) == (decision in ("kept", "plain")), stored.verification
    _, read = ov_autoplace.load_placed(tmp_path / "placed.xml", core=testbed.core)
    assert read.assignment == stored.assignment and evidence_intact(read) == evidence_intact(stored)
