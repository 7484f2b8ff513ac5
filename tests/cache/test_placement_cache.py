"""The placement cache: reuse across runs and weights, invalidation, corruption, concurrency."""

from __future__ import annotations

import json
import logging
import multiprocessing
import openvino as ov
import pytest

import ov_autoplace as oa
from ov_autoplace.cache.placement_cache import CACHE_DIR_ENV, PlacementCache
from ov_autoplace.cache.root import cache_root
from ov_autoplace.strategies import HeavyOpsStrategy
from tests import synthetic_graphs as sg
from ov_autoplace.devices.testbed import make_testbed
from ov_autoplace.devices.timing import random_inputs


class CountingStrategy(HeavyOpsStrategy):
    """The heavy-ops heuristic, counting how often it is asked."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def propose(self, context):
        self.calls += 1
        return super().propose(context)

    def __repr__(self) -> str:
        return "CountingStrategy()"


def _compile(model, testbed, cache_dir, strategy, **kw):
    return oa.compile_model(model, testbed.hetero, core=testbed.core, cache_dir=cache_dir, strategy=strategy, **kw)


def test_default_dir_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "ov_autoplace"


def test_hit_on_second_compile_and_with_new_weights(testbed, tmp_path, caplog):
    strategy = CountingStrategy()
    _compile(sg.residual(), testbed, tmp_path, strategy, cache_blobs=True)
    assert strategy.calls == 1 and len(PlacementCache(tmp_path).entries()) == 1
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = _compile(sg.residual(seed=99), testbed, tmp_path, strategy, cache_blobs=True)  # new weights
    assert strategy.calls == 1, "the cached placement should have been reused"
    assert "cache hit" in caplog.text
    assert any((tmp_path / "openvino").iterdir()), "with cache_blobs=True OpenVINO's CACHE_DIR holds the blob"
    assert compiled(random_inputs(compiled))[0].shape == (1, 10)


def test_other_structure_pins_or_properties_miss(testbed, tmp_path):
    strategy = CountingStrategy()
    _compile(sg.residual(), testbed, tmp_path, strategy)
    _compile(sg.residual(blocks=2), testbed, tmp_path, strategy)
    assert strategy.calls == 2
    _compile(sg.residual(), testbed, tmp_path, strategy, pins={"stem": "CPUF"})
    assert strategy.calls == 3
    _compile(sg.residual(), testbed, tmp_path, strategy, max_submodels=2)
    assert strategy.calls == 4
    other = make_testbed(like_for_like=True)  # CPU in f32 now: other device properties
    oa.compile_model(sg.residual(), other.hetero, core=other.core, cache_dir=tmp_path, strategy=strategy)
    assert strategy.calls == 5 or not testbed.bf16


@pytest.mark.parametrize("damage", ["garbage", "truncate", "other_version", "wrong_nodes"])
def test_damaged_entry_is_ignored_and_rewritten(testbed, tmp_path, caplog, damage):
    strategy = CountingStrategy()
    _compile(sg.residual(), testbed, tmp_path, strategy)
    (entry,) = PlacementCache(tmp_path).entries()
    text = entry.read_text()
    if damage == "garbage":
        entry.write_text("{not json")
    elif damage == "truncate":
        entry.write_text(text[: len(text) // 2])
    elif damage == "other_version":
        data = json.loads(text)
        data["key"]["openvino_version"] = "2024.6.0-old"
        entry.write_text(json.dumps(data))
    else:
        data = json.loads(text)
        data["payload"]["device_by_index"] = ["CPU"]
        entry.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING):
        compiled = _compile(sg.residual(), testbed, tmp_path, strategy)
    assert isinstance(compiled, ov.CompiledModel)
    assert strategy.calls == 2 and "placement" in caplog.text.lower()
    assert len(json.loads(entry.read_text())["payload"]["device_by_index"]) > 1


def test_unwritable_cache_path_means_no_caching(testbed, tmp_path, caplog):
    """A cache path under a regular file cannot be created, even as root: warn, compile anyway."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with caplog.at_level(logging.WARNING):
        compiled = _compile(sg.residual(), testbed, blocker / "cache", CountingStrategy())
    assert isinstance(compiled, ov.CompiledModel)
    assert "not writable" in caplog.text


def _worker(cache_dir: str, queue) -> None:
    try:
        testbed = make_testbed()
        compiled = oa.compile_model(sg.attention_like(), testbed.hetero, core=testbed.core, cache_dir=cache_dir,
                                    strategy="heavy_ops")
        queue.put(("ok", compiled(random_inputs(compiled, seed=3))[0].shape))
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        queue.put(("error", repr(exc)))


@pytest.mark.slow
def test_concurrent_processes_leave_a_valid_cache(tmp_path, caplog):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(str(tmp_path), queue)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(status == "ok" for status, _ in results), results
    entries = PlacementCache(tmp_path).entries()
    assert len(entries) == 1
    data = json.loads(entries[0].read_text())
    assert data["payload"]["assignment"]
    assert not list((tmp_path / "placements").glob("*.tmp"))
    testbed = make_testbed()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        oa.compile_model(sg.attention_like(), testbed.hetero, core=testbed.core, cache_dir=tmp_path,
                         strategy="heavy_ops")
    assert "cache hit" in caplog.text and "falling back" not in caplog.text
    assert len(PlacementCache(tmp_path).entries()) == 1


def test_clear(testbed, tmp_path):
    _compile(sg.residual(), testbed, tmp_path, CountingStrategy())
    cache = PlacementCache(tmp_path)
    assert cache.clear() == 1 and cache.entries() == []


def test_log_messages_name_the_placement_cache_and_what_happens_next(testbed, tmp_path, caplog):
    """An entry for other pins is a placement-cache entry that is placed again, not a profile re-measured."""
    _compile(sg.residual(), testbed, tmp_path, "heavy_ops")
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        _compile(sg.residual(), testbed, tmp_path, "heavy_ops", pins={"stem": "CPUF"})
    text = caplog.text
    assert "placement-cache entry" in text and "pins" in text and "placing the model again" in text
    assert "re-measuring" not in text and "profile " not in text.replace("model profile", "")
    (entry,) = [p for p in PlacementCache(tmp_path).entries()
                if "stem" not in json.dumps(json.loads(p.read_text())["key"]["pins"])]
    data = json.loads(entry.read_text())
    data["key"]["max_submodels"] = 99  # as if edited by hand: stored key no longer matches its file name
    entry.write_text(json.dumps(data))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        _compile(sg.residual(), testbed, tmp_path, "heavy_ops")
    assert "placement-cache entry" in caplog.text and "made under other conditions" in caplog.text
    assert "placing the model again" in caplog.text and "re-measuring" not in caplog.text
