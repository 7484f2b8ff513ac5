"""One legality check for every placement that reaches a compile.

A placement from the cache, a JSON file or a search may be stale, edited or hand-written, and HETERO compiles
some illegal placements that then run wrong, so :func:`ensure_legal` runs the legalizer again on the placement's
own compute assignment: the same assignment back is legal (its counts recomputed, never trusted); another is
used with a WARNING (its measured latencies dropped); one that does not fit the graph is a ``PlacementError``.
Why each rule: docs/default-path.md, "Never wrong: the checks".
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Sequence

import numpy as np

from ov_autoplace.errors import PlacementError
from ov_autoplace.graph.arrays import GraphArrays
from ov_autoplace.placement.legalizer import Pin, legalize
from ov_autoplace.placement.assignment import Placement

logger = logging.getLogger(__name__)

#: Bumped whenever the legalizer's rules change (each version's change: docs/architecture.md, "Submodels").
LEGALIZER_VERSION = 16


def placement_problems(placement: Placement, graph: GraphArrays, devices: Sequence[str]) -> list[str]:
    """Why ``placement`` cannot be read onto ``graph`` over ``devices`` (empty when it can)."""
    problems = []
    if not isinstance(placement.assignment, dict):
        return [f"assignment must map node names to devices, got {type(placement.assignment).__name__}"]
    if sorted(placement.devices) != sorted(devices):
        problems.append(f"placement is for devices {list(placement.devices)}, the compile for {list(devices)}")
    missing = [n for n in graph.names if n not in placement.assignment]
    if missing:
        problems.append(f"{len(missing)} node(s) of the model have no device, e.g. {missing[:3]}")
    unknown = sorted({str(d) for n, d in placement.assignment.items() if d not in devices})
    if unknown:
        problems.append(f"devices {unknown[:5]} are not among {list(devices)}")
    return problems


def ensure_legal(
    placement: Placement,
    graph: GraphArrays,
    devices: Sequence[str],
    support: np.ndarray,
    *,
    pins: Sequence[Pin] = (),
    max_submodels: int | None = None,
    source: str = "given",
) -> Placement:
    """``placement`` if it is what the legalizer makes of it, else the re-legalized placement (with a WARNING).

    ``source`` names where the placement came from in the log ("cached",
    "loaded", "new"). Raises PlacementError when the placement does not fit
    ``graph`` and ``devices`` at all (see :func:`placement_problems`).
    """
    problems = placement_problems(placement, graph, devices)
    if problems:
        raise PlacementError(f"{source} placement does not fit this model: " + "; ".join(problems))
    devices = tuple(devices)
    proposal = placement.device_indices(graph.names, devices)
    legal = legalize(graph, proposal, devices, support, pins=pins, max_submodels=max_submodels,
                     strategy=placement.strategy)
    moved = [n for n in graph.names if legal.assignment[n] != placement.assignment[n]]
    if not moved and tuple(placement.devices) == devices:
        return dataclasses.replace(placement, assignment=legal.assignment, compute_nodes=legal.compute_nodes,
                                   num_submodels=legal.num_submodels, notes=list(placement.notes))
    logger.warning("%s placement (%s) was not legal for HETERO: %d of %d node(s) re-legalized (e.g. %s)%s",
                   source, placement.strategy, len(moved), graph.num_nodes, moved[:3],
                   "; device order restored" if tuple(placement.devices) != devices else "")
    legal.notes = list(placement.notes) + legal.notes + [
        f"re-legalized the {source} placement: {len(moved)} node(s) moved (legalizer v{LEGALIZER_VERSION})"]
    return legal


__all__ = ["LEGALIZER_VERSION", "ensure_legal", "placement_problems"]
