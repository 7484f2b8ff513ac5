"""A decoder's headroom row (``paper_bench/decoder_rows.py``): every method priced on the whole generation, the KV
cache charged against device memory, the prior and the first start, TTFT and per-token latency per placement."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from ov_autoplace.costmodel.device_model import Batch1Terms, ModelDevice, SuitePlatform
from ov_autoplace.costmodel.platforms import ARC_IGPU_155H, CORE_ULTRA_7_155H
from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace_lab.models.decoder_models import TINY, build_decoder
from ov_autoplace_lab.paper_bench import decoder_rows, truth
from ov_autoplace_lab.paper_bench.headroom import headroom_row

pytest.importorskip("scipy")

TERMS = dict(dispatch_ms=0.002, occupancy_mflop=1.0, compute_scale=1.0, memory_scale=1.0, submodel_ms=0.05,
             link_latency_ms=0.01, link_gbps=60.0)
METHODS = ("Optimum (MILP)", "HEFT", "HSDAG (pretrained, one pass)", "HSDAG (pretrained, one pass) + local search")


def _gpu_cpu(gpu_bytes: float) -> SuitePlatform:
    """An iGPU of ``gpu_bytes`` memory (listed first: the plain call's device) and the CPU."""
    gpu = ModelDevice(dataclasses.replace(ARC_IGPU_155H, memory_bytes=gpu_bytes), Batch1Terms(**TERMS))
    cpu = ModelDevice(CORE_ULTRA_7_155H, Batch1Terms(**{**TERMS, "link_gbps": math.inf, "link_latency_ms": 0.0}))
    return SuitePlatform("gpu_cpu_test", "iGPU + CPU", (gpu, cpu), "f16", kind="hypothetical")


@pytest.fixture(scope="module")
def decoder():
    model = build_decoder(TINY)
    return model, decoder_rows.prefill_graph(model)


def test_a_decoder_case_prices_the_whole_generation_and_charges_the_kv_cache(decoder):
    model, prefill = decoder
    case = decoder_rows.decoder_case(_gpu_cpu(2 ** 40), model, prefill)
    cpu = np.full(prefill.num_nodes, 1, np.int64)
    parts = decoder_rows.generation_parts(case, cpu)
    gen = decoder_rows.GENERATION
    assert parts["ttft_ms"] == pytest.approx(Simulator(case.prefill_cost, prefill)(cpu))
    # 127 decode steps, each at least one launch per compute node: far more than the prefill alone
    assert parts["generation_ms"] > 10 * parts["ttft_ms"] and parts["per_token_ms"] > 0
    assert parts["generation_ms"] == pytest.approx(parts["ttft_ms"] + (gen.new_tokens - 1) * parts["per_token_ms"])
    kv = 2 * TINY.layers * TINY.kv_heads * (gen.prompt_tokens + gen.new_tokens) * TINY.head_size * 4
    weights = int(np.asarray(case.prefill_cost.node_memory_bytes).sum())
    assert case.need_bytes == weights + kv


@pytest.mark.slow  # the MILP, the local search and the prior's decode clones: minutes on a loaded 2-core machine
def test_a_gpu_that_holds_the_weights_but_not_the_kv_cache_is_no_single_device_and_the_row_says_so(decoder):
    model, prefill = decoder
    probe = decoder_rows.decoder_case(_gpu_cpu(2 ** 40), model, prefill)
    weights = int(np.asarray(probe.prefill_cost.node_memory_bytes).sum())
    platform = _gpu_cpu(weights + (probe.need_bytes - weights) / 2)  # the weights fit, half the KV cache does
    case = decoder_rows.decoder_case(platform, model, prefill)
    placements: dict = {}
    row = headroom_row(platform, "tiny", case.graph, finetune_budget=0, milp_seconds=10, methods=METHODS,
                       placements_out=placements, cost=case.cost)
    assert row["single_device_ms"]["GPU"] is None and row["best_single_device"] == "CPU"
    assert row["best_single_device_ms"] == pytest.approx(
        decoder_rows.generation_parts(case, placements["single:CPU"])["generation_ms"])
    for key in ("hsdag_ms", "hsdag_refined_ms", "heft_ms", "milp_ms"):  # every method fits, as priced
        assert row[key] is None or row[key] >= row["optimum_ms"] * (1 - 1e-9)
    assert Simulator(case.cost, case.graph).feasible_ms(placements["plain_call"]) == math.inf  # all on the GPU

    decoder_rows.prior_placements(platform, case, placements, row)
    assert "prior_choice" in row and "first_start_choice" in row
    decoder_rows.profile_path_placement(platform, case, placements, row)  # placed on the prefill, scored whole
    assert row["profile_prefill_ms"] is None or row["profile_prefill_ms"] >= row["optimum_ms"] * (1 - 1e-9)
    spec = truth.TruthSpec(sigma=0.463, draws=2, milp_seconds=0)
    row["truth"] = truth.score_draws(platform, case.graph, placements, spec, case.cost)
    assert len(row["truth"]["optimum_ms"]) == 2 and all(v is None for v in row["truth"]["plain_call_ms"])
    row.update(generation=[128, 128], memory_need_bytes=case.need_bytes,
               parts={"best_single": decoder_rows.generation_parts(case, placements["single:CPU"])})
    lines = decoder_rows.decoder_lines([row])
    assert "fits alone on CPU" in lines[0] and "plain call" in "\n".join(lines)


def test_a_decoder_row_of_the_fast_methods_is_priced_on_the_generation_and_reads_as_text(decoder):
    model, prefill = decoder
    platform = _gpu_cpu(2 ** 40)
    case = decoder_rows.decoder_case(platform, model, prefill)
    placements: dict = {}
    row = headroom_row(platform, "tiny", case.graph, finetune_budget=0,
                       methods=("HEFT", "HSDAG (pretrained, one pass)"), placements_out=placements, cost=case.cost)
    single = {d: decoder_rows.generation_parts(case, placements[f"single:{d}"])["generation_ms"]
              for d in ("GPU", "CPU")}
    assert row["single_device_ms"] == pytest.approx(single)  # each device alone: its whole generation
    assert row["optimum_ms"] <= min(single.values()) * (1 + 1e-9)
    row.update(generation=[128, 128], memory_need_bytes=case.need_bytes,
               parts={"plain_call": decoder_rows.generation_parts(case, placements["plain_call"])})
    text = "\n".join(decoder_rows.decoder_lines([row]))
    assert "fits alone on GPU, CPU" in text and "TTFT" in text


def test_memory_caps_cap_the_generation_costs_only(decoder):
    model, prefill = decoder
    platform = _gpu_cpu(2 ** 40)
    free = decoder_rows.decoder_case(platform, model, prefill)
    cap = free.need_bytes / 2
    capped = decoder_rows.decoder_case(platform, model, prefill, caps={"CPU": cap})
    assert free.caps is None and capped.caps.tolist() == [math.inf, cap]
    assert np.asarray(capped.cost.device_memory_bytes).tolist() == [
        np.asarray(free.cost.device_memory_bytes)[0], cap]
    assert capped.need_bytes == free.need_bytes  # what the model holds does not change, where it may does
    cpu = np.full(prefill.num_nodes, 1, np.int64)
    assert decoder_rows.generation_parts(capped, cpu) is None  # over the cap: does not fit
    assert decoder_rows.generation_parts(free, cpu) is not None


def test_under_caps_no_single_device_holds_the_first_start_and_the_profile_path_split_within_them(decoder):
    model, prefill = decoder
    probe = decoder_rows.decoder_case(_gpu_cpu(2 ** 40), model, prefill)
    # what one device holds of the whole model: its weights, KV cache and largest activation
    alone = float(Simulator(probe.cost, probe.graph).resident_bytes(np.zeros((1, prefill.num_nodes), np.int64))[0, 0])
    cap = 0.75 * alone  # each device holds three quarters of it: two together hold it
    platform = _gpu_cpu(cap)
    case = decoder_rows.decoder_case(platform, model, prefill, caps={"CPU": cap})
    simulator = Simulator(case.cost, case.graph)
    for d in (0, 1):
        assert simulator.feasible_ms(np.full(prefill.num_nodes, d, np.int64)) == math.inf
    placements, row = {}, {"model": "tiny"}
    decoder_rows.prior_placements(platform, case, placements, row)
    decoder_rows.profile_path_placement(platform, case, placements, row)
    assert row["first_start_choice"] == row["prior_choice"] == "memory path: split"
    assert "profile_prefill_ms" not in row  # under caps the profile path is the memory path on measured costs
    for key in ("first_start_ms", "prior_ms", "memory_profile_ms"):
        chosen = placements[key]
        assert np.unique(chosen).size == 2 and math.isfinite(simulator.feasible_ms(chosen))
        assert row[key] == pytest.approx(simulator.feasible_ms(chosen))
    row.update(platform=platform.name, generation=[128, 128], memory_need_bytes=case.need_bytes,
               memory_caps={"CPU": cap},
               single_device_ms={"GPU": None, "CPU": None}, best_single_device_ms=None, split_pays=True,
               optimum_ms=row["memory_profile_ms"], optimum_devices=["GPU", "CPU"],
               parts={k: decoder_rows.generation_parts(case, placements[k]) for k in ("first_start_ms",)})
    text = "\n".join(decoder_rows.decoder_lines([row]))
    assert "(CPU capped at" in text and "fits alone on no device" in text
    assert "no single device holds the model in 1, a split found there in 1" in text
    assert "policy + LS on the prefill" not in text and "memory path, profiled" in text


def _npu_cpu_capped(decoder):
    """``(platform, case, CPU's index)``: the decoder on ``npu_cpu`` with its CPU capped at three quarters of what it
    holds alone."""
    from ov_autoplace.costmodel.suite import load_suite

    model, prefill = decoder
    platform = load_suite()["npu_cpu"]
    probe = decoder_rows.decoder_case(platform, model, prefill)
    cpu = list(probe.cost.devices).index("CPU")
    alone = Simulator(probe.cost, probe.graph).resident_bytes(np.full((1, prefill.num_nodes), cpu, np.int64))[0, cpu]
    return platform, decoder_rows.decoder_case(platform, model, prefill, caps={"CPU": 0.75 * float(alone)}), cpu


def test_an_npu_without_the_attention_gets_a_split_that_fits_a_capped_cpu(decoder):
    """``npu_cpu``'s NPU runs a decoder's matmuls and embedding but not its attention or the state's dynamic ops, so a
    placement that moves a layer's matmuls interleaves the devices inside the layer and HETERO cuts its variables
    apart (rule 2): the legalizer puts such a split back on one device. With the CPU capped at three quarters of
    what it would hold alone, the memory path grows a fit from windows the legalizer keeps split."""
    platform, case, _ = _npu_cpu_capped(decoder)
    chosen = decoder_rows.memory_path_placement(case, case.cost, platform.device_names)
    assert chosen is not None and np.unique(chosen).size == 2
    assert math.isfinite(Simulator(case.cost, case.graph).feasible_ms(chosen))


def test_a_capped_devices_floor_bounds_what_the_memory_path_keeps_and_below_it_nothing_fits(decoder):
    """The floor (``optimum/capped_floor.py``): what the capped CPU keeps in every placement the legalizer returns.
    The memory path's split keeps at least it; capped under it, the row is proven to have no split, and the memory
    path (the runtime's machinery) refuses, as the proof says it must."""
    from ov_autoplace_lab.optimum.capped_floor import node_sets

    model, prefill = decoder
    platform, case, cpu = _npu_cpu_capped(decoder)
    proof = decoder_rows.no_split_proof(case, seconds=60)
    assert proof["device"] == "CPU" and proof["optimal"] and not proof["proves"]
    chosen = decoder_rows.memory_path_placement(case, case.cost, platform.device_names)
    active = node_sets(case.graph, np.ones((case.graph.num_nodes, 2), bool), cpu)["active"]
    mem = np.asarray(case.cost.node_memory_bytes, np.float64)
    assert mem[active & (chosen == cpu)].sum() >= proof["floor_bytes"] > 0
    tight = decoder_rows.decoder_case(platform, model, prefill, caps={"CPU": 0.99 * proof["floor_bytes"]})
    below = decoder_rows.no_split_proof(tight, seconds=60)
    assert below["proves"] and "over its cap" in below["text"]
    assert decoder_rows.memory_path_placement(tight, tight.cost, platform.device_names) is None


@pytest.mark.slow  # the lab's large Qwen2-geometry decoder: ~6 s
def test_the_memory_path_is_no_slower_than_the_fit_of_the_policys_own_proposal():
    """``paper`` with both devices capped at 0.2 GiB, Qwen2-geometry ``qwen2_dec_l`` (0.305 GiB): the policy puts
    it on the CPU, over its cap; the local search from there priced nothing that fits (stopped: overflow), and the fit
    of where it stopped was 1,406.6 ms where the fit of the policy's own proposal is 955.1 (simulated). The memory
    path fits both and keeps the faster (``placement_pipeline.fit_to_caps``); before, only the search's."""
    from ov_autoplace.costmodel.sim_costs import simulated_support
    from ov_autoplace.costmodel.suite import load_suite
    from ov_autoplace.decision.first_start import POLICY_FILE
    from ov_autoplace.decision.placement_pipeline import placement_pipeline, refined_fit
    from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS
    from ov_autoplace.strategies.base import PlacementContext
    from ov_autoplace.strategies.hsdag import HSDAGStrategy
    from ov_autoplace_lab.models.decoder_models import load_decoder

    model, platform = load_decoder("qwen2_dec_l"), load_suite()["paper"]
    case = decoder_rows.decoder_case(platform, model, decoder_rows.prefill_graph(model),
                                     caps={"CPU": 0.2 * 2**30, "GPU": 0.2 * 2**30})
    devices, simulator = platform.device_names, Simulator(case.cost, case.graph)
    support = simulated_support(case.cost, case.graph)
    policy = HSDAGStrategy(POLICY_FILE, case.cost).propose(PlacementContext(graph=case.graph, devices=devices,
                                                                            support=support))
    assert not simulator.memory_ok(policy)
    own = placement_pipeline(case.graph, policy, devices, support, strategy="hsdag", cost=case.cost,
                             max_submodels=DEFAULT_MAX_SUBMODELS, enforce_memory=True)
    own = refined_fit(own, case.graph, case.cost, support, pins=(), max_submodels=DEFAULT_MAX_SUBMODELS)
    chosen = decoder_rows.memory_path_placement(case, case.cost, devices)
    assert chosen is not None and np.unique(chosen[simulator.active]).size == 2
    assert simulator.feasible_ms(chosen) <= simulator.feasible_ms(own.device_indices(case.graph.names, devices))


@pytest.mark.slow  # the lab's large Qwen2-geometry decoder: ~15 s
def test_the_memory_path_is_no_slower_than_the_fit_of_hefts_proposal():
    """``laptop`` with both devices capped at 0.2 GiB, ``qwen2_dec_l``: the memory path fits HEFT's proposal beside the
    policy's and keeps the faster (``placement_pipeline.fit_to_caps``), a split of the two devices. HEFT's fit is a
    chain of 3 submodels (649.9 ms, simulated), the policy's 689.6: under ``LEGALIZER_VERSION`` 13 and 14, which
    counted the chain before ``apply`` moves ``beam_idx`` to the GPU (155 submodels), HEFT's proposal was merged and
    fitted to the policy's 689.5 ms (docs/llm.md, "Under memory caps")."""
    from ov_autoplace.costmodel.cost_terms import CostTerms
    from ov_autoplace.costmodel.sim_costs import simulated_support
    from ov_autoplace.costmodel.suite import load_suite
    from ov_autoplace.decision.placement_pipeline import placement_pipeline, refined_fit
    from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS
    from ov_autoplace.decision.first_start import POLICY_FILE
    from ov_autoplace.search.list_scheduling import heft_placement
    from ov_autoplace.strategies.base import PlacementContext
    from ov_autoplace.strategies.hsdag import HSDAGStrategy
    from ov_autoplace_lab.models.decoder_models import load_decoder

    model, platform = load_decoder("qwen2_dec_l"), load_suite()["laptop"]
    case = decoder_rows.decoder_case(platform, model, decoder_rows.prefill_graph(model),
                                     caps={"CPU": 0.2 * 2**30, "GPU": 0.2 * 2**30})
    devices, simulator = platform.device_names, Simulator(case.cost, case.graph)
    support = simulated_support(case.cost, case.graph)
    heft = placement_pipeline(case.graph, heft_placement(CostTerms(case.cost, case.graph, support)), devices,
                              support, strategy="heft", cost=case.cost, max_submodels=DEFAULT_MAX_SUBMODELS,
                              enforce_memory=True)
    heft = refined_fit(heft, case.graph, case.cost, support, pins=(), max_submodels=DEFAULT_MAX_SUBMODELS)
    heft_ms = simulator.feasible_ms(heft.device_indices(case.graph.names, devices))
    policy = HSDAGStrategy(POLICY_FILE, case.cost).propose(PlacementContext(graph=case.graph, devices=devices,
                                                                            support=support))
    own = placement_pipeline(case.graph, policy, devices, support, strategy="hsdag", cost=case.cost,
                             max_submodels=DEFAULT_MAX_SUBMODELS, enforce_memory=True)
    own = refined_fit(own, case.graph, case.cost, support, pins=(), max_submodels=DEFAULT_MAX_SUBMODELS)
    assert heft.num_submodels <= DEFAULT_MAX_SUBMODELS
    assert heft_ms < 0.97 * simulator.feasible_ms(own.device_indices(case.graph.names, devices))
    chosen = decoder_rows.memory_path_placement(case, case.cost, devices)
    assert chosen is not None and np.unique(chosen[simulator.active]).size == 2
    assert simulator.feasible_ms(chosen) <= heft_ms


def test_every_method_on_a_decoder_row_is_priced_as_compile_model_compiles_it(decoder):
    """``compile_model`` legalizes a prefill clone's placement again on the dynamic model, whose shape nodes the clone
    folded; ``Case.legal`` and ``Case.as_compiled`` price what that compiles (a phantom once set a row's best known:
    docs/llm.md, "Under memory caps"). Since stateful rule 4 is judged on the edges HETERO meets, the clone's own
    legalization of random window splits is what compiles (it moved 3 of 300 by up to 25 nodes); a placement the
    compile would change (the first layers on the second device, not legalised) comes back as compiled."""
    from ov_autoplace.graph.arrays import NodeRole
    from ov_autoplace.placement.legalizer import constant_subgraph_mask, legalize
    from ov_autoplace_lab.paper_bench.methods import Case, compiled_as
    from tests.llm_models import window_proposal

    model, prefill = decoder
    devices, support = ("CPU", "GPU"), np.ones((prefill.num_nodes, 2), bool)
    active = np.flatnonzero((prefill.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(prefill))
    case, rng = Case("tiny", prefill, devices, support, None, True), np.random.default_rng(0)
    for _ in range(40):
        row = case.legal(window_proposal(rng, active, prefill.num_nodes), "window").device_indices(prefill.names,
                                                                                                   devices)
        assert compiled_as(prefill, row, devices, support)[1] == 0
    proposal = np.zeros(prefill.num_nodes, np.int64)
    proposal[active[:70]] = 1
    legal = legalize(prefill, proposal, devices, support)
    raw = dataclasses.replace(legal, assignment={name: devices[int(proposal[i])] for i, name in
                                                 enumerate(prefill.names)})
    assert compiled_as(prefill, proposal, devices, support)[1] > 0
    row = case.as_compiled(raw).device_indices(prefill.names, devices)
    assert compiled_as(prefill, row, devices, support)[1] == 0 and not np.array_equal(row, proposal)
