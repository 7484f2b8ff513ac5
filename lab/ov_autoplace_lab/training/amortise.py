"""``python -m ov_autoplace_lab.training.amortise``: amortise the search into the policy.

Three steps, each resumable, each on Ray where it is parallel:

    # 1. targets: the best placement known per (graph, platform, variant), as Ray tasks
    python -m ov_autoplace_lab.training.amortise targets --dir runs/amortise [--address HOST:PORT]
    # 2. imitation (cross-entropy on the targets) then REINFORCE on the simulator; --no-imitation for the ablation;
    #    --seeds 0 1 2: one Ray task per seed (policy_s0.npz, ...), to compare recipes over seeds
    python -m ov_autoplace_lab.training.amortise train --dir runs/amortise --output runs/amortise/policy.npz
    # 3. held-out evaluation: the policy alone, policy + local search, the search alone (Ray tasks), and the
    #    validation split that chooses among candidates (validation.py); --decodings 16: also the pass decoded
    #    16 more ways and priced (ov_autoplace_lab/training/decoding.py)
    python -m ov_autoplace_lab.training.amortise evaluate --dir runs/amortise --policy runs/amortise/policy.npz
    # 4. (diagnosis) does the one pass place what the targets place, and could its grouping (fit.py)?
    cd runs/amortise && python -m ov_autoplace_lab.training.amortise fit --dir . --policy policy.npz --json fit.json

The split (``splits.py``: :data:`HELD_OUT_ARCHITECTURES`, :data:`HELD_OUT_PLATFORMS`) is fixed
before any training: targets on a held-out architecture or platform (any
variant of it) are generated as references but never trained on. Nothing is
written into the package unless ``--output`` names it.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Sequence

from ov_autoplace.policy.config import COARSENING_RULES, PLACER_INPUTS
from ov_autoplace_lab.training.decoding import LEGALISED
from ov_autoplace_lab.training.splits import evaluation_specs, training_specs, unseen_specs
from ov_autoplace_lab.training.targets import TargetOptions

log = logging.getLogger(__name__)

ALL_DATA_HELP = ("also the held-out architectures and platforms (splits.py): a candidate to ship, trained on "
                 "everything; read its leave-out behaviour from a sibling trained without this flag")


def _options(args: argparse.Namespace) -> TargetOptions:
    from ov_autoplace_lab.training import named_policy

    policy = named_policy(args.start_policy) if args.start_policy else args.start_policy
    sigma = args.sigma
    if sigma is None:
        from ov_autoplace_lab.paper_bench import truth
        from ov_autoplace.costmodel.suite import load_suite
        from ov_autoplace_lab.training.targets import load_graph

        sigma = round(truth.held_out_sigma(truth.held_out_log_errors(load_suite(), lambda m: load_graph(f"zoo:{m}"))),
                      4)
    robust = None
    if args.robust_draws:
        from ov_autoplace_lab.training.robust import RobustOptions

        robust = RobustOptions(draws=args.robust_draws, quantile=args.robust_quantile,
                               max_slower=args.robust_max_slower, min_gain=args.robust_min_gain)
    return TargetOptions(sigma=sigma, max_evaluations=args.max_evaluations, local_search_seconds=args.ls_seconds,
                         milp_seconds=args.milp_seconds, policy=policy, robust=robust, heft_start=args.heft_start,
                         priced=args.priced)


def cmd_targets(args: argparse.Namespace) -> int:
    from ov_autoplace_lab.training.distributed import generate_targets

    if args.unseen and args.all_data:
        print("error: --unseen generates the zero-shot cases alone; --all-data belongs to a training run's targets",
              file=sys.stderr)
        return 2
    if args.unseen:  # the zero-shot set alone (for fit / evaluate), never mixed into a training run's directory
        specs = unseen_specs(args.zoo_variants)
    else:
        specs = evaluation_specs() + training_specs(args.zoo_variants, args.family_count, args.family_variants,
                                                    args.extra_family_count, all_data=args.all_data,
                                                    wider_family_count=args.wider_family_count,
                                                    hole_variants=args.hole_variants)
    if args.limit:
        specs = specs[:args.limit]
    options = _options(args)
    started = time.perf_counter()
    counts = generate_targets(args.dir, specs, options, address=args.address, num_cpus=args.num_cpus,
                              progress=not args.no_progress, searched_from=args.searched_from)
    print(f"targets: {counts['total']} specs, {counts['resumed']} resumed, {counts['generated']} generated in "
          f"{time.perf_counter() - started:.0f} s (sigma {options.sigma}) -> {args.dir}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from ov_autoplace_lab.training.imitation import ImitationConfig, train_amortised

    try:
        config = ImitationConfig(imitation_steps=0 if args.no_imitation else args.imitation_steps,
                                 reinforce_steps=args.reinforce_steps, seed=args.seed, lr=args.lr,
                                 split_weight=args.split_weight, coarsening=args.coarsening,
                                 hold_out_validation=args.hold_out_validation, all_data=args.all_data,
                                 node_weighting=args.node_weighting, gcn_layers=args.gcn_layers,
                                 mining=args.mining, check_every=args.check_every, placer_inputs=args.placer_inputs,
                                 placer_passes=args.placer_passes, freeze_grouping=args.freeze_grouping,
                                 graph_summary=not args.no_graph_summary,
                                 lr_schedule=args.lr_schedule, grouping_weight=args.grouping_weight)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    specs = training_specs(extra_family_count=args.extra_family_count, all_data=args.all_data,
                           wider_family_count=args.wider_family_count, hole_variants=args.hole_variants)
    unknown = sorted(set(args.exclude) - {s.key for s in specs})
    if unknown:
        print(f"error: --exclude {unknown}: no such training target (keys look like 'zoo_bert_base@paper~3', "
              "the file names under DIR/targets without .npz)", file=sys.stderr)
        return 2
    specs = [s for s in specs if s.key not in set(args.exclude)]
    if args.seeds:  # one Ray task per seed (distributed.train_seeds), resumable seed by seed
        from ov_autoplace_lab.training.distributed import train_seeds

        outs = train_seeds(args.dir, args.output, config, args.seeds, init=args.init, specs=specs,
                           log_path=args.log, address=args.address, num_cpus=args.num_cpus,
                           progress=not args.no_progress)
        print("wrote " + ", ".join(str(o) for o in outs))
        return 0
    out = train_amortised(args.dir, args.output, config, init=args.init, log_path=args.log, specs=specs,
                          progress=not args.no_progress)
    print(f"wrote {out}")
    return 0


def _add_wider_data(parser: argparse.ArgumentParser, prefix: str) -> None:
    """The wider kinds' and the hole variants' options, the same for the targets and for training on them."""
    parser.add_argument("--wider-family-count", type=int, default=0,
                        help=f"{prefix}this many seeds of each of graph_family.WIDER_KINDS (mbconv_se, "
                             "window_attention, segmentation, encoder_decoder)")
    parser.add_argument("--hole-variants", type=int, default=0,
                        help=f"{prefix}every graph on every platform in this many op-support-hole variants "
                             "(targets.op_support_holes: one device without one or two of the graph's rarer op types)")


def _policies(given: Sequence[str]) -> dict[str, str]:
    """``--policy`` values (``NAME=PATH`` or ``PATH``, named by its stem) as {name: path}."""
    return dict(p.split("=", 1) if "=" in p else (Path(p).stem, p) for p in given)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from ov_autoplace_lab.training.heldout import check_trained_on_all, evaluate_policies

    policies = _policies(args.policy)
    try:  # before Ray starts
        check_trained_on_all(args.trained_on_all, policies)
        if args.decodings < 0 or args.legalised < 0:
            raise ValueError(f"--decodings {args.decodings} --legalised {args.legalised}: both count decodings, "
                             "so they must be >= 0")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.validation_only:
        from ov_autoplace_lab.training.targets import run_sigma

        result = {"sigma": run_sigma(args.dir), "table": []}
    else:
        result = evaluate_policies(args.dir, policies, address=args.address, num_cpus=args.num_cpus,
                                   progress=not args.no_progress, rows=args.rows, trained_on_all=args.trained_on_all,
                                   decodings=args.decodings, legalised=args.legalised)
    if not args.no_validation:  # the validation split (validation.py): chooses among candidates, held-out rows aside
        from ov_autoplace_lab.training.validation import validate_policies

        result["validation"] = validate_policies(args.dir, policies, result["sigma"], address=args.address,
                                                 num_cpus=args.num_cpus, progress=not args.no_progress,
                                                 shipped=args.shipped)
        result["table"] += ["", *result["validation"]["table"]] if result["table"] else result["validation"]["table"]
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(result["table"]))
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    from ov_autoplace_lab.training.fit import fit_policies

    policies = _policies(args.policy)
    try:
        result = fit_policies(args.dir, policies, rows=args.rows, address=args.address, num_cpus=args.num_cpus,
                              progress=not args.no_progress, decodings=args.decodings)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(result["table"]))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ov_autoplace_lab.training.amortise",
                                description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    ray_args = argparse.ArgumentParser(add_help=False)
    ray_args.add_argument("--dir", type=Path, required=True, help="run directory (targets, manifest)")
    ray_args.add_argument("--address", help="Ray cluster (host:port or auto); default: a local Ray")
    ray_args.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray (default 2)")
    ray_args.add_argument("--no-progress", action="store_true")
    t = sub.add_parser("targets", parents=[ray_args], help="generate the imitation targets")
    t.add_argument("--zoo-variants", type=int, default=8)
    t.add_argument("--family-count", type=int, default=30)
    t.add_argument("--family-variants", type=int, default=2)
    t.add_argument("--extra-family-count", type=int, default=0,
                   help="seeds of each of graph_family.EXTRA_KINDS (detection, decoder, multibranch, state_space)")
    _add_wider_data(t, "")
    t.add_argument("--limit", type=int, default=0, help="only the first N specs (a smoke run)")
    t.add_argument("--all-data", action="store_true", help=ALL_DATA_HELP)
    t.add_argument("--unseen", action="store_true",
                   help="only the zero-shot cases: the architectures kept out of training (models.UNSEEN) on the "
                        "suite platforms with --zoo-variants variants; a directory for fit / evaluate, not train")
    t.add_argument("--sigma", type=float, help="perturbation sigma (default: the held-out calibration error)")
    t.add_argument("--max-evaluations", type=int, default=6000, help="placements the local search prices per start")
    t.add_argument("--ls-seconds", type=float, default=30.0)
    t.add_argument("--milp-seconds", type=float, default=0.0, help="also the MILP with this time limit (0: off)")
    t.add_argument("--heft-start", action="store_true",
                   help="start the local search from HEFT's placement too (no target slower than it, refined)")
    t.add_argument("--priced", action="store_true",
                   help="legalise every candidate as compile_model does (the bound's merges priced), not in flops order")
    t.add_argument("--start-policy", default="pretrained",
                   help="policy whose one pass is a start: 'pretrained' (the shipped one), 'v1' (the first), a .npz, "
                        "or '' for none")
    t.add_argument("--robust-draws", type=int, default=0,
                   help="choose each target across this many perturbed draws of its platform (robust.py; 0: off, "
                        "the fastest placement under the fitted model)")
    t.add_argument("--robust-quantile", type=float, default=0.8, help="the draws' quantile of the ratio minimised")
    t.add_argument("--robust-max-slower", type=float, default=0.1,
                   help="share of draws a target may be slower than the plain call's placement; above: abstain")
    t.add_argument("--robust-min-gain", type=float, default=0.0,
                   help="a target other than the plain call's placement must be predicted faster than it by at "
                        "least this fraction (0.02: 2 %%); below: abstain")
    t.add_argument("--searched-from", type=Path,
                   help="a run with the same search options (robust or not): re-choose its stored searches across "
                        "draws instead of searching again (needs --robust-draws)")
    t.set_defaults(run=cmd_targets)
    r = sub.add_parser("train", parents=[ray_args], help="imitation, then REINFORCE")
    r.add_argument("--output", type=Path, required=True, help="the exported policy (.npz)")
    r.add_argument("--init", default="pretrained",
                   help="start weights: 'pretrained' (the shipped policy), 'v1' (the first; hsdag_v2 started there), 'v2' (hsdag_v3 "
                        "started there), 'v3' (shipped before hsdag_v4), a .npz, or 'scratch'")
    r.add_argument("--imitation-steps", type=int, default=3000)
    r.add_argument("--reinforce-steps", type=int, default=600)
    r.add_argument("--no-imitation", action="store_true", help="the ablation: REINFORCE only")
    r.add_argument("--lr", type=float, default=1e-3)
    r.add_argument("--split-weight", type=float, default=3.0, help="draw split-paying targets 1 + this as often")
    seed = r.add_mutually_exclusive_group()
    seed.add_argument("--seed", type=int, default=0)
    seed.add_argument("--seeds", type=int, nargs="+", metavar="SEED",
                      help="train once per seed, each a Ray task (--address, --num-cpus), writing NAME_s<SEED>.npz "
                           "beside --output; a rerun trains only the seeds whose file is missing")
    r.add_argument("--extra-family-count", type=int, default=0,
                   help="train also on the targets of this many seeds of each graph_family.EXTRA_KINDS")
    _add_wider_data(r, "train also on ")
    r.add_argument("--exclude", action="append", default=[], metavar="KEY",
                   help="leave this training target out (repeatable; e.g. one whose search did not finish)")
    r.add_argument("--coarsening", choices=list(COARSENING_RULES),
                   help="the policy's grouping (default: the start policy's); cost_cut lets it split a chain where "
                        "the cheapest device changes, cost_cut_fused the same without cutting a fused kernel")
    r.add_argument("--hold-out-validation", action="store_true",
                   help="leave the validation split (splits.VALIDATION_GRAPHS) out of training, so 'evaluate' can "
                        "choose among candidates on it")
    r.add_argument("--node-weighting", choices=["uniform", "stakes"], default="uniform",
                   help="the imitation loss's node weights: uniform (every active node 1) or stakes (by the spread "
                        "of the node's compute time over the devices; imitation.node_weights)")
    r.add_argument("--gcn-layers", type=int, metavar="N",
                   help="GCN layers of the trained policy (default: the start policy's, 2); more: the start policy's "
                        "weights where they fit and fresh extra layers (imitation.with_gcn_layers)")
    r.add_argument("--placer-inputs", choices=PLACER_INPUTS,
                   help="what the placer reads (default: the start policy's); boundary: also what moving each group "
                        "trades against its compute gain, and a whole-graph summary, the new weights starting at 0 "
                        "so training starts from the start policy's placements (imitation.with_placer_inputs)")
    r.add_argument("--placer-passes", type=int, metavar="N",
                   help="with boundary inputs: how many times the placer scores the groups, each pass pricing the "
                        "moves with the neighbours where the previous pass put them (default: the start policy's, 1)")
    r.add_argument("--no-graph-summary", action="store_true",
                   help="with --placer-inputs boundary: the placer does not read the whole graph's mean group "
                        "embedding (hidden x hidden fewer weights, a seventh of the policy file)")
    r.add_argument("--lr-schedule", choices=["constant", "cosine"], default="constant",
                   help="the imitation's learning rate: constant, or cosine from --lr to 0 over the imitation steps")
    r.add_argument("--freeze-grouping", action="store_true",
                   help="keep the start policy's groups: train the placer and the group embeddings, not the GCN or "
                        "the parsing network's edge scorer (imitation.freeze_grouping)")
    r.add_argument("--grouping-weight", type=float, default=0.0, metavar="W",
                   help="also train the parsing network's edge scores not to merge what the target places apart, "
                        "with this weight against the cross-entropy (imitation.grouping_loss; 0: off)")
    r.add_argument("--mining", type=float, default=0.0, metavar="W",
                   help="draw the tasks whose one pass misses its target by > 5 %% 1 + W times as often in the next "
                        "--check-every imitation steps (imitation.checked_imitation; 0: off)")
    r.add_argument("--check-every", type=int, default=500, metavar="STEPS",
                   help="imitation steps between two checks of which tasks the one pass misses (logged, and kept in "
                        "the policy's metadata as one_pass_misses)")
    r.add_argument("--log", type=Path)
    r.add_argument("--all-data", action="store_true", help=ALL_DATA_HELP)
    r.set_defaults(run=cmd_train)
    e = sub.add_parser("evaluate", parents=[ray_args], help="held-out evaluation")
    e.add_argument("--policy", action="append", required=True, help="NAME=PATH of an exported policy (repeatable)")
    e.add_argument("--json", required=True)
    e.add_argument("--rows", default="all", choices=["split", "all"],
                   help="all (default): every row (the tables keep the rows where a split pays); split: only rows "
                        "whose target beats the legalised single-device starts by 5 %%")
    only = e.add_mutually_exclusive_group()
    only.add_argument("--no-validation", action="store_true", help="skip the validation split (validation.py)")
    only.add_argument("--validation-only", action="store_true",
                      help="only the validation split: the rows a choice among candidates reads (docs/heldout.md, "
                           "rule 3), without the evaluation rows")
    e.add_argument("--shipped", default="v4",
                   help="the --policy NAME of the shipped policy: the validation rule admits candidates no more often "
                        "slower than the plain call than it (default v4, the shipped file; v3, v2 and v1 in the evaluations before it)")
    e.add_argument("--trained-on-all", action="append", default=[], metavar="NAME",
                   help="this --policy was trained with --all-data: its rows are all in training, so the tables "
                        "show it in the 'in training' subset only (repeatable)")
    e.add_argument("--decodings", type=int, default=0, metavar="K",
                   help="also each policy's pass + K offset decodings priced by the cost model "
                        "(hsdag_decoded_ms; policy/decoding.py); 0: not")
    e.add_argument("--legalised", type=int, default=LEGALISED, metavar="L",
                   help=f"of the --decodings, legalise the L cheapest in full (default {LEGALISED})")
    e.set_defaults(run=cmd_evaluate)
    f = sub.add_parser("fit", parents=[ray_args],
                       help="the one pass and its grouping's ceiling against the stored targets (fit.py)")
    f.add_argument("--policy", action="append", required=True, help="NAME=PATH of an exported policy (repeatable)")
    f.add_argument("--json", required=True)
    f.add_argument("--rows", default="split", choices=["split", "all"],
                   help="split (default): the targets that beat the best single-device start by 5 %%; all: every one")
    f.add_argument("--decodings", type=int, default=0, metavar="K",
                   help="also the best of the greedy pass and K offset decodings, each legalised and simulated "
                        "(ranked_ms: how far the policy's ranking of the groups reaches; fit.py); 0: not")
    f.set_defaults(run=cmd_fit)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from ov_autoplace_lab.training.targets import TargetCheckpointError, TargetGenerationError

    try:
        return args.run(args)
    except (TargetGenerationError, TargetCheckpointError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
