"""Every placement that reaches a compile passes one legality check: new, cached (however edited), loaded.

The tampering corpus edits a real placement-cache entry every way we could
think of and checks that ``compile_model`` still returns outputs equal to a
plain single-device compile (both testbed devices in f32, so any placement
may change only the summation order), with and without OpenVINO's CACHE_DIR.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

import ov_autoplace as oa
from ov_autoplace.cache.placement_cache import PlacementCache
from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.legality_check import LEGALIZER_VERSION, ensure_legal, placement_problems
from ov_autoplace.placement.legalizer import legalize, query_support
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg
from ov_autoplace.devices.timing import random_inputs

ATOL = 1e-4


def _outputs(compiled, inputs):
    result = compiled(inputs)
    return [np.asarray(result[port]) for port in compiled.outputs]


def _inputs(model):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(list(p.get_shape())).astype(np.float32) for p in model.inputs]


def _assert_matches_plain(compiled, model, core):
    inputs = _inputs(model)
    expected = _outputs(core.compile_model(model, "CPU"), inputs)
    got = _outputs(compiled, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, atol=ATOL, rtol=ATOL)


def _alternate(data):
    n = len(data["payload"]["device_by_index"])
    data["payload"]["device_by_index"] = [("CPU", "CPUF")[i % 2] for i in range(n)]


def _flip_roles(role_names):
    def edit(data, graph):
        flip = {"CPU": "CPUF", "CPUF": "CPU"}
        by_index = data["payload"]["device_by_index"]
        for i, op in enumerate(graph.op_types):
            if op in role_names:
                by_index[i] = flip[by_index[i]]
    return edit


def _json_edit(edit):
    """A tamper that edits the parsed entry (``edit(data)`` or ``edit(data, graph)``)."""
    def tamper(path, graph):
        data = json.loads(path.read_text())
        try:
            edit(data, graph)
        except TypeError:
            edit(data)
        path.write_text(json.dumps(data))
    return tamper


def _text(make):
    def tamper(path, graph):
        path.write_text(make(path.read_text()))
    return tamper


def _as_directory(path, graph):
    path.unlink()
    path.mkdir()


def _binary(path, graph):
    path.write_bytes(b"\xff\xfe\x00garbage\x80\x81")


TAMPERS = {
    "alternating_devices": _json_edit(_alternate),
    "all_on_cpuf_but_results": _json_edit(lambda d, g: d["payload"].__setitem__(
        "device_by_index", ["CPU" if op == "Result" else "CPUF" for op in g.op_types])),
    "constants_on_other_device": _json_edit(_flip_roles({"Constant"})),
    "parameters_on_other_device": _json_edit(_flip_roles({"Parameter"})),
    "results_on_other_device": _json_edit(_flip_roles({"Result"})),
    "too_short": _json_edit(lambda d: d["payload"].__setitem__("device_by_index",
                                                               d["payload"]["device_by_index"][:-3])),
    "too_long": _json_edit(lambda d: d["payload"]["device_by_index"].extend(["CPU"] * 4)),
    "unknown_device": _json_edit(lambda d: d["payload"]["device_by_index"].__setitem__(1, "GPU")),
    "device_not_a_string": _json_edit(lambda d: d["payload"]["device_by_index"].__setitem__(1, ["CPU"])),
    "devices_swapped": _json_edit(lambda d: d["payload"].__setitem__("devices", ["CPUF", "CPU"])),
    "devices_unknown": _json_edit(lambda d: d["payload"].__setitem__("devices", ["CPU", "GPU"])),
    "names_swapped": _json_edit(lambda d: d["payload"].__setitem__(
        "assignment", dict(zip(d["payload"]["assignment"], reversed(list(d["payload"]["assignment"].values())))))),
    "compute_index_out_of_range": _json_edit(lambda d: d["payload"].__setitem__("compute_by_index", [10 ** 9])),
    "compute_index_not_int": _json_edit(lambda d: d["payload"].__setitem__("compute_by_index", ["x"])),
    "submodels_nonsense": _json_edit(lambda d: d["payload"].__setitem__("num_submodels", -7)),
    "payload_a_list": _json_edit(lambda d: d.__setitem__("payload", [1, 2])),
    "payload_null": _json_edit(lambda d: d.__setitem__("payload", None)),
    "stale_legalizer": _json_edit(lambda d: d["key"].__setitem__("legalizer", LEGALIZER_VERSION - 1)),
    "stale_openvino": _json_edit(lambda d: d["key"].__setitem__("openvino_version", "2024.6.0-old")),
    "truncated": _text(lambda t: t[: len(t) // 2]),
    "empty": _text(lambda t: ""),
    "not_json": _text(lambda t: "{not json"),
    "nested_deeply": _text(lambda t: "[" * 200_000 + "]" * 200_000),
    "nested_in_payload": _text(lambda t: t.replace('"device_by_index": ', '"device_by_index": ' + "[" * 100_000, 1)
                               + "]" * 100_000),
    "not_utf8": _binary,
    "a_directory": _as_directory,
}


@pytest.fixture(scope="module")
def residual_graph():
    return extract_graph(prepare_model(sg.residual()))


@pytest.mark.parametrize("with_cache_dir", [False, True], ids=["no_CACHE_DIR", "CACHE_DIR"])
@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_tampered_cache_entry_never_gives_wrong_outputs(f32_testbed, tmp_path, caplog, residual_graph, tamper,
                                                        with_cache_dir):
    core = f32_testbed.core
    config = {"CACHE_DIR": str(tmp_path / "blobs")} if with_cache_dir else {}

    def compile_():
        return oa.compile_model(sg.residual(), f32_testbed.hetero, config, core=core, cache_dir=tmp_path / "cache",
                                strategy="heavy_ops")

    compile_()
    (entry,) = PlacementCache(tmp_path / "cache").entries()
    TAMPERS[tamper](entry, residual_graph)
    with caplog.at_level(logging.WARNING):
        compiled = compile_()  # a fresh build of the same model, through the tampered entry
    _assert_matches_plain(compiled, sg.residual(), core)
    assert "falling back" not in caplog.text  # handled by the cache, not by the last-resort fallback
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        again = compile_()  # the entry was rewritten: a clean hit now
    _assert_matches_plain(again, sg.residual(), core)
    assert caplog.text == ""


def test_alternating_placement_is_relegalized_with_a_warning(f32_testbed, tmp_path, caplog):
    oa.compile_model(sg.residual(), f32_testbed.hetero, core=f32_testbed.core, cache_dir=tmp_path, strategy="heavy_ops")
    (entry,) = PlacementCache(tmp_path).entries()
    data = json.loads(entry.read_text())
    _alternate(data)
    entry.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING):
        oa.compile_model(sg.residual(), f32_testbed.hetero, core=f32_testbed.core, cache_dir=tmp_path,
                         strategy="heavy_ops")
    # "heavy_ops" or "heavy_ops+plain": the verification may have kept the plain call's placement
    assert "cached placement (heavy_ops" in caplog.text and "was not legal" in caplog.text
    assert "re-legalized" in caplog.text
    rewritten = json.loads(entry.read_text())["payload"]["device_by_index"]
    assert rewritten != data["payload"]["device_by_index"]


def _support(testbed, model):
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    return graph, query_support(testbed.core, prepared, graph, testbed.devices)


def test_legal_placement_passes_unchanged(f32_testbed):
    graph, support = _support(f32_testbed, sg.attention_like())
    rng = np.random.default_rng(0)
    for _ in range(5):
        placement = legalize(graph, rng.integers(0, 2, graph.num_nodes), f32_testbed.devices, support, max_submodels=4)
        again = ensure_legal(placement, graph, f32_testbed.devices, support, max_submodels=4)
        assert again.assignment == placement.assignment and again.num_submodels == placement.num_submodels


def test_problems_name_what_does_not_fit(f32_testbed):
    graph, support = _support(f32_testbed, sg.branching())
    good = legalize(graph, np.zeros(graph.num_nodes, dtype=np.int64), f32_testbed.devices, support)
    partial = Placement(dict(list(good.assignment.items())[:-2]), good.devices, "x", good.compute_nodes, 1)
    assert any("have no device" in p for p in placement_problems(partial, graph, f32_testbed.devices))
    bad = Placement({**good.assignment, graph.names[3]: "NPU"}, good.devices, "x", good.compute_nodes, 1)
    with pytest.raises(PlacementError, match="NPU"):
        ensure_legal(bad, graph, f32_testbed.devices, support)


def test_compile_placement_relegalizes_a_hand_edited_file(f32_testbed, tmp_path, caplog):
    model = sg.residual()
    placement = oa.place(model, f32_testbed.hetero, core=f32_testbed.core, strategy="heavy_ops")
    edited = {**placement.to_dict(),
              "assignment": {n: ("CPU", "CPUF")[i % 2] for i, n in enumerate(placement.assignment)}}
    path = tmp_path / "placement.json"
    path.write_text(json.dumps(edited))
    with caplog.at_level(logging.WARNING):
        compiled = oa.compile_placement(model, Placement.load(path), core=f32_testbed.core)
    assert "given placement" in caplog.text and "re-legalized" in caplog.text
    _assert_matches_plain(compiled, model, f32_testbed.core)


def test_compile_placement_rejects_a_placement_of_another_model(f32_testbed):
    placement = oa.place(sg.branching(), f32_testbed.hetero, core=f32_testbed.core, strategy="heavy_ops")
    with pytest.raises(PlacementError, match="does not fit this model"):
        oa.compile_placement(sg.residual(), placement, core=f32_testbed.core)


# --- the zoo: >= 25 random raw placements per model (and an int8 variant), 0 wrong outputs ------------------

RANDOM_PLACEMENTS = 25


def _raw_assignments(graph, devices, rng, count):
    """Random assignments of *every* node (Constants, Parameters, Results too): none is legal as drawn.

    Thirds of them are per-node uniform, contiguous segments of the topological order, and per-node with
    a bias to one device (few, scattered nodes elsewhere: the cheap-looking splits).
    """
    n = graph.num_nodes
    for k in range(count):
        if k % 3 == 0:
            choice = rng.integers(0, len(devices), n)
        elif k % 3 == 1:
            cuts = np.sort(rng.choice(np.arange(1, n), size=rng.integers(1, 6), replace=False))
            choice = np.zeros(n, dtype=np.int64)
            for j, c in enumerate(cuts):
                choice[c:] = (j + 1) % len(devices)
        else:
            choice = (rng.random(n) < 0.05).astype(np.int64)
        yield {name: devices[int(d)] for name, d in zip(graph.names, choice)}


def _check_random_placements(testbed, model, *, seed, tolerance, check=None):
    core, devices = testbed.core, testbed.devices
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    support = query_support(core, prepared, graph, devices)
    plain = core.compile_model(model, "CPU")
    inputs = random_inputs(plain, seed=seed)
    expected = _outputs(plain, inputs)
    worst, splits = 0.0, 0
    for assignment in _raw_assignments(graph, devices, np.random.default_rng(seed), RANDOM_PLACEMENTS):
        drawn = Placement(assignment, tuple(devices), "random-raw", frozenset(), 0)
        legal = ensure_legal(drawn, graph, devices, support, max_submodels=8, source="random")
        splits += legal.num_submodels > 1
        placed = prepare_model(model)
        legal.apply(placed)
        compiled = core.compile_model(placed, testbed.hetero)
        for got, want in zip(_outputs(compiled, inputs), expected):
            scale = max(1.0, float(np.abs(want).max()))
            worst = max(worst, float(np.abs(got - want).max()) / scale)
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance * scale)
        if check is not None:
            check(compiled)
    return worst, splits


@pytest.mark.slow
def test_random_raw_placements_of_zoo_models_give_exact_outputs(f32_testbed, zoo_model):
    name, model = zoo_model
    worst, splits = _check_random_placements(f32_testbed, model, seed=11, tolerance=1e-3)
    assert splits >= RANDOM_PLACEMENTS // 2, f"{name}: only {splits} placements were splits"
    print(f"{name}: {RANDOM_PLACEMENTS} random raw placements, {splits} splits, worst rel. error {worst:.2e}")


@pytest.mark.slow
def test_random_raw_placements_of_an_int8_zoo_model_stay_int8(f32_testbed):
    from tests.conftest import zoo_available
    from tests.quantized_graphs import quantize_convolutions
    from tests.quantized_graphs import conv_precisions

    if not zoo_available():
        pytest.skip("zoo extras not installed: pip install -e '.[zoo]'")
    from ov_autoplace_lab import models as zoo

    f32 = zoo.load("resnet50")
    model = quantize_convolutions(f32, random_inputs(f32_testbed.core.compile_model(f32, "CPU"), seed=5))
    plain = conv_precisions(f32_testbed.core.compile_model(model, "CPU"))
    int8 = sum(p in {"u8", "i8"} for p in plain.values())
    assert int8 >= len(plain) // 2, plain  # the variant really runs int8

    def stays_int8(compiled):
        placed = conv_precisions(compiled)
        assert sum(p in {"u8", "i8"} for p in placed.values()) >= int8, placed

    # int8 rounding may flip one quantization step where the summation order changed: 2 % of the output range
    worst, splits = _check_random_placements(f32_testbed, model, seed=12, tolerance=2e-2, check=stays_int8)
    assert splits >= RANDOM_PLACEMENTS // 2
    print(f"resnet50 int8: {RANDOM_PLACEMENTS} random raw placements, {splits} splits, worst rel. error {worst:.2e}")
