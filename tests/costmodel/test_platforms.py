"""Simulated platforms: the roofline of known ops, NPU support, precision fallback,
post-op fusion and labels (calibration: tests/lab/calibration/test_host_cpu.py)."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from ov_autoplace.costmodel.platforms import LAPTOP_PLATFORM, PAPER_PLATFORM
from ov_autoplace.costmodel.sim_costs import cost_model_for, post_op_fusion
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.costmodel.anchors import AnchorFixer
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg

SEQ, HIDDEN = 128, 768


def _matmul_graph():
    x = ops.parameter([1, SEQ, HIDDEN], np.float32, name="x")
    y = ops.matmul(x, ops.constant(np.ones((HIDDEN, HIDDEN), np.float32)), False, False)
    y.set_friendly_name("mm")
    return extract_graph(prepare_model(ov.Model([y], [x], "matmul")))


def test_roofline_of_a_matmul():
    graph = _matmul_graph()
    i = graph.names.index("mm")
    flops = 2 * SEQ * HIDDEN * HIDDEN
    f32_bytes = 4 * (SEQ * HIDDEN + HIDDEN * HIDDEN + SEQ * HIDDEN)  # activation in, weight in, activation out
    cost = cost_model_for(graph, PAPER_PLATFORM, precision="f16", fusion=False)
    cpu, gpu = PAPER_PLATFORM.devices
    # i9 runs f16 requests in f32 on its AVX2 units: 1.254 TFLOP/s at 60 % -> compute-bound
    cpu_ms = cpu.launch_overhead_ms + 1e3 * max(flops / (8 * 32 * 4.9e9 * 0.6), f32_bytes / (76.8e9 * 0.6))
    # Flex 170 runs f16 on XMX (134 TFLOP/s at 55 %), half the bytes (576 GB/s at 60 %) -> memory-bound
    gpu_ms = gpu.launch_overhead_ms + 1e3 * max(flops / (512 * 128 * 2.05e9 * 0.55), f32_bytes / 2 / (576e9 * 0.6))
    assert cost.compute_ms[i].tolist() == pytest.approx([cpu_ms, gpu_ms])
    assert gpu_ms - gpu.launch_overhead_ms == pytest.approx(1e3 * f32_bytes / 2 / (576e9 * 0.6))
    assert cost.node_memory_bytes[i] == 4 * HIDDEN * HIDDEN  # the weight sits on its MatMul
    assert cost.compute_ms[graph.names.index("x")].tolist() == [0.0, 0.0]  # Parameters cost nothing
    assert cost.link_ms_per_byte[0, 1] == pytest.approx(1e3 / 25e9)  # PCIe 4.0 x16, ~25 GB/s effective


def test_precision_fallback():
    graph = _matmul_graph()
    i = graph.names.index("mm")
    f16 = cost_model_for(graph, LAPTOP_PLATFORM, precision="f16")
    f32 = cost_model_for(graph, LAPTOP_PLATFORM, precision="f32")
    cpu, gpu, npu = (f16.devices.index(name) for name in ("CPU", "GPU", "NPU"))
    assert f16.compute_ms[i, cpu] == f32.compute_ms[i, cpu]  # no native f16 on the CPU: it runs f32
    assert f16.compute_ms[i, npu] == f32.compute_ms[i, npu]  # no f32 on the NPU: it runs f16
    assert f16.compute_ms[i, gpu] < f32.compute_ms[i, gpu]
    with pytest.raises(ValueError, match="precision"):
        cost_model_for(graph, LAPTOP_PLATFORM, precision="fp8")


def test_npu_does_not_run_unsupported_ops():
    ids = ops.parameter([1, 16], np.int64, name="ids")
    table = ops.constant(np.ones((100, 32), np.float32))
    emb = ops.gather(table, ids, ops.constant(np.int64(0)))
    emb.set_friendly_name("embedding")
    out = ops.matmul(emb, ops.constant(np.ones((32, 32), np.float32)), False, False)
    out.set_friendly_name("proj")
    graph = extract_graph(prepare_model(ov.Model([out], [ids], "embed")))
    cost = cost_model_for(graph, LAPTOP_PLATFORM)
    npu = cost.devices.index("NPU")
    assert cost.compute_ms[graph.names.index("embedding"), npu] == np.inf
    assert np.isfinite(cost.compute_ms[graph.names.index("proj"), npu])
    assert np.isfinite(cost.compute_ms[graph.names.index("embedding"), :npu]).all()
    sim = Simulator(cost, graph)
    all_npu = np.full(graph.num_nodes, npu)
    assert sim(AnchorFixer(graph, 3)(all_npu)) == np.inf
    moved = AnchorFixer(graph, 3, np.isfinite(cost.compute_ms))(all_npu)
    assert moved[graph.names.index("embedding")] == 0 and moved[graph.names.index("proj")] == npu
    assert np.isfinite(sim(moved))


def test_post_op_fusion_rule():
    graph = extract_graph(prepare_model(sg.residual(blocks=1)))
    fused = post_op_fusion(graph)
    for i in np.flatnonzero(fused >= 0):
        assert graph.op_types[fused[i]] == "Convolution"
        assert graph.op_types[i] in ("Add", "Relu")
    residual_adds = [i for i in range(graph.num_nodes) if graph.op_types[i] == "Add"
                     and all(graph.op_types[p] != "Constant" for p in graph.predecessors(i))]
    assert residual_adds and all(fused[i] < 0 for i in residual_adds)  # two activations in: not a post-op
    relus = [i for i in range(graph.num_nodes) if graph.op_types[i] == "Relu"]
    assert any(fused[i] >= 0 for i in relus)
    cost = cost_model_for(graph, PAPER_PLATFORM)
    members = fused >= 0
    assert (cost.compute_ms[members] == 0).all() and (cost.unfused_ms[members] > 0).all()
    assert (cost_model_for(graph, PAPER_PLATFORM, fusion=False).fused_into == -1).all()


@pytest.mark.parametrize("platform", [PAPER_PLATFORM, LAPTOP_PLATFORM], ids=["paper", "laptop"])
def test_everything_printed_says_simulated(platform):
    graph = extract_graph(prepare_model(sg.attention_like()))
    cost = cost_model_for(graph, platform)
    assert cost.simulated and cost.label.startswith("simulated (") and platform.name in cost.label
    lines = platform.describe().splitlines()
    assert "simulated" in lines[0] and all("simulated" in line for line in lines[1:1 + len(platform.devices)])
    sim = Simulator(cost, graph)
    placement = AnchorFixer(graph, len(cost.devices))(np.zeros(graph.num_nodes, np.int64))
    assert "simulated" in sim.breakdown(placement).summary()
