"""compile_carried_placement: the default path's use of a placement an IR carries (save_model), under the verification rule."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest

import ov_autoplace
from ov_autoplace import api
from ov_autoplace.decision import stored_placement
from ov_autoplace.decision.stored_placement import compile_carried_placement
from ov_autoplace.devices.testbed import make_testbed
from ov_autoplace.decision.verification import evidence_intact, verified_placement
from tests import synthetic_graphs as sg
from tests.testbeds import stated_load
from ov_autoplace.devices.timing import random_inputs


@pytest.fixture(scope="module")
def testbed():
    return make_testbed()


def _request(model, testbed, **kw):
    return api.build_request(model, testbed.hetero, core=testbed.core, pins=kw.get("pins"))


class RecordingVerify:
    """verification.verified_placement itself, recording which placements were sent to it (the real measurement
    runs); installed where compile_carried_placement calls it."""

    def __init__(self, monkeypatch):
        self.seen = []
        monkeypatch.setattr(stored_placement, "verified_placement", self)

    def __call__(self, req, prepared, graph, placement, support=None, **kwargs):
        self.seen.append(placement)
        return verified_placement(req, prepared, graph, placement, support, **kwargs)


def test_a_model_without_a_stored_placement_takes_the_normal_path(testbed, monkeypatch):
    verify = RecordingVerify(monkeypatch)
    assert compile_carried_placement(_request(sg.residual(), testbed)) is None and not verify.seen


def test_a_stored_split_without_evidence_is_verified_then_compiled(testbed, tmp_path, monkeypatch):
    model = sg.residual()
    placement = ov_autoplace.place(model, testbed.hetero, core=testbed.core, pins={"type:Convolution": "CPUF"})
    ov_autoplace.save_model(model, tmp_path / "placed.xml", placement, core=testbed.core, verify=False)
    read = testbed.core.read_model(tmp_path / "placed.xml")
    verify = RecordingVerify(monkeypatch)
    compiled = compile_carried_placement(_request(read, testbed), cache_dir=tmp_path / "cache")
    assert compiled is not None
    (proposal,) = verify.seen  # not evidence_intact: measured against the plain call before it is compiled
    assert proposal.assignment == placement.assignment and not evidence_intact(proposal)
    inputs = random_inputs(compiled)
    assert np.allclose(compiled(inputs)[0], testbed.core.compile_model(read, "CPUF")(inputs)[0], rtol=0.05, atol=0.05)


def test_pins_or_another_device_list_take_the_normal_path(testbed, tmp_path, monkeypatch):
    model = sg.residual()
    placement = ov_autoplace.place(model, testbed.hetero, core=testbed.core)
    ov_autoplace.save_model(model, tmp_path / "placed.xml", placement, core=testbed.core)
    read = testbed.core.read_model(tmp_path / "placed.xml")
    verify = RecordingVerify(monkeypatch)
    assert compile_carried_placement(_request(read, testbed, pins={"type:Convolution": "CPU"})) is None
    other = api.build_request(read, "HETERO:CPUF,CPU", core=testbed.core, max_submodels=8)
    assert compile_carried_placement(other) is None and not verify.seen


def test_a_placement_verified_by_save_model_is_compiled_without_measuring(testbed, tmp_path, monkeypatch):
    stated_load(monkeypatch, 0.0)  # a win under load is provisional, and verified again: not this test's case
    model = sg.residual()
    proposal = ov_autoplace.place(model, testbed.hetero, core=testbed.core, pins={"type:Convolution": "CPUF"})
    stored = ov_autoplace.save_model(model, tmp_path / "placed.xml", proposal, core=testbed.core)  # verified here
    read = testbed.core.read_model(tmp_path / "placed.xml")
    verify = RecordingVerify(monkeypatch)
    compiled = compile_carried_placement(_request(read, testbed), cache_dir=tmp_path / "cache")
    # intact evidence (kept/plain), or an abstention that kept the plain call's placement: nothing measured again
    assert compiled is not None and not verify.seen
    used = {stored.assignment[n] for n in stored.compute_nodes}
    assert set(compiled.get_property("EXECUTION_DEVICES")) == used
