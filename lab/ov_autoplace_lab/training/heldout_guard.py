"""The frozen held-out architectures' guard (docs/heldout.md): the error a contaminated set raises, and the
name-free fingerprint that catches a held-out graph under another name. A module of its own so that target
generation (``targets.py``) checks every graph it builds without importing the split (``splits.py``), which
imports it.
"""

from __future__ import annotations

import hashlib


class HeldOutContamination(ValueError):
    """A frozen held-out architecture (``models.FROZEN_HELD_OUT``: either list, ``docs/heldout.md``) reached a training,
    validation or target set: the evaluation it was kept for would no longer be held out."""


def graph_fingerprint(graph) -> str:
    """A name-free fingerprint of a prepared graph (its multiset of op type, output type and shape, and its sizes):
    the same architecture under another name has the same one."""
    nodes = sorted(f"{t}|{e}|{tuple(int(v) for v in shape[:rank])}" for t, e, shape, rank in
                   zip(graph.op_types, graph.out_element_type, graph.out_shape, graph.out_rank))
    text = f"{graph.num_nodes}|{len(graph.edge_src)}|" + ";".join(nodes)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def neighbourhood_labels(graph, rounds: int = 2) -> set[str]:
    """The set of each node's neighbourhood, ``rounds`` steps out: Weisfeiler-Lehman labels of op type and output
    type, free of names, shapes and depth, hashed with a fixed hash (Python's own differs per process)."""
    labels = [f"{t}|{e}" for t, e in zip(graph.op_types, graph.out_element_type)]
    (sp, si), (pp, pi) = graph.successors_csr, graph.predecessors_csr
    for _ in range(rounds):
        labels = [hashlib.blake2b("|".join((labels[v], ",".join(sorted(labels[u] for u in pi[pp[v]:pp[v + 1]])),
                                            ",".join(sorted(labels[u] for u in si[sp[v]:sp[v + 1]])))).encode(),
                                  digest_size=8).hexdigest() for v in range(graph.num_nodes)]
    return set(labels)


def block_fingerprint(graph, rounds: int = 2) -> str:
    """A fingerprint of :func:`neighbourhood_labels`: the same architecture at another input size or with more or
    fewer of its repeated blocks has the same set."""
    return hashlib.sha256(";".join(sorted(neighbourhood_labels(graph, rounds))).encode()).hexdigest()[:16]


def check_graph_not_held_out(name: str, graph) -> None:
    """:class:`HeldOutContamination` when ``graph`` is a frozen held-out architecture under another name, or at
    another input size or depth (:func:`block_fingerprint`)."""
    from ov_autoplace_lab import models as zoo

    match = [k for k, v in zoo.FROZEN_FINGERPRINTS.items() if v == graph_fingerprint(graph)]
    if match:
        raise HeldOutContamination(f"graph {name!r} has the fingerprint of the frozen held-out architecture "
                                   f"{match[0]!r} (docs/heldout.md): targets are never generated on it")
    match = [k for k, v in zoo.FROZEN_BLOCK_FINGERPRINTS.items() if v == block_fingerprint(graph)]
    if match:
        raise HeldOutContamination(f"graph {name!r} has the blocks of the frozen held-out architecture {match[0]!r} "
                                   "(the same neighbourhoods of op types, at another input size or depth; "
                                   "docs/heldout.md): targets are never generated on it")


__all__ = ["HeldOutContamination", "block_fingerprint", "check_graph_not_held_out", "graph_fingerprint",
           "neighbourhood_labels"]
