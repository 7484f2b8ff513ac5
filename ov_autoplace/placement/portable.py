"""A placement carried inside an OpenVINO IR: ``rt_info["ov_autoplace"]["placement"]``, keyed by node identity.

The rest: docs/architecture.md, "Module notes", ov_autoplace/placement/portable.py.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Sequence

import openvino as ov

from ov_autoplace.errors import FileFormatError, ShapeError
from ov_autoplace.graph.arrays import GraphArrays, NodeRole, extract_graph
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.shapes import PlacementShapes, input_name, static_clone

logger = logging.getLogger("ov_autoplace")

RT_INFO_PATH = ["ov_autoplace", "placement"]
FORMAT = 1


def node_identities(graph: GraphArrays) -> list[list[Any]]:
    """One ``[op type, outputs, element type, output shape]`` per prepared node, in the graph's order."""
    return [[graph.op_types[i], int(graph.num_outputs[i]), graph.out_element_type[i],
             [int(d) for d in graph.out_shape[i, :int(graph.out_rank[i])]]] for i in range(graph.num_nodes)]


def encode(placement: Placement, graph: GraphArrays, shapes: PlacementShapes | None = None) -> str:
    """The rt_info text for ``placement`` of the prepared graph ``graph`` (JSON).

    ``shapes``: a dynamic model's placement shapes; ``graph`` is then its static clone's at those shapes.
    """
    missing = [n for n in graph.names if n not in placement.assignment]
    if missing:
        at = f" at the placement shapes {shapes}" if shapes is not None else ""
        raise FileFormatError(f"the placement does not cover {len(missing)} node(s) of the prepared model{at}, "
                              f"e.g. {missing[:3]}; place this model (ov_autoplace.place, with the same shapes= "
                              "for a dynamic model) and store that placement")
    data: dict[str, Any] = {"format": FORMAT, "names": list(graph.names), "nodes": node_identities(graph),
                            "placement": placement.to_dict()}
    if shapes is not None:  # optional key: a static model's entry is what it always was
        data["placement_shapes"] = {name: [int(d) for d in dims] for name, dims in shapes.items()}
    return json.dumps(data, separators=(",", ":"))


def attach(model: ov.Model, placement: Placement, graph: GraphArrays | None = None,
           shapes: PlacementShapes | None = None) -> None:
    """Store ``placement`` in ``model``'s rt_info (``ov.save_model`` keeps it in the IR).

    ``shapes``: for a dynamic model, the static shapes ``placement`` was made at (its static clone's nodes).
    """
    if graph is None:
        graph = extract_graph(prepare_model(static_clone(model, shapes) if shapes is not None else model))
    model.set_rt_info(encode(placement, graph, shapes), RT_INFO_PATH)


def _stored_text(model: ov.Model) -> str | None:
    if not model.has_rt_info(RT_INFO_PATH):
        return None
    value = model.get_rt_info(RT_INFO_PATH)
    return value.astype(str) if hasattr(value, "astype") else str(value)


def _decode(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format') if isinstance(data, dict) else None!r}, expected {FORMAT}")
        if len(data["names"]) != len(data["nodes"]):
            raise ValueError("names and nodes differ in length")
        Placement.from_dict(data["placement"])  # every field present and typed
        shapes = data.get("placement_shapes")
        if shapes is not None and not (isinstance(shapes, dict) and all(
                isinstance(dims, list) and all(isinstance(d, int) and d > 0 for d in dims)
                for dims in shapes.values())):
            raise ValueError(f"placement_shapes {shapes!r} is not a map of input name to positive dims")
        return data
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise FileFormatError(f"the model's rt_info {'/'.join(RT_INFO_PATH)} is not a placement ov_autoplace wrote: "
                              f"{exc}; save the model again with ov_autoplace.save_model") from None


def stored_shapes(model: ov.Model) -> PlacementShapes | None:
    """The placement shapes ``model``'s stored placement was made at (a dynamic model's), else None.

    A damaged entry raises FileFormatError.
    """
    text = _stored_text(model)
    return None if text is None else _decode(text).get("placement_shapes")


def stored_static_clone(model: ov.Model, shapes: PlacementShapes) -> ov.Model | None:
    """``model`` reshaped to the stored placement shapes; None (WARNING) when its inputs cannot take them."""
    names = sorted(input_name(port) for port in model.inputs)
    if names != sorted(shapes):
        logger.warning("the model carries a placement made at shapes for the inputs %s, but its inputs are %s: "
                       "placing again", sorted(shapes), names)
        return None
    try:
        return static_clone(model, shapes)
    except ShapeError as exc:
        logger.warning("the model carries a placement made at shapes it cannot take (%s): placing again", exc)
        return None


def stored_placement(model: ov.Model, graph: GraphArrays | None = None,
                     devices: Sequence[str] | None = None) -> Placement | None:
    """The placement stored in ``model``'s rt_info, keyed by the names of ``prepare_model(model)``; else None. More:
    docs/architecture.md, "Module notes", portable.py."""
    text = _stored_text(model)
    if text is None:
        return None
    data = _decode(text)
    stored = Placement.from_dict(data["placement"])
    if devices is not None and tuple(devices) != stored.devices:
        logger.info("the model carries a placement for %s, not for %s: placing again", stored.devices, tuple(devices))
        return None
    if graph is None:
        shapes = data.get("placement_shapes")
        if shapes is None:
            graph = extract_graph(prepare_model(model))
        else:
            clone = stored_static_clone(model, shapes)
            if clone is None:
                return None
            graph = extract_graph(prepare_model(clone))
    identities = node_identities(graph)
    if identities != data["nodes"]:
        differ = next((i for i, (a, b) in enumerate(zip(identities, data["nodes"])) if a != b),
                      min(len(identities), len(data["nodes"])))
        logger.warning("the model carries a placement of another graph (%d stored nodes, %d now; first difference "
                       "at node %d): placing again", len(data["nodes"]), len(identities), differ)
        return None
    if list(graph.names) == data["names"]:
        return stored  # the same names: the same assignment, its verification evidence intact
    rename = dict(zip(data["names"], graph.names))
    compute = frozenset(graph.names[i] for i in range(graph.num_nodes) if int(graph.role[i]) == NodeRole.COMPUTE)
    return Placement(assignment={rename[n]: d for n, d in stored.assignment.items() if n in rename},
                     devices=stored.devices, strategy=stored.strategy, compute_nodes=compute,
                     num_submodels=stored.num_submodels,
                     notes=[*stored.notes, "read from the model's rt_info by node identity (names changed): "
                                           "a proposal, its verification evidence does not carry over"],
                     verification=None)


__all__ = ["FORMAT", "RT_INFO_PATH", "attach", "encode", "node_identities", "stored_placement", "stored_shapes",
           "stored_static_clone"]
