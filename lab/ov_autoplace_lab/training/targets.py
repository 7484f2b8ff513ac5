"""Imitation targets: the best placement known of one graph on one platform, found by search.

A :class:`TargetSpec` names a graph, a suite platform and a variant (as fitted, or perturbed with the held-out
calibration error from a seed stream of its own, so training never sees the benchmark's truth draws).
:func:`generate_target` runs what inference runs around a proposal (op support, ``legalize()`` with
``compile_model``'s bound, the memory check) on the local search's placements from every single device, HETERO's
own affinity and the policy's one pass (plus the MILP if asked), and keeps the fastest legal one. Targets are stored
one ``.npz`` per spec, atomically, so a stopped run resumes. Everything is simulated. The cases and candidates in
full: docs/training.md, "Targets".
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ov_autoplace.errors import OVAutoplaceError
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.legalizer import DEFAULT_MAX_SUBMODELS

if TYPE_CHECKING:  # robust.py imports this module
    from ov_autoplace_lab.training.robust import RobustOptions

#: Seed stream of the perturbed training variants (the benchmark's truth draws use ``TruthSpec.seed``, 0 by default,
#: under another key: ``truth.category_factors`` seeds with ``[seed, draw, crc32(device)]``).
VARIANT_STREAM = 22_000
#: Variants from this index on are op-support-hole variants: variant ``HOLE_VARIANTS + k`` is variant ``k`` (the same
#: devices, order and factors) with a few of the graph's op types unsupported on one device (:func:`op_support_holes`),
#: as an accelerator plugin lacks ops, so the bound the legalizer must keep is forced up (docs/training.md, "Targets").
HOLE_VARIANTS = 100
#: Seed stream of the holes (another key than the variants', so variant k's factors stay what they were).
HOLE_STREAM = 22_100
#: Op types never made a hole: the GEMMs every accelerator plugin runs, and the graph's ends.
_NEVER_HOLES = frozenset({"Convolution", "MatMul", "Parameter", "Constant", "Result"})
#: Fallback sigma of the perturbations when the held-out calibration error cannot be computed.
DEFAULT_SIGMA = 0.46
#: The legalizer's bound at inference (``compile_model``'s default).
MAX_SUBMODELS = DEFAULT_MAX_SUBMODELS
#: A placement within this ratio of a target's latency "fits" it (``fit.py``, ``imitation.one_pass_misses``).
FITS = 1.05
#: The per-node rows a target file stores as arrays beside its JSON ``meta``: the target, and for a robust
#: choice the search's own placement (``robust.robust_retarget``; absent in files written before it was kept).
_ARRAYS = ("placement", "search_placement")


class TargetCheckpointError(OVAutoplaceError, ValueError):
    """A stored target (or the run's manifest) is unreadable or belongs to another run."""


class TargetGenerationError(OVAutoplaceError, RuntimeError):
    """Target generation could not finish every target (the Ray cluster, a worker, a failed search)."""


@dataclasses.dataclass(frozen=True)
class TargetSpec:
    """One (graph, platform, variant) case. ``variant`` -1: the suite platform as fitted."""

    graph: str
    platform: str
    variant: int = -1

    @property
    def key(self) -> str:
        tail = "" if self.variant < 0 else f"~{self.variant}"
        return re.sub(r"[^A-Za-z0-9_.@~+-]", "_", f"{self.graph}@{self.platform}{tail}")

    @property
    def model(self) -> str:
        """The graph's name without its source prefix (the architecture, for leave-architecture-out)."""
        return self.graph.split(":", 1)[1] if ":" in self.graph else self.graph


@dataclasses.dataclass(frozen=True)
class TargetOptions:
    """How a target is searched. ``policy``: an exported policy whose one pass is one more start (None: none);
    ``heft_start``: HEFT's placement is one more start too, so no target is slower than HEFT's placement refined;
    ``priced``: every candidate is legalised as ``compile_model`` legalises (the bound's merges priced on the case's
    cost model) instead of in flops order, so a target is the placement the policy's pass would have to produce."""

    sigma: float = DEFAULT_SIGMA
    max_evaluations: int = 6000
    local_search_seconds: float = 30.0
    milp_seconds: float = 0.0
    policy: str | None = None
    robust: RobustOptions | None = None  # robust.RobustOptions: choose the target across perturbed draws
    heft_start: bool = False
    priced: bool = False

    def to_dict(self) -> dict:
        """The manifest's record; ``robust``, ``heft_start``, ``priced`` and the robust ``min_gain`` only when on,
        so the manifests of runs without them stay as they were."""
        out = dataclasses.asdict(self)
        if not (self.robust and self.robust.draws):
            out.pop("robust")
        elif not self.robust.min_gain:
            out["robust"].pop("min_gain")
        for flag in ("heft_start", "priced"):
            if not out[flag]:
                out.pop(flag)
        return out

    def search_options(self) -> "TargetOptions":
        """These options without the robust choice (what the search itself ran with)."""
        return dataclasses.replace(self, robust=None)


# ---------------------------------------------------------------------------------------------------- the case
@functools.lru_cache(maxsize=64)
def load_graph(name: str) -> GraphArrays:
    """The prepared graph of ``zoo:<model>``, ``family:<seed>`` or ``family:<kind>:<seed>`` (cached per process:
    Ray reuses workers)."""
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.model.prepare import prepare_model

    source, _, rest = name.partition(":")
    if source == "zoo":
        from ov_autoplace_lab import models as zoo

        if rest in zoo.FROZEN_HELD_OUT:  # no target (hence no training or selection) on a frozen held-out graph
            from ov_autoplace_lab.training.heldout_guard import HeldOutContamination

            raise HeldOutContamination(f"graph {name!r} is a frozen held-out architecture (docs/heldout.md): targets "
                                       "are never generated on it; evaluate it with benchmarks/bench_platforms.py "
                                       "--models heldout (or heldout2)")
        return _not_held_out(name, extract_graph(prepare_model(zoo.load(rest))))
    if source == "family":
        from ov_autoplace_lab.training.graph_family import build

        kind, _, seed = rest.rpartition(":")
        return _not_held_out(name, extract_graph(prepare_model(build(int(seed), kind or None))))
    raise ValueError(f"graph {name!r}: expected 'zoo:<model>', 'family:<seed>' or 'family:<kind>:<seed>'")


def _not_held_out(name: str, graph: GraphArrays) -> GraphArrays:
    """``graph``, unless it is a frozen held-out architecture under another name (its fingerprint)."""
    from ov_autoplace_lab.training.heldout_guard import check_graph_not_held_out

    check_graph_not_held_out(name, graph)
    return graph


@functools.lru_cache(maxsize=1)
def _suite():
    from ov_autoplace.costmodel.suite import load_suite

    return load_suite()


def variant_platform(spec: TargetSpec, sigma: float):
    """(SuitePlatform, per-category factors [D, categories] or None) of ``spec`` (docs/training.md, "Targets")."""
    from ov_autoplace.costmodel.platforms import CATEGORIES

    suite = _suite()
    if spec.platform not in suite:
        raise ValueError(f"{spec.key}: unknown suite platform {spec.platform!r}; the suite has {sorted(suite)}")
    platform = suite[spec.platform]
    if spec.variant < 0:
        return platform, None
    rng = np.random.default_rng([VARIANT_STREAM, spec.variant % HOLE_VARIANTS, zlib.crc32(spec.platform.encode())])
    names = list(platform.device_names)
    if len(names) > 2 and rng.random() < 0.3:
        names.pop(int(rng.integers(len(names))))
    names = [names[i] for i in rng.permutation(len(names))]
    factors = np.exp(sigma * rng.standard_normal((len(names), len(CATEGORIES))))
    return platform.subset(tuple(names)), factors


def case_cost(spec: TargetSpec, sigma: float, graph: GraphArrays | None = None):
    """(graph, CostModel, support [N, D]) of ``spec``: the simulated case the target is searched on."""
    from ov_autoplace_lab.paper_bench.truth import perturbed_cost
    from ov_autoplace.costmodel.sim_costs import simulated_support

    graph = graph if graph is not None else load_graph(spec.graph)
    platform, factors = variant_platform(spec, sigma)
    cost = platform.cost_model(graph)
    if factors is not None:
        cost = perturbed_cost(cost, graph, factors)
    if spec.variant >= HOLE_VARIANTS:
        cost = op_support_holes(spec, cost, graph)
    return graph, cost, simulated_support(cost, graph)


def op_support_holes(spec: TargetSpec, cost, graph: GraphArrays):
    """``cost`` with one or two of the graph's rarer op types (never a GEMM) unsupported on one device other than the
    ``CPU`` (the first fully supporting device where the variant dropped the CPU), drawn from :data:`HOLE_STREAM`: the
    legalizer then has to keep every node of those types off that device, as HETERO does with a plugin's missing ops."""
    from ov_autoplace.graph.arrays import NodeRole

    rng = np.random.default_rng([HOLE_STREAM, spec.variant, zlib.crc32(spec.platform.encode())])
    compute = np.asarray(cost.compute_ms, np.float64)
    active = np.asarray(graph.role) == NodeRole.COMPUTE
    devices = list(cost.devices)
    full = [d for d in range(len(devices)) if np.isfinite(compute[active, d]).all()]
    keep = devices.index("CPU") if "CPU" in devices else (full[0] if full else 0)
    names, counts = np.unique(np.asarray(graph.op_types)[active], return_counts=True)
    # a plugin misses the rarer ops, not the adds and multiplies every block has: types of at most a quarter of
    # the nodes
    types = sorted(set(names[counts <= max(1, active.sum() // 4)].tolist()) - _NEVER_HOLES)
    if not types or len(devices) < 2:
        return cost
    others = [d for d in range(len(devices)) if d != keep]
    device = others[int(rng.integers(len(others)))]
    holes = rng.choice(types, size=min(len(types), int(rng.integers(1, 3))), replace=False)
    rows = active & np.isin(np.asarray(graph.op_types), holes)
    compute, unfused = compute.copy(), np.asarray(cost.unfused_ms, np.float64).copy()
    compute[rows, device] = unfused[rows, device] = np.inf
    return dataclasses.replace(cost, compute_ms=compute, unfused_ms=unfused,
                               source=f"{cost.source}, {devices[device]} without {', '.join(map(str, holes))}")


# ---------------------------------------------------------------------------------------------------- the search
def _legal_row(graph, proposal, devices, support, price=None) -> np.ndarray:
    """``proposal`` legalised with the bound of 8; ``price``: the merge pricer (``memory_fit.legal_pricer``), None for
    flops order."""
    from ov_autoplace.placement.legalizer import legalize

    placement = legalize(graph, np.asarray(proposal, np.int64), devices, support, max_submodels=MAX_SUBMODELS,
                         strategy="target", price=price)
    return placement.device_indices(graph.names, devices)


def generate_target(spec: TargetSpec, options: TargetOptions) -> dict:
    """Search the best placement known of ``spec`` (docs/training.md, "Targets"); returns the target as a dict."""
    from ov_autoplace_lab.paper_bench.headroom import reference_placements
    from ov_autoplace_lab.paper_bench.methods import Case
    from ov_autoplace.search.local_search import LocalSearchRefiner
    from ov_autoplace.search.memory_fit import legal_pricer
    from ov_autoplace.costmodel.simulator import Simulator
    from ov_autoplace.strategies.base import PlacementContext

    started = time.perf_counter()
    graph, cost, support = case_cost(spec, options.sigma)
    devices = tuple(cost.devices)
    simulator = Simulator(cost, graph)

    latency = simulator.feasible_ms  # a float for one row, inf where it overflows a device
    price = legal_pricer(cost, graph, support) if options.priced else None

    context = PlacementContext(graph=graph, devices=devices, support=support)
    starts = reference_placements(Case(spec.key, graph, devices, support, cost, True))
    if options.policy:
        from ov_autoplace.strategies.hsdag import HSDAGStrategy

        starts["policy"] = HSDAGStrategy(options.policy, cost).propose(context)
    if options.heft_start:
        from ov_autoplace.strategies.heft import HeftStrategy

        starts["heft"] = HeftStrategy(cost).propose(context)
    refiner = LocalSearchRefiner(cost, graph, support, max_submodels=MAX_SUBMODELS,
                                 max_evaluations=options.max_evaluations, max_seconds=options.local_search_seconds)
    candidates: dict[str, float] = {}
    rows: dict[str, np.ndarray] = {}
    priced = 0
    for name, start in starts.items():
        legal = _legal_row(graph, start, devices, support, price)
        rows[name], candidates[name] = legal, latency(legal)
        # priced: the search starts where compile_model's legalizer puts the start (the refiner's own legalize
        # merges in flops order, which undoes the pricing on a start beyond the bound)
        result = refiner.refine(legal if price is not None else start)
        priced += result.evaluations
        refined = _legal_row(graph, result.proposal, devices, support, price)
        rows[f"{name}+ls"], candidates[f"{name}+ls"] = refined, latency(refined)
    milp_proven = False
    if options.milp_seconds > 0:
        from ov_autoplace_lab.optimum.strategy import OptimumStrategy

        strategy = OptimumStrategy(cost, method="milp", max_submodels=MAX_SUBMODELS, time_limit=options.milp_seconds)
        try:
            proposal = strategy.propose(context)
            rows["milp"] = _legal_row(graph, proposal, devices, support, price)
            candidates["milp"] = latency(rows["milp"])
            milp_proven = bool(strategy.last_result is not None and strategy.last_result.optimal)
        except Exception as exc:  # noqa: BLE001 - the MILP is one candidate among several
            candidates["milp"] = math.inf
            candidates[f"milp failed: {type(exc).__name__}"] = math.inf
    best = min(candidates, key=candidates.get)
    if not math.isfinite(candidates[best]):
        raise TargetGenerationError(f"{spec.key}: no candidate placement can run (every one is infinite or "
                                    f"overflows a device's memory): {candidates}")
    # best_single_ms: the fastest single-device start *after* legalize (nodes a device cannot run fall back as in
    # HETERO); raw_single_ms: the whole model on one device, inf where it cannot run it (the headroom table's)
    singles = [candidates[f"single:{d}"] for d in devices]
    raw = [latency(np.full(graph.num_nodes, k, np.int64)) for k in range(len(devices))]
    target = {"spec": dataclasses.asdict(spec), "key": spec.key, "devices": list(devices), "placement": rows[best],
              "latency_ms": candidates[best], "source": best, "best_single_ms": float(min(singles)),
              "raw_single_ms": [v if math.isfinite(v) else None for v in raw],
              "candidates": {k: (v if math.isfinite(v) else None) for k, v in candidates.items()},
              "milp_proven": milp_proven, "priced": priced, "nodes": graph.num_nodes,
              "seconds": round(time.perf_counter() - started, 3)}
    return target


# ---------------------------------------------------------------------------------------------------- storage
def target_path(directory: str | Path, spec: TargetSpec) -> Path:
    return Path(directory) / "targets" / f"{spec.key}.npz"


def save_target(directory: str | Path, target: dict) -> Path:
    """Write ``target`` atomically (a temporary file renamed over the final name)."""
    spec = TargetSpec(**target["spec"])
    path = target_path(directory, spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {k: v for k, v in target.items() if k not in _ARRAYS}
    arrays = {k: np.asarray(target[k], np.int64) for k in _ARRAYS if target.get(k) is not None}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        np.savez(f, **arrays, meta=np.array(json.dumps(meta)))
    os.replace(tmp, path)
    return path


def load_target(path: str | Path) -> dict:
    """A stored target, or :class:`TargetCheckpointError` naming the file and the fix."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            rows = {k: np.asarray(data[k], np.int64) for k in _ARRAYS if k in data.files or k == "placement"}
            meta = json.loads(str(data["meta"]))
        for name, row in rows.items():
            if row.ndim != 1 or len(row) != meta["nodes"] or row.min(initial=0) < 0 \
                    or row.max(initial=0) >= len(meta["devices"]):
                raise ValueError(f"{name} of shape {row.shape} does not fit {meta['nodes']} nodes on "
                                 f"{len(meta['devices'])} devices")
    except Exception as exc:  # noqa: BLE001 - every way a file can be damaged ends in the same message
        raise TargetCheckpointError(f"target file {path} is damaged ({type(exc).__name__}: {exc}); expected an .npz "
                                    "written by save_target with 'placement' and 'meta'. Delete it and rerun the "
                                    "same command: only the missing targets are generated again") from exc
    return {**meta, **rows}


def check_manifest(directory: str | Path, options: TargetOptions, specs: list[TargetSpec]) -> None:
    """Write the run's manifest, or check that the one there was written with the same options (a resumed run
    must not mix targets searched differently)."""
    path = Path(directory) / "manifest.json"
    wanted = {"options": options.to_dict()}
    if path.exists():
        try:
            found = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise TargetCheckpointError(f"{path} is damaged ({exc}); delete the directory or the file to start "
                                        "a new run") from exc
        if found.get("options") != wanted["options"]:
            raise TargetCheckpointError(f"{path} was written with options {found.get('options')}, this run asks "
                                        f"for {wanted['options']}; use another --targets directory or the same "
                                        "options")
        known = {tuple(s) for s in found.get("specs", [])}
    else:
        known = set()
    known |= {(s.graph, s.platform, s.variant) for s in specs}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**wanted, "specs": sorted(known)}, indent=1) + "\n")


def run_sigma(directory: str | Path) -> float:
    """The perturbations' sigma the run in ``directory`` was generated with (its manifest): training, fit and
    evaluation rebuild each case's variant platform with it."""
    path = Path(directory) / "manifest.json"
    try:
        return float(json.loads(path.read_text())["options"]["sigma"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise TargetCheckpointError(f"{path}: no readable sigma in the run's manifest ({exc!r}); point --dir at a "
                                    "directory written by 'amortise targets'") from exc


def load_targets(directory: str | Path, specs: list[TargetSpec] | None = None) -> list[dict]:
    """Every stored target of ``directory`` (or of ``specs``: then each must exist)."""
    if specs is None:
        paths = sorted((Path(directory) / "targets").glob("*.npz"))
    else:
        paths = [target_path(directory, s) for s in specs]
        missing = [p.name for p in paths if not p.exists()]
        if missing:
            raise TargetCheckpointError(f"{len(missing)} targets missing in {directory} (e.g. {missing[:3]}); "
                                        "run the target generation first")
    return [load_target(p) for p in paths]


# ---------------------------------------------------------------------------------------------------- task sets
def task_specs(graphs: list[str], platforms: list[str], variants: int, *, variant_offset: int = 0) -> list[TargetSpec]:
    """Every graph on every platform as fitted and in ``variants`` perturbed variants."""
    return [TargetSpec(g, p, v) for p in platforms for v in [-1, *range(variant_offset, variant_offset + variants)]
            for g in graphs]


__all__ = ["DEFAULT_SIGMA", "FITS", "HOLE_VARIANTS", "MAX_SUBMODELS", "TargetCheckpointError", "TargetGenerationError",
           "TargetOptions", "TargetSpec", "case_cost", "check_manifest", "generate_target", "load_graph", "load_target",
           "load_targets", "op_support_holes", "run_sigma", "save_target", "target_path", "task_specs", "variant_platform"]
