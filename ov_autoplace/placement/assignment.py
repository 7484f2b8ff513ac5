"""The result of placing a model: which device runs each node, and a summary."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import openvino as ov

from ov_autoplace.errors import PlacementError

AFFINITY_KEY = "affinity"


class PlacementCoverageError(PlacementError, ValueError):
    """``Placement.apply`` on a model whose nodes the placement does not name (e.g. the user's unprepared model)."""


@dataclasses.dataclass
class Placement:
    """A legal node -> device assignment for one model and one device list.

    ``assignment`` covers every node (Parameters, Constants and Results too),
    keyed by friendly name, as HETERO requires. ``compute_nodes`` counts the
    nodes that do work (everything but Parameter/Constant/Result), which is
    what the per-device counts report.

    Example::

        placement = ov_autoplace.place(model, "HETERO:GPU,CPU")
        placement.assignment["encoder/MatMul_3"]   # -> "GPU"
        placement.save("p.json"); same = ov_autoplace.Placement.load("p.json")
    """

    assignment: dict[str, str]
    devices: tuple[str, ...]
    strategy: str
    compute_nodes: frozenset[str]
    num_submodels: int
    notes: list[str] = dataclasses.field(default_factory=list)
    measured_latency_ms: float | None = None
    reference_latency_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    #: The measured verdict that made this the chosen placement (``verification.py``; None: not verified).
    verification: dict[str, Any] | None = None

    @property
    def device_string(self) -> str:
        return "HETERO:" + ",".join(self.devices)

    def counts_per_device(self, *, compute_only: bool = True) -> dict[str, int]:
        """Number of nodes on each device (every listed device appears, possibly with 0)."""
        names = self.compute_nodes if compute_only else self.assignment.keys()
        counts = Counter(self.assignment[n] for n in names)
        return {d: counts.get(d, 0) for d in self.devices}

    def device_indices(self, names: Sequence[str], devices: Sequence[str] | None = None) -> np.ndarray:
        """int64 [len(names)]: each named node's device as an index into ``devices`` (default: this placement's
        own list) - the row the cost model, the simulator and the legalizer read (``names``: ``graph.names``)."""
        index = {d: k for k, d in enumerate(self.devices if devices is None else devices)}
        return np.array([index[self.assignment[n]] for n in names], dtype=np.int64)

    def device_of(self, name: str) -> str:
        try:
            return self.assignment[name]
        except KeyError:
            raise KeyError(f"node {name!r} is not in this placement ({len(self.assignment)} nodes)") from None

    def apply(self, model: ov.Model) -> None:
        """Write ``rt_info['affinity']`` on every node of ``model`` (the prepared model placed).

        On any other model (the user's own, unprepared) it raises PlacementCoverageError naming the one
        call that works there, :func:`ov_autoplace.compile_placement`. ``ov.save_model`` writes no
        affinity; :func:`ov_autoplace.save_model` stores the placement in the IR's rt_info instead.

        A Constant whose consumers sit on several devices is duplicated, one
        copy per device, so no constant value crosses a device boundary.
        Works for any assignment, legal or not (a Constant on a device none of
        its consumers use is moved, not copied).
        """
        missing = [op.get_friendly_name() for op in model.get_ops() if op.get_friendly_name() not in self.assignment]
        if missing:
            raise PlacementCoverageError(
                f"placement does not cover {len(missing)} node(s) of the model, e.g. {missing[:3]}: a placement names "
                "the nodes of the *prepared* model (ov_autoplace.model.prepare.prepare_model folds constant subgraphs), "
                "not of the model you pass. Compile your own model with it: "
                "ov_autoplace.compile_placement(model, placement, config) (it prepares a clone and applies the "
                "placement there); or place this exact model again"
            )
        ordered = model.get_ordered_ops()
        for op in ordered:
            op.get_rt_info()[AFFINITY_KEY] = self.assignment[op.get_friendly_name()]
            if op.get_type_name() == "Constant":
                self._split_constant(op)
        copy_crossing_values(ordered)

        def on(op: ov.Node) -> str:
            return op.get_rt_info()[AFFINITY_KEY].astype(str)
        if any(on(t.get_node()) != on(p) for p in model.get_parameters() for t in p.output(0).get_target_inputs()):
            self._move_parameters_to_fewest_parts(model)

    def _move_parameters_to_fewest_parts(self, model: ov.Model) -> None:
        """A Parameter read on another device goes where HETERO cuts the fewest parts
        (``submodels.move_parameters_to_fewest_parts``; stateful rule 4 through a Parameter) on the model as applied,
        its copies in place: only the Parameters' affinities move, and nothing the cost model prices."""
        from ov_autoplace.graph.arrays import extract_graph
        from ov_autoplace.placement.submodels import move_parameters_to_fewest_parts

        graph = extract_graph(model)
        ops = {op.get_friendly_name(): op for op in model.get_ops()}
        device = np.array([self.devices.index(ops[n].get_rt_info()[AFFINITY_KEY].astype(str)) for n in graph.names])
        if move_parameters_to_fewest_parts(graph, device):
            for p in model.get_parameters():
                p.get_rt_info()[AFFINITY_KEY] = self.devices[int(device[graph.names.index(p.get_friendly_name())])]

    def _split_constant(self, const: ov.Node) -> None:
        own = self.assignment[const.get_friendly_name()]
        by_device: dict[str, list] = {}
        for target in const.output(0).get_target_inputs():
            consumer = target.get_node()
            device = self.assignment.get(consumer.get_friendly_name(), own)
            by_device.setdefault(device, []).append(target)
        if by_device and own not in by_device:
            # No consumer on the Constant's own device: move it to one of theirs. Copying every consumer
            # away would leave the original with no consumers, dropped from the graph while copies still
            # pointed into its buffer (that dangling read made alternating placements return garbage).
            own = max(by_device, key=lambda d: len(by_device[d]))
            const.get_rt_info()[AFFINITY_KEY] = own
        for device, targets in by_device.items():
            if device == own:
                continue
            # A deep copy: a shared-memory copy does not keep the original's buffer alive.
            copy = ov.op.Constant(const.get_tensor_view(), shared_memory=False)
            copy.set_friendly_name(f"{const.get_friendly_name()}/on_{device}")
            copy.get_rt_info()[AFFINITY_KEY] = device
            for target in targets:
                target.replace_source_output(copy.output(0))

    def summary(self, compiled_as: str | None = None) -> str:
        """The summary lines; ``compiled_as``: the device string the placement was compiled for, when it is not
        the placement's HETERO string (one device named plainly is compiled on that device)."""
        counts = self.counts_per_device()
        total = max(1, sum(counts.values()))
        lines = [
            f"Placement on {compiled_as or self.device_string} (strategy: {self.strategy})",
            f"  compute nodes: {sum(counts.values())}, all nodes: {len(self.assignment)}, "
            f"submodels: {self.num_submodels}",
        ]
        for device, n in counts.items():
            lines.append(f"  {device:<8} {n:>6} nodes  {100.0 * n / total:5.1f} %")
        if self.measured_latency_ms is not None:
            lines.append(f"  measured latency: {self.measured_latency_ms:.2f} ms (median)")
        for device, ms in self.reference_latency_ms.items():
            lines.append(f"  {device}-only latency: {ms:.2f} ms (median)")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict[str, Any]:
        return {
            "devices": list(self.devices),
            "strategy": self.strategy,
            "num_submodels": self.num_submodels,
            "assignment": self.assignment,
            "compute_nodes": sorted(self.compute_nodes),
            "notes": self.notes,
            "measured_latency_ms": self.measured_latency_ms,
            "reference_latency_ms": self.reference_latency_ms,
            "verification": self.verification,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Placement":
        return cls(
            assignment=dict(data["assignment"]),
            devices=tuple(data["devices"]),
            strategy=str(data["strategy"]),
            compute_nodes=frozenset(data["compute_nodes"]),
            num_submodels=int(data["num_submodels"]),
            notes=list(data.get("notes", [])),
            measured_latency_ms=data.get("measured_latency_ms"),
            reference_latency_ms=dict(data.get("reference_latency_ms", {})),
            verification=dict(data["verification"]) if isinstance(data.get("verification"), Mapping) else None,
        )

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, sort_keys=True))

    @classmethod
    def load(cls, path: str | Path) -> "Placement":
        """Read a file written by :meth:`save`; a damaged file raises FileFormatError saying what is wrong."""
        from ov_autoplace.model.loading import read_json_file

        return read_json_file(path, "placement", cls.from_dict)


def fill_by_neighbours(device: np.ndarray, graph, nodes: np.ndarray | None = None) -> np.ndarray:
    """``device`` (index per node of ``graph``, -1: none yet), each of ``nodes`` (default: every -1) still -1 put on
    the device most of its placed consumers are on, else its producers', else 0; in place, and returned. Consumers
    are read from the graph's end, so a chain of such nodes follows the node it ends at."""
    todo = np.flatnonzero(device < 0) if nodes is None else np.asarray(nodes)
    for (indptr, indices), order in ((graph.successors_csr, todo[::-1]), (graph.predecessors_csr, todo)):
        for i in order.tolist():
            if device[i] < 0:
                known = [d for d in device[indices[indptr[i]:indptr[i + 1]]].tolist() if d >= 0]
                if known:
                    device[i] = Counter(known).most_common(1)[0][0]
    device[todo[device[todo] < 0]] = 0
    return device


__all__ = ["AFFINITY_KEY", "Placement", "PlacementCoverageError", "fill_by_neighbours"]


def copy_crossing_values(ordered: Sequence[ov.Node]) -> None:
    """Give each device its own copy of a value another device computes for it where crossing breaks HETERO: a
    ReadValue's initializer, and a shape value computed on the device of the integer tensors whose shapes it reads
    (which and why: docs/architecture.md, "Module notes"). Affinities are read from the nodes ``apply`` has set."""
    def device(op: ov.Node) -> str:
        return op.get_rt_info()[AFFINITY_KEY].astype(str)

    copied: set[int] = set()  # the ReadValues' initializers: their ancestors short of Parameters and Constants
    for op in reversed(ordered):
        if op.get_type_name() == "ReadValue" or id(op) in copied:
            copied |= {id(i.get_source_output().get_node()) for i in op.inputs() if i.get_source_output()
                       .get_node().get_type_name() not in ("Parameter", "Constant", "ReadValue")}
    shape: dict[int, set[str]] = {}  # a shape value -> the devices of the tensors whose shapes it reads
    for op in ordered:
        reads = [i.get_source_output().get_node() for i in op.inputs()]
        if op.get_type_name() == "ShapeOf":  # of ids or a mask (integers, small), never of a KV cache ("": none)
            shape[id(op)] = {device(reads[0]) if op.input(0).get_element_type().is_integral() else ""}
        elif (op.get_type_name() not in ("Parameter", "ReadValue", "RandomUniform") and op.get_output_size() == 1
              and op.get_output_element_type(0).is_integral() and any(id(r) in shape for r in reads)
              and all(id(r) in shape or r.get_type_name() == "Constant" for r in reads)):
            shape[id(op)] = set().union(*(shape.get(id(r), set()) for r in reads))
    need: dict[str, set[int]] = {}
    for op in ordered:
        if id(op) in copied or (id(op) in shape and shape[id(op)] == {device(op)}):
            for output in op.outputs():
                for target in output.get_target_inputs():
                    if device(target.get_node()) != device(op):
                        need.setdefault(device(target.get_node()), set()).add(id(op))
    copied |= shape.keys()
    copies: dict[tuple[int, str], ov.Node] = {}
    for where, wanted in sorted(need.items()):
        for op in reversed(ordered):  # with the nodes of their kind they read: Parameters, Constants and tensors
            if id(op) in wanted:  # whose shapes are read stay the originals
                wanted |= {id(i.get_source_output().get_node()) for i in op.inputs()} & copied
        nodes = [op for op in ordered if id(op) in wanted]
        for op, copy in zip(nodes, _copies(nodes)):
            copy.set_friendly_name(f"{op.get_friendly_name()}/on_{where}")
            for node in [copy] + [i.get_source_output().get_node() for i in copy.inputs()]:
                if node is copy or node.get_type_name() == "Constant":  # a cloned Constant is the copy's own
                    node.get_rt_info()[AFFINITY_KEY] = where
            copies[id(op), where] = copy
    originals = {key for key, _ in copies}
    for op in (op for op in ordered if id(op) in originals):  # only now (module notes)
        for output in op.outputs():
            for target in list(output.get_target_inputs()):
                copy = copies.get((id(op), device(target.get_node())))
                if copy is not None:
                    target.replace_source_output(copy.output(output.get_index()))


def _copies(nodes: Sequence[ov.Node]) -> list[ov.Node]:
    """A copy of ``nodes`` (a set closed under inputs, short of the tensors it reads) wired like them: each copy
    reads the other copies, the originals' Constants cloned, and the same tensors from outside the set (how:
    docs/architecture.md, "Module notes")."""
    from openvino import opset13 as ops

    members = {id(n) for n in nodes}
    outside = {}  # (id(node), port) -> (the tensor read, its stand-in, the inputs reading it)
    for n in nodes:
        for i in n.inputs():
            src = i.get_source_output()
            if id(src.get_node()) not in members and src.get_node().get_type_name() != "Constant":
                key = (id(src.get_node()), src.get_index())
                outside.setdefault(key, (src, ops.parameter(src.get_partial_shape(), src.get_element_type()), []))
                outside[key][2].append(i)
    outputs = [out for n in nodes for out in n.outputs()]
    results = [ops.result(out) for out in outputs]
    try:
        for _, stand_in, readers in outside.values():
            for i in readers:
                i.replace_source_output(stand_in.output(0))
        clone = ov.Model(results, [p for _, p, _ in outside.values()], "copied").clone()
    finally:
        for src, _, readers in outside.values():  # the originals read their own tensors again
            for i in readers:
                i.replace_source_output(src)
        for out, result in zip(outputs, results):  # the cut's Results must not stay behind as consumers
            out.remove_target_input(result.input(0))
    for (src, _, _), param in zip(outside.values(), clone.get_parameters()):
        for target in list(param.output(0).get_target_inputs()):
            target.replace_source_output(src)
    copied = [r.input(0).get_source_output().get_node() for r in clone.get_results()]
    by_node, k = [], 0
    for n in nodes:
        by_node.append(copied[k])
        k += len(n.outputs())
    assert all(id(c) not in members for c in by_node)
    for copy in by_node:  # named from a process-wide counter, they would change the model from start to start
        for out in copy.outputs():
            out.get_tensor().set_names(set())
    return by_node
