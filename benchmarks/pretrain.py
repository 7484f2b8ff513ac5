"""The exact commands behind the shipped policy ``ov_autoplace/policy/pretrained/hsdag_v1.npz``.

    python benchmarks/pretrain.py [--output PATH] [--workdir DIR]            # the REINFORCE recipe (v1)
    python benchmarks/pretrain.py --amortise [--output PATH] [--workdir DIR] [--address HOST:PORT]

``--amortise`` runs issue 22's three steps on top of the policy at ``--init`` (default: the shipped one):
target generation as Ray tasks, imitation + REINFORCE, and the held-out evaluation against the start
policy (``python -m ov_autoplace_lab.training.amortise``; see docs/training.md). It writes the policy to
``--output`` (default ``<workdir>/amortised.npz``: never into the package unless ``--output`` names it).

The first form is

equivalent to

    python -m ov_autoplace_lab.commands.train_command --pretrain --seed 0 --threads 1 \\
        --output ov_autoplace/policy/pretrained/hsdag_v1.npz \\
        --log <workdir>/pretrain.jsonl --checkpoint <workdir>/pretrain.ckpt --checkpoint-every 500

followed by ``ov_autoplace.policy.policy_file.convert_policy_file(output, output, weight_dtype="float16")``
(the shipped file stores float16 weights; tests/policy/test_float16_policy.py checks it places as float32 does).

The recipe (tasks, weights, hyper-parameters) is ``lab/ov_autoplace_lab/training/pretrain.py``
(``PRETRAIN_CONFIG``, ``PRETRAIN_POLICY``, ``PretrainTasks``); how it was run, on what and how
long it took is in ``docs/training.md``. Needs the zoo IRs
(``python -m ov_autoplace_lab.models``) and, for the measured-testbed tasks, the testbed profiles
(``costmodel.profiler``; profiled on first use, cached). Interrupted runs continue with
``--resume``.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ov_autoplace_lab.commands.train_command import main as train_main  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=pathlib.Path,
                        help="default: the package's hsdag_v1.npz (REINFORCE recipe), <workdir>/amortised.npz "
                             "(--amortise)")
    parser.add_argument("--workdir", type=pathlib.Path, default=pathlib.Path.home() / ".cache/ov_autoplace/pretrain")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--simulated-only", action="store_true",
                        help="leave out the measured-testbed tasks (profiling needs a quiet machine)")
    parser.add_argument("--with-suite", action="store_true",
                        help="add the calibrated suite platforms to the tasks (the issue #10 experiment)")
    parser.add_argument("--amortise", action="store_true", help="issue 22: targets (Ray), imitation, evaluation")
    parser.add_argument("--address", help="with --amortise: a Ray cluster (default: a local Ray with 2 CPUs)")
    parser.add_argument("--init", default="pretrained", help="with --amortise: the start policy")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.amortise:
        return amortise(args)
    output = args.output or REPO / "ov_autoplace/policy/pretrained/hsdag_v1.npz"
    command = ["--pretrain", "--seed", "0", "--threads", "1", "--output", str(output),
               "--log", str(args.workdir / "pretrain.jsonl"), "--checkpoint", str(args.workdir / "pretrain.ckpt"),
               "--checkpoint-every", "500"] + (["--resume"] if args.resume else []) \
        + (["--simulated-only"] if args.simulated_only else []) + (["--with-suite"] if args.with_suite else [])
    print("python -m ov_autoplace_lab.commands.train_command " + " ".join(command), flush=True)
    code = train_main(command)
    if code == 0:  # the shipped form: float16 weights (same greedy placements, half the wheel's largest file)
        from ov_autoplace.policy.policy_file import convert_policy_file

        print(f"convert_policy_file({str(output)!r}, {str(output)!r}, weight_dtype='float16')", flush=True)
        convert_policy_file(output, output, weight_dtype="float16")
    return code


def amortise(args) -> int:
    """The three steps of issue 22, each printed before it runs (each resumes where it stopped)."""
    from ov_autoplace_lab.training.amortise import main as amortise_main

    run = args.workdir / "amortise"
    output = args.output or args.workdir / "amortised.npz"
    ray = ["--address", args.address] if args.address else []
    start = args.init
    if start == "pretrained":
        from ov_autoplace.policy.pretrained import PRETRAINED_POLICY

        start = str(PRETRAINED_POLICY)
    steps = [["targets", "--dir", str(run), *ray],
             ["train", "--dir", str(run), "--output", str(output), "--init", args.init, "--seed", "0",
              "--log", str(run / "train.jsonl")],
             ["evaluate", "--dir", str(run), *ray, "--policy", f"start={start}", "--policy", f"amortised={output}",
              "--json", str(run / "evaluation.json")]]
    for step in steps:
        print("python -m ov_autoplace_lab.training.amortise " + " ".join(step), flush=True)
        code = amortise_main(step)
        if code:
            return code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
