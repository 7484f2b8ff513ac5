"""The exact commands behind the shipped policy ``ov_autoplace/policy/pretrained/hsdag_v3.npz`` and the first one.

    python benchmarks/pretrain.py --amortise [--output PATH] [--workdir DIR] [--address HOST:PORT]   # v3 (shipped)
    python benchmarks/pretrain.py [--output PATH] [--workdir DIR]                          # v1, the REINFORCE recipe

``--amortise`` runs issue 22's recipe: draw-robust target generation as Ray tasks from the first policy's one pass
and HEFT's placement (``hsdag_v1.npz``, kept in the lab as ``ov_autoplace_lab.training.V1_POLICY``; a split may
lose to the plain call in 3 of 16 draws of the fitted model's error; every candidate legalised as compile_model
legalises it), imitation on them from the second policy's weights (``hsdag_v2.npz``, ``V2_POLICY``, itself the
same recipe from v1 with ``cost_cut`` groups, 24,000 steps at lr 1e-3 on targets without HEFT's start and the
priced merges: docs/training.md): groups never cut inside a fused kernel, the 4-pass placer pricing each group's
move, hard-example mining, 6,000 steps at lr 3e-4, seed 1 (the validation rule's choice of four seeds), then the
shipped form (``write_shipped_policy``: float16 at 8 mantissa bits) and the held-out evaluation against v2
(``python -m ov_autoplace_lab.training.amortise``). Each step is printed before it runs and resumes where it
stopped. It writes the policy to ``--output`` (default ``<workdir>/hsdag_v3.npz``: never into the package unless
``--output`` names it).
Bit for bit it reproduces the shipped float32 export only at the commit v3 was trained at (176755c, with
``--init pretrained``): the imitation's hard-example check legalises with the runtime's legalizer, which changed
after it, so at a later commit the same steps train a different policy (docs/training.md, "hsdag_v3").

The second form is

    python -m ov_autoplace_lab.commands.train_command --pretrain --seed 0 --threads 1 --output <workdir>/hsdag_v1.npz \\
        --log <workdir>/pretrain.jsonl --checkpoint <workdir>/pretrain.ckpt --checkpoint-every 500

followed by ``ov_autoplace_lab.policy_export.convert_policy_file(output, output, weight_dtype="float16")``. Its
recipe (tasks, weights, hyper-parameters) is ``lab/ov_autoplace_lab/training/pretrain.py`` (``PRETRAIN_CONFIG``,
``PRETRAIN_POLICY``, ``PretrainTasks``). Needs the zoo IRs (``python -m ov_autoplace_lab.models``) and, for the
measured-testbed tasks, the testbed profiles (``costmodel.profiler``; profiled on first use, cached).
Interrupted runs continue with ``--resume``. How each was run, on what and how long it took: ``docs/training.md``.
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
                        help="default: <workdir>/hsdag_v3.npz (--amortise), <workdir>/hsdag_v1.npz (REINFORCE recipe)")
    parser.add_argument("--workdir", type=pathlib.Path, default=pathlib.Path.home() / ".cache/ov_autoplace/pretrain")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--simulated-only", action="store_true",
                        help="leave out the measured-testbed tasks (profiling needs a quiet machine)")
    parser.add_argument("--with-suite", action="store_true",
                        help="add the calibrated suite platforms to the tasks (the issue #10 experiment)")
    parser.add_argument("--amortise", action="store_true",
                        help="v3, issue 22: targets (Ray), imitation, float16 export, evaluation")
    parser.add_argument("--address", help="with --amortise: a Ray cluster (default: a local Ray with 2 CPUs)")
    parser.add_argument("--init", default="v2", help="with --amortise: the initial weights (v3 started from v2)")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.amortise:
        return amortise(args)
    output = args.output or args.workdir / "hsdag_v1.npz"
    command = ["--pretrain", "--seed", "0", "--threads", "1", "--output", str(output),
               "--log", str(args.workdir / "pretrain.jsonl"), "--checkpoint", str(args.workdir / "pretrain.ckpt"),
               "--checkpoint-every", "500"] + (["--resume"] if args.resume else []) \
        + (["--simulated-only"] if args.simulated_only else []) + (["--with-suite"] if args.with_suite else [])
    print("python -m ov_autoplace_lab.commands.train_command " + " ".join(command), flush=True)
    code = train_main(command)
    if code == 0:  # the shipped form: float16 weights (same greedy placements, half the wheel's largest file)
        from ov_autoplace_lab.policy_export import convert_policy_file

        print(f"convert_policy_file({str(output)!r}, {str(output)!r}, weight_dtype='float16')", flush=True)
        convert_policy_file(output, output, weight_dtype="float16")
    return code


#: The recipe of hsdag_v3 (docs/training.md, "hsdag_v3, the shipped policy"): targets from v1's pass and HEFT's
#: placement, priced as compile_model legalises, then imitation from v2's weights (its placer inputs and passes kept).
V3_TARGETS = ["--start-policy", "v1", "--extra-family-count", "10", "--sigma", "0.4625", "--robust-draws", "16",
              "--robust-max-slower", "0.2", "--all-data", "--heft-start", "--priced"]
V3_TRAIN = ["--coarsening", "cost_cut_fused", "--extra-family-count", "10", "--hold-out-validation", "--all-data",
            "--split-weight", "10", "--node-weighting", "stakes", "--reinforce-steps", "0", "--lr", "3e-4",
            "--lr-schedule", "cosine", "--imitation-steps", "6000", "--grouping-weight", "10", "--mining", "3",
            "--seeds", "1"]


def amortise(args) -> int:
    """The steps of issue 22's recipe, each printed before it runs (each resumes where it stopped)."""
    from ov_autoplace_lab.training import named_policy, write_shipped_policy
    from ov_autoplace_lab.training.amortise import main as amortise_main

    run = args.workdir / "amortise"
    output = args.output or args.workdir / "hsdag_v3.npz"
    exported = output.with_name(output.stem + "_float32.npz")  # --seeds 1 writes it as <stem>_float32_s1.npz
    ray = ["--address", args.address] if args.address else ["--num-cpus", "2"]

    def step(*argv: str) -> int:
        print("python -m ov_autoplace_lab.training.amortise " + " ".join(argv), flush=True)
        return amortise_main(list(argv))

    code = step("targets", "--dir", str(run), *ray, *V3_TARGETS) or step(
        "train", "--dir", str(run), "--output", str(exported), "--init", args.init, *V3_TRAIN,
        "--log", str(run / "train.jsonl"))
    if code:
        return code
    trained = exported.with_name(exported.stem + "_s1.npz")
    print(f"write_shipped_policy({str(trained)!r}, {str(output)!r})", flush=True)  # float16, 8 mantissa bits
    write_shipped_policy(trained, output)
    return step("evaluate", "--dir", str(run), *ray, "--policy", f"start={named_policy(args.init)}",
                "--policy", f"v3={output}", "--trained-on-all", "start", "--trained-on-all", "v3", "--shipped", "start",
                "--legalised", "2", "--json", str(run / "evaluation.json"))


if __name__ == "__main__":
    raise SystemExit(main())
