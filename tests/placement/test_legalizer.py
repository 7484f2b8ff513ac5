"""Legalizer: unit checks on small graphs, and the property test that random
assignments compile on the testbed and compute what the single-device model does.

Tolerance for the property test: both testbed devices run f32 here (the
like-for-like testbed), so a placement changes only summation order (1 vs 2
threads, kernels fused or split at submodel borders). Measured worst relative
error on the synthetic graphs is ~3e-7; on the zoo ~1e-5 (BERT's 12 layers of
LayerNorm/softmax amplify it). We allow 1e-3 of the output's scale: two orders
of magnitude of margin, yet far below what a wrong wiring (a swapped or
dropped tensor) produces, which is O(1).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import ov_autoplace as oa
from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.placement.legalizer import Pin, constant_subgraph_mask, legalize, parse_pins, query_support
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.strategies import RandomStrategy
from ov_autoplace.placement.submodels import submodel_partition
from tests import synthetic_graphs as sg
from tests.conftest import zoo_available
from tests.hetero_counts import hetero_subgraphs
from ov_autoplace.devices.timing import random_inputs

REL_TOL = 1e-3


def _setup(model, testbed):
    graph = extract_graph(model)
    support = query_support(testbed.core, model, graph, testbed.devices)
    return graph, support


def _by_role(placement, graph, role):
    return [graph.names[i] for i in np.flatnonzero(graph.role == role)]


def test_anchors_follow(f32_testbed):
    model = sg.residual()
    graph, support = _setup(model, f32_testbed)
    proposal = np.random.default_rng(0).integers(0, 2, graph.num_nodes)
    placement = legalize(graph, proposal, f32_testbed.devices, support)
    consumers = {}
    for s, t in zip(graph.edge_src, graph.edge_dst):
        consumers.setdefault(int(s), []).append(int(t))
    for i in np.flatnonzero(graph.role == NodeRole.RESULT):
        producer = int(graph.edge_src[graph.edge_dst == i][0])
        assert placement.device_of(graph.names[i]) == placement.device_of(graph.names[producer])
    for i in np.flatnonzero(graph.role == NodeRole.CONSTANT):
        devices = {placement.device_of(graph.names[j]) for j in consumers.get(int(i), [])}
        assert placement.device_of(graph.names[i]) in devices
    assert set(placement.assignment) == set(graph.names)


def test_constant_subgraph_mask():
    model = sg.attention_like()
    graph = extract_graph(model)
    mask = constant_subgraph_mask(graph)
    assert mask[graph.role == NodeRole.CONSTANT].all()
    assert not mask[graph.role == NodeRole.PARAMETER].any()
    # a MatMul fed by activations is never constant
    assert not mask[[i for i, t in enumerate(graph.op_types) if t == "MatMul"]].any()


def test_pins_by_name_pattern_and_type(f32_testbed):
    model = sg.residual()
    graph, support = _setup(model, f32_testbed)
    proposal = np.zeros(graph.num_nodes, dtype=np.int64)
    pins = parse_pins({"block0_conv1": "CPUF", "block2_*": "CPUF", "type:Relu": "CPUF"})
    placement = legalize(graph, proposal, f32_testbed.devices, support, pins=pins)
    assert placement.device_of("block0_conv1") == "CPUF"
    assert placement.device_of("block2_conv2") == "CPUF"
    for i, t in enumerate(graph.op_types):
        if t == "Relu":
            assert placement.device_of(graph.names[i]) == "CPUF"
    # pins survive island merging
    merged = legalize(graph, proposal, f32_testbed.devices, support, pins=pins, max_submodels=1)
    assert merged.device_of("block0_conv1") == "CPUF"


def test_pin_errors(f32_testbed):
    graph, support = _setup(sg.residual(), f32_testbed)
    proposal = np.zeros(graph.num_nodes, dtype=np.int64)
    with pytest.raises(oa.PinError, match="'GPU', which is not in"):
        legalize(graph, proposal, f32_testbed.devices, support, pins=[Pin("GPU", name="stem")])
    with pytest.raises(oa.PlacementError, match="exactly one"):
        Pin("CPU", name="a", op_type="Relu")
    # A pin matching nothing is the user's typo: raised, naming the pin and the nearest real names.
    near = graph.names[-2]
    with pytest.raises(oa.PinError, match="'nope' -> CPUF matches no node") as err:
        legalize(graph, proposal, f32_testbed.devices, support, pins=[Pin("CPUF", name="nope")])
    with pytest.raises(oa.PinError, match=f"nearest names: .*{re.escape(near)}"):
        legalize(graph, proposal, f32_testbed.devices, support, pins=[Pin("CPUF", name=near + "x")])
    with pytest.raises(oa.PinError, match="no 'Rellu' op.*'Relu'"):
        legalize(graph, proposal, f32_testbed.devices, support, pins=[Pin("CPUF", op_type="Rellu")])
    assert isinstance(err.value, ValueError)


def test_unsupported_nodes_move_or_raise(f32_testbed):
    graph, support = _setup(sg.residual(), f32_testbed)
    proposal = np.zeros(graph.num_nodes, dtype=np.int64)
    conv = graph.names.index("stem") if "stem" in graph.names else None
    support = support.copy()
    support[conv, 0] = False  # pretend the first device cannot run the stem
    placement = legalize(graph, proposal, f32_testbed.devices, support)
    assert placement.device_of("stem") == "CPUF"
    support[conv, 1] = False
    with pytest.raises(oa.UnsupportedOpError, match="stem"):
        legalize(graph, proposal, f32_testbed.devices, support)
    with pytest.raises(oa.UnsupportedOpError, match="cannot run it"):
        legalize(graph, proposal, f32_testbed.devices, support, pins=[Pin("CPU", name="stem")])


def test_bad_proposals(f32_testbed):
    graph, support = _setup(sg.residual(), f32_testbed)
    with pytest.raises(oa.PlacementError, match="shape"):
        legalize(graph, np.zeros(3, dtype=int), f32_testbed.devices, support)
    with pytest.raises(oa.PlacementError, match="device index 7"):
        legalize(graph, np.full(graph.num_nodes, 7), f32_testbed.devices, support)
    with pytest.raises(oa.PlacementError, match="max_submodels"):
        legalize(graph, np.random.default_rng(0).integers(0, 2, graph.num_nodes), f32_testbed.devices, support,
                 max_submodels=0)


@pytest.mark.parametrize("bound", [1, 2, 4])
def test_submodel_bound(f32_testbed, bound):
    graph, support = _setup(sg.attention_like(), f32_testbed)
    proposal = np.random.default_rng(3).integers(0, 2, graph.num_nodes)
    placement = legalize(graph, proposal, f32_testbed.devices, support, max_submodels=bound)
    assert placement.num_submodels <= bound
    compute = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    device = np.array([f32_testbed.devices.index(placement.device_of(n)) for n in graph.names])
    assert submodel_partition(graph, device, compute).num_submodels == placement.num_submodels  # HETERO's count


def test_bound_holds_for_what_hetero_compiles_and_keeps_a_split(f32_testbed):
    """Matrix multiplies on one device, everything else on the other: every attention and MLP block feeds the
    first device back, so HETERO compiles far more submodels than there are islands. With a bound of 8 the
    legalizer must still split (merging whole islands alone collapsed such graphs onto one device), and HETERO
    must compile exactly the count the placement reports."""
    model = sg.attention_like(layers=3)
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    support = query_support(f32_testbed.core, prepared, graph, f32_testbed.devices)
    proposal = np.array([1 if op == "MatMul" else 0 for op in graph.op_types])
    free = legalize(graph, proposal, f32_testbed.devices, support)
    bounded = legalize(graph, proposal, f32_testbed.devices, support, max_submodels=8)
    assert free.num_submodels > 8 >= bounded.num_submodels > 1
    assert min(bounded.counts_per_device().values()) > 0
    assert hetero_subgraphs(f32_testbed.core, prepared, bounded) == bounded.num_submodels


def test_islands_sharing_a_parameter_are_one_submodel_and_are_not_merged(f32_testbed):
    """Five relu islands on the first device share the input: HETERO compiles them as one submodel, so with the
    sigmoids' submodel the placement is 2 submodels and a bound of 3 keeps it (the islands, 6, once had it
    merged) - checked by compiling it."""
    model = prepare_model(sg.shared_input(branches=5))
    graph, support = _setup(model, f32_testbed)
    proposal = np.array([0 if op == "Relu" else 1 for op in graph.op_types])
    placement = legalize(graph, proposal, f32_testbed.devices, support, max_submodels=3)
    compute = graph.role == NodeRole.COMPUTE
    assert np.array_equal(placement.device_indices(graph.names, f32_testbed.devices)[compute], proposal[compute])
    assert placement.num_submodels == 2 == hetero_subgraphs(f32_testbed.core, model, placement)
    assert not any("merged" in note for note in placement.notes)
    merged = legalize(graph, proposal, f32_testbed.devices, support, max_submodels=1)
    assert merged.num_submodels == 1 and len(set(merged.assignment[n] for n in merged.compute_nodes)) == 1


@pytest.mark.parametrize("bound", [1, 2, 3, 8])
def test_legalize_is_idempotent_on_its_own_output(f32_testbed, bound):
    """A cached placement is legalised again on every start (``legality_check.ensure_legal``); were the legalizer
    to move any node of its own output, the placement that runs would not be the one measured and cached."""
    rng = np.random.default_rng(bound)
    for make in (sg.shared_input, sg.branching, sg.residual, sg.attention_like):
        model = prepare_model(make())
        graph, support = _setup(model, f32_testbed)
        for k in range(12):
            if k % 2:  # contiguous blocks in topological order, as strategies propose
                proposal = np.cumsum(rng.random(graph.num_nodes) < 0.15) % 2
            else:
                proposal = rng.integers(0, 2, graph.num_nodes)
            once = legalize(graph, proposal, f32_testbed.devices, support, max_submodels=bound)
            twice = legalize(graph, once.device_indices(graph.names, f32_testbed.devices), f32_testbed.devices, support,
                             max_submodels=bound)
            assert twice.assignment == once.assignment, f"{make.__name__}, proposal {k}"
            assert twice.num_submodels == once.num_submodels <= bound
            assert not any("merged" in note for note in twice.notes)


@pytest.mark.slow
@pytest.mark.zoo
def test_legalize_is_idempotent_on_the_policys_decodings_of_a_detector():
    """Where islands and submodels differ most: FCOS's heads share their inputs, so one of its placements can
    have 72 islands and 16 submodels. The shipped policy's decodings on the suite platforms (simulated op
    support: the NPU's gaps raise the bound) are where a legalised placement was once merged again."""
    if not zoo_available():
        pytest.skip("zoo extras not installed: pip install -e '.[zoo]'")
    from ov_autoplace_lab import models as zoo
    from ov_autoplace.costmodel.sim_costs import simulated_support
    from ov_autoplace.costmodel.suite import load_suite
    from ov_autoplace_lab.training.decoding import offset_decodings
    from ov_autoplace.policy.numpy_policy import NumpyHSDAGPolicy
    from ov_autoplace.policy.pretrained import PRETRAINED_POLICY

    graph = extract_graph(prepare_model(zoo.load("fcos_detector")))
    policy = NumpyHSDAGPolicy.load(PRETRAINED_POLICY)
    for name, platform in load_suite().items():
        cost = platform.cost_model(graph)
        support, devices = simulated_support(cost, graph), tuple(platform.device_names)
        output = policy.forward(policy.inputs(graph, cost, None))
        for k, groups in enumerate([output.logits.argmax(1), *offset_decodings(output.logits, 16)]):
            once = legalize(graph, groups[output.node_group], devices, support, max_submodels=8)
            twice = legalize(graph, once.device_indices(graph.names, devices), devices, support, max_submodels=8)
            moved = sum(twice.assignment[n] != once.assignment[n] for n in graph.names)
            assert moved == 0, f"{name}, decoding {k}: {moved} node(s) moved when legalised again"


def _assert_random_placements_match(model, testbed, count, seed0=0):
    """Compile `count` random legalized placements; each must match the CPU f32 reference."""
    reference = testbed.core.compile_model(model, "CPU")
    inputs = random_inputs(reference, seed=1)
    expected = reference(inputs)
    for k in range(count):
        # Mix the hardest case (per-node random, unbounded) with contiguous
        # splits and bounded per-node placements, which the tool produces.
        mode = "node" if k % 3 != 1 else "contiguous"
        bound = None if k % 3 == 0 else 6
        strategy = RandomStrategy(seed=seed0 + k, mode=mode)
        placement = oa.place(model, testbed.hetero, core=testbed.core, strategy=strategy, max_submodels=bound)
        compiled = oa.compile_placement(model, placement, core=testbed.core)
        got = compiled(inputs)
        for out in range(len(reference.outputs)):
            want, have = expected[out], got[out]
            scale = float(np.max(np.abs(want))) or 1.0
            err = float(np.max(np.abs(have.astype(np.float64) - want.astype(np.float64)))) / scale
            assert err <= REL_TOL, (
                f"placement {k} ({strategy!r}, bound {bound}, {placement.num_submodels} submodels, "
                f"{placement.counts_per_device()}): relative error {err:.2e} > {REL_TOL}"
            )


@pytest.mark.parametrize("name", sorted(sg.PLACEMENT_GRAPHS))
def test_random_placements_synthetic(f32_testbed, name):
    _assert_random_placements_match(sg.PLACEMENT_GRAPHS[name](), f32_testbed, count=25)


@pytest.mark.slow
@pytest.mark.zoo
def test_random_placements_zoo(f32_testbed, zoo_model):
    # 12, not the synthetic graphs' 25: four of each kind (per node unbounded, contiguous, per node bounded) on
    # graphs of 500-1500 nodes, where one compile of BERT-base's unbounded split takes ~3 s of CI
    name, model = zoo_model
    _assert_random_placements_match(model, f32_testbed, count=12)
