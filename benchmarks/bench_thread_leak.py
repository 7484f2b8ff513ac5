"""Why the testbed gives both devices every core: HETERO splits ignore a CPU device's thread limit.

    python benchmarks/bench_thread_leak.py [--models resnet50,bert_base] [--threads 1]

Builds the old testbed (CPU bf16 on ``--threads`` threads, CPUF f32 on all
cores) and the current one (both on all cores), and times on each: everything
on CPU, everything on CPUF, and a "split" that moves a single Reshape/Transpose
to CPUF (HETERO then compiles 2-3 submodels). "cores busy" is the process CPU
time over wall time while timing: on the old testbed the split keeps every
core busy and runs at the all-core bf16 speed although 99 % of the ops sit on
the 1-thread device, i.e. the thread limit leaks away as soon as there is a
split. Such a "speed-up" says nothing about the placement.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import openvino as ov
from ov_autoplace.devices.timing import measure_latency, random_inputs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ov_autoplace as oa  # noqa: E402
from ov_autoplace_lab import models as zoo
from ov_autoplace.devices.device_strings import register_virtual_device  # noqa: E402
from ov_autoplace.graph.arrays import extract_graph  # noqa: E402
from ov_autoplace.placement.legalizer import legalize, query_support  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace.devices.testbed import usable_cores  # noqa: E402


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def testbed(cpu_threads: int) -> ov.Core:
    core, common = ov.Core(), {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
    core.set_property("CPU", {**common, "INFERENCE_PRECISION_HINT": "bf16", "INFERENCE_NUM_THREADS": cpu_threads})
    register_virtual_device(core, "CPUF", base_device="CPU", properties={
        **common, "INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": usable_cores()})
    return core


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,bert_base")
    parser.add_argument("--threads", type=int, default=1, help="the old testbed's CPU thread count")
    parser.add_argument("--iterations", type=int, default=15)
    args = parser.parse_args(argv)
    devices = ("CPU", "CPUF")
    print(f"OpenVINO {ov.get_version()}, {usable_cores()} usable cores")
    print("| testbed | model | placement | submodels | median ms | cores busy |\n|---|---|---|---|---|---|")
    for label, threads in ((f"CPU x{args.threads} thread, CPUF all cores", args.threads),
                           ("both all cores (current)", usable_cores())):
        core = testbed(threads)
        for name in args.models.split(","):
            model = prepare_model(zoo.load(name))
            graph = extract_graph(model)
            support = query_support(core, model, graph, devices)
            one_op = np.zeros(graph.num_nodes, np.int64)
            one_op[next(i for i, t in enumerate(graph.op_types) if t in ("Reshape", "Transpose"))] = 1
            for what, proposal in (("all CPU", np.zeros(graph.num_nodes, np.int64)),
                                   ("all CPUF", np.ones(graph.num_nodes, np.int64)),
                                   ("one op on CPUF", one_op)):
                placement = legalize(graph, proposal, devices, support, max_submodels=8)
                compiled = oa.compile_placement(model, placement, core=core)
                inputs = random_inputs(compiled)
                measure_latency(compiled, inputs, warmup=3, iterations=1)
                cpu, wall = _cpu_seconds(), time.perf_counter()
                stats = measure_latency(compiled, inputs, warmup=0, iterations=args.iterations)
                busy = (_cpu_seconds() - cpu) / (time.perf_counter() - wall)
                print(f"| {label} | {name} | {what} | {placement.num_submodels} | {stats.median_ms:.1f} | {busy:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
