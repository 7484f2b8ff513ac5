"""What crossing devices costs, measured by timing real HETERO splits.

More: docs/architecture.md, "Module notes", link_calibration.py.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import time
from typing import Any, Sequence

import numpy as np
import openvino as ov
from openvino import opset13 as ops

from ov_autoplace.errors import DeviceError
from ov_autoplace.devices.timing import measure_latency, random_inputs
from ov_autoplace.progress import progress_bar

logger = logging.getLogger(__name__)

#: A short link calibration (``MeasuredCostProvider``, the quick profile's stored links): links are cheap on
#: host-memory devices and the result is cached per device set, but the first compile on a machine pays it.
QUICK_LINK_SIZES = (16 << 10, 1 << 20, 4 << 20)
QUICK_LINK_CUTS = (1, 4)

DEFAULT_SIZES = (1 << 10, 16 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20)
DEFAULT_CUTS = (1, 2, 4, 8)
#: Bump when the meaning or layout of a stored link profile changes.
LINK_PROFILE_FORMAT = 1
_MB = float(1 << 20)
_GLOBALS = ("overhead_a", "overhead_b", "latency_ab", "latency_ba", "ms_per_mb_ab", "ms_per_mb_ba")


@dataclasses.dataclass(frozen=True, eq=False)
class LinkProfile:
    """Measured transfer and submodel costs of a device set, with the quality of the fit."""

    devices: tuple[str, ...]
    link_latency_ms: np.ndarray  # [D, D], 0 on the diagonal
    link_ms_per_byte: np.ndarray  # [D, D], 0 on the diagonal
    submodel_overhead_ms: np.ndarray  # [D]
    pairs: tuple[dict[str, Any], ...]  # per measured pair: devices, globals, r2, r2_cut, observations, rows
    seconds: float

    def __post_init__(self) -> None:
        d = len(self.devices)
        for name, shape in (("link_latency_ms", (d, d)), ("link_ms_per_byte", (d, d)),
                            ("submodel_overhead_ms", (d,))):
            if np.shape(getattr(self, name)) != shape:
                raise ValueError(f"LinkProfile.{name} must have shape {shape}, got {np.shape(getattr(self, name))}")

    def to_dict(self) -> dict[str, Any]:
        return {"devices": list(self.devices), "link_latency_ms": self.link_latency_ms.tolist(),
                "link_ms_per_byte": self.link_ms_per_byte.tolist(),
                "submodel_overhead_ms": self.submodel_overhead_ms.tolist(), "pairs": list(self.pairs),
                "seconds": self.seconds}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LinkProfile":
        return cls(tuple(data["devices"]), np.asarray(data["link_latency_ms"], dtype=np.float64),
                   np.asarray(data["link_ms_per_byte"], dtype=np.float64),
                   np.asarray(data["submodel_overhead_ms"], dtype=np.float64),
                   tuple(dict(p) for p in data["pairs"]), float(data["seconds"]))

    def summary(self) -> str:
        lines = []
        for p in self.pairs:
            a, b = p["devices"]
            g = p["globals"]
            lines.append(
                f"{a}<->{b}: latency {a}->{b} {g['latency_ab'] * 1e3:.1f} us, {b}->{a} {g['latency_ba'] * 1e3:.1f} us; "
                f"per MB {a}->{b} {g['ms_per_mb_ab']:.3f} ms, {b}->{a} {g['ms_per_mb_ba']:.3f} ms; "
                f"submodel overhead {a} {g['overhead_a'] * 1e3:.1f} us, {b} {g['overhead_b'] * 1e3:.1f} us; "
                f"R^2 cut part {p['r2_cut']:.3f}, whole fit {p['r2']:.4f} ({p['observations']} variants)")
        return "\n".join(lines) or "single device: no links"


def calibration_chain(nbytes: int, stages: int) -> tuple[ov.Model, list[ov.Node]]:
    """The chain described in the module doc and its compute nodes in order (u0, v0, w0, u1, ...)."""
    x = ops.parameter([1, max(1, nbytes // 256), 64], np.float32, name="calibration_input")
    h, nodes = x, []
    for s in range(stages):
        u = ops.mvn(h, ops.constant(np.array([-1], dtype=np.int64)), True, 1e-5, "inside_sqrt")
        v = ops.mvn(h, ops.constant(np.array([-1], dtype=np.int64)), True, 1e-6, "inside_sqrt")
        h = ops.add(u, v)
        for node, tag in ((u, "u"), (v, "v"), (h, "w")):
            node.set_friendly_name(f"calibration_{tag}{s}")
        nodes += [u, v, h]
    return ov.Model([ops.result(h)], [x], "link_calibration"), nodes


def _spread(k: int, last: int) -> list[int]:
    picks = [last // 2] if k == 1 else sorted({int(round(x)) for x in np.linspace(0, last, k)})
    if len(picks) != k:
        raise ValueError(f"cannot place {k} distinct cuts in positions 0..{last}")
    return picks


def _variants(stages: int, cuts: Sequence[int]) -> list[tuple[str, list[int]]]:
    """(name, side per chain node: 0 = first device of the pair, 1 = second)."""
    out = [("all_a", [0] * 3 * stages), ("all_b", [1] * 3 * stages)]
    for k, kind, start in itertools.product(cuts, ("between", "inside"), (0, 1)):
        where = set(_spread(k, stages - 2 if kind == "between" else stages - 1))
        side, sides = start, []
        for s in range(stages):
            for tag in "uvw":
                if kind == "inside" and tag == "w" and s in where:
                    side ^= 1
                sides.append(side)
            if kind == "between" and s in where:
                side ^= 1
        out.append((f"{kind}{k}_from_{'ab'[start]}", sides))
    return out


def _features(sides: list[int], stages: int) -> dict[str, float]:
    """Counts the fit needs: nodes on b by kind, submodels per side, transfers per direction."""
    runs = [sides[0]] + [s for prev, s in zip(sides, sides[1:]) if s != prev]
    crossings = set()
    for s in range(stages):
        u, v, w = 3 * s, 3 * s + 1, 3 * s + 2
        edges = [(u, w), (v, w)] + ([(w - 3, u), (w - 3, v)] if s else [])
        crossings.update((src, sides[dst]) for src, dst in edges if sides[src] != sides[dst])
    return {"mvn_b": sum(side for i, side in enumerate(sides) if i % 3 != 2),
            "add_b": sum(side for i, side in enumerate(sides) if i % 3 == 2),
            "extra_submodels_a": runs.count(0) - 1, "submodels_b": runs.count(1),
            "transfers_ab": sum(1 for _, dst in crossings if dst == 1),
            "transfers_ba": sum(1 for _, dst in crossings if dst == 0)}


def _compile_variant(core: ov.Core, nbytes: int, stages: int, sides: list[int], pair: tuple[str, str]):
    model, nodes = calibration_chain(nbytes, stages)
    device_of = {node.get_friendly_name(): pair[side] for node, side in zip(nodes, sides)}
    for op in reversed(model.get_ordered_ops()):  # consumers before producers: Constants/Parameter follow them
        name = op.get_friendly_name()
        if name not in device_of:
            if op.get_type_name() == "Result":
                device_of[name] = pair[sides[-1]]
            else:
                consumer = next(iter(op.output(0).get_target_inputs())).get_node()
                device_of[name] = device_of[consumer.get_friendly_name()]
        op.get_rt_info()["affinity"] = device_of[name]
    return core.compile_model(model, f"HETERO:{pair[0]},{pair[1]}", {"PERF_COUNT": False})


def _measure_pair(core, pair, sizes, cuts, rounds, seconds_per_variant, bar) -> list[dict[str, float]]:
    stages = max(cuts) + 1
    variants = _variants(stages, cuts)
    rows = []
    for nbytes in sizes:
        compiled = [_compile_variant(core, nbytes, stages, sides, pair) for _, sides in variants]
        inputs = random_inputs(compiled[0])
        pilot = measure_latency(compiled[0], inputs, warmup=2, iterations=3).median_ms
        per_round = int(np.clip(seconds_per_variant * 1e3 / max(pilot, 1e-3) / rounds, 3, 60))
        samples: list[list[float]] = [[] for _ in variants]
        for r in range(rounds):  # interleave variants so drifting machine load hits them alike
            for j, c in enumerate(compiled):
                samples[j].extend(measure_latency(c, inputs, warmup=2 if r == 0 else 0,
                                                  iterations=per_round).samples_ms.tolist())
        true_bytes = max(1, nbytes // 256) * 256
        for (name, sides), s in zip(variants, samples):
            f = _features(sides, stages)
            rows.append({"variant": name, "bytes": true_bytes, "latency_ms": float(np.median(s)), **f})
        logger.info("link calibration %s at %d bytes: %s", pair, true_bytes,
                    ", ".join(f"{r['variant']}={r['latency_ms']:.3f}" for r in rows[-len(variants):]))
        bar.update(1)
    return rows


def _bounded_lstsq(a: np.ndarray, y: np.ndarray, nonneg: np.ndarray) -> np.ndarray:
    """Least squares with the ``nonneg`` coefficients kept >= 0 (drop the most negative, refit)."""
    free = np.ones(a.shape[1], dtype=bool)
    while True:
        coef = np.zeros(a.shape[1])
        coef[free] = np.linalg.lstsq(a[:, free], y, rcond=None)[0]
        bad = free & nonneg & (coef < 0)
        if not bad.any():
            return coef
        free[np.argmin(np.where(bad, coef, np.inf))] = False


def _r2(y: np.ndarray, fitted: np.ndarray) -> float:
    total = float(((y - y.mean()) ** 2).sum())
    return 1.0 - float(((y - fitted) ** 2).sum()) / total if total > 0 else float("nan")


def fit_links(rows: list[dict[str, float]]) -> dict[str, Any]:
    """Fit the module-doc model to measured rows; returns the globals (ms, ms per MB) and R^2 values."""
    sizes = sorted({r["bytes"] for r in rows})
    local = 3 * len(sizes)
    a = np.zeros((len(rows), local + len(_GLOBALS)))
    y = np.array([r["latency_ms"] for r in rows])
    scale = {r["bytes"]: r["latency_ms"] for r in rows if r["variant"] == "all_a"}
    for k, r in enumerate(rows):
        z = 3 * sizes.index(r["bytes"])
        a[k, z:z + 3] = (1.0, r["mvn_b"], r["add_b"])
        mb = r["bytes"] / _MB
        a[k, local:] = (r["extra_submodels_a"], r["submodels_b"], r["transfers_ab"], r["transfers_ba"],
                        r["transfers_ab"] * mb, r["transfers_ba"] * mb)
    w = 1.0 / np.array([scale[r["bytes"]] for r in rows])
    aw, yw = a * w[:, None], y * w
    nonneg = np.zeros(a.shape[1], dtype=bool)
    nonneg[0:local:3] = True
    nonneg[local:] = True
    coef = _bounded_lstsq(aw, yw, nonneg)
    cut_target = yw - aw[:, :local] @ coef[:local]
    return {"globals": dict(zip(_GLOBALS, coef[local:].tolist())), "r2": _r2(yw, aw @ coef),
            "r2_cut": _r2(cut_target, aw[:, local:] @ coef[local:]), "observations": len(rows)}


def check_devices(core: ov.Core, devices: Sequence[str]) -> None:
    """DeviceError unless every device can be measured on ``core``."""
    if not devices:
        raise DeviceError("no devices to profile; pass e.g. ['CPU', 'CPUF']")
    available = list(core.available_devices)
    missing = [d for d in devices if d not in available]
    if missing:
        raise DeviceError(
            f"cannot profile {missing}: not present on this machine (available: {available}). Profile only "
            "available devices, or use a simulated platform for the missing ones "
            "(ov_autoplace.costmodel.platforms.PLATFORMS, e.g. 'paper' or 'laptop')")


def profile_links(core: ov.Core, devices: Sequence[str], *, sizes: Sequence[int] = DEFAULT_SIZES,
                  cuts: Sequence[int] = DEFAULT_CUTS, rounds: int = 6, seconds_per_variant: float = 0.6,
                  store=None) -> LinkProfile:
    """Measure (or load from ``store``) the link and submodel costs of ``devices``; see the module doc."""
    from ov_autoplace.cache.profile_store import profile_key

    devices = tuple(devices)
    check_devices(core, devices)
    if not cuts or min(cuts) < 1 or len(sizes) < 1:
        raise ValueError(f"need cut counts >= 1 and at least one size, got cuts={list(cuts)}, sizes={list(sizes)}")
    key = profile_key(core, devices, kind="links", extra={
        "format": LINK_PROFILE_FORMAT, "sizes": sorted(int(s) for s in sizes), "cuts": sorted(int(c) for c in cuts)})
    if store is not None:
        cached = store.load(key, LinkProfile.from_dict)
        if cached is not None and cached.devices == devices:
            return cached
    started = time.perf_counter()
    n = len(devices)
    latency, per_byte = np.zeros((n, n)), np.zeros((n, n))
    overhead_sum, overhead_count = np.zeros(n), np.zeros(n)
    pairs = []
    couples = list(itertools.combinations(range(n), 2))
    with progress_bar(len(couples) * len(set(sizes)), "calibrating links", unit="size") as bar:
        rows_of = [_measure_pair(core, (devices[i], devices[j]), sorted(set(sizes)), sorted(set(cuts)), rounds,
                                 seconds_per_variant, bar) for i, j in couples]
    for (i, j), rows in zip(couples, rows_of):
        fit = fit_links(rows)
        g = fit["globals"]
        latency[i, j], latency[j, i] = g["latency_ab"], g["latency_ba"]
        per_byte[i, j], per_byte[j, i] = g["ms_per_mb_ab"] / _MB, g["ms_per_mb_ba"] / _MB
        overhead_sum[[i, j]] += (g["overhead_a"], g["overhead_b"])
        overhead_count[[i, j]] += 1
        pairs.append({"devices": [devices[i], devices[j]], **fit, "rows": rows})
    profile = LinkProfile(devices, latency, per_byte, overhead_sum / np.maximum(overhead_count, 1), tuple(pairs),
                          time.perf_counter() - started)
    logger.info("link profile of %s in %.1f s:\n%s", devices, profile.seconds, profile.summary())
    if store is not None:
        store.save(key, profile.to_dict())
    return profile


__all__ = ["DEFAULT_CUTS", "DEFAULT_SIZES", "LinkProfile", "QUICK_LINK_CUTS", "QUICK_LINK_SIZES", "calibration_chain", "fit_links",
           "profile_links"]
