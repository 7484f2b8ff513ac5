"""The prior cost model: device facts read from OpenVINO, simulated columns, indistinguishable devices."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ov_autoplace.costmodel.prior_costs import (PRIOR_SPLIT_MARGIN, PRIOR_SPLIT_MARGIN_RECOGNIZED, DeviceFacts,
                                          indistinguishable, normalized_device_name,
                                          predicted_single_ms, prior_cost_model, prior_device, read_device_facts,
                                          recognize_devices, _calibrated)
from ov_autoplace.costmodel.suite import load_suite
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from tests import synthetic_graphs as sg


def _graph():
    return extract_graph(prepare_model(sg.residual()))


def test_facts_are_read_from_the_device(testbed):
    facts = read_device_facts(testbed.core, "CPUF")
    assert facts.kind == "cpu" and facts.reported
    assert facts.device_type and facts.architecture and "FP32" in facts.capabilities
    assert facts.precision == "f32" and facts.threads and facts.threads >= 1
    cpu = read_device_facts(testbed.core, "CPU")
    assert cpu.precision == ("bf16" if testbed.bf16 else "f32")
    # the testbed's two devices differ only where the CPU has bf16
    assert indistinguishable([cpu, facts]) == (not testbed.bf16)


def test_the_fast_paths_identity_test_agrees_with_the_priors(testbed, thread_core):
    """identical_devices (the first start's few reads) and indistinguishable (the prior's facts) must agree."""
    from ov_autoplace.devices.facts import identical_devices

    for core, devices in ((testbed.core, ("CPU", "CPUF")), (testbed.core, ("CPUF", "CPUF")),
                          (thread_core, ("CPUS", "CPU")), (thread_core, ("CPU", "CPU"))):
        facts = [read_device_facts(core, d) for d in devices]
        assert identical_devices(core, devices) == indistinguishable(facts), devices


def test_fewer_threads_are_predicted_slower(thread_core):
    facts = [read_device_facts(thread_core, d) for d in ("CPUS", "CPU")]
    assert not indistinguishable(facts)
    prior = prior_cost_model(_graph(), facts)
    assert prior.cost.simulated and "prior" in prior.cost.label and "simulated" in prior.cost.label
    singles = predicted_single_ms(prior.cost)
    assert singles["CPUS"] > singles["CPU"]


def test_identical_facts_give_identical_columns(testbed):
    facts = read_device_facts(testbed.core, "CPUF")
    twin = dataclasses.replace(facts, name="CPUG")
    assert indistinguishable([facts, twin])
    prior = prior_cost_model(_graph(), [facts, twin])
    np.testing.assert_array_equal(prior.cost.compute_ms[:, 0], prior.cost.compute_ms[:, 1])


_XEON = "vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\ncpu MHz\t\t: 2000.000\nflags\t\t: {}\n\n"
_AVX512_BF16 = "fpu sse sse2 avx avx2 fma avx512f avx512bw avx512_vnni avx512_bf16"


def test_bf16_is_a_rate_only_with_amx():
    """AVX512-BF16 alone ran OpenVINO's bf16 2x faster than f32 on one CPU and 1.6x slower on another: no bf16
    rate, a bf16 request is modelled as f32."""
    from ov_autoplace.costmodel.sim_costs import host_cpu_device

    plain = host_cpu_device(2, cpuinfo=_XEON.format(_AVX512_BF16))
    assert "bf16" not in plain.peak_flops and "bf16" not in plain.matrix_peak_flops
    assert plain.precision_for("bf16") == "f32" and plain.matrix_peak_flops == {"int8": 4 * plain.peak_flops["f32"]}
    amx = host_cpu_device(2, cpuinfo=_XEON.format(_AVX512_BF16 + " amx_tile amx_bf16 amx_int8"))
    assert amx.precision_for("bf16") == "bf16" and amx.peak_flops["bf16"] == 2 * amx.peak_flops["f32"]
    assert amx.matrix_peak_flops["bf16"] > amx.peak_flops["bf16"]
    assert amx.peak_flops["f32"] == plain.peak_flops["f32"]


def test_a_bf16_cpu_without_amx_is_predicted_as_fast_as_its_f32_twin(testbed):
    """The testbed on such a CPU: the prior predicts no gain for the bf16 CPU (it had predicted 2x, and it measured
    1.6x slower on one such CPU); with AMX it still predicts the bf16 CPU faster."""
    from ov_autoplace.costmodel.sim_costs import host_cpu_device

    f32 = read_device_facts(testbed.core, "CPUF")
    bf16 = dataclasses.replace(f32, name="CPU", precision="bf16", capabilities=f32.capabilities + ("BF16",))
    graph = _graph()
    for flags, equal in ((_AVX512_BF16, True), (_AVX512_BF16 + " amx_bf16", False)):
        spec = host_cpu_device(f32.threads, cpuinfo=_XEON.format(flags))
        singles = predicted_single_ms(prior_cost_model(graph, [bf16, f32], cpu_spec=spec).cost)
        assert (singles["CPU"] == pytest.approx(singles["CPUF"], rel=1e-12)) == equal, (flags, singles)
        assert singles["CPU"] <= singles["CPUF"]


def test_a_device_reporting_nothing_is_unknown():
    blank = DeviceFacts("XPU", None, None, None, None, (), (), None, None, None)
    assert not blank.reported and prior_device(blank) is None
    prior = prior_cost_model(_graph(), [blank])
    assert prior.cost is None and prior.unknown == ("XPU",)
    assert not indistinguishable([blank, dataclasses.replace(blank, name="YPU")]), "knowing nothing is not 'equal'"


def _gpu_facts(device_type="Type.DISCRETE", gops=(("f16", 20000.0), ("f32", 10000.0), ("int8", 40000.0))):
    return DeviceFacts("GPU", "openvino_intel_gpu_plugin", device_type, "GPU: vendor=0x8086", "Intel Arc",
                       ("FP32", "FP16", "INT8"), gops, 8e9, "f16", None)


def test_gpu_facts_take_reported_gops_and_memory_on_a_calibrated_gpu():
    gpu = _gpu_facts()
    device = prior_device(gpu)
    assert device.spec.kind == "gpu" and device.spec.peak_flops["f32"] == 1e13 and device.spec.memory_bytes == 8e9
    assert device.fitted and device.calibration_key == "paper/GPU", "a discrete GPU is modelled on the Flex 170 fit"
    fitted = load_suite()["paper"].device("GPU").terms
    assert device.terms == dataclasses.replace(fitted, category_scale={}), "fitted at int8; asked f16: no category scale"
    at_int8 = prior_device(dataclasses.replace(gpu, precision="int8"))
    assert at_int8.terms == fitted and at_int8.terms.category_scale, "at the fitted precision: every fitted term"
    integrated = prior_device(_gpu_facts("Type.INTEGRATED"))
    assert integrated.calibration_key == "laptop/GPU" and integrated.spec.shares_host_memory
    cpu = DeviceFacts("CPU", "openvino_intel_cpu_plugin", "Type.INTEGRATED", "intel64", "host", ("FP32",), (), None,
                      "f32", 2)
    big = extract_graph(prepare_model(sg.residual(channels=64, size=64)))  # compute-bound, not launch-bound
    singles = predicted_single_ms(prior_cost_model(big, [gpu, cpu]).cost)
    assert singles["GPU"] < singles["CPU"], "a 10 TFLOP/s GPU is predicted faster than 2 CPU cores"
    tiny = predicted_single_ms(prior_cost_model(_graph(), [gpu, cpu]).cost)
    assert tiny["GPU"] / tiny["CPU"] > singles["GPU"] / singles["CPU"], "dispatch weighs more on a tiny model"


def test_cpu_terms_are_the_calibrated_cpus_and_leave_one_out_drops_a_platform():
    cpu = DeviceFacts("CPU", "openvino_intel_cpu_plugin", "Type.INTEGRATED", "intel64", "host", ("FP32",), (), None,
                      "f32", 2)
    both = prior_device(cpu)
    assert both.fitted and set(both.calibration_key.split("+")) == {"paper/CPU", "laptop/CPU"}
    suite = load_suite()
    lo, hi = sorted([suite["paper"].device("CPU").terms.dispatch_ms, suite["laptop"].device("CPU").terms.dispatch_ms])
    assert lo <= both.terms.dispatch_ms <= hi, "a geometric mean lies between its values"
    without_paper = prior_device(cpu, exclude_platforms=("paper",))
    assert without_paper.calibration_key == "laptop/CPU"
    assert without_paper.terms == dataclasses.replace(suite["laptop"].device("CPU").terms, category_scale={})
    gpu = prior_device(_gpu_facts(), exclude_platforms=("paper",))
    assert gpu.calibration_key == "laptop/GPU", "no discrete GPU left: the integrated one, not nothing"
    assert all(d.calibration_key.split("/")[0] != "laptop" for d, _ in _calibrated(("laptop",)))
    assert prior_device(_gpu_facts(), exclude_platforms=("paper", "laptop")).fitted is False, "unfitted prior terms"


def test_a_npu_keeps_its_op_support():
    npu = DeviceFacts("NPU", "openvino_intel_npu_plugin", "Type.INTEGRATED", "3720", "Intel AI Boost", ("FP16",),
                      (), None, "f16", None)
    device = prior_device(npu)
    assert device.calibration_key == "laptop/NPU" and device.spec.supported_op_types is not None
    cost = prior_cost_model(_graph(), [npu]).cost
    assert cost.simulated and "prior" in cost.source


def _laptop_facts(cpu="Intel(R) Core(TM) Ultra 7 165H", gpu="Intel(R) Arc(TM) Graphics (iGPU)",
                  npu="Intel(R) AI Boost"):
    """What a Core Ultra 7 165H laptop's devices report (FULL_DEVICE_NAME as OpenVINO gives it)."""
    return [DeviceFacts("CPU", "openvino_intel_cpu_plugin", "Type.INTEGRATED", "intel64", cpu, ("FP32", "INT8"), (),
                        None, "f32", None),
            DeviceFacts("GPU", "openvino_intel_gpu_plugin", "Type.INTEGRATED", "GPU: vendor=0x8086", gpu,
                        ("FP32", "FP16", "INT8"), (("f16", 9000.0), ("f32", 4600.0)), 16e9, "f16", None),
            DeviceFacts("NPU", "openvino_intel_npu_plugin", "Type.INTEGRATED", "3720", npu, ("FP16",), (), None,
                        "f16", None)]


def test_device_names_are_normalized_before_matching():
    assert normalized_device_name("12th Gen Intel(R) Core(TM) i9-12900K") == "12th gen intel core i9 12900k"
    assert normalized_device_name("Intel(R) Data Center GPU Flex 170 (dGPU)") == "intel data center gpu flex 170 dgpu"


def test_a_calibrated_laptop_is_recognized_and_modelled_by_its_own_fit():
    facts = [dataclasses.replace(f, precision="int8") for f in _laptop_facts()]  # the calibrated precision
    found = recognize_devices(facts)
    assert [m[0].calibration_key for m in found] == ["laptop/CPU", "laptop/GPU", "laptop/NPU"]
    prior = prior_cost_model(_graph(), facts)
    assert prior.recognized == ("CPU", "GPU", "NPU") and prior.margin == PRIOR_SPLIT_MARGIN_RECOGNIZED
    laptop = load_suite()["laptop"]
    truth, predicted = predicted_single_ms(laptop.cost_model(_graph())), predicted_single_ms(prior.cost)
    assert predicted == pytest.approx(truth, rel=1e-9), "each device is its own fitted model, not a mean"
    assert "Core Ultra 7 155H" in prior.cost.source and prior.cost.simulated


def test_shared_names_and_other_chips_are_not_recognized():
    # every Core Ultra NPU reports "Intel(R) AI Boost": without its platform's CPU it is not the calibrated one
    alone = _laptop_facts()[2:]
    assert recognize_devices(alone) == [None]
    prior = prior_cost_model(_graph(), alone)
    assert prior.recognized == () and prior.margin == PRIOR_SPLIT_MARGIN
    other = _laptop_facts(cpu="Intel(R) Core(TM) Ultra 5 125H")  # 4 P-cores, not the calibrated 6
    assert recognize_devices(other) == [None, None, None]
    assert prior_cost_model(_graph(), other).margin == PRIOR_SPLIT_MARGIN
    left_out = prior_cost_model(_graph(), _laptop_facts(), exclude_platforms=("laptop",))
    assert left_out.recognized == () and left_out.margin == PRIOR_SPLIT_MARGIN, "leave-platform-out knows none"
    # one recognized device is not enough: the margin covers the least known device
    partly = prior_cost_model(_graph(), [_laptop_facts()[0], _gpu_facts()])
    assert partly.recognized == ("CPU",) and partly.margin == PRIOR_SPLIT_MARGIN


def test_a_recognized_discrete_gpu_needs_no_host_cpu():
    flex = dataclasses.replace(_gpu_facts(), full_name="Intel(R) Data Center GPU Flex 170 (dGPU)")
    found = recognize_devices([flex])
    assert found[0][0].calibration_key == "paper/GPU"
