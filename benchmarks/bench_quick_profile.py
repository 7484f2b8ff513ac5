"""What the quick profile costs: one compile and a few PERF_COUNT runs per device (testbed, fresh store).

    python benchmarks/bench_quick_profile.py [--models bert_base large] [--full] [--repeats 3]

For each model: the wall time of ``quick_model_profile`` on the testbed's two
devices (a fresh, empty profile store each time: nothing is reused) and, for
scale, one plain ``core.compile_model(m, "CPU")`` timed in the same loop -
one of those per distinct device plus the profiled runs (1 warm-up + 6; timed
here as 7 plain inferences) is the floor of the quick profile. ``--full`` also times
the full profiler (``measure_model_profile``: three compiles per device plus a
measured link calibration), interleaved. Targets (issue #13): BERT-base <= 3 s,
the 20,002-node graph <= 15 s. Medians [min-max] over ``--repeats``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ov_autoplace_lab import models as zoo
from ov_autoplace.cache.profile_store import ProfileStore  # noqa: E402
from ov_autoplace.measuring.quick_profile import quick_model_profile  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402
from ov_autoplace.devices.timing import random_inputs  # noqa: E402
from tests.synthetic_graphs import long_chain  # noqa: E402


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _stat(values) -> str:
    v = np.asarray(values)
    return f"{np.median(v):6.2f} s [{v.min():.2f}-{v.max():.2f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet50", "inception_v3", "bert_base", "large"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="also time the full profiler (slow)")
    args = parser.parse_args(argv)
    testbed = make_testbed()
    print(f"testbed {testbed.hetero}; load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())} on "
          f"{os.cpu_count()} cores")
    for name in args.models:
        model = long_chain(2500) if name == "large" else zoo.load(name, testbed.core)
        times: dict[str, list[float]] = {"quick": [], "plain compile": [], "7 inferences": [], "full": []}
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as folder:
                times["quick"].append(_timed(lambda: quick_model_profile(model, testbed.core, testbed.devices,
                                                                         store=ProfileStore(folder))))
            compiled = {}
            times["plain compile"].append(_timed(lambda: compiled.setdefault("m", testbed.core.compile_model(model,
                                                                                                           "CPU"))))
            request, inputs = compiled["m"].create_infer_request(), random_inputs(compiled["m"])
            times["7 inferences"].append(_timed(lambda: [request.infer(inputs) for _ in range(7)]))
            if args.full:
                from ov_autoplace.measuring.profiler import measure_model_profile

                with tempfile.TemporaryDirectory() as folder:
                    times["full"].append(_timed(lambda: measure_model_profile(model, testbed.core, testbed.devices,
                                                                              store=ProfileStore(folder))))
        nodes = len(model.get_ordered_ops())
        line = f"{name:<13} {nodes:6d} nodes  quick profile {_stat(times['quick'])}  plain compile on CPU " \
               f"{_stat(times['plain compile'])}  7 plain inferences {_stat(times['7 inferences'])}"
        if times["full"]:
            line += f"  full profiler {_stat(times['full'])}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
