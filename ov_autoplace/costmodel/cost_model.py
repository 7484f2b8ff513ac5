"""A placement cost model: what each node costs on each device, and what crossing costs.

The rest of this overview: docs/architecture.md, "Module notes".
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True, eq=False)
class CostModel:
    """Per-node, per-device costs aligned with a ``GraphArrays`` of the prepared model.

    Shapes: N nodes, D devices. ``inf`` in ``compute_ms`` marks a node the
    device cannot run. ``simulated`` is True when any number comes from a
    device model rather than a measurement; ``source`` says which.
    """

    devices: tuple[str, ...]
    node_names: tuple[str, ...]
    compute_ms: np.ndarray  # float64 [N, D]
    unfused_ms: np.ndarray  # float64 [N, D], == compute_ms where nothing is fused
    fused_into: np.ndarray  # int64 [N], index of the node whose kernel absorbs node i, -1 if none
    link_latency_ms: np.ndarray  # float64 [D, D], 0 on the diagonal
    link_ms_per_byte: np.ndarray  # float64 [D, D], 0 on the diagonal
    submodel_overhead_ms: np.ndarray  # float64 [D]
    node_memory_bytes: np.ndarray  # int64 [N], resident bytes (weights) if placed on a device
    device_memory_bytes: np.ndarray  # float64 [D], capacity (inf = unbounded)
    simulated: bool
    source: str
    compute_spread_ms: np.ndarray | None = None  # float64 [N, D] >= 0, IQR of the per-run times; None: noise-free
    e2e_spread_ms: np.ndarray | None = None  # float64 [D] >= 0, IQR of each device's end-to-end latency
    loaded: bool = False  # measured on a loaded machine: predicted gains are unproven
    # float64 [E]: bytes per graph edge where not the graph's: a decoder's generation (``generation_costs``)
    edge_bytes: np.ndarray | None = None

    def __post_init__(self) -> None:
        n, d = len(self.node_names), len(self.devices)
        expected = {
            "compute_ms": (n, d), "unfused_ms": (n, d), "fused_into": (n,), "link_latency_ms": (d, d),
            "link_ms_per_byte": (d, d), "submodel_overhead_ms": (d,), "node_memory_bytes": (n,),
            "device_memory_bytes": (d,),
        }
        for name, shape in expected.items():
            got = np.shape(getattr(self, name))
            if got != shape:
                raise ValueError(f"CostModel.{name} must have shape {shape} for {n} nodes x {d} devices, got {got}")
        for name, shape in (("compute_spread_ms", (n, d)), ("e2e_spread_ms", (d,))):
            value = getattr(self, name)
            if value is None:
                continue
            if np.shape(value) != shape:
                raise ValueError(f"CostModel.{name} must have shape {shape} for {n} nodes x {d} devices (or be "
                                 f"None: noise-free), got {np.shape(value)}")
            if not (np.asarray(value) >= 0).all():
                raise ValueError(f"CostModel.{name} must be >= 0 everywhere (a spread); it has negative or NaN "
                                 "entries")

    @property
    def num_nodes(self) -> int:
        return len(self.node_names)

    @property
    def label(self) -> str:
        """How numbers from this model must be labelled when printed."""
        label = f"simulated ({self.source})" if self.simulated else f"measured ({self.source})"
        return label + ", loaded machine: gains unproven" if self.loaded else label

    def spreads(self) -> tuple[np.ndarray, np.ndarray]:
        """``(compute_spread_ms [N, D], e2e_spread_ms [D])``, zeros where the model is noise-free."""
        n, d = self.num_nodes, len(self.devices)
        compute = np.zeros((n, d)) if self.compute_spread_ms is None else np.asarray(self.compute_spread_ms, float)
        e2e = np.zeros(d) if self.e2e_spread_ms is None else np.asarray(self.e2e_spread_ms, float)
        return compute, e2e

    def bytes_on(self, graph) -> np.ndarray:
        """Bytes per edge of ``graph`` a crossing moves: ``edge_bytes`` where set, else the graph's."""
        if self.edge_bytes is None:
            return np.asarray(graph.edge_bytes)
        if len(self.edge_bytes) != len(graph.edge_bytes):
            raise ValueError(f"CostModel.edge_bytes has {len(self.edge_bytes)} entries for a graph of "
                             f"{len(graph.edge_bytes)} edges; price it with the graph it was made for")
        return np.asarray(self.edge_bytes)

    def with_devices(self, devices: tuple[str, ...]) -> "CostModel":
        """The same model with its device columns in the order of ``devices`` (a subset of ``self.devices``)."""
        cols = np.array([self.devices.index(d) for d in devices], np.int64)
        grid = np.ix_(cols, cols)
        return dataclasses.replace(
            self, devices=tuple(devices), compute_ms=self.compute_ms[:, cols], unfused_ms=self.unfused_ms[:, cols],
            link_latency_ms=self.link_latency_ms[grid], link_ms_per_byte=self.link_ms_per_byte[grid],
            submodel_overhead_ms=self.submodel_overhead_ms[cols], device_memory_bytes=self.device_memory_bytes[cols],
            compute_spread_ms=None if self.compute_spread_ms is None else self.compute_spread_ms[:, cols],
            e2e_spread_ms=None if self.e2e_spread_ms is None else self.e2e_spread_ms[cols])

    def transfer_ms(self, nbytes: float, src: int, dst: int) -> float:
        if src == dst:
            return 0.0
        return float(self.link_latency_ms[src, dst] + nbytes * self.link_ms_per_byte[src, dst])

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            out[field.name] = value.tolist() if isinstance(value, np.ndarray) else value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CostModel":
        arrays = {f.name for f in dataclasses.fields(cls)} - {"devices", "node_names", "simulated", "source", "loaded"}
        kwargs = {k: (np.asarray(v, dtype=np.int64 if k in ("fused_into", "node_memory_bytes") else np.float64)
                      if k in arrays and v is not None else v) for k, v in data.items()}
        kwargs["devices"], kwargs["node_names"] = tuple(data["devices"]), tuple(data["node_names"])
        return cls(**kwargs)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict()))

    @classmethod
    def load(cls, path: str | Path) -> "CostModel":
        """Read a file written by :meth:`save`; a damaged file raises FileFormatError saying what is wrong."""
        from ov_autoplace.model.loading import read_json_file

        return read_json_file(path, "cost model", cls.from_dict)


__all__ = ["CostModel"]
