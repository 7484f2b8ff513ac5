"""Background profiling: the app runs on the prior's placement now; a detached worker measures for next time.

``spawn_worker`` (called by ``compile_model(..., profile="background")`` after
the app's model is compiled) takes a lock file for the placement-cache key
(``<root>/workers/<digest>.lock``, created with ``O_EXCL``: never two workers
for one key), writes the model and a small JSON spec beside it in a thread
(the app does not wait for it), and starts ``python -m ov_autoplace.background
<spec>`` in its own session, detached from the app. The worker rebuilds the
devices (a virtual device is registered again from its plugin), checks that it
sees the same model structure and device properties as the app (else it
stops: it would measure something else), profiles the model
(``measure_model_profile``, stored in the profile store), places it with the
HSDAG policy on the measured costs plus the guard, and overwrites the cache
entry the app will read on its next start (``source: profile``).

Nothing is lost if it dies: the app's entry stays (the prior's placement), the
stores write atomically, and a lock whose process is gone is stale and taken
over by the next start (and counted as a failure). A worker that failed
``MAX_FAILURES`` times for one key is not started again (``<digest>.failed`` counts; ``ov-autoplace cache clear``
resets it). A read-only cache root means no worker and a warning; the app is
unaffected either way.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

logger = logging.getLogger("ov_autoplace")

MAX_FAILURES = 2
#: A lock older than this is stale even if its pid exists (pids are reused).
LOCK_MAX_AGE_S = 6 * 3600
#: Properties the worker sets on its devices to match the app's (the profile key's properties).
WORKER_PROPERTIES = ("INFERENCE_PRECISION_HINT", "INFERENCE_NUM_THREADS", "PERFORMANCE_HINT", "NUM_STREAMS")
_BASES = {"intel_cpu": "CPU", "intel_gpu": "GPU", "intel_npu": "NPU"}


def worker_files(root: Path, key: dict) -> dict[str, Path]:
    from .costmodel.profile_store import key_digest

    stem = Path(root) / "workers" / key_digest(key)[:32]
    return {name: stem.with_suffix(suffix) for name, suffix in
            (("lock", ".lock"), ("spec", ".json"), ("model", ".xml"), ("weights", ".bin"), ("log", ".log"),
             ("failed", ".failed"))}


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie - dead, not yet reaped by its parent - does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def acquire_lock(lock: Path) -> bool:
    """Create ``lock`` holding our pid; False if a live holder has it. A stale lock is taken over."""
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                pid = int(lock.read_text().strip() or 0)
                age = time.time() - lock.stat().st_mtime
            except (OSError, ValueError):
                pid, age = 0, 0.0
            if pid and _pid_alive(pid) and age < LOCK_MAX_AGE_S:
                return False
            lock.unlink(missing_ok=True)  # stale: its worker died
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


def _holder_died(lock: Path) -> bool:
    """Whether ``lock`` exists and the process it names is gone."""
    try:
        pid = int(lock.read_text().strip() or 0)
    except (OSError, ValueError):
        return False
    return not (pid and _pid_alive(pid))


def release_lock(lock: Path, pid: int | None = None) -> None:
    """Remove ``lock`` if it holds ``pid`` (default: ours)."""
    try:
        if int(lock.read_text().strip() or 0) == (pid or os.getpid()):
            lock.unlink()
    except (OSError, ValueError):
        pass


def failures(path: Path) -> int:
    try:
        return int(path.read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def device_setup(core: Any, devices) -> dict[str, dict[str, Any]]:
    """How the worker rebuilds each device: its base plugin if it is a virtual device, and its properties."""
    import openvino as ov

    builtin = set(ov.Core().available_devices)
    setup = {}
    for device in devices:
        base = None
        if device not in builtin:
            description = core.get_versions(device)[device].description
            base = next((b for tag, b in _BASES.items() if tag in description), None)
        props = {}
        for prop in WORKER_PROPERTIES:
            try:
                props[prop] = str(core.get_property(device, prop))
            except Exception:  # noqa: BLE001 - not every plugin has every property
                pass
        setup[device] = {"base": base, "properties": props}
    return setup


def spawn_worker(req: Any, root: Path, key: dict, graph: Any) -> bool:
    """Start the worker for ``key`` unless one runs or it failed too often; never raises."""
    try:
        files = worker_files(root, key)
        files["lock"].parent.mkdir(parents=True, exist_ok=True)
        if failures(files["failed"]) >= MAX_FAILURES:
            logger.info("background profiling of this model failed %d times (log %s); not retrying",
                        failures(files["failed"]), files["log"])
            return False
        if _holder_died(files["lock"]):  # killed (OOM, SIGKILL) without its own failure count: count it here
            files["failed"].write_text(str(failures(files["failed"]) + 1))
            if failures(files["failed"]) >= MAX_FAILURES:
                logger.info("background profiling of this model died %d times (log %s); not retrying",
                            failures(files["failed"]), files["log"])
                return False
        if not acquire_lock(files["lock"]):
            logger.info("background profiling: a worker is already measuring this model (%s)", files["lock"])
            return False
        spec = {"key": key, "devices": list(req.devices), "setup": device_setup(req.core, req.devices),
                "model": str(files["model"]), "cache_dir": str(root), "max_submodels": req.max_submodels,
                "seed": req.seed, "lock": str(files["lock"]), "failed": str(files["failed"]),
                "pins": [dataclasses.asdict(p) for p in req.pins]}
    except Exception as exc:  # noqa: BLE001 - the app must never be hurt by the refinement
        logger.warning("background profiling not started (%s: %s)", type(exc).__name__, exc)
        return False
    thread = threading.Thread(target=_write_and_start, args=(req.placement_model, spec, files), name="ov_autoplace-bg",
                              daemon=False)  # the app's exit waits for the model write, not for the worker
    thread.start()
    logger.info("background profiling started for this model; the next start uses its placement (log %s)",
                files["log"])
    return True


def _write_and_start(model: Any, spec: dict, files: dict[str, Path]) -> None:
    import openvino as ov

    try:
        ov.save_model(model, str(files["model"]), compress_to_fp16=False)
        files["spec"].write_text(json.dumps(spec))
        with open(files["log"], "ab") as log:
            process = subprocess.Popen([sys.executable, "-m", "ov_autoplace.background", str(files["spec"])],
                                       stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True, close_fds=True)
        files["lock"].write_text(str(process.pid))  # the worker now holds the lock
        # reap it if the app outlives it (a daemon thread: never keeps the app from exiting)
        threading.Thread(target=process.wait, name="ov_autoplace-bg-reaper", daemon=True).start()
    except Exception as exc:  # noqa: BLE001
        logger.warning("background profiling could not start (%s: %s); the app is unaffected", type(exc).__name__,
                       exc)
        for name in ("model", "weights", "spec"):
            files[name].unlink(missing_ok=True)
        release_lock(files["lock"])


def run_worker(spec_path: Path) -> int:
    """The worker: measure, place, store. Returns a process exit code."""
    spec = json.loads(Path(spec_path).read_text())
    lock, failed = Path(spec["lock"]), Path(spec["failed"])
    model_path = Path(spec["model"])
    ok = False
    try:
        ok = _measure_and_store(spec)
        return 0 if ok else 3
    finally:
        if not ok:
            try:
                failed.write_text(str(failures(failed) + 1))
            except OSError:
                pass
        for path in (model_path, model_path.with_suffix(".bin"), Path(spec_path)):
            path.unlink(missing_ok=True)
        release_lock(lock)


def _measure_and_store(spec: dict) -> bool:
    import types

    import openvino as ov

    from .policy.pretrained import PRETRAINED_POLICY  # not via the api: the api imports this module
    from .cache import PlacementCache
    from .cache_root import profile_dir
    from .costmodel.profile_store import ProfileStore, profile_key
    from .devices import register_virtual_device
    from .first_start import _measure_now
    from .graph import extract_graph
    from .placement_sources import place_with_cost
    from .costmodel.profiler import MODEL_PROFILE_FORMAT, ModelProfile
    from .prepare import prepare_model

    core = ov.Core()
    devices = tuple(spec["devices"])
    for device, setup in spec["setup"].items():
        if setup["base"]:
            register_virtual_device(core, device, base_device=setup["base"])
        for prop, value in setup["properties"].items():
            try:
                core.set_property(device, {prop: value})
            except Exception as exc:  # noqa: BLE001 - read-only properties (e.g. FULL_DEVICE_NAME)
                logger.debug("%s: %s not set (%s)", device, prop, exc)
    model = core.read_model(spec["model"])
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    key = spec["key"]
    mine = profile_key(core, devices, kind="placement", graph=graph)
    for part in ("device_properties", "model_structure", "openvino_version"):
        if mine[part] != key[part]:
            logger.error("worker sees another %s than the app (%s vs %s); not measuring", part, mine[part], key[part])
            return False
    from .legalize import Pin

    req = types.SimpleNamespace(core=core, devices=devices, pins=[Pin(**p) for p in spec.get("pins", [])],
                                max_submodels=spec["max_submodels"],
                                seed=spec["seed"])
    store = ProfileStore(profile_dir(spec["cache_dir"]))
    started = time.perf_counter()
    _measure_now(req, prepared, store)
    profile_k = profile_key(core, devices, kind="model", graph=graph, extra={"format": MODEL_PROFILE_FORMAT})
    profile = store.load(profile_k, lambda payload: ModelProfile.from_dict(payload, graph))
    if profile is None:
        logger.error("the profile could not be stored in %s", store.directory)
        return False
    placement = place_with_cost(req, prepared, graph, PRETRAINED_POLICY, profile.cost_model, "hsdag:profile")
    placement.notes.append(f"placed by the background worker after {time.perf_counter() - started:.1f} s of profiling")
    if PlacementCache(spec["cache_dir"]).put(key, placement, graph) is None:
        return False
    logger.info("stored the profiled placement %s", placement.counts_per_device())
    return True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m ov_autoplace.background <spec.json>", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run_worker(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main())
