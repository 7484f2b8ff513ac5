"""Is the model ``compile_model`` returns slower than a plain compile of the same device, compile for compile?

    python benchmarks/bench_next_start_compile.py [--models resnet18,mobilenet_v2] [--slots 6] [--rounds 12]

``bench_never_slower`` compiles each side three times in a fixed order (the devices first, the result's next
starts in the middle, the devices' other compiles last); its result's next starts read 0.3-0.6 % slower than the
devices' last compiles, in ~70 % of rows. This separates the product from compile order: after one call with
``strategy="heft"`` (a placement cached in a scratch directory), it makes ``--slots`` pairs of compiles, each pair
a next start of the same call and a plain ``core.compile_model(model, "CPU")``, the order within a pair
alternating, then times all of them in paired rounds (``bench_never_slower.paired_rounds``). Per slot: the ratio
of the two compiles' medians; over slots: their geometric mean with a Student's t 95 % interval. Where the
result is ``CPU`` alone (every row of the testbed's tables), both sides are the same call and a ratio off 1 is
compile noise or a product effect. The models come from the zoo (``python -m ov_autoplace_lab.models build``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

import ov_autoplace as oa
from ov_autoplace.devices.testbed import shared_testbed
from ov_autoplace.decision.verification import t_quantile
from ov_autoplace.devices.timing import random_inputs
from ov_autoplace_lab import models as zoo

sys.path.insert(0, str(Path(__file__).parent))
from bench_never_slower import _wait_for_workers, paired_rounds, runs_per_sample  # noqa: E402


def measure(name: str, slots: int, rounds: int) -> str:
    testbed = shared_testbed(False)
    model = zoo.load(name)
    held = testbed.core.compile_model(model, "CPU")  # the first compile of a run, kept and never timed
    with tempfile.TemporaryDirectory(prefix="next-start-") as scratch:
        def next_start():
            return oa.compile_model(model, testbed.hetero, core=testbed.core, cache_dir=Path(scratch), strategy="heft")

        next_start()
        _wait_for_workers(Path(scratch), 900)
        contenders = {}
        for slot in range(slots):
            pair = [("placed", next_start), ("CPU", lambda: testbed.core.compile_model(model, "CPU"))]
            for label, make in pair[::-1] if slot % 2 else pair:
                contenders[f"{label}#{slot}"] = make()
        devices = {list(c.get_property("EXECUTION_DEVICES"))[0] for c in contenders.values()}
        inputs = random_inputs(held)
        raw = paired_rounds(contenders, inputs, rounds, runs_per_sample(held, inputs, 5, 120))
    median = {c: float(np.median(v)) for c, v in raw.items()}
    log_ratio = np.log([median[f"placed#{s}"] / median[f"CPU#{s}"] for s in range(slots)])
    half = t_quantile(0.975, slots - 1) * log_ratio.std(ddof=1) / np.sqrt(slots)
    return (f"{name}: result on {sorted(devices)}; placed / CPU per slot "
            f"{', '.join(f'{v:.3f}' for v in np.exp(log_ratio))}; geometric mean {np.exp(log_ratio.mean()):.4f} "
            f"[{np.exp(log_ratio.mean() - half):.4f}-{np.exp(log_ratio.mean() + half):.4f}] (t, 95 %), "
            f"{rounds} rounds")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="resnet18,mobilenet_v2")
    parser.add_argument("--slots", type=int, default=6, help="pairs of compiles (at least 2)")
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args(argv)
    if args.slots < 2:
        parser.error(f"--slots must be at least 2 (an interval needs two pairs), got {args.slots}")
    for name in args.models.split(","):
        print(measure(name, args.slots, args.rounds), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
