"""The exact command that produced the shipped policy ``ov_autoplace/policy/pretrained/hsdag_v1.npz``.

    python benchmarks/pretrain.py [--output PATH] [--workdir DIR]

equivalent to

    python -m ov_autoplace.train --pretrain --seed 0 --threads 1 \\
        --output ov_autoplace/policy/pretrained/hsdag_v1.npz \\
        --log <workdir>/pretrain.jsonl --checkpoint <workdir>/pretrain.ckpt --checkpoint-every 500

The recipe (tasks, weights, hyper-parameters) is ``ov_autoplace/policy/train/pretrain.py``
(``PRETRAIN_CONFIG``, ``PRETRAIN_POLICY``, ``PretrainTasks``); how it was run, on what and how
long it took is in ``ov_autoplace/policy/pretrained/TRAINING.md``. Needs the zoo IRs
(``python -m ov_autoplace.zoo``) and, for the measured-testbed tasks, the testbed profiles
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

from ov_autoplace.train import main as train_main  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=pathlib.Path, default=REPO / "ov_autoplace/policy/pretrained/hsdag_v1.npz")
    parser.add_argument("--workdir", type=pathlib.Path, default=pathlib.Path.home() / ".cache/ov_autoplace/pretrain")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--simulated-only", action="store_true",
                        help="leave out the measured-testbed tasks (profiling needs a quiet machine)")
    parser.add_argument("--with-suite", action="store_true",
                        help="add the calibrated suite platforms to the tasks (the issue #10 experiment)")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    command = ["--pretrain", "--seed", "0", "--threads", "1", "--output", str(args.output),
               "--log", str(args.workdir / "pretrain.jsonl"), "--checkpoint", str(args.workdir / "pretrain.ckpt"),
               "--checkpoint-every", "500"] + (["--resume"] if args.resume else []) \
        + (["--simulated-only"] if args.simulated_only else []) + (["--with-suite"] if args.with_suite else [])
    print("python -m ov_autoplace.train " + " ".join(command), flush=True)
    return train_main(command)


if __name__ == "__main__":
    raise SystemExit(main())
