"""Does a decoder compile that the verification timed run slower afterwards than a fresh compile of the same call?

    python benchmarks/bench_timed_compile.py [--family llama] [--size small] [--replicates 4] [--rounds 31]
                                             [--conditions quiet,busy] [--paths heft] [--dir /tmp/llm]
                                             [--write docs/bench/timed-compile.md]

Run in the LLM venv (``. .venv-llm/bin/activate``, docs/llm.md). A verification hands ``compile_decided`` the
compile it timed, to save a compile (``verification.KeptCompile``); for a stateful decoder it no longer does
(docs/default-path.md, "What a verified decision returns"), and this benchmark is why. Per condition (``busy``: a
process this benchmark starts spins on one core meanwhile, ``bench_llm.core_busy``), on the testbed's two devices
that differ (``tests/testbeds.distinct_devices``), with an optimum-intel export of ``--family`` at ``--size``:

* ``--replicates`` pairs of compiles of the plain call as ``compile_decided`` compiles it (``compile_plain_call``:
  the caller's HETERO string, the model's runtime options), made alternately; in each pair one is left fresh and
  the other is first timed by the verification's own stopwatch (``verification.time_rounds`` on the default LLM
  objective, a 128-token prompt and 128 new tokens, its default rounds), as a verification times its contenders;
* each ``--paths`` strategy's ``ov_autoplace.compile_model`` result at HEAD, as an app gets it (``heft`` runs the
  profiler and a verification in the call);
* all timed as ``bench_llm.py`` times contenders: ``--rounds`` paired rounds in a rotated order, three infer requests
  each taken in turn, a 128-token prompt and 32 new tokens per round; per token, each compile's median per-round
  ratio to the median of the fresh compiles, with a 95 % bootstrap interval of that median.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ov_autoplace  # noqa: E402
from ov_autoplace.compile.placed_compile import compile_plain_call  # noqa: E402
from ov_autoplace.decision.verification import time_rounds  # noqa: E402
from ov_autoplace.model.generation import Generation  # noqa: E402
from tests.llm_models import SIZES, export_decoder  # noqa: E402
from tests.testbeds import distinct_devices  # noqa: E402
from bench_llm import _median_interval, _ratio, core_busy, load_average, time_contenders  # noqa: E402
from _common import cpu_description  # noqa: E402

PROMPT, NEW = 128, 32
#: What a verification of a decoder times by default (the LLM objective: docs/llm.md).
VERIFIED = Generation(128, 128)


def make_contenders(core, devices, model, replicates: int, paths: list[str]) -> dict:
    """label -> (compiled,): the fresh and timed compile pairs (made alternately) and each path's result."""
    hetero = "HETERO:" + ",".join(devices)
    made = {}
    for k in range(replicates):
        for kind in (("fresh", "timed") if k % 2 == 0 else ("timed", "fresh")):
            compiled = compile_plain_call(core, model, hetero, devices, {})
            if kind == "timed":
                time_rounds({"plain": compiled}, (), generation=VERIFIED)
            made[f"{kind} {k + 1}"] = (compiled,)
    for path in paths:
        started = time.perf_counter()
        made[f"{path} path"] = (ov_autoplace.compile_model(model, hetero, core=core, cache_dir=tempfile.mkdtemp(),
                                                           generation=VERIFIED, strategy=path),)
        print(f"  {path} path placed in {time.perf_counter() - started:.1f} s", flush=True)
    return made


def section(times: dict, replicates: int) -> tuple[list[str], dict]:
    """The table's rows and the summary numbers, against the per-round median of the fresh compiles."""
    reference = np.median(np.stack([times[f"fresh {k + 1}"][PROMPT] for k in range(replicates)]), axis=0)
    rows, ratios = [], {}
    for label, by in times.items():
        ratio = _ratio(by[PROMPT], reference, 1)[0]
        lo, hi = _median_interval(by[PROMPT], reference, 1)
        ratios[label] = ratio
        rows.append(f"| {label} | {np.median(by[PROMPT][:, 1]):.3f} | {ratio:.3f} | {lo:.3f}-{hi:.3f} |")
    fresh = [ratios[f"fresh {k + 1}"] for k in range(replicates)]
    timed = [ratios[f"timed {k + 1}"] for k in range(replicates)]
    summary = {"fresh": fresh, "timed": timed, "timed_over_fresh": float(np.mean(timed) / np.mean(fresh)),
               "timed_slower_in_pair": sum(t > f for t, f in zip(timed, fresh))}
    return rows, summary


def run_condition(core, devices, model, condition: str, args) -> str:
    before = load_average()
    with core_busy(condition == "busy", 3600.0):
        started = time.perf_counter()
        made = make_contenders(core, devices, model, args.replicates, args.paths)
        vocabulary = model.output("logits").get_partial_shape()[-1].get_length()
        times = time_contenders(made, [PROMPT], NEW, args.rounds, vocabulary, requests=3)
    rows, summary = section(times, args.replicates)
    lines = [f"### {args.family} ({args.size}), {condition}: `HETERO:{','.join(devices)}`, measured "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             f"{cpu_description()}; load average before {before}, after {load_average()}"
             f"{'; plus the one-core hog this benchmark started' if condition == 'busy' else ''}. "
             f"{args.rounds} paired rounds, {(time.perf_counter() - started) / 60:.1f} min.", "",
             "| compile | per token ms | / fresh (median per-round ratio) | its 95 % interval |",
             "|---|---:|---:|---:|", *rows, "",
             f"Timed compiles against fresh ones, per token: mean ratio {summary['timed_over_fresh']:.3f}; the timed "
             f"one slower in {summary['timed_slower_in_pair']} of {args.replicates} pairs (fresh "
             f"{', '.join(f'{x:.3f}' for x in summary['fresh'])}; timed "
             f"{', '.join(f'{x:.3f}' for x in summary['timed'])})."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="llama")
    parser.add_argument("--size", default="small", choices=sorted(SIZES))
    parser.add_argument("--replicates", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--conditions", default="quiet,busy")
    parser.add_argument("--paths", default="heft", type=lambda s: [p for p in s.split(",") if p])
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "ov_autoplace_bench_llm")
    parser.add_argument("--write", type=Path, default=None, help="the page this run writes (all of it)")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    core, devices, _ = distinct_devices()
    model = core.read_model(export_decoder(args.family, args.dir, args.size) / "openvino_model.xml")
    command = "python benchmarks/bench_timed_compile.py " + " ".join(argv if argv is not None else sys.argv[1:])
    sections = []
    for condition in args.conditions.split(","):
        print(f"{args.family} ({args.size}), {condition}:", flush=True)
        sections.append(run_condition(core, devices, model, condition, args))
        print(sections[-1], flush=True)
        if args.write:  # after each condition, so a stopped run keeps what it measured
            args.write.write_text("\n\n".join([
                "# A decoder compile the verification timed, against fresh compiles (measured)",
                "[Back to what a verified decision returns](../default-path.md)",
                f"Made by `{command}`; the script's docstring says what each number is.", *sections]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
