"""No device given: ``ov_autoplace.compile_model(model)`` against ``core.compile_model(model)`` (AUTO).

    python benchmarks/bench_default_device.py [--models resnet50,bert_base] [--rounds 7] [--iterations 20]

Without a device OpenVINO compiles on AUTO; ov_autoplace places over AUTO's candidates (docs/call-forms.md).
On two cores, the testbed's (``CPU`` bf16 + virtual ``CPUF`` f32: a placement is chosen) and a plain
``ov.Core()`` (this machine's ``CPU`` only: exactly ``core.compile_model(model, "CPU")``), each model is
compiled both ways (wall time of the first compile in the process, ov_autoplace in a fresh cache directory:
a first start) and both compiled models are timed interleaved in paired rounds on the native timer (the order
alternates every round). A row reports both medians over the rounds and the median of the per-round ratios
ov_autoplace / AUTO with its range; the "never slower" rule asks for a median ratio <= 1.02.
The models come from the zoo IR cache (``python -m ov_autoplace_lab.models build NAME``).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import openvino as ov

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ov_autoplace as oa  # noqa: E402
from ov_autoplace_lab import models as zoo
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402
from ov_autoplace.devices.timing import measure_latency, random_inputs  # noqa: E402

from _common import load_average  # noqa: E402

TARGET = 1.02


def _compile_timed(fn):
    started = time.perf_counter()
    compiled = fn()
    return compiled, 1e3 * (time.perf_counter() - started)


def paired_rounds(auto: ov.CompiledModel, ours: ov.CompiledModel, rounds: int, iterations: int):
    """Per round the median latency (ms) of each, timed one after the other, the order alternating."""
    inputs = random_inputs(auto)
    medians = {"auto": [], "ours": []}
    for k in range(rounds):
        order = (("auto", auto), ("ours", ours)) if k % 2 == 0 else (("ours", ours), ("auto", auto))
        for name, compiled in order:
            medians[name].append(measure_latency(compiled, inputs, warmup=2, iterations=iterations).median_ms)
    return np.array(medians["auto"]), np.array(medians["ours"])


def run_case(label: str, core: ov.Core, model: ov.Model, rounds: int, iterations: int) -> dict:
    sources: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: sources.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("ov_autoplace").addHandler(handler)
    logging.getLogger("ov_autoplace").setLevel(logging.INFO)
    try:
        auto, auto_ms = _compile_timed(lambda: core.compile_model(model))
        with tempfile.TemporaryDirectory() as cache_dir:
            ours, ours_ms = _compile_timed(lambda: oa.compile_model(model, core=core, cache_dir=cache_dir))
    finally:
        logging.getLogger("ov_autoplace").removeHandler(handler)
    a, o = paired_rounds(auto, ours, rounds, iterations)
    ratios = o / a
    decided = next((s for s in sources if s.startswith("placement source")), "plain compile (one candidate)")
    return {"case": label, "auto_devices": list(auto.get_property("EXECUTION_DEVICES")),
            "our_devices": list(ours.get_property("EXECUTION_DEVICES")), "auto_compile_ms": auto_ms,
            "our_compile_ms": ours_ms, "auto_ms": float(np.median(a)), "our_ms": float(np.median(o)),
            "ratio": float(np.median(ratios)), "ratio_min": float(ratios.min()), "ratio_max": float(ratios.max()),
            "source": decided.split(";")[0]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,bert_base")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args(argv)
    print(load_average())
    testbed = make_testbed()
    rows = []
    for name in args.models.split(","):
        model = zoo.load(name)
        for label, core in ((f"{name} on testbed {'+'.join(testbed.devices)}", testbed.core),
                            (f"{name} on {','.join(ov.Core().available_devices)} only", ov.Core())):
            row = run_case(label, core, model, args.rounds, args.iterations)
            rows.append(row)
            print(f"{row['case']}: AUTO {row['auto_devices']} {row['auto_ms']:.2f} ms (compile "
                  f"{row['auto_compile_ms']:.0f} ms) | ov_autoplace {row['our_devices']} {row['our_ms']:.2f} ms "
                  f"(compile {row['our_compile_ms']:.0f} ms, {row['source']}) | ratio {row['ratio']:.3f} "
                  f"[{row['ratio_min']:.3f}-{row['ratio_max']:.3f}] over {args.rounds} rounds "
                  f"{'ok' if row['ratio'] <= TARGET else 'SLOWER'}", flush=True)
    print(load_average())
    return 0 if all(r["ratio"] <= TARGET for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
