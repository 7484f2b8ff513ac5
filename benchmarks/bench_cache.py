"""Warm-cache compile time: ov_autoplace.compile_model vs plain core.compile_model with CACHE_DIR.

    python benchmarks/bench_cache.py [--model bert_base] [--rounds 7]

Both start warm (one compile each first, filling their caches); then they are
timed alternately, round by round, on the same in-memory model and device
string, each with its own ``CACHE_DIR`` in the config. Target: ov_autoplace's warm
compile takes at most 1.05x the plain one. In-process; ``bench_first_start.py``
times a new process per start, the way apps start.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import openvino as ov

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ov_autoplace as oa  # noqa: E402
from ov_autoplace_lab import models as zoo
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bert_base", choices=zoo.ZOO)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)

    testbed = make_testbed()
    model = zoo.load(args.model)
    device = testbed.hetero
    with tempfile.TemporaryDirectory() as plain_dir, tempfile.TemporaryDirectory() as ours_dir:
        def plain() -> ov.CompiledModel:
            return testbed.core.compile_model(model, device, {"CACHE_DIR": plain_dir})

        def ours() -> ov.CompiledModel:  # the user's CACHE_DIR, as for plain (ov_autoplace enables none itself)
            return oa.compile_model(model, device, {"CACHE_DIR": f"{ours_dir}/blobs"}, core=testbed.core,
                                    cache_dir=ours_dir)

        cold = {}
        for name, fn in (("plain", plain), ("ov_autoplace", ours)):
            t0 = time.perf_counter()
            fn()
            cold[name] = time.perf_counter() - t0
        times: dict[str, list[float]] = {"plain": [], "ov_autoplace": []}
        for _ in range(args.rounds):
            for name, fn in (("plain", plain), ("ov_autoplace", ours)):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    print(f"{args.model} on {device} (real testbed), OpenVINO {ov.get_version()}")
    for name, values in times.items():
        arr = np.array(values) * 1000
        print(f"  {name:<13} cold {cold[name] * 1000:8.0f} ms   warm median {np.median(arr):7.0f} ms "
              f"(IQR {np.percentile(arr, 25):.0f}-{np.percentile(arr, 75):.0f}, n={len(arr)})")
    ratio = np.median(times["ov_autoplace"]) / np.median(times["plain"])
    print(f"  warm ratio ov_autoplace / plain: {ratio:.3f} (target <= 1.05)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
