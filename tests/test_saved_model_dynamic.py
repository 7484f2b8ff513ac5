"""save_model of a model with dynamic shapes: the IR stays dynamic and carries the placement of its static clone.

End to end: saved here, compiled in a new process with a new core (no cache), the stored placement is used
(no strategy runs) and the outputs equal a plain compile at two input shapes, one of them not the placement
shapes. Then the branch that carries a stored *split* over to the dynamic model, and the cases that place again.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import openvino as ov
import pytest

import ov_autoplace
from ov_autoplace import api
from ov_autoplace.placement.portable import RT_INFO_PATH, stored_shapes
from ov_autoplace.decision import stored_placement
from ov_autoplace.decision.stored_placement import compile_carried_placement
from ov_autoplace.decision.verification import verified_placement
from ov_autoplace.devices.testbed import make_testbed
from ov_autoplace.decision.verification import RULE, Evidence, evidence_intact, seal
from tests import synthetic_graphs as sg

REPO = Path(__file__).resolve().parents[1]
SHAPES = {"x": [2, 24, 32]}  # the placement shapes
OTHER = [3, 7, 32]  # an input shape the placement was not made at


@pytest.fixture(scope="module")
def testbed():
    return make_testbed()


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal within the bf16 CPU's error, relative to the output's scale (CPUF is f32)."""
    return a.shape == b.shape and float(np.max(np.abs(a - b))) <= 0.02 * max(1.0, float(np.max(np.abs(b))))


# The child: a new process with a new testbed core and an empty placement cache, INFO log on stderr.
CHILD = textwrap.dedent("""
    import json, logging, sys
    import numpy as np
    logging.basicConfig(level=logging.INFO, format="LOG %(message)s")
    import ov_autoplace
    from ov_autoplace.devices.testbed import make_testbed
    testbed = make_testbed()
    model = testbed.core.read_model(sys.argv[1])
    compiled = ov_autoplace.compile_model(model, testbed.hetero, core=testbed.core)
    plain = testbed.core.compile_model(model, "CPUF")
    rng = np.random.default_rng(1)
    out = {"devices": sorted(compiled.get_property("EXECUTION_DEVICES")), "diff": []}
    for shape in json.loads(sys.argv[2]):
        x = rng.standard_normal(shape).astype(np.float32)
        a, b = compiled({"x": x})[0], plain({"x": x})[0]
        out["diff"].append([list(a.shape), list(b.shape), float(np.max(np.abs(a - b))), float(np.max(np.abs(b)))])
    print(json.dumps(out))
""")


def _compile_in_new_process(path: Path, tmp_path: Path) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {
        "OV_AUTOPLACE_CACHE_DIR": str(tmp_path / "fresh-cache"), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), json.dumps([SHAPES["x"], OTHER])],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_dynamic_model_saved_and_compiled_in_a_new_process_uses_its_placement(testbed, tmp_path):
    model = sg.dynamic_attention()
    path = tmp_path / "dynamic.xml"
    stored = ov_autoplace.save_model(model, path, device_name=testbed.hetero, core=testbed.core,
                                     strategy="heavy_ops", shapes=SHAPES)  # a split, verified and sealed here
    read = ov.Core().read_model(path)
    assert read.inputs[0].get_partial_shape().is_dynamic, "the IR stays dynamic"
    assert stored_shapes(read) == SHAPES
    out, log = _compile_in_new_process(path, tmp_path)
    assert "placement source: the model's rt_info" in log, log[-3000:]
    assert "placed " not in log and "placement cache" not in log, "no strategy ran, no cache was read"
    used = {stored.assignment[n] for n in stored.compute_nodes}
    if evidence_intact(stored):  # a verdict travelled with the IR: nothing is measured again
        assert "verification (" not in log, log[-3000:]
        assert set(out["devices"]) == used  # the stored placement's devices (one, where the plain call won)
    else:  # saved without a verdict (it abstained, or won provisionally under load): verified again here, and the
        # child compiles what that decided (the stored placement, or the plain call's device)
        decided = ast.literal_eval(re.search(r"placement source: the model's rt_info \([^)]*\) -> (\{[^}]*\})",
                                             log).group(1))
        assert set(out["devices"]) == {d for d, n in decided.items() if n} <= used | {testbed.devices[0]}, log[-3000:]
    for (shape, plain_shape, diff, scale), want in zip(out["diff"], (SHAPES["x"], OTHER)):
        assert shape == plain_shape == want and diff <= 0.02 * max(1.0, scale), out


def _sealed_split(testbed, model) -> ov_autoplace.Placement:
    """A split carrying a sealed "kept" verdict: the state save_model writes on a machine where the split won.

    On the testbed the plain call wins (two CPUs), so such an IR cannot be made here by measuring; the verdict
    is sealed with the real seal() so that compile_carried_placement's split branch (carry-over, dynamic compile) runs.
    """
    placement = ov_autoplace.place(model, testbed.hetero, core=testbed.core, strategy="heavy_ops", shapes=SHAPES)
    assert len(set(placement.assignment.values())) == 2
    evidence = Evidence(decision="kept", chosen="candidate", rule=RULE, rounds=0, median_ms={}, spread={},
                        ratio={}, upper={}, reason="sealed by the test: the state of an IR saved where the split won",
                        measured_at=time.time())
    placement.verification = seal(evidence, placement)
    assert evidence_intact(placement)
    return placement


def test_a_stored_dynamic_split_is_carried_over_and_runs_at_any_shape(testbed, tmp_path, monkeypatch):
    model = sg.dynamic_attention()
    placement = _sealed_split(testbed, model)
    path = tmp_path / "split.xml"
    ov_autoplace.save_model(model, path, placement, core=testbed.core, shapes=SHAPES)  # intact: not measured
    read = testbed.core.read_model(path)
    req = api.build_request(read, testbed.hetero, core=testbed.core)
    seen = []
    monkeypatch.setattr(stored_placement, "verified_placement",
                        lambda *a, **k: seen.append(a) or verified_placement(*a, **k))
    compiled = compile_carried_placement(req, cache_dir=tmp_path / "cache")
    assert compiled is not None and not seen, "a sealed verdict read back under its own names: not measured again"
    assert set(compiled.get_property("EXECUTION_DEVICES")) == {"CPU", "CPUF"}
    plain = testbed.core.compile_model(read, "CPUF")
    rng = np.random.default_rng(2)
    for shape in (SHAPES["x"], OTHER):
        x = rng.standard_normal(shape).astype(np.float32)
        assert _close(compiled({"x": x})[0], plain({"x": x})[0]), shape


def test_other_shapes_or_a_static_entry_place_again(testbed, tmp_path, monkeypatch):
    model = sg.dynamic_attention()
    path = tmp_path / "dynamic.xml"
    ov_autoplace.save_model(model, path, _sealed_split(testbed, model), core=testbed.core, shapes=SHAPES)
    read = testbed.core.read_model(path)
    seen = []

    def verify(*a, **k):
        seen.append(a)
        return verified_placement(*a, **k)

    monkeypatch.setattr(stored_placement, "verified_placement", verify)
    other = api.build_request(read, testbed.hetero, core=testbed.core, shapes={"x": [1, 64, 32]})
    assert compile_carried_placement(other) is None  # the user asked for a placement at other shapes
    same = api.build_request(read, testbed.hetero, core=testbed.core, shapes=SHAPES)
    assert compile_carried_placement(same, cache_dir=tmp_path / "cache") is not None
    # an entry without placement shapes (a static model's) on a dynamic model is not this model's
    text = json.loads(read.get_rt_info(RT_INFO_PATH).astype(str))
    del text["placement_shapes"]
    read.set_rt_info(json.dumps(text), RT_INFO_PATH)
    again = api.build_request(read, testbed.hetero, core=testbed.core)
    assert compile_carried_placement(again) is None and not seen


def test_a_placement_made_at_the_wrong_inputs_is_refused_by_name(testbed, tmp_path):
    """A placement of another model (here the static residual graph) cannot be stored on this one."""
    from ov_autoplace.errors import FileFormatError

    foreign = ov_autoplace.place(sg.residual(), testbed.hetero, core=testbed.core, strategy="heavy_ops")
    with pytest.raises(FileFormatError, match="same shapes="):
        ov_autoplace.save_model(sg.dynamic_attention(), tmp_path / "d.xml", foreign, core=testbed.core,
                                shapes=SHAPES, verify=False)


def test_a_split_hetero_cannot_run_dynamic_is_refused_before_anything_is_written(f32_testbed, tmp_path, monkeypatch):
    """The 20+-submodel random split of tests/compile/test_placed_compile.py, legalised without the rule that makes
    it run: OpenVINO 2026.4's HETERO compiles it dynamic but cannot run it. save_model raises DynamicSplitError
    rather than write an IR that would fall back to a plain compile on every load."""
    from ov_autoplace.placement import legalizer

    monkeypatch.setattr(legalizer, "keep_shape_values_whole", lambda *args: 0)
    model = sg.dynamic_attention()
    placement = ov_autoplace.place(model, f32_testbed.hetero, core=f32_testbed.core, strategy="random", seed=0,
                                   max_submodels=None)
    with pytest.raises(ov_autoplace.DynamicSplitError, match="cannot run it with dynamic shapes"):
        ov_autoplace.save_model(model, tmp_path / "split.xml", placement, core=f32_testbed.core, verify=False)
    assert not (tmp_path / "split.xml").exists()


def test_save_model_places_at_the_shapes_compile_model_places_at(tmp_path):
    """Without shapes=, save_model places the clone compile_model would place (``shapes.placement_clone``): here the
    halved default a short position table takes, stored with the IR. Before, it reshaped to the default 128 and
    raised ShapeError on a model compile_model places."""
    from tests.model.test_shapes import _position_table

    testbed = make_testbed()
    ov_autoplace.save_model(_position_table(32), tmp_path / "t.xml", device_name=testbed.hetero, core=testbed.core,
                            strategy="heavy_ops", verify=False)
    model, _ = ov_autoplace.load_placed(tmp_path / "t.xml", core=testbed.core)
    assert stored_shapes(model) == {"x": [1, 32, 8]}


def test_save_model_places_a_decoder_at_its_generation_prompt(tmp_path):
    """A decoder's IR carries the placement of the prefill its generation starts with, as compile_model places it
    (``generation=``'s prompt), not the default 128."""
    testbed = make_testbed()
    ov_autoplace.save_model(sg.llm_like(layers=2, positions=None), tmp_path / "d.xml", device_name=testbed.hetero,
                            core=testbed.core, strategy="heavy_ops", verify=False, generation=(16, 4))
    model, _ = ov_autoplace.load_placed(tmp_path / "d.xml", core=testbed.core)
    assert {dims[1] for name, dims in stored_shapes(model).items() if name != "beam_idx"} == {16}
