"""Imitation targets (issue 22): the search on one case, variants, storage, the held-out split."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.placement.legalizer import legalize
from ov_autoplace_lab.training.splits import (HELD_OUT_ARCHITECTURES, HELD_OUT_PLATFORMS, evaluation_specs,
                                               is_held_out, training_specs)
from ov_autoplace_lab.training.targets import (TargetCheckpointError, TargetOptions, TargetSpec, case_cost,
                                               check_manifest, generate_target, load_target, run_sigma,
                                               save_target, target_path, variant_platform)

FAST = TargetOptions(sigma=0.46, max_evaluations=300, local_search_seconds=5.0, policy=None)


def test_target_is_legal_feasible_and_no_slower_than_any_single_device():
    spec = TargetSpec("family:1", "npu_cpu", 0)
    target = generate_target(spec, FAST)
    graph, cost, support = case_cost(spec, FAST.sigma)
    row = np.asarray(target["placement"])
    devices = tuple(cost.devices)
    again = legalize(graph, row, devices, support, max_submodels=8, strategy="check")
    assert [devices[d] for d in row] == [again.assignment[n] for n in graph.names]  # legal as stored
    assert not (~support[np.arange(graph.num_nodes), row]).any()  # op support respected
    simulator = Simulator(cost, graph)
    assert bool(simulator.memory_ok(row)) and float(simulator(row)) == pytest.approx(target["latency_ms"])
    assert target["latency_ms"] <= target["best_single_ms"] * (1 + 1e-9)
    assert target["devices"] == list(devices) and target["source"] in target["candidates"]


def test_priced_targets_legalise_as_compile_model_does_and_start_from_heft(tmp_path):
    """``--priced --heft-start``: on this multi-branch graph HEFT's proposal needs the bound's merges, and merging in
    flops order makes it 15 % slower than merging as compile_model does (priced); the search also starts from it."""
    from ov_autoplace.search.memory_fit import legal_pricer
    from ov_autoplace.strategies.base import PlacementContext
    from ov_autoplace.strategies.heft import HeftStrategy

    spec = TargetSpec("family:multibranch:1", "laptop")
    options = dataclasses.replace(FAST, priced=True, heft_start=True)
    target = generate_target(spec, options)
    graph, cost, support = case_cost(spec, FAST.sigma)
    devices = tuple(cost.devices)
    proposal = HeftStrategy(cost).propose(PlacementContext(graph=graph, devices=devices, support=support))
    simulator = Simulator(cost, graph)

    def legal_ms(price):
        placement = legalize(graph, proposal, devices, support, max_submodels=8, strategy="check", price=price)
        return float(simulator.feasible_ms(placement.device_indices(graph.names, devices)))

    priced, flops_order = legal_ms(legal_pricer(cost, graph, support)), legal_ms(None)
    assert target["candidates"]["heft"] == pytest.approx(priced) and priced < flops_order
    assert target["latency_ms"] <= target["candidates"]["heft+ls"] <= target["candidates"]["heft"]  # from the legal row
    row = np.asarray(target["placement"])  # stored legal: legalising it again, priced, moves nothing
    again = legalize(graph, row, devices, support, max_submodels=8, strategy="check",
                     price=legal_pricer(cost, graph, support))
    assert np.array_equal(again.device_indices(graph.names, devices), row)
    # the flags are in the manifest only when on (older runs resume), and a resume with other flags is refused
    assert "priced" not in FAST.to_dict() and options.to_dict()["priced"] and options.to_dict()["heft_start"]
    check_manifest(tmp_path, options, [spec])
    with pytest.raises(TargetCheckpointError, match="other|asks for"):
        check_manifest(tmp_path, dataclasses.replace(options, priced=False), [spec])


def test_variants_are_deterministic_perturbed_and_reordered():
    a, fa = variant_platform(TargetSpec("family:0", "laptop", 3), 0.46)
    b, fb = variant_platform(TargetSpec("family:0", "laptop", 3), 0.46)
    assert a.device_names == b.device_names and np.array_equal(fa, fb)
    fitted, none = variant_platform(TargetSpec("family:0", "laptop"), 0.46)
    assert none is None and fitted.device_names == ("CPU", "GPU", "NPU")
    orders = {variant_platform(TargetSpec("family:0", "laptop", v), 0.46)[0].device_names for v in range(12)}
    assert len(orders) > 2 and any(len(o) == 2 for o in orders)  # shuffled, and sometimes a device dropped
    assert not np.allclose(fa, 1.0)


def test_a_hole_variant_is_its_base_variant_with_a_few_rare_op_types_unsupported_off_the_cpu():
    from ov_autoplace.graph.arrays import NodeRole
    from ov_autoplace_lab.training.targets import HOLE_VARIANTS

    for platform in ("laptop", "paper", "npu_cpu"):
        for k in range(6):
            base, holed = TargetSpec("family:mbconv_se:2", platform, k), TargetSpec("family:mbconv_se:2", platform,
                                                                                   HOLE_VARIANTS + k)
            (p0, f0), (p1, f1) = variant_platform(base, 0.46), variant_platform(holed, 0.46)
            assert p0.device_names == p1.device_names and np.array_equal(f0, f1)  # same devices, order, factors
            graph, cost0, support0 = case_cost(base, 0.46)
            _, cost1, support1 = case_cost(holed, 0.46)
            lost = support0 & ~support1
            assert lost.any() and not (support1 & ~support0).any(), (platform, k)  # holes only ever take away
            devices = list(cost1.devices)
            hit = sorted({devices[d] for d in np.nonzero(lost.any(axis=0))[0]})
            assert len(hit) == 1 and hit != ["CPU"]
            assert "CPU" not in devices or support1[:, devices.index("CPU")].all()
            types = {graph.op_types[n] for n in np.nonzero(lost.any(axis=1))[0]}
            active = np.asarray(graph.role) == NodeRole.COMPUTE
            assert 1 <= len(types) <= 2 and not types & {"Convolution", "MatMul"}
            for t in types:  # every node of a missing type is off that device, and the type is a rarer one
                rows = active & (np.asarray(graph.op_types) == t)
                assert lost[rows].any(axis=1).all() and rows.sum() <= max(1, active.sum() // 4)
            assert hit[0] in cost1.source and all(t in cost1.source for t in types)


def test_a_hole_variants_target_keeps_every_node_where_it_can_run():
    from ov_autoplace_lab.training.targets import HOLE_VARIANTS

    spec = TargetSpec("family:window_attention:1", "npu_cpu", HOLE_VARIANTS)
    target = generate_target(spec, dataclasses.replace(FAST, priced=True))
    graph, cost, support = case_cost(spec, FAST.sigma)
    row = np.asarray(target["placement"])
    assert support[np.arange(graph.num_nodes), row].all() and (~support).any()
    assert target["latency_ms"] <= target["best_single_ms"] * (1 + 1e-9)


def test_wider_kinds_and_hole_variants_join_the_training_and_validation_sets_only_when_asked():
    from ov_autoplace_lab.training.graph_family import WIDER_KINDS
    from ov_autoplace_lab.training.splits import VALIDATION_GRAPHS, validation_specs
    from ov_autoplace_lab.training.targets import HOLE_VARIANTS

    base = training_specs(zoo_variants=1, family_count=2, family_variants=1, extra_family_count=1)
    wider = training_specs(zoo_variants=1, family_count=2, family_variants=1, extra_family_count=1,
                           wider_family_count=2)
    holed = training_specs(zoo_variants=1, family_count=2, family_variants=1, extra_family_count=1,
                           wider_family_count=2, hole_variants=2)
    assert base == wider[:len(base)] and wider == holed[:len(wider)]
    assert {s.graph for s in wider[len(base):]} == {f"family:{k}:{i}" for k in WIDER_KINDS for i in range(2)}
    added = holed[len(wider):]
    assert {s.variant for s in added} == {HOLE_VARIANTS, HOLE_VARIANTS + 1}
    assert {(s.graph, s.platform) for s in added} == {(s.graph, s.platform) for s in wider}
    assert not any(is_held_out(s) for s in added)  # the held-out platform stays out of the hole variants too
    assert {f"family:{k}:9" for k in WIDER_KINDS} <= set(VALIDATION_GRAPHS)
    validation = validation_specs()
    assert {s.graph for s in validation} == set(VALIDATION_GRAPHS)
    assert any(s.variant >= HOLE_VARIANTS for s in validation) and not any(is_held_out(s) for s in validation)


def test_damaged_target_file_is_an_error_naming_it(tmp_path):
    spec = TargetSpec("family:2", "paper")
    path = save_target(tmp_path, generate_target(spec, FAST))
    assert load_target(path)["key"] == spec.key
    path.write_bytes(b"not an npz")
    with pytest.raises(TargetCheckpointError, match=path.name):
        load_target(path)
    assert target_path(tmp_path, spec) == path


def test_manifest_refuses_a_resume_with_other_options(tmp_path):
    check_manifest(tmp_path, FAST, [TargetSpec("family:0", "paper")])
    check_manifest(tmp_path, FAST, [TargetSpec("family:1", "paper")])  # same options: fine
    with pytest.raises(TargetCheckpointError, match="other|asks for"):
        check_manifest(tmp_path, TargetOptions(sigma=0.1), [])


def test_robust_min_gain_is_in_the_manifest_only_when_on(tmp_path):
    from ov_autoplace_lab.training.robust import RobustOptions

    robust = dataclasses.replace(FAST, robust=RobustOptions(draws=4, max_slower=0.2))
    assert "min_gain" not in robust.to_dict()["robust"]  # a robust run written before the option resumes as it was
    margin = dataclasses.replace(robust, robust=RobustOptions(draws=4, max_slower=0.2, min_gain=0.02))
    assert margin.to_dict()["robust"]["min_gain"] == 0.02
    check_manifest(tmp_path, robust, [TargetSpec("family:0", "paper")])
    with pytest.raises(TargetCheckpointError):
        check_manifest(tmp_path, margin, [])


def test_run_sigma_reads_the_manifest_and_names_a_directory_without_one(tmp_path):
    check_manifest(tmp_path / "run", FAST, [TargetSpec("family:0", "paper")])
    assert run_sigma(tmp_path / "run") == 0.46
    with pytest.raises(TargetCheckpointError, match="manifest.json.*amortise targets"):
        run_sigma(tmp_path / "elsewhere")
    (tmp_path / "run" / "manifest.json").write_text("{not json")
    with pytest.raises(TargetCheckpointError, match="no readable sigma"):
        run_sigma(tmp_path / "run")


def test_training_never_sees_a_held_out_architecture_or_platform():
    train = training_specs(zoo_variants=2, family_count=3, family_variants=1)
    assert train and not any(is_held_out(s) for s in train)
    held = [s for s in evaluation_specs() if is_held_out(s)]
    assert {s.model for s in held} >= set(HELD_OUT_ARCHITECTURES)
    assert {s.platform for s in held} >= set(HELD_OUT_PLATFORMS)


def test_the_unseen_architectures_are_in_no_training_set():
    # The zero-shot set (models/unseen_models.py) must stay out of everything a policy is trained or chosen on,
    # --all-data included; building them needs torch, naming them does not.
    from ov_autoplace_lab import models as zoo
    from ov_autoplace_lab.training.splits import zoo_models

    everything = training_specs(zoo_variants=2, family_count=2, family_variants=1, extra_family_count=2,
                                all_data=True)
    graphs = {s.graph for s in everything} | {s.graph for s in evaluation_specs()}
    assert len(zoo.UNSEEN) >= 7 and not set(zoo.UNSEEN) & set(zoo.ALL_MODELS + zoo_models())
    assert not {f"zoo:{m}" for m in zoo.UNSEEN} & graphs
    assert set(zoo.UNSEEN) <= set(zoo._BUILDERS)


def test_the_zero_shot_cases_are_every_unseen_architecture_on_every_platform_and_only_those():
    from ov_autoplace_lab import models as zoo
    from ov_autoplace_lab.training.fit import _subset
    from ov_autoplace_lab.training.splits import SUITE_PLATFORMS, is_unseen, unseen_specs

    specs = unseen_specs(zoo_variants=2)
    assert len(specs) == len(zoo.UNSEEN) * len(SUITE_PLATFORMS) * 3 and all(map(is_unseen, specs))
    assert {s.variant for s in specs} == {-1, 0, 1}
    assert all(is_held_out(s) == (s.platform in HELD_OUT_PLATFORMS) for s in specs)  # none a held-out architecture
    assert {_subset(s) for s in specs} == {"zoo, unseen (zero-shot)"}
    assert not any(map(is_unseen, training_specs(zoo_variants=1, family_count=1, family_variants=0, all_data=True)))


def test_all_data_adds_exactly_the_held_out_cases_with_their_variants():
    split = training_specs(zoo_variants=2, family_count=2, family_variants=1)
    everything = training_specs(zoo_variants=2, family_count=2, family_variants=1, all_data=True)
    added = [s for s in everything if s not in split]
    assert set(split) < set(everything) and added and all(is_held_out(s) for s in added)
    assert {s.model for s in added} >= set(HELD_OUT_ARCHITECTURES)
    assert {s.platform for s in added} >= set(HELD_OUT_PLATFORMS)
    assert {s.variant for s in added if s.graph == "zoo:densenet121" and s.platform == "paper"} == {-1, 0, 1}


def test_extra_family_kinds_are_named_graphs_of_the_training_set():
    from ov_autoplace_lab.training.graph_family import EXTRA_KINDS
    from ov_autoplace_lab.training.targets import load_graph

    base = training_specs(zoo_variants=0, family_count=1, family_variants=0)
    more = training_specs(zoo_variants=0, family_count=1, family_variants=0, extra_family_count=2)
    extra = [s for s in more if s not in base]
    assert base == more[:len(base)] and {s.graph for s in extra} == {f"family:{k}:{i}" for k in EXTRA_KINDS
                                                                     for i in range(2)}
    assert not any(is_held_out(s) for s in extra)
    assert {"Convolution", "Concat"} <= set(load_graph("family:multibranch:0").op_types)
    with pytest.raises(ValueError, match="unknown graph kind"):
        load_graph("family:rnn:0")
