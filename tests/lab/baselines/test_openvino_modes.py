"""OpenVINO's own modes as strategies: read from OpenVINO on the testbed, emulated on absent devices."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ov_autoplace.costmodel.platforms import PLATFORMS
from ov_autoplace.costmodel.sim_costs import cost_model_for
from ov_autoplace.graph.arrays import NodeRole, extract_graph
from ov_autoplace.placement.legalizer import query_support
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.strategies.base import PlacementContext
from ov_autoplace_lab.baselines.openvino_modes import (
    OpenVINOAutoStrategy,
    OpenVINOHeteroAutoStrategy,
    OpenVINOPipelineParallelStrategy,
    _devices_present,
)
from tests import synthetic_graphs as sg

SIM_DEVICES = ("CPU", "GPU", "NPU")  # the laptop platform's names; absent on this machine
NPU_LACKS = "ReduceMean"


@pytest.fixture(scope="module")
def residual():
    prepared = prepare_model(sg.residual())
    return prepared, extract_graph(prepared)


def real_context(testbed, residual, devices=None):
    prepared, graph = residual
    devices = tuple(devices or testbed.devices)
    support = query_support(testbed.core, prepared, graph, devices)
    return PlacementContext(graph=graph, devices=devices, support=support, core=testbed.core, model=prepared)


def sim_context(graph, devices=SIM_DEVICES, npu_lacks=(NPU_LACKS,), gpu_lacks=()):
    """Support as the laptop would report it: the NPU (and optionally the GPU) cannot run some op types."""
    support = np.ones((graph.num_nodes, len(devices)), dtype=bool)
    compute = graph.role == NodeRole.COMPUTE
    for name, lacks in (("NPU", npu_lacks), ("GPU", gpu_lacks)):
        if name in devices:
            blocked = np.isin(np.array(graph.op_types), list(lacks)) & compute
            support[blocked, devices.index(name)] = False
    return PlacementContext(graph=graph, devices=tuple(devices), support=support, core=None)


def laptop_cost(graph, devices, capacity_fraction):
    """The simulated laptop CostModel, with every capacity set to ``fraction x`` the model's weights."""
    cost = cost_model_for(graph, PLATFORMS["laptop"])
    cols = [cost.devices.index(d) for d in devices]
    total = float(cost.node_memory_bytes.sum())
    assert total > 0
    caps = np.array([total * f for f in capacity_fraction], dtype=np.float64)
    full = np.asarray(cost.device_memory_bytes, np.float64).copy()
    full[cols] = caps
    return dataclasses.replace(cost, device_memory_bytes=full), total


def compute_devices(context, proposal):
    return proposal[context.graph.role == NodeRole.COMPUTE]


# --- real: read from OpenVINO on the testbed ---------------------------------------------------------

@pytest.mark.parametrize("order", [None, ("CPUF", "CPU")])
def test_hetero_auto_matches_query_model(testbed, residual, order):
    context = real_context(testbed, residual, order)
    strategy = OpenVINOHeteroAutoStrategy()
    proposal = strategy.propose(context)
    mapping = testbed.core.query_model(context.model, "HETERO:" + ",".join(context.devices))
    expected = [context.devices.index(mapping[name]) for name in context.graph.names]
    assert proposal.tolist() == expected
    assert proposal.tolist() == [0] * context.graph.num_nodes  # both CPUs run everything: the first takes all
    assert strategy.last_emulated is False
    assert strategy.openvino_compile(context.devices) == ("HETERO:" + ",".join(context.devices), {})


@pytest.mark.parametrize("order,expected", [(None, "CPU"), (("CPUF", "CPU"), "CPUF")])
def test_auto_choice_is_a_testbed_device(testbed, residual, order, expected):
    """An explicit candidate list keeps its order within a device class (both testbed devices are CPUs)."""
    context = real_context(testbed, residual, order)
    strategy = OpenVINOAutoStrategy()
    proposal = strategy.propose(context)
    assert strategy.last_choice in testbed.devices and strategy.last_choice == expected
    assert strategy.last_emulated is False
    assert (proposal == context.devices.index(expected)).all()
    assert strategy.openvino_compile(context.devices) == ("AUTO:" + ",".join(context.devices),
                                                          {"PERFORMANCE_HINT": "LATENCY"})


def test_pipeline_parallel_real_is_a_valid_placement(testbed, residual):
    context = real_context(testbed, residual)
    strategy = OpenVINOPipelineParallelStrategy()
    proposal = strategy.propose(context)
    assert proposal.shape == (context.graph.num_nodes,) and proposal.dtype == np.int64
    assert ((proposal >= 0) & (proposal < len(context.devices))).all()
    assert strategy.last_emulated is False
    mapping = testbed.core.query_model(context.model, "HETERO:CPU,CPUF", {"MODEL_DISTRIBUTION_POLICY": "PIPELINE_PARALLEL"})
    assert proposal.tolist() == [context.devices.index(mapping[n]) for n in context.graph.names]
    assert strategy.openvino_compile(("CPU", "CPUF")) == ("HETERO:CPU,CPUF", {"MODEL_DISTRIBUTION_POLICY": "PIPELINE_PARALLEL"})


# --- emulated: simulated platforms ------------------------------------------------------------------

def test_hetero_auto_emulation_is_device_priority(residual):
    _, graph = residual
    context = sim_context(graph, ("NPU", "GPU", "CPU"))
    strategy = OpenVINOHeteroAutoStrategy()
    proposal = strategy.propose(context)
    assert strategy.last_emulated is True
    blocked = np.array([t == NPU_LACKS for t in graph.op_types]) & (graph.role == NodeRole.COMPUTE)
    assert blocked.any() and (proposal[blocked] == 1).all()  # the NPU cannot: the next device, GPU
    assert (proposal[~blocked] == 0).all()
    assert (strategy.propose(sim_context(graph)) == 0).all()  # CPU first: it runs everything


def test_auto_emulation_follows_the_default_priority(residual):
    _, graph = residual
    strategy = OpenVINOAutoStrategy()
    assert strategy.openvino_compile(SIM_DEVICES)[0] == "AUTO:GPU,NPU,CPU"
    proposal = strategy.propose(sim_context(graph))
    assert strategy.last_emulated is True and strategy.last_choice == "GPU"
    assert (proposal == SIM_DEVICES.index("GPU")).all()
    # The GPU cannot compile the model: AUTO falls back to the next candidate, the NPU lacks an op too: CPU.
    strategy.propose(sim_context(graph, gpu_lacks=("Relu",)))
    assert strategy.last_choice == "CPU"
    strategy.propose(sim_context(graph, ("CPU", "NPU"), npu_lacks=()))
    assert strategy.last_choice == "NPU"
    dgpu = OpenVINOAutoStrategy(discrete_gpus=("GPU.1",))
    dgpu.propose(sim_context(graph, ("CPU", "GPU.0", "GPU.1")))
    assert dgpu.last_choice == "GPU.1"
    listed = OpenVINOAutoStrategy(order="listed")
    listed.propose(sim_context(graph))
    assert listed.last_choice == "CPU" and listed.openvino_compile(SIM_DEVICES)[0] == "AUTO:CPU,GPU,NPU"
    with pytest.raises(ValueError, match="order"):
        OpenVINOAutoStrategy(order="fastest")


def test_pipeline_emulation_without_memory_limits_puts_everything_on_the_first_device(residual):
    _, graph = residual
    context = sim_context(graph, ("GPU", "NPU", "CPU"))
    for strategy in (OpenVINOPipelineParallelStrategy(),  # no CostModel: no capacity known
                     OpenVINOPipelineParallelStrategy(laptop_cost(graph, ("GPU", "NPU", "CPU"), (10, 10, 10))[0])):
        proposal = strategy.propose(context)
        assert strategy.last_emulated is True
        assert (compute_devices(context, proposal) == 0).all()


def test_pipeline_emulation_cuts_contiguous_stages_in_priority_order(residual):
    _, graph = residual
    devices = ("CPU", "GPU", "NPU")
    cost, total = laptop_cost(graph, devices, (0.5, 0.5, 0.5))  # together they hold 1.2 x the weights
    context = sim_context(graph, devices, npu_lacks=())
    strategy = OpenVINOPipelineParallelStrategy(cost, memory_rule="all")
    stages = compute_devices(context, strategy.propose(context))
    assert set(stages.tolist()) == {0, 1, 2}
    assert (np.diff(stages) >= 0).all()  # contiguous stages along the topological order
    weights = cost.node_memory_bytes[graph.role == NodeRole.COMPUTE]
    for d in (0, 1):  # a non-last stage holds at most capacity / 1.2 bytes of weights
        assert weights[stages == d].sum() <= 0.5 * total / 1.2
    assert weights[stages == 0].sum() > 0.25 * total  # ... and is filled, not left nearly empty
    assert "stages ['CPU', 'GPU', 'NPU']" in strategy.last_note


def test_pipeline_emulation_uses_openvinos_memory_knowledge(residual):
    """OpenVINO reads only a GPU's memory: the CPU takes everything, the NPU everything it supports."""
    _, graph = residual
    cost, _ = laptop_cost(graph, SIM_DEVICES, (0.01, 0.01, 0.01))
    strategy = OpenVINOPipelineParallelStrategy(cost)
    context = sim_context(graph)
    assert (compute_devices(context, strategy.propose(context)) == 0).all()  # CPU first: assumed big enough

    order = ("GPU", "NPU", "CPU")
    cost, _ = laptop_cost(graph, order, (0.3, 0.01, 0.01))
    context = sim_context(graph, order)
    stages = compute_devices(context, OpenVINOPipelineParallelStrategy(cost).propose(context))
    gpu = np.flatnonzero(stages == 0)
    assert gpu.size > 0 and (gpu == np.arange(gpu.size)).all()  # a prefix in topological order
    blocked = np.array([t == NPU_LACKS for t in graph.op_types])[graph.role == NodeRole.COMPUTE]
    after = np.arange(stages.size) >= gpu.size
    assert (stages[after & ~blocked] == 1).all()  # the NPU takes all it runs: no capacity reported
    assert (stages[after & blocked] == 2).all()  # the rest falls to the CPU


def test_pipeline_rejects_bad_arguments():
    with pytest.raises(ValueError, match="memory_rule"):
        OpenVINOPipelineParallelStrategy(memory_rule="fastest")
    with pytest.raises(ValueError, match="headroom"):
        OpenVINOPipelineParallelStrategy(headroom=0.5)


def test_the_real_compile_is_asked_only_where_every_device_is_present(testbed):
    assert _devices_present(testbed.core, testbed.devices)
    assert not _devices_present(testbed.core, ("CPU", "GPU"))
    assert not _devices_present(None, ("CPU",))
