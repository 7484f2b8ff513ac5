"""The single-device index: a warm one-device start without cloning the caller's model."""

from __future__ import annotations


def test_warm_one_device_start_skips_the_clone_and_the_cache_machinery(tmp_path):
    """Distinct devices, second start in a new process: the single-device index answers, no prepare/cache import."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import sys, logging, openvino as ov, ov_autoplace as oa\n"
        "from ov_autoplace.devices.device_strings import register_virtual_device\n"
        "from tests import synthetic_graphs as sg\n"
        "logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(message)s')\n"
        "core = ov.Core()\n"
        "register_virtual_device(core, 'CPUS', base_device='CPU', properties={'INFERENCE_NUM_THREADS': 1})\n"
        "model = sg.residual()\n"
        "before = set(sys.modules)\n"
        "oa.compile_model(model, 'HETERO:CPU,CPUS', core=core)\n"
        "print('LOADED', sorted(m for m in set(sys.modules) - before if m.startswith('ov_autoplace')))\n"
    )
    env = dict(os.environ, OV_AUTOPLACE_CACHE_DIR=str(tmp_path))
    repo = str(Path(__file__).resolve().parents[2])
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300,
                           cwd=repo) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    assert "placement source: prior -> CPU" in runs[0].stdout
    assert list((tmp_path / "placements").glob("single-*.json"))
    assert "placement source: cache (prior) -> CPU" in runs[1].stdout
    loaded = next(line for line in runs[1].stdout.splitlines() if line.startswith("LOADED"))
    for heavy in ("ov_autoplace.model.prepare", "ov_autoplace.cache.placement_cache'", "ov_autoplace.decision.placement_sources",
                  "ov_autoplace.policy", "ov_autoplace.costmodel.prior_costs"):
        assert heavy not in loaded, loaded


def test_entries_round_trip_and_damage_is_a_miss(tmp_path):
    from ov_autoplace.decision import single_device_index as index

    key = {"format": index.INDEX_FORMAT, "structure": "abc", "devices": ["CPUS", "CPU"]}
    assert index.lookup(tmp_path, key) is None
    index.store(tmp_path, key, "CPU", "prior", str(tmp_path / "profile.json"))
    assert index.lookup(tmp_path, key) == ("CPU", "prior")
    (tmp_path / "profile.json").write_text("{}")  # a profile arrived: the prior's entry no longer applies
    assert index.lookup(tmp_path, key) is None
    index.store(tmp_path, key, "CPU", "profile", None)
    assert index.lookup(tmp_path, key) == ("CPU", "profile")
    (entry,) = (tmp_path / "placements").glob("single-*.json")
    entry.write_text("{not json")
    assert index.lookup(tmp_path, key) is None
    index.store(tmp_path, key, "GPU", "prior", None)  # a device outside the key's devices is never returned
    assert index.lookup(tmp_path, key) is None
    assert not list((tmp_path / "placements").glob("*.tmp"))


def test_a_rewritten_policy_file_is_a_new_index_key(tmp_path, monkeypatch):
    """The index keys on the policy file's size and mtime (no hash per start): any write of it is a miss, after
    which the full path answers from the content-keyed cache and writes an entry under the new key."""
    import os
    import shutil

    import openvino as ov

    import ov_autoplace as oa
    from ov_autoplace.decision import first_start
    from ov_autoplace.devices.device_strings import register_virtual_device
    from tests import synthetic_graphs as sg

    policy = tmp_path / first_start.POLICY_FILE.name
    shutil.copyfile(first_start.POLICY_FILE, policy)
    monkeypatch.setattr(first_start, "POLICY_FILE", policy)
    core = ov.Core()
    register_virtual_device(core, "CPUS", base_device="CPU", properties={"INFERENCE_NUM_THREADS": 1})
    root = tmp_path / "cache"
    model = sg.residual()
    oa.compile_model(model, "HETERO:CPU,CPUS", core=core, cache_dir=root)
    oa.compile_model(model, "HETERO:CPU,CPUS", core=core, cache_dir=root)  # an index hit: nothing new written
    assert len(list((root / "placements").glob("single-*.json"))) == 1
    st = os.stat(policy)
    os.utime(policy, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # what a reinstall does to the file
    oa.compile_model(model, "HETERO:CPU,CPUS", core=core, cache_dir=root)
    assert len(list((root / "placements").glob("single-*.json"))) == 2
