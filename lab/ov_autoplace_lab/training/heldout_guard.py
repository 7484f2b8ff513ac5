"""The frozen held-out architectures' guard (docs/heldout.md): the error a contaminated set raises, and the
name-free fingerprint that catches a held-out graph under another name. A module of its own so that target
generation (``targets.py``) checks every graph it builds without importing the split (``splits.py``), which
imports it.
"""

from __future__ import annotations

import hashlib


class HeldOutContamination(ValueError):
    """A frozen held-out architecture (``models.HELD_OUT_FAMILIES``, ``docs/heldout.md``) reached a training,
    validation or target set: the evaluation it was kept for would no longer be held out."""


def graph_fingerprint(graph) -> str:
    """A name-free fingerprint of a prepared graph (its multiset of op type, output type and shape, and its sizes):
    the same architecture under another name has the same one."""
    nodes = sorted(f"{t}|{e}|{tuple(int(v) for v in shape[:rank])}" for t, e, shape, rank in
                   zip(graph.op_types, graph.out_element_type, graph.out_shape, graph.out_rank))
    text = f"{graph.num_nodes}|{len(graph.edge_src)}|" + ";".join(nodes)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_graph_not_held_out(name: str, graph) -> None:
    """:class:`HeldOutContamination` when ``graph`` is a frozen held-out architecture under another name."""
    from ov_autoplace_lab import models as zoo

    match = [k for k, v in zoo.HELD_OUT_FINGERPRINTS.items() if v == graph_fingerprint(graph)]
    if match:
        raise HeldOutContamination(f"graph {name!r} has the fingerprint of the frozen held-out architecture "
                                   f"{match[0]!r} (docs/heldout.md): targets are never generated on it")


__all__ = ["HeldOutContamination", "check_graph_not_held_out", "graph_fingerprint"]
