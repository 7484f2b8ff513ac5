"""Target generation on a local Ray (issue 22): a small task set, resume, bad input never gives a partial set."""

from __future__ import annotations

import dataclasses
import os

import pytest

ray = pytest.importorskip("ray")

from ov_autoplace_lab.training.distributed import generate_targets  # noqa: E402
from ov_autoplace_lab.training.targets import (  # noqa: E402
    TargetCheckpointError, TargetGenerationError, TargetOptions, TargetSpec, generate_target, load_targets, target_path)

FAST = TargetOptions(sigma=0.46, max_evaluations=200, local_search_seconds=5.0, policy=None)
SPECS = [TargetSpec("family:0", "paper"), TargetSpec("family:1", "npu_cpu", 0), TargetSpec("family:2", "laptop", 1)]


def test_unreachable_address_is_a_clear_error(tmp_path):
    with pytest.raises(TargetGenerationError, match="cannot reach the Ray cluster at '127.0.0.1:1'"):
        generate_targets(tmp_path, SPECS, FAST, address="127.0.0.1:1", progress=False)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_small_task_set_runs_and_resumes(tmp_path, local_ray):
    counts = generate_targets(tmp_path, SPECS[:2], FAST, progress=False)
    assert counts == {"total": 2, "resumed": 0, "generated": 2}
    counts = generate_targets(tmp_path, SPECS, FAST, progress=False)  # resumes: only the new spec runs
    assert counts == {"total": 3, "resumed": 2, "generated": 1}
    assert [t["key"] for t in load_targets(tmp_path, SPECS)] == [s.key for s in SPECS]


def test_damaged_checkpoint_stops_the_run(tmp_path, local_ray):
    generate_targets(tmp_path, SPECS[:1], FAST, progress=False)
    target_path(tmp_path, SPECS[0]).write_bytes(b"\x00garbage")
    with pytest.raises(TargetCheckpointError, match="damaged"):
        generate_targets(tmp_path, SPECS, FAST, progress=False)


def test_dying_worker_fails_loudly_and_the_rest_is_saved(tmp_path, local_ray):
    doomed = SPECS[1]

    def dies_on_one(args):  # a real worker process exiting mid-task (retried, then reported)
        spec, options = args
        if spec == doomed:
            os._exit(1)
        return generate_target(spec, options)

    with pytest.raises(TargetGenerationError, match=f"1 of 3 targets failed.*{doomed.key}"):
        generate_targets(tmp_path, SPECS, FAST, progress=False, task=dies_on_one)
    assert not target_path(tmp_path, doomed).exists()
    assert all(target_path(tmp_path, s).exists() for s in SPECS if s != doomed)
    with pytest.raises(TargetCheckpointError, match="missing"):
        load_targets(tmp_path, SPECS)  # training refuses the incomplete set


def test_robust_targets_re_choose_a_searched_run_as_a_fresh_search_would(tmp_path, local_ray):
    import dataclasses

    import numpy as np

    from ov_autoplace_lab.training.robust import RobustOptions, generate_robust_target

    searched = tmp_path / "searched"
    generate_targets(searched, SPECS[:2], FAST, progress=False)
    robust = dataclasses.replace(FAST, robust=RobustOptions(draws=4))
    counts = generate_targets(tmp_path / "robust", SPECS[:2], robust, progress=False, searched_from=searched)
    assert counts == {"total": 2, "resumed": 0, "generated": 2}
    for spec, target in zip(SPECS[:2], load_targets(tmp_path / "robust", SPECS[:2])):
        fresh = generate_robust_target(spec, robust)
        assert np.array_equal(fresh["placement"], target["placement"]) and fresh["source"] == target["source"]
        assert target["robust"]["draws"] == 4
    with pytest.raises(TargetCheckpointError, match="searched-from.*same --sigma"):
        generate_targets(tmp_path / "other", SPECS[:1], dataclasses.replace(robust, sigma=0.3), progress=False,
                         searched_from=searched)
    with pytest.raises(TargetGenerationError, match="--robust-draws"):
        generate_targets(tmp_path / "plain", SPECS[:1], FAST, progress=False, searched_from=searched)


def test_a_robust_run_is_re_chosen_under_another_rule_without_searching_again(tmp_path, local_ray):
    import numpy as np

    from ov_autoplace_lab.training.robust import RobustOptions, generate_robust_target
    from ov_autoplace_lab.training.targets import load_target, save_target

    strict = dataclasses.replace(FAST, robust=RobustOptions(draws=4, max_slower=0.0))
    loose = dataclasses.replace(FAST, robust=RobustOptions(draws=4, max_slower=0.5))
    generate_targets(tmp_path / "strict", SPECS[:2], strict, progress=False)
    for spec in SPECS[:2]:  # the search's own placement is kept beside the robust choice
        kept = load_target(target_path(tmp_path / "strict", spec))
        assert np.array_equal(kept["search_placement"], generate_target(spec, FAST)["placement"])
    counts = generate_targets(tmp_path / "loose", SPECS[:2], loose, progress=False, searched_from=tmp_path / "strict")
    assert counts == {"total": 2, "resumed": 0, "generated": 2}
    for spec, target in zip(SPECS[:2], load_targets(tmp_path / "loose", SPECS[:2])):
        fresh = generate_robust_target(spec, loose)  # what searching again under the loose rule chooses
        assert np.array_equal(fresh["placement"], target["placement"]) and fresh["source"] == target["source"]
        assert target["robust"]["max_slower"] == 0.5 and target["robust"]["search_ms"] == fresh["robust"]["search_ms"]
    # a robust run written before the search's placement was kept cannot be re-chosen: said, not searched silently
    for spec in SPECS[:2]:
        old = load_target(target_path(tmp_path / "strict", spec))
        del old["search_placement"]
        save_target(tmp_path / "strict", old)
    with pytest.raises(TargetCheckpointError, match="without its search's placement.*searched without --robust-draws"):
        generate_targets(tmp_path / "again", SPECS[:2], loose, progress=False, searched_from=tmp_path / "strict")


def test_training_seeds_run_as_ray_tasks_resume_and_refuse_another_recipe(tmp_path, local_ray):
    pytest.importorskip("torch")
    from ov_autoplace.policy.policy_file import load_policy_file
    from ov_autoplace_lab.training.distributed import train_seeds
    from ov_autoplace_lab.training.imitation import ImitationConfig

    targets = tmp_path / "run"
    generate_targets(targets, SPECS[:2], FAST, progress=False)
    tiny = ImitationConfig(imitation_steps=3, reinforce_steps=2, tasks_per_step=2)
    out = train_seeds(targets, tmp_path / "p.npz", tiny, [0, 1], specs=SPECS[:2], progress=False)
    assert [p.name for p in out] == ["p_s0.npz", "p_s1.npz"]
    files = [load_policy_file(p) for p in out]
    assert [f.header["metadata"]["imitation"]["seed"] for f in files] == [0, 1]
    assert any(not (files[0].weights[k] == files[1].weights[k]).all() for k in files[0].weights)  # seeds differ
    stamps = [p.stat().st_mtime_ns for p in out]
    again = train_seeds(targets, tmp_path / "p.npz", tiny, [0, 1, 2], specs=SPECS[:2], progress=False)
    assert [p.stat().st_mtime_ns for p in again[:2]] == stamps and again[2].name == "p_s2.npz"  # only seed 2 ran
    # a policy trained before a field of the recipe existed (its metadata lacks it) holds the field's default
    from ov_autoplace_lab.policy_export import write_policy_file

    older = files[0].header["metadata"]
    older["imitation"] = {k: v for k, v in older["imitation"].items() if k not in ("check_every", "mining")}
    write_policy_file(out[0], files[0].config, files[0].weights, metadata=older)
    stamp = out[0].stat().st_mtime_ns
    assert train_seeds(targets, tmp_path / "p.npz", tiny, [0], specs=SPECS[:2], progress=False) == out[:1]
    assert out[0].stat().st_mtime_ns == stamp  # resumed, not trained again
    with pytest.raises(TargetCheckpointError, match=r"differs in \['mining'\]"):
        train_seeds(targets, tmp_path / "p.npz", dataclasses.replace(tiny, mining=2.0), [0], specs=SPECS[:2],
                    progress=False)
    other = ImitationConfig(imitation_steps=3, reinforce_steps=2, tasks_per_step=2, split_weight=9.0)
    with pytest.raises(TargetCheckpointError, match=r"p_s0.npz holds a policy of another recipe \(differs in "
                                                    r"\['split_weight'\]\)"):
        train_seeds(targets, tmp_path / "p.npz", other, [0], specs=SPECS[:2], progress=False)
    out[1].write_bytes(b"\x00garbage")
    with pytest.raises(TargetCheckpointError, match="p_s1.npz: not a readable policy"):
        train_seeds(targets, tmp_path / "p.npz", tiny, [0, 1], specs=SPECS[:2], progress=False)
    assert out[1].read_bytes() == b"\x00garbage"  # never overwritten
