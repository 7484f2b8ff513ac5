"""Target generation, evaluation and training seeds as Ray tasks (``ray`` is in the ``[train]`` extra).

``ray.init()`` starts a local Ray with ``num_cpus`` CPUs (2 by default: the
development machine has two cores); ``address="host:port"`` (or ``"auto"``)
connects to an existing cluster instead and runs the same tasks there. Each
target is one task (one CPU); the driver saves every finished target at once
(``targets.save_target``), so an interrupted run resumes with the missing ones
only. A worker that dies is retried (``max_retries``); a task that still fails
is reported at the end in a :class:`~.targets.TargetGenerationError` listing
the specs, after every other target was saved - never a silently partial set.
An address that cannot be reached raises the same error naming the address.

Training runs one seed per task (:func:`train_seeds`): a recipe is compared
over three or more seeds, since one run's spread is as large as the
differences between recipes (docs/training.md). Each seed's policy is its
checkpoint: a rerun trains only the seeds whose file is missing, and a file
that is unreadable or holds another recipe is an error, never overwritten.

The workers import ``ov_autoplace`` from the driver's environment: on a
cluster every node needs the package installed (the same version) and the
zoo's IR cache or the ``zoo`` extra to build it.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any, Callable, Sequence

from ov_autoplace_lab.training.targets import (TargetCheckpointError, TargetGenerationError, TargetOptions, TargetSpec, check_manifest,
                      load_target, save_target, target_path)

log = logging.getLogger(__name__)

#: CPUs a local Ray gets by default (the machine's two cores; a cluster decides for itself).
DEFAULT_NUM_CPUS = 2


def init_ray(address: str | None = None, num_cpus: int = DEFAULT_NUM_CPUS):
    """``ray.init`` (local with ``num_cpus``, or the cluster at ``address``); a clear error when it fails."""
    try:
        import ray
    except ImportError as exc:
        raise TargetGenerationError("target generation runs on Ray: pip install 'ov-autoplace-lab[train]' "
                                    "(or pip install ray)") from exc
    if address and address != "auto":
        _reachable(address)
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    try:
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=num_cpus, **kwargs)
    except Exception as exc:  # noqa: BLE001 - ConnectionError, RuntimeError, ValueError depending on the failure
        where = f"the Ray cluster at {address!r}" if address else f"a local Ray with {num_cpus} CPUs"
        raise TargetGenerationError(f"cannot start or reach {where} ({type(exc).__name__}: {exc}); check the "
                                    "address (host:port of the head node, or 'auto' on a cluster node) and that "
                                    "the cluster runs the same Ray version, or leave --address out to run "
                                    "locally") from exc
    return ray


def _reachable(address: str, timeout: float = 5.0) -> None:
    """Fail in ``timeout`` seconds on an address nobody listens on (``ray.init`` itself retries for minutes)."""
    import socket

    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise TargetGenerationError(f"Ray address {address!r}: expected host:port of the head node (e.g. "
                                    "10.0.0.5:6379), ray://host:port, or 'auto'")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise TargetGenerationError(f"cannot reach the Ray cluster at {address!r} ({type(exc).__name__}: {exc}) "
                                    f"within {timeout:g} s; start the head node (ray start --head) or fix the "
                                    "address, or leave --address out to run locally") from exc


def run_tasks(fn: Callable[[Any], Any], items: Sequence[Any], on_result: Callable[[Any, Any], None], *,
              address: str | None = None, num_cpus: int = DEFAULT_NUM_CPUS, max_retries: int = 2,
              progress: bool = True, description: str = "tasks", total: int | None = None,
              done: int = 0) -> list[tuple[Any, str]]:
    """Run ``fn(item)`` for every item as a Ray task; ``on_result(item, result)`` in the driver as each finishes.

    Returns the (item, error) pairs that failed after ``max_retries`` retries of a dead worker (a Python
    exception inside ``fn`` is not retried: it would fail again)."""
    ray = init_ray(address, num_cpus)
    remote = ray.remote(num_cpus=1, max_retries=max_retries)(fn)
    pending = {remote.remote(item): item for item in items}
    failures: list[tuple[Any, str]] = []
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total if total is not None else len(items), initial=done, desc=description, unit="task")
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                item = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as exc:  # the task raised, or its worker died max_retries + 1 times
                    failures.append((item, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"))
                    log.warning("%s failed: %s", item, failures[-1][1])
                    continue
                on_result(item, result)
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        for ref in pending:  # interrupted: do not leave tasks running on the cluster
            ray.cancel(ref, force=True)
    return failures


def _generate(args: tuple[TargetSpec, TargetOptions]) -> dict:
    from ov_autoplace_lab.training.robust import generate_robust_target

    return generate_robust_target(*args)  # the search, and the robust choice when the options ask for it


def _retarget(args: tuple[TargetSpec, TargetOptions, str]) -> dict:
    """The robust choice over the search stored in another run (``searched_from``); the search where it has none."""
    spec, options, source = args
    path = target_path(source, spec)
    from ov_autoplace_lab.training.robust import generate_robust_target, robust_retarget

    if not path.exists():
        return generate_robust_target(spec, options)
    return robust_retarget(spec, load_target(path), options)


def check_searched_from(source: str | Path, options: TargetOptions) -> None:
    """``source`` must be a run whose search used the same options as this one (its targets are re-chosen, not
    searched again), or :class:`TargetCheckpointError` names the difference."""
    import json

    path = Path(source) / "manifest.json"
    try:
        found = json.loads(path.read_text())["options"]
    except (OSError, KeyError, ValueError) as exc:
        raise TargetCheckpointError(f"--searched-from {source}: no readable manifest.json ({exc}); name a run "
                                    "directory written by 'amortise targets'") from exc
    searched = {k: v for k, v in found.items() if k != "robust"}  # a robust run's search, under its own rule
    if searched != options.search_options().to_dict():
        raise TargetCheckpointError(f"--searched-from {source}: its search ran with {searched}, this run searches "
                                    f"with {options.search_options().to_dict()}; use the same --sigma, "
                                    "--max-evaluations, --ls-seconds, --milp-seconds and --start-policy")
    if found.get("robust"):  # its targets are robust choices: they must have kept their search's placement
        from ov_autoplace_lab.training.robust import searched_result

        # One file tells a run written before the placement was kept, before any task starts; a run resumed
        # across that change fails per target instead (_retarget raises; run_tasks lists it, nothing is skipped).
        stored = sorted((Path(source) / "targets").glob("*.npz"))
        try:
            if stored:
                searched_result(load_target(stored[0]))
        except ValueError as exc:
            raise TargetCheckpointError(f"--searched-from {source}: {exc}") from exc


def finished_specs(directory: str | Path, specs: Sequence[TargetSpec]) -> set[TargetSpec]:
    """The specs whose target is stored (each file is read: a damaged one raises, it is never skipped)."""
    done = set()
    for spec in specs:
        path = target_path(directory, spec)
        if path.exists():
            load_target(path)
            done.add(spec)
    return done


def generate_targets(directory: str | Path, specs: Sequence[TargetSpec], options: TargetOptions, *,
                     address: str | None = None, num_cpus: int = DEFAULT_NUM_CPUS, progress: bool = True,
                     task: Callable[[tuple[TargetSpec, TargetOptions]], dict] = _generate,
                     searched_from: str | Path | None = None) -> dict:
    """Generate (or resume) every target of ``specs`` into ``directory``; returns counts. Raises
    :class:`TargetGenerationError` listing the failed specs when any failed (the others are saved).
    ``searched_from``: a run with the same search options whose stored searches are re-chosen across draws
    (``options.robust`` must be on) instead of searched again."""
    specs = list(dict.fromkeys(specs))
    if searched_from is not None:
        if not (options.robust and options.robust.draws):
            raise TargetGenerationError("--searched-from re-chooses stored searches across draws: add "
                                        "--robust-draws K (K > 0)")
        check_searched_from(searched_from, options)
    check_manifest(directory, options, specs)
    done = finished_specs(directory, specs)
    todo = [s for s in specs if s not in done]
    log.info("targets: %d of %d already in %s, %d to generate", len(done), len(specs), directory, len(todo))
    saved = []
    failures = []
    if todo:
        items = [(s, options) if searched_from is None else (s, options, str(searched_from)) for s in todo]
        failures = run_tasks(task if searched_from is None else _retarget, items, lambda item, target: saved.append(
            save_target(directory, target)), address=address, num_cpus=num_cpus, progress=progress,
            description="targets", total=len(specs), done=len(done))
    if failures:
        listed = "; ".join(f"{item[0].key}: {error}" for item, error in failures[:5])
        raise TargetGenerationError(f"{len(failures)} of {len(todo)} targets failed ({listed}"
                                    f"{'; ...' if len(failures) > 5 else ''}); the {len(done) + len(saved)} "
                                    f"finished are saved in {directory}. Rerun the same command to generate only "
                                    "the missing ones")
    return {"total": len(specs), "resumed": len(done), "generated": len(saved)}


def seed_output(output: str | Path, seed: int) -> Path:
    """Where seed ``seed`` of a multi-seed run writes: ``NAME_s<seed>.npz`` beside ``output`` (``NAME.npz``)."""
    output = Path(output)
    return output.with_name(f"{output.stem}_s{seed}{output.suffix}")


def finished_seed(path: Path, recipe: dict) -> bool:
    """Whether ``path`` already holds this ``recipe``'s policy (False when absent). A file that is unreadable or
    was trained with another recipe raises :class:`TargetCheckpointError`: it is never overwritten."""
    if not path.exists():
        return False
    from ov_autoplace.errors import PolicyFormatError
    from ov_autoplace.policy.policy_file import load_policy_file

    try:
        metadata = load_policy_file(path).header.get("metadata") or {}
    except (PolicyFormatError, OSError, ValueError) as exc:
        raise TargetCheckpointError(f"{path}: not a readable policy ({exc}); delete it to train this seed again, "
                                    "or name another --output") from exc
    stored = metadata.get("imitation")
    if isinstance(stored, dict):  # a field added since the file was trained: its default is what trained it
        from ov_autoplace_lab.training.imitation import ImitationConfig

        defaults = {f.name: f.default for f in dataclasses.fields(ImitationConfig)}
        stored = {**{k: defaults[k] for k in recipe["imitation"] if k not in stored and k in defaults}, **stored}
    found = {"init": metadata.get("init"), "imitation": stored}
    if found != recipe:
        differ = sorted(k for k in recipe["imitation"] if (found["imitation"] or {}).get(k) != recipe["imitation"][k])
        raise TargetCheckpointError(f"{path} holds a policy of another recipe (differs in {differ or ['init']}); "
                                    "name another --output, or delete it to train this seed again")
    return True


def _train_seed(args: tuple) -> str:
    directory, output, config, init, specs, log_path = args
    from ov_autoplace_lab.training.imitation import train_amortised

    return str(train_amortised(directory, output, config, init=init, specs=specs, log_path=log_path, progress=False))


def train_seeds(directory: str | Path, output: str | Path, config, seeds: Sequence[int], *, init: str = "pretrained",
                specs: Sequence[TargetSpec] | None = None, log_path: str | Path | None = None,
                address: str | None = None, num_cpus: int = DEFAULT_NUM_CPUS, progress: bool = True) -> list[Path]:
    """``train_amortised`` once per seed, each a Ray task (one CPU, ``config.threads`` torch threads), writing
    :func:`seed_output` files; seeds whose file holds this recipe already are skipped (a resumed run). Raises
    :class:`TargetGenerationError` naming the seeds that failed, after the others were saved."""
    seeds = list(dict.fromkeys(int(s) for s in seeds))
    if not seeds:
        raise ValueError("train_seeds needs at least one seed")
    configs = {s: dataclasses.replace(config, seed=s) for s in seeds}
    outputs = {s: seed_output(output, s) for s in seeds}
    done = [s for s in seeds if finished_seed(outputs[s], {"init": init, "imitation": dataclasses.asdict(configs[s])})]
    todo = [s for s in seeds if s not in done]
    log.info("training seeds %s: %s already trained, %s to train", seeds, done, todo)
    if todo:
        items = [(str(directory), str(outputs[s]), configs[s], init, None if specs is None else list(specs),
                  None if log_path is None else str(seed_output(log_path, s)))
                 for s in todo]
        failures = run_tasks(_train_seed, items, lambda item, path: log.info("trained %s", path), address=address,
                             num_cpus=num_cpus, progress=progress, description="training seeds", total=len(seeds),
                             done=len(done))
        if failures:
            listed = "; ".join(f"seed {item[2].seed}: {error}" for item, error in failures)
            raise TargetGenerationError(f"{len(failures)} of {len(todo)} training seeds failed ({listed}); the "
                                        f"{len(seeds) - len(failures)} finished are saved beside {output}. Rerun the "
                                        "same command to train only the missing ones")
    return [outputs[s] for s in seeds]


__all__ = ["DEFAULT_NUM_CPUS", "TargetCheckpointError", "check_searched_from", "finished_seed", "finished_specs",
           "generate_targets", "init_ray", "run_tasks", "seed_output", "train_seeds"]
