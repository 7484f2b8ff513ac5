"""Turn any node -> device assignment into one HETERO compiles and runs.

How and why, in full: docs/architecture.md, "Module notes", ov_autoplace/placement/legalizer.py.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import openvino as ov

from ov_autoplace.errors import PinError, PlacementError, UnsupportedOpError
from ov_autoplace.graph.arrays import GraphArrays, NodeRole, constant_subgraph_mask
from ov_autoplace.placement.assignment import Placement
from ov_autoplace.model.quant_patterns import keep_groups_together
from ov_autoplace.placement.merge_to_bound import follow_consumers, merge_to_bound
from ov_autoplace.placement.submodels import count_hetero_submodels, count_joined_parts
from ov_autoplace.placement.pins import Pin, parse_pins, unmatched_pin_message
from ov_autoplace.placement.stateful import ONE_SUBMODEL_RULE, REENTRY_RULE, SHAPE_REENTRY_RULE, fill_between_pins, \
    keep_shape_values_whole, keep_state_devices_whole, keep_state_together, one_device_for_state, split_variables

#: Default bound on HETERO submodels (``compile_model``'s, and every benchmark's and training's): each submodel
#: costs a switch and two tensor copies. Defined here, with the bound's enforcement, so the lab reads the same number
#: without importing the api.
DEFAULT_MAX_SUBMODELS = 8


def _plugin_identity(core: ov.Core, device: str) -> tuple[str, str] | None:
    try:
        version = core.get_versions(device)[device]
        return version.description, version.build_number
    except Exception:  # noqa: BLE001 - unknown: query this device on its own
        return None


def query_support(core: ov.Core, model: ov.Model, graph: GraphArrays, devices: Sequence[str]) -> np.ndarray:
    """Boolean (nodes x devices): can device d run node i? From ``core.query_model``.

    Parameters, Constants and Results are placeable anywhere. Devices served
    by the same plugin build (a virtual device and the device it clones) are
    queried once: which ops a plugin supports does not depend on its
    properties, and ``query_model`` runs the plugin's transformations, which
    on a 20,000-node graph takes seconds per call.
    """
    support = np.zeros((graph.num_nodes, len(devices)), dtype=bool)
    index = {name: i for i, name in enumerate(graph.names)}
    queried: dict[tuple[str, str], int] = {}
    for d, device in enumerate(devices):
        identity = _plugin_identity(core, device)
        if identity is not None and identity in queried:
            support[:, d] = support[:, queried[identity]]
            continue
        for name in core.query_model(model, device):
            i = index.get(name)
            if i is not None:
                support[i, d] = True
        if identity is not None:
            queried[identity] = d
    support[graph.role != NodeRole.COMPUTE] = True
    return support


def effective_max_submodels(graph: GraphArrays, support: np.ndarray,
                            max_submodels: int | None) -> tuple[int | None, str | None]:
    """The submodel bound every placement method enforces: ``max(max_submodels, forced)`` and a note when it
    raises the bound (else None); ``forced`` and why: docs/architecture.md, "Module notes", legalizer.py."""
    if max_submodels is None:
        return None, None
    compute = graph.role == NodeRole.COMPUTE
    return _effective_bound(graph, support, compute & ~(constant_subgraph_mask(graph) & compute), max_submodels)


def _effective_bound(graph: GraphArrays, support: np.ndarray, active: np.ndarray,
                     max_submodels: int) -> tuple[int, str | None]:
    """:func:`effective_max_submodels` given the active nodes (``legalize`` has them already)."""
    if max_submodels < 1:
        raise PlacementError(f"max_submodels must be >= 1, got {max_submodels}")
    forced_device = np.where(active, np.argmax(np.asarray(support, bool), axis=1), -1)
    forced_whole = follow_consumers(graph, forced_device, active, np.zeros_like(active))
    forced = count_hetero_submodels(graph, forced_whole, active)
    if forced <= max_submodels:
        return max_submodels, None
    return forced, (f"the devices' op support forces {forced} submodels; bound raised from {max_submodels} "
                    f"to {forced}")


def legalize(
    graph: GraphArrays,
    proposal: np.ndarray,
    devices: Sequence[str],
    support: np.ndarray,
    *,
    pins: Sequence[Pin] = (),
    max_submodels: int | None = None,
    strategy: str = "unknown",
    price=None,
) -> Placement:
    """Make ``proposal`` (device index per node; ignored for non-compute nodes) legal for HETERO."""
    n, num_devices = graph.num_nodes, len(devices)
    proposal = np.asarray(proposal)
    if proposal.shape != (n,):
        raise PlacementError(f"proposal must have one device index per node: expected shape ({n},), got {proposal.shape}")
    if num_devices == 0:
        raise PlacementError("no devices to place on")
    if support.shape != (n, num_devices):
        raise PlacementError(f"support must be ({n}, {num_devices}), got {support.shape}")
    compute = graph.role == NodeRole.COMPUTE
    follower = constant_subgraph_mask(graph) & compute
    active = compute & ~follower
    device = np.where(active, proposal, -1).astype(np.int64)
    bad = active & ((device < 0) | (device >= num_devices))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PlacementError(
            f"proposal gives node {graph.names[i]!r} device index {int(proposal[i])}; expected 0..{num_devices - 1}"
        )
    notes: list[str] = []

    # 1. pins
    locked = np.zeros(n, dtype=bool)
    for pin in pins:
        if pin.device not in devices:
            raise PinError(f"pin {pin} names device {pin.device!r}, which is not in {list(devices)}; "
                           f"pin to one of {list(devices)}")
        d = devices.index(pin.device)
        hits = [i for i in range(n) if pin.matches(graph.names[i], graph.op_types[i])]
        if not hits:  # a typo in the user's own request: say so rather than place as if it were not there
            raise PinError(unmatched_pin_message(pin, graph))
        for i in hits:
            if not support[i, d]:
                raise UnsupportedOpError(
                    f"node {graph.names[i]!r} ({graph.op_types[i]}) is pinned to {pin.device}, which cannot run it; "
                    f"devices that can: {[devices[k] for k in np.flatnonzero(support[i])] or 'none'}"
                )
            device[i] = d
            locked[i] = True
    pinned_anchor = locked & ~active

    # 2. device support
    unsupported = active & (device >= 0)
    unsupported[unsupported] = ~support[np.flatnonzero(unsupported), device[unsupported]]
    if unsupported.any():
        nowhere = [i for i in np.flatnonzero(unsupported) if not support[i].any()]
        if nowhere:
            listed = ", ".join(f"{graph.names[i]!r} ({graph.op_types[i]})" for i in nowhere[:10])
            raise UnsupportedOpError(
                f"{len(nowhere)} node(s) are supported by none of {list(devices)}: {listed}"
                f"{' ...' if len(nowhere) > 10 else ''}. Add a device that supports them (CPU runs every opset op)"
            )
        moved = np.flatnonzero(unsupported)
        device[moved] = np.argmax(support[moved], axis=1)  # first supporting device in priority order
        notes.append(f"{len(moved)} node(s) moved to a device that supports them")

    # 2b. quantization patterns on one device (a split FakeQuantize -> Convolution runs in f32)
    regrouped = keep_groups_together(graph, device, active, support, locked)
    if regrouped:
        notes.append(f"{regrouped} node(s) moved to keep quantization patterns on one device")

    # 2c. state variables and their initializers on one device each (a split one fails inside HETERO)
    if graph.variables and locked.any():  # pins by layer name: a pinned layer's unnamed nodes go with it
        filled = fill_between_pins(graph, device, active, locked, support)
        if filled:
            notes.append(f"{filled} node(s) between pins on one device moved there (stateful model)")
    keep_state_together(graph, device, active, support, locked, devices, notes)

    # 3. submodel bound: merge islands until HETERO's split of the whole placement fits (why the split, and its
    # lower bound first: docs/architecture.md, legalizer.py, step 3)
    full = follow_consumers(graph, device, active, pinned_anchor)
    parts = count_joined_parts(graph, full, active)
    counted = max_submodels is None or parts <= max_submodels  # else the lower bound stands in
    num_submodels = count_hetero_submodels(graph, full, active) if counted else parts
    if max_submodels is not None and num_submodels > max_submodels:
        bound, raised = _effective_bound(graph, support, active, max_submodels)
        if raised:
            notes.append(raised)
        if not counted and parts <= bound:
            num_submodels, counted = count_hetero_submodels(graph, full, active), True
        if num_submodels > bound:
            before = num_submodels if counted else f"at least {parts}"
            full, num_submodels = merge_to_bound(graph, device, active, support, locked, pinned_anchor, bound,
                                                  notes, price=price, pins=pins)
            notes.append(f"merged islands: {before} -> {num_submodels} submodels (bound {bound})")
    device = full

    # 5. rule 4 (REENTRY_RULE: splits HETERO refuses though rule 2 holds). Where only moving pins would undo a
    # re-entry it stays: the compile says whether HETERO takes it
    whole_holds, split = True, np.unique(device[active]).size > 1  # on one device no path leaves it
    if graph.variables and split:
        whole, whole_holds = keep_state_devices_whole(graph, device, active, support, locked)
        whole_holds = whole_holds or bool(locked.any())
        if whole:
            device = follow_consumers(graph, device, active, pinned_anchor)
            num_submodels = count_hetero_submodels(graph, device, active)
            notes.append(f"{whole} node(s) moved under {REENTRY_RULE}")

    # 5b. the same for a shape value of a dynamic model without state (read on its clone's dynamic graph); its moves
    # can leave a device's part in pieces, so the bound is merged to again, and the rule judged again after that
    elif graph.dynamic is not None and split:
        for _ in range(3):
            shaped = keep_shape_values_whole(graph, device, active, support, locked)
            if not shaped:
                break
            device = follow_consumers(graph, device, active, pinned_anchor)
            num_submodels = count_hetero_submodels(graph, device, active)
            notes.append(f"{shaped} node(s) moved under {SHAPE_REENTRY_RULE}")
            bound = None if max_submodels is None else _effective_bound(graph, support, active, max_submodels)[0]
            if bound is None or num_submodels <= bound:
                break
            device, num_submodels = merge_to_bound(graph, device, active, support, locked, pinned_anchor, bound,
                                                   notes, price=price, pins=pins)

    # 6. a cycle through another device can still cut a variable's ReadValue from its Assign: one device then, as
    # where rule 4 could not be kept
    broken = split_variables(graph, device, active)
    if broken or not whole_holds:
        target = one_device_for_state(graph, device, active, support, locked, devices, broken)
        moved = active & (device != target)
        device = np.where(active, target, device)
        device = follow_consumers(graph, device, active, pinned_anchor)
        num_submodels = count_hetero_submodels(graph, device, active)
        why = (f"{ONE_SUBMODEL_RULE} was broken for {len(broken)} variable(s), e.g. {graph.names[broken[0][0]]!r}"
               if broken else f"{REENTRY_RULE} could not be kept")
        notes.append(f"{int(moved.sum())} node(s) moved to {devices[target]}: {why}")

    assignment = {graph.names[i]: devices[int(device[i])] for i in range(n)}
    if len(assignment) != n:
        raise PlacementError("node friendly names are not unique; HETERO affinities need unique names")
    return Placement(
        assignment=assignment,
        devices=tuple(devices),
        strategy=strategy,
        compute_nodes=frozenset(graph.names[i] for i in np.flatnonzero(compute)),
        num_submodels=num_submodels,
        notes=notes,
    )


__all__ = ["Pin", "constant_subgraph_mask", "effective_max_submodels", "legalize", "parse_pins",
           "query_support"]
