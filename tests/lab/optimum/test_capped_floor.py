"""The capped device's floor (``ov_autoplace_lab/optimum/capped_floor.py``): the fewest bytes a placement that keeps
stateful rule 4 leaves on the device that holds the state, checked against every placement of a small decoder-like
graph and against what the legalizer itself returns."""

from __future__ import annotations

import itertools

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest
from openvino.op.util import Variable, VariableInfo

from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.legalizer import legalize
from ov_autoplace.placement.stateful import _reentries, with_initializer_copies
from ov_autoplace_lab.optimum.capped_floor import capped_floor, floor_milp, node_sets
from tests.synthetic_graphs import stateful_layers

#: Ops the second device cannot run in these graphs: the state's and the attention-like mean, as on npu_cpu.
HELD = ("rv", "reorder", "cat", "assign", "mean", "mask")
DEVICES = ("CPU", "NPU")


def masked_layers(layers: int = 3, hidden: int = 4, mask: bool = True) -> ov.Model:
    """Per layer a variable (ReadValue -> beam Gather -> Concat with the projection -> Assign), its mean over the
    past (the attention's place) and, with ``mask``, a ``mask`` node every layer's mean is multiplied by, as a
    decoder's mask and rotary tables feed every layer. Movable per layer: ``proj``, ``mul``, ``add``, ``act``."""
    rng = np.random.default_rng(0)
    x = ops.parameter([1, 2, hidden], np.float32, name="x")
    beam = ops.parameter([1], np.int32, name="beam_idx")
    shared = ops.sin(ops.reduce_mean(x, ops.constant([1]), keep_dims=True), name="mask") if mask else None
    h, sinks = x, []
    for k in range(layers):
        info = VariableInfo()
        info.data_shape, info.data_type, info.variable_id = ov.PartialShape([1, -1, hidden]), ov.Type.f32, f"p{k}"
        var = Variable(info)
        read = ops.read_value(var, name=f"rv{k}")
        reorder = ops.gather(read, beam, ops.constant(0), name=f"reorder{k}")
        proj = ops.matmul(h, ops.constant(rng.standard_normal((hidden, hidden)).astype(np.float32)), False, False,
                          name=f"proj{k}")
        cat = ops.concat([reorder, proj], 1, name=f"cat{k}")
        sinks.append(ops.assign(cat, var))
        sinks[-1].set_friendly_name(f"assign{k}")
        mean = ops.reduce_mean(cat, ops.constant([1]), keep_dims=True, name=f"mean{k}")
        scaled = ops.multiply(mean, shared, name=f"mul{k}") if shared is not None else mean
        h = ops.tanh(ops.add(proj, scaled, name=f"add{k}"), name=f"act{k}")
    return ov.Model([ops.result(h, name="out")], sinks, [x, beam], "masked_layers")


def _setup(model: ov.Model, held=HELD):
    graph = extract_graph(model)
    support = np.ones((graph.num_nodes, 2), bool)
    support[[i for i, n in enumerate(graph.names) if n.rstrip("0123456789") in held], 1] = False
    sets = node_sets(graph, support, 0)
    mem = np.where(sets["active"], 1000.0 * (1 + np.arange(graph.num_nodes) % 7), 0.0)  # distinct, so ties are rare
    return graph, support, sets, mem


def _keeps_rule_4(graph, device: np.ndarray, active: np.ndarray) -> bool:
    """The legalizer's own test for the device holding state (index 0): no re-entry on the edges it judges."""
    between, _ = _reentries(with_initializer_copies(graph, device), device, active, 0)
    return not between.any()


def _fewest_kept(graph, sets, mem) -> float:
    """Over every placement of the movable nodes that keeps rule 4, the fewest bytes left on device 0."""
    movable = np.flatnonzero(sets["active"] & ~sets["held"])
    best = np.inf
    for bits in itertools.product((0, 1), repeat=movable.size):
        device = np.zeros(graph.num_nodes, np.int64)
        device[movable] = bits
        if _keeps_rule_4(graph, device, sets["active"]):
            best = min(best, float(mem[sets["active"] & (device == 0)].sum()))
    return best


@pytest.mark.parametrize("mask", [True, False])
def test_the_floor_is_the_fewest_bytes_any_placement_keeping_rule_4_leaves_on_the_state_s_device(mask):
    graph, _, sets, mem = _setup(masked_layers(mask=mask))
    assert 8 <= (sets["active"] & ~sets["held"]).sum() <= 14  # small enough to try every placement
    best = _fewest_kept(graph, sets, mem)
    floor, optimal, off = floor_milp(graph, sets, mem, seconds=30)
    assert optimal
    assert floor == pytest.approx(best)
    device = np.where(off, 1, 0)
    assert _keeps_rule_4(graph, device, sets["active"])  # the MILP's own placement keeps the rule
    assert floor > float(mem[sets["held"]].sum())  # the rule binds: more than the held nodes stays


def test_no_placement_the_legalizer_returns_keeps_less_than_the_floor():
    graph, support, sets, mem = _setup(masked_layers(layers=4))
    floor, _, _ = floor_milp(graph, sets, mem, seconds=30)
    rng = np.random.default_rng(3)
    movable = np.flatnonzero(sets["active"] & ~sets["held"])
    least = np.inf
    for _ in range(200):
        proposal = np.zeros(graph.num_nodes, np.int64)
        proposal[movable] = rng.integers(0, 2, movable.size)
        placed = legalize(graph, proposal, DEVICES, support, max_submodels=None, strategy="probe")
        device = placed.device_indices(graph.names, DEVICES)
        least = min(least, float(mem[sets["active"] & (device == 0)].sum()))
    assert least >= floor - 1e-6
    assert least < mem[sets["active"]].sum()  # some split was kept: the bound was not met only by keeping all


def test_where_the_other_device_can_hold_the_state_the_floor_is_the_held_nodes_alone():
    """Rule 4 binds a device only while it holds a variable: with the state's ops movable, a placement may put them
    all on the other device, so only what no other device runs is certain to stay."""
    graph, _, sets, mem = _setup(masked_layers(), held=("mask", "mean"))
    floor, optimal, off = floor_milp(graph, sets, mem, seconds=30)
    assert optimal and floor == pytest.approx(float(mem[sets["held"]].sum()))
    assert off.sum() == (sets["active"] & ~sets["held"]).sum()


def test_a_floor_over_the_cap_proves_the_row_has_no_split():
    graph, support, sets, mem = _setup(masked_layers())
    floor, _, _ = floor_milp(graph, sets, mem, seconds=30)
    tight = capped_floor(graph, support, mem, DEVICES, "CPU", floor - 1.0, seconds=30)
    assert tight.proves_no_split and "over its cap" in tight.describe()
    loose = capped_floor(graph, support, mem, DEVICES, "CPU", floor + 1.0, seconds=30)
    assert not loose.proves_no_split and loose.movable_bytes > 0


def test_an_initializer_s_edges_are_left_out_so_the_floor_stays_a_floor():
    """optimum-intel's shared initializer (``ShapeOf(x) -> Gather`` feeding every variable's zeros) is copied per
    device, which redirects its edges: the floor MILP judges rule 4 without them, so it can only be lower than what
    the legalizer's rule leaves."""
    graph = extract_graph(stateful_layers(layers=2, shared_init=True, head=True))
    support = np.ones((graph.num_nodes, 2), bool)
    support[[i for i, n in enumerate(graph.names) if n.rstrip("0123456789") in HELD], 1] = False
    sets = node_sets(graph, support, 0)
    mem = np.where(sets["active"], 1000.0, 0.0)
    floor, optimal, _ = floor_milp(graph, sets, mem, seconds=30)
    assert optimal and floor <= _fewest_kept(graph, sets, mem) + 1e-6
