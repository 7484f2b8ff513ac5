"""``ov_autoplace.save_model``: an IR that carries its placement, for ``compile_model`` on another machine.

``ov.save_model`` of a placed model keeps no affinity: the IR serializer writes
no node's ``rt_info["affinity"]`` (and ``compile_model`` sets the affinities on
a prepared clone, never on the user's model). ``save_model`` writes the user's
model unchanged plus the placement in the model's own rt_info
(``placement/portable.py``: ``<rt_info><ov_autoplace><placement value=...>``),
keyed by node identity, so a re-conversion of the same architecture under new
friendly names still finds it. :func:`load_placed` reads it back.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

import openvino as ov

from ov_autoplace import api
from ov_autoplace.errors import PlacementError, ShapeError
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.placement.portable import attach, stored_placement
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.shapes import is_dynamic
from ov_autoplace.decision.verification import evidence_intact


def save_model(model: api.ModelLike, path: str | os.PathLike, placement: Placement | None = None,
               device_name: str | None = None, config: Mapping[str, Any] | None = None, *,
               core: ov.Core | None = None, compress_to_fp16: bool = False, verify: bool = True,
               **place_options: Any) -> Placement:
    """Write ``model`` as an IR at ``path`` with its placement stored in rt_info; return the placement.

    ``placement``: one made by :func:`ov_autoplace.place` for this model; when None the model is placed
    here over ``device_name`` (``place``'s default strategy, or ``place_options`` such as ``strategy=``,
    ``pins=``). ``compress_to_fp16`` is ``ov.save_model``'s (default False here: the IR holds the weights
    as given). ``verify`` (default): a placement that differs from the plain call's and carries no intact
    evidence is measured against the plain call now (``verification.py``) and the winner is stored, sealed,
    so ``compile_model`` of the IR on a machine with these devices uses it without measuring (the returned
    placement is the one stored). ``verify=False`` stores it as given; ``compile_model`` then verifies it on
    every load. Pins are not stored: there a pinned placement is a proposal like any other.
    The file is read back and its stored placement matched before returning; a mismatch raises
    PlacementError. The user's model object is not changed (a clone is written).

    Example::

        placement = ov_autoplace.save_model("model.xml", "placed.xml", device_name="HETERO:GPU,CPU")  # verified first
        compiled = ov_autoplace.compile_model("placed.xml", "HETERO:GPU,CPU")  # compiles the stored placement
    """
    core = core if core is not None else api.default_core()
    ov_model = api.load_model(model, core)
    if is_dynamic(ov_model):
        raise ShapeError("save_model stores the placement of a static model; this model has dynamic dimensions. "
                         "Reshape it to the shapes you serve (model.reshape(...)) and save that, or compile it "
                         "with ov_autoplace.compile_model(model, device, shapes=...)")
    prepared = prepare_model(ov_model)
    graph = extract_graph(prepared)
    if placement is None:
        placement = api.place(ov_model, device_name, config, core=core, **place_options)
    if verify and not evidence_intact(placement):
        req = api._request(ov_model, placement.device_string, config, core, api.StrategyName.PRIORITY, None, None,
                           api.DEFAULT_MAX_SUBMODELS, 0)
        placement = api._verified(req, prepared, graph, placement)
    clone = ov_model.clone()
    attach(clone, placement, graph)
    ov.save_model(clone, os.fspath(path), compress_to_fp16=compress_to_fp16)
    read_back, stored = load_placed(path, core=core)
    if stored is None or stored.assignment != placement.assignment or stored.verification != placement.verification:
        raise PlacementError(f"the IR written at {os.fspath(path)} does not read back with its placement (OpenVINO "
                             "prepares the saved graph differently); save with compress_to_fp16=False")
    return placement


def load_placed(path: str | os.PathLike, *, core: ov.Core | None = None) -> tuple[ov.Model, Placement | None]:
    """(the model at ``path``, the placement it carries keyed by its prepared nodes' names, or None).

    Example::

        model, placement = ov_autoplace.load_placed("placed.xml")
        print(placement.counts_per_device() if placement else "no placement stored")
    """
    core = core if core is not None else api.default_core()
    model = api.load_model(path, core)
    return model, stored_placement(model)


__all__ = ["load_placed", "save_model"]
