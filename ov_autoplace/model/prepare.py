"""Prepare a model for placement: a clone with its constant subgraphs folded.

Values computable at compile time (weight decompression, shape arithmetic such
as ShapeOf -> Gather -> Range on static shapes) must not cross a device
boundary: the producing submodel folds them away and HETERO then hands the
consumer an empty tensor ("Can't set the input tensor ... incompatible", seen
on BERT-base). Folding them first leaves only Constants, which the legalizer
keeps beside their consumers (duplicating a Constant whose consumers sit on
several devices, see ``Placement.apply``). Placements always refer to the
prepared model's node names; preparation is deterministic, so preparing the
same model again gives the same names.
"""

from __future__ import annotations

import openvino as ov
from openvino.passes import ConstantFolding, Manager

from ov_autoplace.model.quant_patterns import quantized_weights_hidden


def prepare_model(model: ov.Model) -> ov.Model:
    """Return a folded clone of ``model``; ``model`` itself is never modified."""
    prepared = model.clone()
    manager = Manager()
    manager.register_pass(ConstantFolding())
    with quantized_weights_hidden(prepared):  # int8 weights stay int8 (folding them made every conv f32)
        manager.run_passes(prepared)
    return prepared


__all__ = ["prepare_model"]
