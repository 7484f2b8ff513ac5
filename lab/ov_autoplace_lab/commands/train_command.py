"""``python -m ov_autoplace_lab.commands.train_command``: train the HSDAG placement policy (a thin front end over ``policy.train``).

Examples::

    # the paper-faithful run on BERT-base, simulated paper platform (25 x 20 samples, REINFORCE, 1/latency)
    python -m ov_autoplace_lab.commands.train_command --model zoo:bert_base --paper --output bert_paper.npz

    # fine-tune the shipped policy on your model with real measurements on the testbed, 50 placements
    python -m ov_autoplace_lab.commands.train_command --model model.xml --measured --device testbed --init pretrained \\
        --steps 6 --samples 8 --output mine.npz

    # the recipe of the shipped policy (see docs/training.md)
    python -m ov_autoplace_lab.commands.train_command --pretrain --output hsdag_v1.npz --log pretrain.jsonl

    # imitation of the search's best placements (targets as Ray tasks), then REINFORCE, then the held-out
    # evaluation: python -m ov_autoplace_lab.training.amortise {targets,train,evaluate} --help
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path
from typing import Sequence

log = logging.getLogger("ov_autoplace_lab.commands.train_command")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ov_autoplace_lab.commands.train_command", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_argument_group("what to train on")
    what.add_argument("--model", action="append", default=[], metavar="PATH|zoo:NAME|family:SEED",
                      help="a model file (IR, ONNX, ...), a zoo model (zoo:bert_base) or a random DAG of the "
                           "training family (family:3); repeatable")
    what.add_argument("--pretrain", action="store_true",
                      help="the shipped policy's recipe: zoo + random DAG family on simulated, perturbed and "
                           "(if profiled) measured platforms; ignores --model/--platform")
    what.add_argument("--simulated-only", action="store_true",
                      help="with --pretrain: leave out the measured-testbed tasks (no profiling on this machine)")
    what.add_argument("--with-suite", action="store_true",
                      help="with --pretrain: add the calibrated suite platforms (costmodel/suite.py) to the tasks")
    reward = p.add_argument_group("reward")
    reward.add_argument("--platform", action="append", default=[], choices=["paper", "laptop", "sim_testbed"],
                        help="simulated platform(s) for the simulator reward (default: paper); repeatable")
    reward.add_argument("--precision", default="f16", help="precision asked of the simulated devices (default f16)")
    reward.add_argument("--measured", action="store_true",
                        help="reward from real HETERO compiles timed by the native timer (slow: seconds each)")
    reward.add_argument("--device", default="testbed",
                        help="with --measured: 'testbed' (CPU bf16 x1 + CPUF f32 x2) or HETERO:<devices> "
                             "on the default core")
    reward.add_argument("--max-submodels", type=int, default=None,
                        help="legalise samples with this island bound, as place() does (default: none in "
                             "simulation, 8 when measured)")
    algo = p.add_argument_group("algorithm")
    algo.add_argument("--mode", choices=["paper", "reinforce", "ppo"], default=None,
                      help="paper: REINFORCE, no baseline, reward 1/latency; reinforce (default): baseline, "
                           "standardised advantages, entropy bonus; ppo: Post's PPO + cross-entropy")
    algo.add_argument("--paper", action="store_true",
                      help="the paper's whole setup: --mode paper, 25 steps x 20 samples, Adam 1e-3, hidden 128")
    algo.add_argument("--steps", type=int, help="policy updates (default 25; the recipe's with --pretrain)")
    algo.add_argument("--samples", type=int, help="placements sampled per task per update (default 20)")
    algo.add_argument("--lr", type=float, help="Adam learning rate (default 1e-3)")
    algo.add_argument("--hidden", type=int, help="hidden size of a new policy (default 128)")
    algo.add_argument("--entropy", type=float, help="entropy bonus weight (default 0.01; 0 in paper mode)")
    algo.add_argument("--tasks-per-step", type=int, help="tasks per update (default 1)")
    algo.add_argument("--seed", type=int, default=0, help="seed of weights, task order and samples (default 0)")
    algo.add_argument("--threads", type=int, default=1, help="torch threads (default 1; the machine has few cores)")
    start = p.add_argument_group("start and output")
    start.add_argument("--init", metavar="PATH|pretrained",
                       help="start from an exported policy (fine-tuning) instead of random weights")
    start.add_argument("--output", "-o", type=Path, help="write the trained policy here (.npz, torch-free)")
    start.add_argument("--log", type=Path, help="JSON-lines training log")
    start.add_argument("--checkpoint", type=Path, help="torch checkpoint (policy + optimizer + generators)")
    start.add_argument("--checkpoint-every", type=int, default=0, help="also checkpoint every N steps")
    start.add_argument("--resume", action="store_true",
                       help="continue the run saved in --checkpoint (its settings; --steps sets the new total)")
    start.add_argument("--no-progress", action="store_true", help="no progress bar")
    start.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    return p


def _train_config(args: argparse.Namespace, base):
    from ov_autoplace_lab.training import TrainConfig

    config = TrainConfig.paper(seed=args.seed, threads=args.threads) if args.paper else dataclasses.replace(
        base, seed=args.seed, threads=args.threads)
    overrides = {k: v for k, v in (("mode", args.mode), ("steps", args.steps), ("samples", args.samples),
                                   ("lr", args.lr), ("hidden", args.hidden), ("entropy_weight", args.entropy),
                                   ("tasks_per_step", args.tasks_per_step)) if v is not None}
    return dataclasses.replace(config, **overrides)


def _load_models(specs: Sequence[str]):
    import openvino as ov

    out = {}
    for spec in specs:
        if spec.startswith("zoo:"):
            from ov_autoplace_lab import models as zoo

            out[spec[4:]] = zoo.load(spec[4:])
        elif spec.startswith("family:"):
            from ov_autoplace_lab.training.graph_family import build

            out[f"family_{spec[7:]}"] = build(int(spec[7:]))
        else:
            path = Path(spec)
            if not path.is_file():
                raise SystemExit(f"error: --model {spec!r} is not a file, zoo:NAME or family:SEED")
            out[path.stem] = ov.Core().read_model(str(path))
    return out


def _envs(args: argparse.Namespace):
    from ov_autoplace_lab.training.env import MeasuredEnv
    from ov_autoplace_lab.training.tasks import PlatformDraw, base_platforms, prepared_graph, sim_envs

    models = _load_models(args.model)
    if args.measured:
        if args.device == "testbed":
            from ov_autoplace.devices.testbed import make_testbed

            tb = make_testbed()
            core, devices = tb.core, tb.devices
        else:
            import openvino as ov

            from ov_autoplace.devices.device_strings import parse_device_string

            core, devices = ov.Core(), parse_device_string(args.device).devices
        bound = 8 if args.max_submodels is None else args.max_submodels
        return [MeasuredEnv(m, core, devices, max_submodels=bound, name=n) for n, m in models.items()]
    platforms = base_platforms()
    draws = [PlatformDraw(platforms[name], args.precision, name) for name in (args.platform or ["paper"])]
    return sim_envs({n: prepared_graph(m) for n, m in models.items()}, draws, max_submodels=args.max_submodels)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m ov_autoplace_lab.commands.train_command`` and ``ov-autoplace train``; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        import torch  # noqa: F401
    except ImportError:
        print("error: training needs torch: pip install 'ov-autoplace-lab[train]'", file=sys.stderr)
        return 2
    from ov_autoplace_lab.training import TrainConfig, Trainer, make_policy, torch_policy
    from ov_autoplace_lab.training.pretrain import PRETRAIN_CONFIG, PRETRAIN_POLICY, pretrain

    if args.resume and not args.checkpoint:
        print("error: --resume needs --checkpoint PATH", file=sys.stderr)
        return 2
    if args.pretrain:
        config = _train_config(args, PRETRAIN_CONFIG)
        from ov_autoplace_lab.training.pretrain import PretrainTasks

        out = pretrain(args.output or Path("hsdag_pretrained.npz"), config=config,
                       tasks=PretrainTasks(use_measured=not args.simulated_only, use_suite=args.with_suite),
                       policy_config=dataclasses.replace(PRETRAIN_POLICY, hidden=config.hidden),
                       log_path=args.log, checkpoint_path=args.checkpoint,
                       checkpoint_every=args.checkpoint_every or 500, resume=args.resume, progress=not args.no_progress)
        print(f"wrote {out}")
        return 0
    if not args.model:
        print("error: give --model (repeatable) or --pretrain; see --help", file=sys.stderr)
        return 2
    config = _train_config(args, TrainConfig())
    envs = _envs(args)
    kwargs = dict(log_path=args.log, checkpoint_path=args.checkpoint, checkpoint_every=args.checkpoint_every,
                  progress=not args.no_progress)
    if args.resume:
        trainer = Trainer.resume(args.checkpoint, envs, **kwargs)
        if args.steps is not None:  # on resume, --steps is the new total
            trainer.config = dataclasses.replace(trainer.config, steps=args.steps)
    else:
        if args.init:
            from ov_autoplace.policy.pretrained import PRETRAINED_POLICY

            policy = torch_policy(PRETRAINED_POLICY if args.init == "pretrained" else Path(args.init))
        else:
            policy = make_policy(config, envs)
        trainer = Trainer(policy, envs, config, **kwargs)
    trainer.run()
    for env in envs:
        print(f"{env.name}: best {env.best_ms:.4f} ms after {env.num_evaluated} distinct placements [{env.label}]")
    if args.output:
        print(f"wrote {trainer.export(args.output)}")
    return 0


def add_train_parser(sub) -> None:
    """List ``train`` in ``ov-autoplace --help``; the runtime CLI hands it every argument unparsed (``run_raw``)."""
    sub.add_parser("train", help="train the HSDAG policy (needs ov-autoplace-lab[train]: torch)",
                   description="Train or fine-tune the HSDAG placement policy; every argument after `train` goes to "
                               "`python -m ov_autoplace_lab.commands.train_command` (see `ov-autoplace train --help`).",
                   add_help=False)


add_train_parser.run_raw = main  # torch is imported only on this path (it names the extra itself)

if __name__ == "__main__":
    raise SystemExit(main())
