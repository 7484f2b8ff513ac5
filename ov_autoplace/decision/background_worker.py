"""Background profiling and verification: the app runs now; a detached worker measures for the next start.

The rest of this overview: docs/architecture.md, "Module notes".
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import openvino as ov

from ov_autoplace.cache.placement_cache import PlacementCache
from ov_autoplace.cache.profile_store import ProfileStore, differences, profile_key
from ov_autoplace.cache.root import UntrustedDirectoryError, profile_dir, refusal_message, warn_once
from ov_autoplace.measuring.profiler import MODEL_PROFILE_FORMAT, ModelProfile
from ov_autoplace.decision.placement_sources import generation_measured, measure_profile_now, place_on_measured_costs
from ov_autoplace.decision.request import PlacementRequest
from ov_autoplace.decision.verification import needs_verification, runner_ups, verify_placement
from ov_autoplace.devices.device_strings import parse_device_string, register_virtual_device
from ov_autoplace.devices.kinds import DEVICE_KINDS, kind_of_plugin
from ov_autoplace.devices.timing import current_sample, input_sample
from ov_autoplace.errors import ShapeError
from ov_autoplace.model.generation import Generation
from ov_autoplace.model.input_sample import check_input_sample
from ov_autoplace.model.prepare import placement_graph, prepare_model
from ov_autoplace.model.shapes import static_clone
from ov_autoplace.placement.legalizer import Pin, query_support
from ov_autoplace.policy.pretrained import PRETRAINED_POLICY
from ov_autoplace.model.loading import (DAMAGED_FILE_ERRORS, USER_FILE_MAX_BYTES, WORKER_SPEC_MAX_BYTES, file_kind,
                                        read_bounded, read_json_bounded, remove_refused, write_private_atomic)
from ov_autoplace.devices.properties import decode_property, encode_property
from ov_autoplace.decision.worker_files import (MAX_FAILURES, acquire_lock, holder_died, private_worker_dir,
                           record_failure, release_lock, report_failure, worker_digest, worker_files)
from ov_autoplace.decision.worker_files import read_failure  # noqa: F401 - the worker's tests read records through here

logger = logging.getLogger("ov_autoplace")

#: Properties the worker sets on its devices to match the app's (the profile key's properties).
WORKER_PROPERTIES = ("INFERENCE_PRECISION_HINT", "INFERENCE_NUM_THREADS", "PERFORMANCE_HINT", "NUM_STREAMS")
SPEC_FORMAT = 2
LOG_MAX_BYTES = 1 << 20  # the log is started afresh beyond this


class WorkerFailure(Exception):
    """Why a worker stopped without storing a placement (the reason goes into ``failure.json``)."""


# --- the devices as the app had them --------------------------------------------------------------------


def device_setup(core: Any, devices) -> dict[str, dict[str, Any]]:
    """How the worker rebuilds each device: its base plugin if it is a virtual device, and its properties."""
    builtin = set(ov.Core().available_devices)
    setup = {}
    for device in devices:
        base = None
        if device not in builtin:
            description = core.get_versions(device)[device].description
            kind = kind_of_plugin(description)
            base = kind.name if kind is not None else None
        props = {}
        for prop in WORKER_PROPERTIES:
            try:
                props[prop] = encode_property(core.get_property(device, prop))
            except Exception as exc:  # noqa: BLE001 - not every plugin has every property
                logger.debug("%s: %s not handed to the worker (%s)", device, prop, exc)
        setup[device] = {"base": base, "properties": props}
    return setup


def restore_devices(core: Any, setup: Mapping[str, Mapping[str, Any]]) -> None:
    """Register and configure the app's devices on ``core``; WorkerFailure naming a property a device rejects.

    Only the properties :func:`device_setup` hands over (``WORKER_PROPERTIES``) are set: any other one in a spec
    (``CACHE_DIR``, a path OpenVINO would write blobs to, or anything else the app never writes) is a
    WorkerFailure naming it, raised before any device is touched.
    """
    for device, entry in setup.items():
        properties = entry.get("properties", {})
        if not isinstance(properties, Mapping):
            raise WorkerFailure(f"the spec's properties of {device} are a {type(properties).__name__}, not an "
                                "object; not measuring")
        unknown = sorted(str(p) for p in properties if p not in WORKER_PROPERTIES)
        if unknown:
            raise WorkerFailure(f"the spec sets {', '.join(unknown)} on {device}; the worker sets only "
                                f"{', '.join(WORKER_PROPERTIES)} (what the app hands it); not measuring")
    for device, entry in setup.items():
        if entry.get("base"):
            register_virtual_device(core, device, base_device=str(entry["base"]))
        else:
            core.get_property(device, "FULL_DEVICE_NAME")  # load the plugin: a bad value then raises, not lingers
        for prop, stored in dict(entry.get("properties", {})).items():
            value = decode_property(stored)
            try:
                core.set_property(device, {prop: value})
            except Exception as exc:  # noqa: BLE001 - the reason is the worker's failure record
                raise WorkerFailure(f"{device} rejected {prop}={value!r} ({type(exc).__name__}: {exc})") from exc


# --- the app side ---------------------------------------------------------------------------------------


def spawn_worker(req: PlacementRequest, root: Path, key: dict, graph: Any) -> bool:
    """Start the worker for ``key`` unless one runs or it failed too often; never raises."""
    try:
        digest = worker_digest(key)
        private_worker_dir(root, digest)
        files = worker_files(root, digest)
        pid = holder_died(files["lock"])
        if pid:  # killed (OOM, SIGKILL) before it could write its own record
            record_failure(files["failed"], f"the worker (pid {pid}) died without finishing (killed?)")
        failures = report_failure(files)
        if failures >= MAX_FAILURES:
            logger.info("background profiling of this model failed %d times (log %s); not retrying", failures,
                        files["log"])
            return False
        if not acquire_lock(files["lock"]):
            logger.info("background profiling: a worker is already measuring this model (%s)", files["lock"])
            return False
        spec = {"format": SPEC_FORMAT, "key": key, "devices": list(req.devices),
                "setup": device_setup(req.core, req.devices), "config": _encoded_config(req.props),
                "device_name": req.spec.text,
                "max_submodels": req.max_submodels, "seed": req.seed,
                "pins": [dataclasses.asdict(p) for p in req.pins]}
        if req.memory_caps:  # the worker only profiles: the next start places within the caps on the profile
            spec["profile_only"] = True
        if req.generation is not None:  # a decoder: the dynamic model, verified on its generation as the app does
            spec |= {"generation": list(dataclasses.astuple(req.generation)), "shapes": req.shapes}
        sample = current_sample()  # inputs=: the worker measures with it too (read here: threads do not see it)
        spec["sample"] = sample is not None
    except UntrustedDirectoryError as exc:
        warn_once(refusal_message("background profiling is off: its folder is refused", exc))
        return False
    except Exception as exc:  # noqa: BLE001 - the app must never be hurt by the refinement
        logger.warning("background profiling not started (%s: %s)", type(exc).__name__, exc)
        return False
    written = req.model if req.generation is not None else req.placement_model
    thread = threading.Thread(target=_write_and_start, args=(written, spec, Path(root), digest, sample),
                              name="ov_autoplace-bg", daemon=False)  # the app's exit waits for the model write
    thread.start()
    logger.info("background profiling started for this model; the next start uses its placement (log %s)",
                files["log"])
    return True


#: Compile properties that name a place on disk: never handed to the worker (a blob cache changes nothing it
#: measures) and refused in a spec, so the worker writes nowhere but its own folder and the cache root.
PATH_PROPERTIES = ("CACHE_DIR", "WEIGHTS_PATH")


def _encoded_config(props: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for name, value in dict(props or {}).items():
        if name in PATH_PROPERTIES:
            continue
        try:
            out[name] = encode_property(value)
        except TypeError as exc:
            logger.debug("config %s not handed to the worker (%s)", name, exc)
    return out


def _log_problem(st: os.stat_result) -> str | None:
    """Why a file may not take the worker's log, or None: it must be a regular file of ours with one name only.

    A hard link passes ``O_NOFOLLOW`` (it is no symlink), yet appending to it writes into whatever file it
    shares, possibly outside the root; so a second link, another owner or another kind of file is refused.
    """
    if not stat.S_ISREG(st.st_mode):
        return f"is {file_kind(st.st_mode)}"
    if st.st_nlink != 1:
        return f"has {st.st_nlink} hard links (its other names may be outside the cache root)"
    if st.st_uid != os.geteuid():
        return f"is owned by uid {st.st_uid}, not by this user"
    return None


def _open_log(path: Path) -> int:
    """The worker log, appended, 0600; a fresh private file whenever the one there is not plainly ours.

    Never through a symlink (``O_NOFOLLOW``) or a hard link (``st_nlink``), never a FIFO (``O_NONBLOCK``: ENXIO,
    not a hang); what is checked is what was opened (``fstat``), and a refused name is unlinked (the file behind
    a link is left alone) and the log created again with ``O_EXCL``.
    """
    try:
        st = os.lstat(path)
        problem = _log_problem(st)
        if problem:
            logger.warning("worker log %s %s; %s and starting a fresh one", path, problem, remove_refused(path))
        elif st.st_size > LOG_MAX_BYTES:
            os.unlink(path)
    except OSError:
        pass
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags | os.O_CREAT, 0o600)
    problem = _log_problem(os.fstat(fd))
    if problem:  # swapped in between the lstat and the open: out of the way, and a new file only we created
        os.close(fd)
        logger.warning("worker log %s %s; %s and starting a fresh one", path, problem, remove_refused(path))
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
    os.fchmod(fd, 0o600)
    return fd


def _write_and_start(model: Any, spec: dict, root: Path, digest: str, sample=None) -> None:
    files = worker_files(root, digest)
    try:
        for name in ("model", "weights"):  # save_model writes through a symlink: remove whatever is there first
            if os.path.lexists(files[name]):
                remove_refused(files[name])
        ov.save_model(model, str(files["model"]), compress_to_fp16=False)
        for name in ("model", "weights"):
            os.chmod(files[name], 0o600)  # save_model follows the umask
        if sample is not None:
            buffer = io.BytesIO()
            np.savez(buffer, **sample)
            write_private_atomic(files["sample"], buffer.getvalue())
        write_private_atomic(files["spec"], json.dumps(spec))
        log = _open_log(files["log"])
        try:
            process = subprocess.Popen([sys.executable, "-m", "ov_autoplace.decision.background_worker", str(root), digest],
                                       stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True, close_fds=True)
        finally:
            os.close(log)
        # the worker writes its own pid into the lock when it starts (run_worker): written here, a worker that
        # finished first would leave a lock naming a dead pid, counted as a death on the next start
        threading.Thread(target=process.wait, name="ov_autoplace-bg-reaper", daemon=True).start()
    except Exception as exc:  # noqa: BLE001
        logger.warning("background profiling could not start (%s: %s); the app is unaffected", type(exc).__name__,
                       exc)
        for name in ("model", "weights", "spec", "sample"):
            files[name].unlink(missing_ok=True)
        release_lock(files["lock"])


# --- the worker -----------------------------------------------------------------------------------------


def read_spec(path: Path, digest: str) -> dict[str, Any]:
    """The spec in the worker's folder, checked (WorkerFailure naming what is wrong)."""
    try:
        spec = read_json_bounded(path, WORKER_SPEC_MAX_BYTES)
    except DAMAGED_FILE_ERRORS as exc:
        raise WorkerFailure(f"the spec {path} is unreadable ({type(exc).__name__}: {exc})") from exc
    checks = [  # each check runs only after the ones before it passed
        (lambda: isinstance(spec, dict) and spec.get("format") == SPEC_FORMAT, f"a JSON object of format {SPEC_FORMAT}"),
        (lambda: isinstance(spec.get("key"), dict) and worker_digest(spec["key"]) == digest,
         "a key that hashes to its folder's name (a foreign spec otherwise)"),
        (lambda: isinstance(spec.get("devices"), list) and spec["devices"] == spec["key"].get("devices")
         and all(isinstance(d, str) for d in spec["devices"]), "the key's device list"),
        (lambda: isinstance(spec.get("setup"), dict) and set(spec["setup"]) <= set(spec["devices"])
         and all(isinstance(s, dict) and s.get("base") in (None, *(k.name for k in DEVICE_KINDS)) for s in spec["setup"].values()),
         "a setup per listed device"),
        (lambda: isinstance(spec.get("config", {}), dict), "a config object"),
        (lambda: not set(spec.get("config", {})) & set(PATH_PROPERTIES),
         f"a config without a path ({', '.join(PATH_PROPERTIES)}: the worker writes only under its root)"),
        (lambda: spec.get("max_submodels") is None or type(spec.get("max_submodels")) is int,
         "an integer max_submodels"),
        (lambda: type(spec.get("seed")) is int, "an integer seed"),
        (lambda: isinstance(spec.get("pins"), list) and all(isinstance(p, dict) for p in spec["pins"]),
         "a list of pins"),
        (lambda: "generation" not in spec or (
            isinstance(spec["generation"], list) and len(spec["generation"]) == 2
            and all(type(c) is int and c >= 1 for c in spec["generation"]) and isinstance(spec.get("shapes"), dict)
            and all(isinstance(d, list) and all(type(x) is int for x in d) for d in spec["shapes"].values())),
         "a generation of two positive ints with the placement shapes"),
        (lambda: type(spec.get("profile_only", False)) is bool, "a boolean profile_only"),
        (lambda: type(spec.get("sample", False)) is bool, "a boolean sample"),
    ]
    for ok, expected in checks:
        if not ok():
            raise WorkerFailure(f"the spec {path} is not one the app wrote: expected {expected}; not measuring")
    return spec


def run_worker(root: str | os.PathLike, digest: str) -> int:
    """The worker: measure, place, verify, store. Returns a process exit code; touches only its own folder."""
    try:
        folder = private_worker_dir(root, digest, create=False)
    except (OSError, ValueError) as exc:  # not ours, not private, not there: touch nothing
        logger.error("not running: the worker folder for %r under %s is unusable (%s)", digest, root, exc)
        return 2
    files = worker_files(root, digest)
    reason, abstained = None, False
    try:
        write_private_atomic(files["lock"], str(os.getpid()))  # the worker holds the lock the app took for it
        spec = read_spec(files["spec"], digest)
        for name in ("model", "weights"):
            if not stat.S_ISREG(os.lstat(files[name]).st_mode):
                raise WorkerFailure(f"{files[name]} is not a regular file; not measuring")
        with input_sample(_read_sample(files["sample"]) if spec.get("sample") else None):
            reason = _measure_and_store(spec, Path(root), files["model"])
        abstained = reason is not None  # a noisy or loaded machine: no failure of ours, but a try all the same
        return 0 if reason is None else 3
    except WorkerFailure as exc:
        reason = str(exc)
        return 3
    except Exception as exc:  # noqa: BLE001 - recorded, so the app can say why
        logger.exception("the worker failed")
        reason = f"{type(exc).__name__}: {exc}"
        return 3
    finally:
        if reason is not None:
            if abstained:
                logger.info("the plain call's placement stays unverified (%s); measured again on a later start",
                            reason)
            else:
                logger.error("background profiling failed: %s", reason)
            record_failure(files["failed"], reason, abstained=abstained)
        else:
            files["failed"].unlink(missing_ok=True)
        for name in ("model", "weights", "spec", "sample"):
            if files[name].parent == folder:
                files[name].unlink(missing_ok=True)
        release_lock(files["lock"])


def _read_sample(path: Path) -> dict[str, np.ndarray]:
    """The app's ``inputs=`` sample, bounded and without pickles (checked against the model by ``_measure_and_store``)."""
    try:
        with np.load(io.BytesIO(read_bounded(path, USER_FILE_MAX_BYTES)), allow_pickle=False) as arrays:
            return {name: arrays[name] for name in arrays.files}
    except (*DAMAGED_FILE_ERRORS, ValueError) as exc:
        raise WorkerFailure(f"the input sample {path} is unreadable ({type(exc).__name__}: {exc})") from exc


def _measure_and_store(spec: dict, root: Path, model_path: Path) -> str | None:
    """Measure, place, verify and store; None on success, else why the plain placement stays (WorkerFailure raises)."""
    core = ov.Core()
    devices = tuple(spec["devices"])
    restore_devices(core, spec["setup"])
    model = dynamic = core.read_model(str(model_path))
    generation = Generation(*spec["generation"]) if "generation" in spec else None
    if generation is not None:  # a decoder's dynamic model: placed on its static clone, as the app placed it
        model = static_clone(dynamic, spec["shapes"])
    sample = current_sample()
    if sample is not None:  # the app checked it on this model: a mismatch means another model
        try:
            check_input_sample(dynamic, sample)
        except ShapeError as exc:
            raise WorkerFailure(f"the input sample does not fit the model ({exc}); not measuring") from exc
        logger.info("measuring with the app's input sample (%s)", ", ".join(sample))
    prepared = prepare_model(model)
    graph = placement_graph(prepared, dynamic)  # a decoder's clone carries the dynamic graph: stateful rule 2
    key = spec["key"]
    mine = profile_key(core, devices, kind="placement", graph=graph)
    for part in ("device_properties", "model_structure", "openvino_version"):
        if mine[part] != key.get(part):
            diff = "; ".join(differences({part: key.get(part)}, {part: mine[part]}))
            raise WorkerFailure(f"the worker sees another {part} than the app ({diff}); not measuring")
    config = {name: decode_property(value) for name, value in spec.get("config", {}).items()}
    req = PlacementRequest(core, parse_device_string(f"HETERO:{','.join(devices)}"), config,
                           dynamic if generation else model, devices, placement_model=model,
                           pins=tuple(Pin(**p) for p in spec["pins"]), max_submodels=spec["max_submodels"],
                           seed=spec["seed"], generation=generation)
    store = ProfileStore(profile_dir(root))
    profile_k = profile_key(core, devices, kind="model", graph=graph, extra={"format": MODEL_PROFILE_FORMAT})
    started = time.perf_counter()
    profile = store.load(profile_k, lambda payload: ModelProfile.from_dict(payload, graph))
    if profile is None or generation is not None:  # a decoder's decode steps are profiled too (stored ones reused)
        measure_profile_now(req, prepared, graph, store)
        profile = store.load(profile_k, lambda payload: ModelProfile.from_dict(payload, graph))
    if profile is None:
        raise WorkerFailure(f"the profile could not be stored in {store.directory}")
    if spec.get("profile_only"):  # memory_caps: the app's next start places within them on this profile
        logger.info("stored the profile after %.1f s (memory caps: the next start places within them on it)",
                    time.perf_counter() - started)
        return None
    placing_graph, cost = generation_measured(req, graph, profile.cost_model, store)  # a decoder's whole generation
    candidate = place_on_measured_costs(req, prepared, placing_graph, PRETRAINED_POLICY, cost, "hsdag:profile")
    candidate.notes.append(f"placed by the background worker after {time.perf_counter() - started:.1f} s of "
                           "profiling")
    support = query_support(core, prepared, graph, devices)
    alternatives = runner_ups(graph, devices, support, cost, max_submodels=req.max_submodels,
                              pins=req.pins, core=core, generation=generation)
    return store_verified(core, root, key, prepared, graph, dynamic if generation else model, candidate,
                          pinned=bool(req.pins), config=config, device_name=spec.get("device_name"),
                          alternatives=alternatives, support=support, generation=generation)


def store_verified(core: Any, root: Path, key: Mapping[str, Any], prepared: Any, graph: Any, model: Any,
                   candidate: Any, *, pinned: bool = False, config: Mapping[str, Any] | None = None,
                   device_name: str | None = None, alternatives=(), support=None, generation=None) -> str | None:
    """Verify ``candidate`` and the runner-up splits ``alternatives`` by measurement (``verification.py``) and
    store what wins under ``key``.

    A pinned candidate (the user's call) is stored as it is, and so is the plain call's own placement when no
    runner-up deviates from it either. Returns None, or why the plain call's placement stays unverified (the
    verification abstained); WorkerFailure if nothing could be stored.
    """
    if support is None:
        support = query_support(core, prepared, graph, candidate.devices)
    if pinned or not any(needs_verification(p, graph, support) for p in (candidate, *alternatives)):
        placement, evidence, reason = candidate, None, None
    else:
        placement, evidence = verify_placement(core, prepared, graph, candidate, support=support,
                                               properties=config, model=model,
                                               device_name=device_name or candidate.device_string,
                                               alternatives=alternatives, generation=generation)
        reason = None
        if evidence.decision == "provisional":  # won by a wide margin under load: stored, used while the load lasts
            pass
        elif not evidence.verified:  # too noisy to decide: the plain call's placement stays, verified again later
            placement.strategy = placement.strategy.split("+")[0] + "+pending"
            reason = f"verification abstained: {evidence.reason}"
    if PlacementCache(root).put(key, placement, graph) is None:
        raise WorkerFailure(f"the placement could not be stored under {root}")
    logger.info("stored the %s placement %s (%s)", "plain call's" if reason else "provisionally used" if (
                    evidence is not None and evidence.decision == "provisional") else "profiled",
                placement.counts_per_device(), evidence.describe() if evidence else
                "pinned: not verified" if pinned else "the plain call's placement: nothing to verify")
    return reason


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m ov_autoplace.decision.background_worker <cache root> <digest>  (the app starts this; a spec path "
              "is not accepted: the worker takes no paths from data)", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run_worker(Path(argv[0]), argv[1])


if __name__ == "__main__":
    sys.exit(main())
