"""The fixed training / held-out split of the amortised policy (``amortise.py``), apart from its command line.

Targets on a held-out architecture or platform (any variant of it) are generated as references but never
trained on. A module of its own so that ``imitation`` and ``heldout`` read the split without importing the CLI.
"""

from __future__ import annotations

from ov_autoplace_lab.training.heldout_guard import HeldOutContamination, check_graph_not_held_out, graph_fingerprint
from ov_autoplace_lab.training.targets import HOLE_VARIANTS, TargetSpec, task_specs

#: Zoo architectures never trained on (leave-architecture-out): a speech transformer with a conv front end and a
#: densely connected CNN; both have split rows in the headroom table.
HELD_OUT_ARCHITECTURES = ("wav2vec2_speech", "densenet121")
#: Suite platforms never trained on, in any variant (leave-platform-out).
HELD_OUT_PLATFORMS = ("small_memory",)
SUITE_PLATFORMS = ("paper", "laptop", "npu_cpu", "small_memory", "cpu_igpu")
#: Graphs of the training set kept for the validation split (``train --hold-out-validation`` leaves every case of
#: them out; ``evaluate`` scores them): five random DAGs and the last seed of each new kind (decoder, detection,
#: multibranch, state_space), on the training platforms as fitted and in their variants. Chosen by name, before
#: any result, so candidates are compared without touching the held-out rows.
VALIDATION_GRAPHS = tuple(f"family:{s}" for s in range(25, 30)) + tuple(
    f"family:{k}:9" for k in ("detection", "decoder", "multibranch", "state_space")) + tuple(
    f"family:{k}:9" for k in ("mbconv_se", "window_attention", "segmentation", "encoder_decoder"))
# (the wider kinds' seed 9 joined the split by name with the kinds themselves, before any policy was scored on them)


def held_out_families() -> tuple[str, ...]:
    """The frozen held-out architectures of every list: no spec of this module, and no target, may name them."""
    from ov_autoplace_lab import models as zoo

    return tuple(zoo.FROZEN_HELD_OUT)


def check_not_held_out(specs: list[TargetSpec], what: str) -> list[TargetSpec]:
    """``specs`` unchanged, or :class:`HeldOutContamination` naming every spec on a frozen held-out architecture."""
    frozen = set(held_out_families())
    bad = sorted({s.graph for s in specs if s.model in frozen})
    if bad:
        raise HeldOutContamination(f"the {what} names frozen held-out architectures {bad}; they are evaluated once "
                                   "per shipped policy and never trained, selected or tuned on (docs/heldout.md): "
                                   "remove them from the list that put them there")
    return specs


def zoo_models() -> tuple[str, ...]:
    from ov_autoplace_lab import models as zoo

    return tuple(zoo.ALL_MODELS)


def training_specs(zoo_variants: int = 8, family_count: int = 30, family_variants: int = 2,
                   extra_family_count: int = 0, all_data: bool = False, *, wider_family_count: int = 0,
                   hole_variants: int = 0) -> list[TargetSpec]:
    """The training cases: the zoo minus the held-out architectures and the random DAG family, on the suite
    platforms minus the held-out ones, as fitted and in perturbed variants; ``extra_family_count`` seeds of each
    of ``graph_family.EXTRA_KINDS`` (``family:<kind>:<seed>``, with ``family_variants`` variants) besides.
    ``all_data``: the held-out architectures and platforms too - a candidate to ship, trained on everything the
    issue lists; what it does on an unseen architecture or platform is read from a sibling trained with the
    split (same recipe), never from its own rows. ``wider_family_count``: that many seeds of each of
    ``graph_family.WIDER_KINDS`` too; ``hole_variants``: every graph on every platform also in that many
    op-support-hole variants (``targets.HOLE_VARIANTS``)."""
    platforms = [p for p in SUITE_PLATFORMS if all_data or p not in HELD_OUT_PLATFORMS]
    zoo = [f"zoo:{m}" for m in zoo_models() if all_data or m not in HELD_OUT_ARCHITECTURES]
    family = [f"family:{s}" for s in range(family_count)]
    specs = task_specs(zoo, platforms, zoo_variants) + task_specs(family, platforms, family_variants)
    if extra_family_count:
        from ov_autoplace_lab.training.graph_family import EXTRA_KINDS

        extra = [f"family:{k}:{s}" for k in EXTRA_KINDS for s in range(extra_family_count)]
        specs += task_specs(extra, platforms, family_variants)
    if wider_family_count:
        from ov_autoplace_lab.training.graph_family import WIDER_KINDS

        wider = [f"family:{k}:{s}" for k in WIDER_KINDS for s in range(wider_family_count)]
        specs += task_specs(wider, platforms, family_variants)
    if hole_variants:
        graphs = list(dict.fromkeys(s.graph for s in specs))
        specs += [s for s in task_specs(graphs, platforms, hole_variants, variant_offset=HOLE_VARIANTS)
                  if s.variant >= 0]
    return check_not_held_out(specs, "training set")


def validation_specs(extra_family_count: int = 10, hole_variants: int = 1) -> list[TargetSpec]:
    """The training cases of :data:`VALIDATION_GRAPHS` (those the task set has with ``extra_family_count`` seeds of
    every extra and wider kind and ``hole_variants``; a run scores those whose targets it has)."""
    specs = [s for s in training_specs(extra_family_count=extra_family_count, wider_family_count=extra_family_count,
                                       hole_variants=hole_variants) if s.graph in VALIDATION_GRAPHS]
    return check_not_held_out(specs, "validation split")


def is_validation(spec: TargetSpec) -> bool:
    return spec.graph in VALIDATION_GRAPHS


def evaluation_specs() -> list[TargetSpec]:
    """Every zoo model on every suite platform as fitted: the rows of the headroom table."""
    return task_specs([f"zoo:{m}" for m in zoo_models()], list(SUITE_PLATFORMS), 0)


def unseen_specs(zoo_variants: int = 8) -> list[TargetSpec]:
    """The zero-shot cases: every architecture kept out of the project's training (``models.UNSEEN``) on every suite
    platform, as fitted and in ``zoo_variants`` perturbed variants. No training set includes them (``training_specs``
    reads ``ALL_MODELS``), so a run directory of their targets serves ``fit`` and ``evaluate`` only."""
    from ov_autoplace_lab import models as zoo

    specs = task_specs([f"zoo:{m}" for m in zoo.UNSEEN], list(SUITE_PLATFORMS), zoo_variants)
    return check_not_held_out(specs, "zero-shot set")


def is_unseen(spec: TargetSpec) -> bool:
    from ov_autoplace_lab import models as zoo

    return spec.model in zoo.UNSEEN


def is_held_out(spec: TargetSpec) -> bool:
    return spec.model in HELD_OUT_ARCHITECTURES or spec.platform in HELD_OUT_PLATFORMS


__all__ = ["HELD_OUT_ARCHITECTURES", "HELD_OUT_PLATFORMS", "SUITE_PLATFORMS", "VALIDATION_GRAPHS", "HeldOutContamination",
           "check_graph_not_held_out", "check_not_held_out", "evaluation_specs", "graph_fingerprint",
           "held_out_families", "is_held_out", "is_unseen", "is_validation", "training_specs", "unseen_specs",
           "validation_specs", "zoo_models"]
