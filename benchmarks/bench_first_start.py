"""First and warm start of an app: ov_autoplace.compile_model vs plain core.compile_model, a new process per start.

    python benchmarks/bench_first_start.py [--models resnet50 inception_v3 bert_base large] [--starts 5]
                                           [--devices testbed|distinct] [--scenarios first warm] [--bytecode]

Each start is a fresh Python process, the way an app starts: it imports
openvino (and ov_autoplace on our side), builds the core with the devices,
reads the IR and compiles. The two sides alternate start by start.

* ``first``: a model ov_autoplace has never seen (a new, empty
  ``OV_AUTOPLACE_CACHE_DIR`` per start, profiles included), no ``CACHE_DIR``:
  ``ov_autoplace.compile_model(m, "HETERO:<devices>", core=core)`` against
  ``core.compile_model(m, "CPU")``.
* ``warm``: both sides with ``CACHE_DIR`` set on the core (each side its own,
  filled by one untimed start), ov_autoplace's placement cache warm.

``--devices testbed``: CPU + CPUF (identical f32 devices on a CPU without
bf16: the fast path applies). ``--devices distinct``: the CPU plugin on all
cores + again on one thread (CPUS, listed first) - devices the prior can tell
apart, so the graph, the prior and the placement cache are on the path.

Printed per model and scenario: the median [min-max] of the compile call
(what the call costs the app) and of the whole process (interpreter start,
imports, core setup, read, compile), and the ratios of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

#: One start. argv: side (plain|ours), model xml, devices (testbed|distinct), blob dir or "".
START = r"""
import sys, time
t0 = time.perf_counter()
side, xml, devices, blob_dir = sys.argv[1:5]
import openvino as ov
if side == "ours":
    import ov_autoplace
t_import = time.perf_counter()
core = ov.Core()
if devices == "testbed":
    from ov_autoplace.devices.testbed import make_testbed  # the app's device setup, both sides
    tb = make_testbed(core=core)
    hetero = tb.hetero
else:
    from ov_autoplace.devices.device_strings import register_virtual_device
    register_virtual_device(core, "CPUS", base_device="CPU", properties={"INFERENCE_NUM_THREADS": 1})
    hetero = "HETERO:CPUS,CPU"
if blob_dir:
    core.set_property({"CACHE_DIR": blob_dir})
model = core.read_model(xml)
t1 = time.perf_counter()
if side == "plain":
    compiled = core.compile_model(model, "CPU")
else:
    compiled = ov_autoplace.compile_model(model, hetero, core=core)
t2 = time.perf_counter()
print("RESULT", t2 - t1, t2 - t0, t_import - t0)
"""


def _large_ir(folder: Path, blocks: int) -> Path:
    sys.path.insert(0, str(REPO))
    import openvino as ov

    from tests.synthetic_graphs import long_chain

    path = folder / f"long_chain_{blocks}.xml"
    ov.save_model(long_chain(blocks), str(path), compress_to_fp16=False)
    return path


#: ``--bytecode``: the folder both sides' processes keep their .pyc in (PYTHONPYCACHEPREFIX), as an installed wheel has.
PYCACHE: list[str] = []


def _start(side: str, xml: Path, devices: str, blob_dir: str, cache_root: Path) -> tuple[float, float, float]:
    env = dict(os.environ, OV_AUTOPLACE_CACHE_DIR=str(cache_root), PYTHONPATH=str(REPO))
    if PYCACHE:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = PYCACHE[0]
    env.pop("OV_AUTOPLACE_PROFILE_DIR", None)
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", START, side, str(xml), devices, blob_dir], env=env,
                         capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    if run.returncode != 0:
        raise RuntimeError(f"{side} start failed:\n{run.stderr[-3000:]}")
    line = next(l for l in run.stdout.splitlines() if l.startswith("RESULT"))
    call, _, _ = (float(x) for x in line.split()[1:])
    if "falling back" in run.stderr:
        raise RuntimeError(f"ov_autoplace fell back:\n{run.stderr[-2000:]}")
    return call, wall, 0.0


def _bytecode_note() -> str:
    """Whether ov_autoplace's modules start from bytecode: the imports made inside the call cost ~3x more without.

    An installed wheel has its .pyc; an editable install run with PYTHONDONTWRITEBYTECODE set (this sandbox)
    compiles every module it imports from source, in every new process.
    """
    import importlib.util

    sources = sorted((REPO / "ov_autoplace").rglob("*.py"))
    cached = sum(Path(importlib.util.cache_from_source(str(p))).exists() for p in sources)
    writing = "off (PYTHONDONTWRITEBYTECODE)" if sys.flags.dont_write_bytecode else "on"
    return f"bytecode: {cached}/{len(sources)} ov_autoplace modules have a .pyc, writing {writing}"


def _stat(values: list[float]) -> str:
    v = np.asarray(values)
    return f"{np.median(v):7.3f} s [{v.min():.3f}-{v.max():.3f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet50", "inception_v3", "bert_base", "large"])
    parser.add_argument("--starts", type=int, default=5, help="starts per side and scenario (alternating)")
    parser.add_argument("--devices", choices=["testbed", "distinct"], default="testbed")
    parser.add_argument("--scenarios", nargs="+", choices=["first", "warm"], default=["first", "warm"])
    parser.add_argument("--blocks", type=int, default=2500, help="blocks of the large graph (8 nodes each)")
    parser.add_argument("--json", type=Path, help="write every sample here")
    parser.add_argument("--bytecode", action="store_true",
                        help="start from .pyc files, as an installed wheel does (PYTHONPYCACHEPREFIX in the work "
                             "folder, written by one untimed start per side); default: this environment as it is")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from ov_autoplace_lab import models as zoo

    work = Path(tempfile.mkdtemp(prefix="bench_first_start_"))
    samples: dict = {}
    if args.bytecode:
        PYCACHE.append(str(work / "pycache"))
    print(f"devices: {args.devices}; {args.starts} starts per side, alternating; load average "
          f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores; "
          f"{'bytecode: every start from .pyc (--bytecode)' if args.bytecode else _bytecode_note()}")
    rows = []
    try:
        for name in args.models:
            xml = _large_ir(work, args.blocks) if name == "large" else zoo.build(name)  # built once, then cached
            if args.bytecode and name == args.models[0]:  # writes the .pyc of every module either side imports
                for side in ("plain", "ours"):
                    _start(side, xml, args.devices, "", work / f"pycache_fill_{side}")
            for scenario in args.scenarios:
                blobs = {side: (str(work / f"{name}_{side}_blobs") if scenario == "warm" else "")
                         for side in ("plain", "ours")}
                warm_root = work / f"{name}_warm_root"
                if scenario == "warm":  # one untimed start each fills the blob caches and the placement cache
                    for side in ("plain", "ours"):
                        _start(side, xml, args.devices, blobs[side], warm_root)
                got = {"plain": ([], []), "ours": ([], [])}
                for k in range(args.starts):
                    for side in (("plain", "ours") if k % 2 == 0 else ("ours", "plain")):
                        root = warm_root if scenario == "warm" else work / f"fresh_{name}_{k}_{side}"
                        call, wall, _ = _start(side, xml, args.devices, blobs[side], root)
                        got[side][0].append(call)
                        got[side][1].append(wall)
                        if scenario == "first":
                            shutil.rmtree(root, ignore_errors=True)
                samples[f"{name}/{scenario}"] = {s: {"call": c, "process": w} for s, (c, w) in got.items()}
                call_ratio = np.median(got["ours"][0]) / np.median(got["plain"][0])
                wall_ratio = np.median(got["ours"][1]) / np.median(got["plain"][1])
                rows.append((name, scenario, got, call_ratio, wall_ratio))
                print(f"{name:<13} {scenario:<5} call: plain {_stat(got['plain'][0])}  ours {_stat(got['ours'][0])}"
                      f"  ratio {call_ratio:.3f} | process: plain {_stat(got['plain'][1])}  ours "
                      f"{_stat(got['ours'][1])}  ratio {wall_ratio:.3f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n| model | start | plain call (median [min-max]) | ov_autoplace call | ratio | process ratio |")
    print("|---|---|---|---|---|---|")
    for name, scenario, got, call_ratio, wall_ratio in rows:
        print(f"| {name} | {scenario} | {_stat(got['plain'][0])} | {_stat(got['ours'][0])} | {call_ratio:.3f} | "
              f"{wall_ratio:.3f} |")
    if args.json:
        args.json.write_text(json.dumps(samples, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
