"""A placement cost model: what each node costs on each device, and what crossing costs.

It is the common currency of the profiler (measured on real devices), the
simulated platforms (derived from public specs), the simulator (predicts a
placement's latency), the exact optimum (MILP / min-cut) and the heuristics.

Execution model it encodes (HETERO's): submodels run one after another within
one inference, so a placement's latency is the *sum* of

* every compute node's time on its device (``compute_ms[i, d]``; when a node
  that the runtime fuses into a neighbour - ``fused_into[i] = j`` - ends up on
  another device than ``j``, it runs on its own and costs ``unfused_ms[i, d]``,
  and ``j`` loses the fusion discount too: ``unfused_ms[j, d]``);
* every tensor that crosses devices, once per (producer output, consumer
  device): ``link_latency_ms[a, b] + bytes * link_ms_per_byte[a, b]``.
  Constants never cross (the legalizer duplicates them), Results never count;
* every submodel (maximal connected same-device island of compute nodes):
  ``submodel_overhead_ms[d]`` for its device.

Memory: a device's resident bytes (weights of the nodes on it plus the largest
activation) must stay within ``device_memory_bytes[d]``.
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

    @property
    def num_nodes(self) -> int:
        return len(self.node_names)

    @property
    def label(self) -> str:
        """How numbers from this model must be labelled when printed."""
        return f"simulated ({self.source})" if self.simulated else f"measured ({self.source})"

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
        arrays = {f.name for f in dataclasses.fields(cls)} - {"devices", "node_names", "simulated", "source"}
        kwargs = {k: (np.asarray(v, dtype=np.int64 if k in ("fused_into", "node_memory_bytes") else np.float64)
                      if k in arrays else v) for k, v in data.items()}
        kwargs["devices"], kwargs["node_names"] = tuple(data["devices"]), tuple(data["node_names"])
        return cls(**kwargs)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict()))

    @classmethod
    def load(cls, path: str | Path) -> "CostModel":
        """Read a file written by :meth:`save`; a damaged file raises FileFormatError saying what is wrong."""
        from ..file_loading import read_json_file

        return read_json_file(path, "cost model", cls.from_dict)


__all__ = ["CostModel"]
