"""``ov-autoplace bench``: the paper's comparison in one command (Markdown + JSON + PNG)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

DESCRIPTION = """\
Every placement method side by side on Inception-V3, ResNet-50 and BERT-base: each single device,
OpenVINO's HETERO auto / AUTO / PIPELINE_PARALLEL, heavy-ops / HEFT / critical-path heuristics, the exact
optimum (MILP on the cost model), Placeto, the RNN placer, HSDAG in paper mode, pretrained (one pass, what
compile_model does by default) and pretrained + fine-tuned. Settings: 'measured' (the CPU/CPUF testbed, real
compiles, methods timed interleaved with the native timer; outputs checked against the f32 reference) and the
SIMULATED 'paper' (i9-12900K + Flex 170) and 'laptop' (Core Ultra 7 155H: CPU + iGPU + NPU) platforms.
Learned methods share one sample budget (distinct placements evaluated), printed in the table.
Writes results.md, results.json, speedup_<setting>.png and curves_<setting>.png to --output.
Needs the lab's train and pictures extras (torch, matplotlib)."""


def add_bench_parser(sub) -> None:
    """Register ``bench`` on the CLI's subparsers (heavy imports happen only when it runs)."""
    bench = sub.add_parser("bench", help="the paper's Table-2 benchmark: every method on the zoo models",
                           description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    bench.add_argument("--quick", action="store_true",
                       help="smoke test: tiny search budgets (about 5 minutes); checks the table, not the speed")
    bench.add_argument("--models", default=None, help="comma-separated zoo models (default: all three)")
    bench.add_argument("--settings", default=None,
                       help="comma-separated settings of measured, paper, laptop (default: all)")
    bench.add_argument("--strategies", default=None,
                       help="comma-separated registered strategies to run besides the single devices (default: every "
                            "row; `ov-autoplace strategies` lists the names)")
    bench.add_argument("--budget", type=int, default=None,
                       help="distinct measured placements per learned method (default 30; quick 3)")
    bench.add_argument("--sim-budget", type=int, default=None,
                       help="simulated placements per learned method (default 300; quick 20)")
    bench.add_argument("-niter", "--runs", type=int, default=None, help="timed runs per method and model (default 30)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("-o", "--output", type=Path, default=Path("bench_results"), help="output directory")
    bench.set_defaults(func=cmd_bench)


def cmd_bench(args) -> int:
    from ov_autoplace_lab.paper_bench.report import markdown_report, write_report
    from ov_autoplace_lab.paper_bench.results_schema import validate_results
    from ov_autoplace_lab.paper_bench.runner import BenchConfig, run_bench

    overrides = {k: v for k, v in dict(budget=args.budget, sim_budget=args.sim_budget, runs=args.runs,
                                       seed=args.seed).items() if v is not None}
    if args.models:
        overrides["models"] = tuple(m.strip() for m in args.models.split(",") if m.strip())
    if args.strategies:
        overrides["strategies"] = tuple(s.strip() for s in args.strategies.split(",") if s.strip())
    if args.settings:
        overrides["settings"] = tuple(s.strip() for s in args.settings.split(",") if s.strip())
    try:
        config = BenchConfig.quick_config(**overrides) if args.quick else BenchConfig(**overrides)
    except ValueError as exc:
        print(f"ov-autoplace bench: error: {exc}", file=sys.stderr)
        return 2
    command = "ov-autoplace " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["bench"] \
        else "ov-autoplace bench" + (" --quick" if args.quick else "")
    results = run_bench(config, command=command)
    validate_results(results)
    written = write_report(results, args.output)
    print(markdown_report(results))
    print("wrote " + ", ".join(str(p) for p in written.values()))
    return 0


__all__ = ["add_bench_parser", "cmd_bench"]
