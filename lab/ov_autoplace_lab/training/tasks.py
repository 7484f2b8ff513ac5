"""The training tasks: graphs x (simulated, perturbed or measured) platforms, as :class:`SimEnv` objects.

Device conditioning only generalises if the policy sees many kinds of
devices, so besides the two simulated platforms of ``costmodel.platforms``
(paper: i9 + Flex 170; laptop: Core Ultra CPU + iGPU + NPU) and a simulated
model of this machine's testbed (:func:`simulated_testbed_platform`), training
draws *perturbed* variants (:func:`perturb_platform`): every device's peaks,
per-category efficiencies, memory bandwidth, launch and submodel overheads
and host link are scaled by random log-uniform factors, the requested
precision varies, and devices may be reordered or (on 3-device platforms)
dropped. That makes mixed placements optimal on many tasks, where the
unperturbed platforms mostly favour one device for the whole model.
Everything built here is labelled simulated (``CostModel.label``); a measured
testbed profile enters through :func:`measured_testbed_envs` when the profiler works.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Callable, Iterable, Sequence

import numpy as np
import openvino as ov

from ov_autoplace.costmodel.platforms import CATEGORIES, PLATFORMS, SimDevice, SimPlatform
from ov_autoplace.costmodel.sim_costs import cost_model_for, host_cpu_device
from ov_autoplace.graph.arrays import GraphArrays, extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace_lab.training.env import SimEnv

log = logging.getLogger(__name__)

PRECISION_CHOICES = ("f16", "f32", "int8")


def simulated_testbed_platform() -> SimPlatform:
    """A *simulated* twin of the earlier testbed: this CPU as bf16 x1 thread ("CPU") and f32 x2 ("CPUF").

    (``testbed.make_testbed()`` now gives both devices every core; this platform stays in the pretraining
    task set that produced the shipped policy.)

    Estimated from /proc/cpuinfo (``sim_costs.host_cpu_device``); CPUF is
    restricted to f32 (no bf16/AMX peaks) the way the testbed configures it.
    """
    accel = host_cpu_device(1, "CPU")
    host = dataclasses.replace(host_cpu_device(2, "CPUF"), peak_flops={"f32": host_cpu_device(2).peak_flops["f32"]},
                               matrix_peak_flops={}, submodel_overhead_ms=0.005)
    return SimPlatform.from_host_links("simulated testbed: CPU bf16 x1 + CPUF f32 x2", (accel, host),
                                       notes="both devices are the same CPU; estimates only")


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(math.exp(rng.uniform(math.log(low), math.log(high))))


def perturb_device(device: SimDevice, rng: np.random.Generator, strength: float = 1.0) -> SimDevice:
    """``device`` with every rate and overhead scaled by a random factor (``strength`` 1: up to ~3-4x either way)."""
    f = lambda low, high: _log_uniform(rng, low ** strength, high ** strength)  # noqa: E731
    peak = f(1 / 4, 4)
    matrix = peak * f(1 / 2, 2)
    compute_eff = {c: float(np.clip(v * f(1 / 3, 3), 1e-3, 1.0)) for c, v in device.compute_efficiency.items()}
    memory_eff = {c: float(np.clip(v * f(1 / 2, 2), 1e-3, 1.0)) for c, v in device.memory_efficiency.items()}
    compute_eff["view"], memory_eff["view"] = 1.0, 1.0
    host = math.isinf(device.host_link_bandwidth)
    return dataclasses.replace(
        device,
        peak_flops={p: v * peak for p, v in device.peak_flops.items()},
        matrix_peak_flops={p: v * matrix for p, v in device.matrix_peak_flops.items()},
        memory_bandwidth=device.memory_bandwidth * f(1 / 3, 3),
        launch_overhead_ms=device.launch_overhead_ms * f(1 / 2, 3),
        submodel_overhead_ms=device.submodel_overhead_ms * f(1 / 3, 4),
        host_link_bandwidth=device.host_link_bandwidth if host else device.host_link_bandwidth * f(1 / 4, 4),
        host_link_latency_ms=device.host_link_latency_ms if host else device.host_link_latency_ms * f(1 / 3, 3),
        compute_efficiency=compute_eff, memory_efficiency=memory_eff,
        product=f"{device.product} (perturbed)",
    )


def perturb_platform(platform: SimPlatform, rng: np.random.Generator, strength: float = 1.0, *,
                     shuffle: bool = True, drop: bool = True) -> SimPlatform:
    """A random variant of ``platform`` (see the module docstring); still labelled simulated."""
    devices = [perturb_device(d, rng, strength) for d in platform.devices]
    if drop and len(devices) > 2 and rng.random() < 0.3:
        devices.pop(int(rng.integers(len(devices))))
    if shuffle:
        devices = [devices[i] for i in rng.permutation(len(devices))]
    return SimPlatform.from_host_links(f"{platform.name} (perturbed)", devices, notes="random variant for training")


def base_platforms(include_testbed: bool = True) -> dict[str, SimPlatform]:
    out = dict(PLATFORMS)
    if include_testbed:
        out["sim_testbed"] = simulated_testbed_platform()
    return out


@dataclasses.dataclass(frozen=True)
class PlatformDraw:
    """One platform a task runs on: the platform, the precision asked of it, and a short tag."""

    platform: SimPlatform
    precision: str
    tag: str


def platform_draws(rng: np.random.Generator, count: int, *, include_base: bool = True,
                   strength: float = 1.0) -> list[PlatformDraw]:
    """The unperturbed base platforms (f16; the testbed twin in bf16) and ``count`` perturbed variants."""
    bases = base_platforms()
    draws = []
    if include_base:
        draws += [PlatformDraw(p, "bf16" if name == "sim_testbed" else "f16", name) for name, p in bases.items()]
    names = list(bases)
    for k in range(count):
        name = names[int(rng.integers(len(names)))]
        precision = "bf16" if name == "sim_testbed" else str(rng.choice(PRECISION_CHOICES))
        draws.append(PlatformDraw(perturb_platform(bases[name], rng, strength), precision, f"{name}~{k}"))
    return draws


def prepared_graph(model: ov.Model) -> GraphArrays:
    return extract_graph(prepare_model(model))


def zoo_graphs(names: Sequence[str] = ("inception_v3", "resnet50", "bert_base")) -> dict[str, GraphArrays]:
    """Prepared graphs of the zoo models (needs the repository's ``models`` package and the zoo IR cache)."""
    from ov_autoplace_lab import models as zoo

    return {name: prepared_graph(zoo.load(name)) for name in names}


def family_graphs(split: str = "train", count: int | None = None) -> dict[str, GraphArrays]:
    from ov_autoplace_lab.training.graph_family import family

    return {name: prepared_graph(build()) for name, build in family(split, count)}


def sim_envs(graphs: dict[str, GraphArrays], draws: Iterable[PlatformDraw], *,
             max_submodels: int | None = None) -> list[SimEnv]:
    """One :class:`SimEnv` per (graph, platform draw)."""
    envs = []
    for draw in draws:
        for name, graph in graphs.items():
            cost = cost_model_for(graph, draw.platform, precision=draw.precision)
            envs.append(SimEnv(graph, cost, name=f"{name}@{draw.tag}/{draw.precision}", max_submodels=max_submodels))
    return envs


def suite_envs(graphs: dict[str, GraphArrays], *, max_submodels: int | None = None) -> list[SimEnv]:
    """One :class:`SimEnv` per (graph, named suite platform): the batch-1 device model fitted to published
    latencies (``costmodel/suite.py``), where splits pay (NPU op gaps, small memory, close devices)."""
    from ov_autoplace.costmodel.suite import load_suite

    envs = []
    for name, platform in load_suite().items():
        for graph_name, graph in graphs.items():
            envs.append(SimEnv(graph, platform.cost_model(graph), name=f"{graph_name}@suite:{name}/{platform.precision}",
                               max_submodels=max_submodels))
    return envs


def measured_testbed_envs(models: dict[str, Callable[[], ov.Model]], *, store=None) -> list[SimEnv]:
    """SimEnvs over *measured* testbed CostModels (``profile_model``), or [] with a warning if profiling fails."""
    try:
        from ov_autoplace.cache.profile_store import ProfileStore
        from ov_autoplace.measuring.profiler import profile_model
        from ov_autoplace.devices.testbed import shared_testbed

        store = store if store is not None else ProfileStore()  # profiles are cached per model and device setup
        testbed = shared_testbed(False)
        envs = []
        for name, build in models.items():
            prepared = prepare_model(build())
            graph = extract_graph(prepared)
            cost = profile_model(prepared, testbed.core, testbed.devices, store=store)
            envs.append(SimEnv(graph, cost, name=f"{name}@testbed(measured)"))
        return envs
    except Exception as exc:  # noqa: BLE001 - training goes on with simulated platforms only
        log.warning("no measured testbed profile (%s: %s); training on simulated platforms only",
                    type(exc).__name__, exc)
        return []


__all__ = ["CATEGORIES", "PRECISION_CHOICES", "PlatformDraw", "base_platforms", "family_graphs",
           "measured_testbed_envs", "perturb_device", "perturb_platform", "platform_draws", "prepared_graph",
           "sim_envs", "simulated_testbed_platform", "suite_envs", "zoo_graphs"]
