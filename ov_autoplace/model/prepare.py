"""Prepare a model for placement: a clone with its constant subgraphs folded.

More: docs/architecture.md, "Module notes".
"""

from __future__ import annotations

import dataclasses
import re

import openvino as ov
from openvino.passes import ConstantFolding, Manager

from ov_autoplace.graph.arrays import GraphArrays, extract_graph
from ov_autoplace.model.quant_patterns import quantized_weights_hidden


def prepare_model(model: ov.Model) -> ov.Model:
    """Return a folded clone of ``model``; ``model`` itself is never modified."""
    prepared = model.clone()
    manager = Manager()
    manager.register_pass(ConstantFolding())
    with quantized_weights_hidden(prepared):  # int8 weights stay int8 (folding them made every conv f32)
        manager.run_passes(prepared)
    name_new_constants(prepared, {op.get_friendly_name() for op in model.get_ops()})
    return prepared


def placement_graph(prepared: ov.Model, dynamic: ov.Model | None = None) -> GraphArrays:
    """``extract_graph(prepared)``, and where ``prepared`` is a static clone of the ``dynamic`` model (an LLM placed
    on its prefill) that holds state or computes shapes, the dynamic model's graph as its ``dynamic``: stateful rule
    2 and rule 4 on shape values are judged there."""
    graph = extract_graph(prepared)
    if dynamic is None or not (graph.variables or computes_shapes(dynamic)):
        return graph
    return dataclasses.replace(graph, dynamic=extract_graph(prepare_model(dynamic)))


def computes_shapes(model: ov.Model) -> bool:
    """Whether ``model`` reads a tensor's shape at run time (a ShapeOf): its static clone folds what it computes."""
    return any(op.get_type_name() == "ShapeOf" for op in model.get_ops())


def name_new_constants(prepared: ov.Model, original: set[str]) -> None:
    """Give a Constant that folding (or a reshape: ``shapes.static_clone``) created under an automatic name (``Constant_<counter>``, a process-wide
    counter: another name on every preparation) a name derived from its consumer instead. Seen on optimum-intel
    decoders' static clones: two folded Reshape shapes were named anew each time, so a cached placement never
    matched the model again and ``ov-autoplace place`` could not draw its own placement."""
    taken = {op.get_friendly_name() for op in prepared.get_ops()}
    for op in prepared.get_ordered_ops():
        name = op.get_friendly_name()
        if op.get_type_name() != "Constant" or name in original or not _AUTOMATIC.fullmatch(name):
            continue
        consumers = sorted((t.get_node().get_friendly_name(), t.get_index()) for t in op.output(0).get_target_inputs())
        if not consumers:
            continue
        base = f"{consumers[0][0]}/folded_input{consumers[0][1]}"
        new, k = base, 1
        while new in taken:
            new, k = f"{base}_{k}", k + 1
        taken.add(new)
        op.set_friendly_name(new)


_AUTOMATIC = re.compile(r"Constant_\d+")

__all__ = ["computes_shapes", "name_new_constants", "placement_graph", "prepare_model"]
