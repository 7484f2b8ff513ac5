"""``ov-autoplace whatif``: which devices of a (simulated) platform pay for a model?

    ov-autoplace whatif -m bert_base --platform laptop [--finetune-budget 50] [--json out.json]

For every non-empty subset of the platform's devices it simulates the model's
latency under the exact optimum (MILP) and under the shipped HSDAG policy (one
pass, optionally fine-tuned), and ranks the subsets by optimum latency. The
platforms are the suite's (``costmodel/suite.py``: calibrated on published
latencies where data exists); every number printed is simulated. ``-m`` takes
a model file or the name of a zoo model (built on first use; needs the ``zoo``
extra).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path

from .errors import ModelNotFoundError


def load_model_graph(model: str):
    """The prepared graph of a model file or zoo model name."""
    import openvino as ov

    from . import zoo
    from .graph import extract_graph
    from .prepare import prepare_model

    path = Path(model)
    if path.exists():
        return extract_graph(prepare_model(ov.Core().read_model(path)))
    if model in zoo.ALL_MODELS:
        return extract_graph(prepare_model(zoo.load(model)))
    raise ModelNotFoundError(f"no model file {model!r}, and it is not a zoo model name; pass an IR/ONNX path "
                             f"or one of {', '.join(zoo.ALL_MODELS)}")


def rank_subsets(platform, graph, *, finetune_budget: int = 0, seed: int = 0, milp_seconds: float = 20.0) -> list[dict]:
    """One row per non-empty device subset, fastest optimum first (infeasible subsets last)."""
    from .bench.headroom import headroom_row, single_device_latencies

    rows = []
    names = platform.device_names
    methods = ("Optimum (MILP)", "HSDAG (pretrained, one pass)")
    if finetune_budget > 0:
        methods += ("HSDAG (pretrained + fine-tune)",)
    for size in range(1, len(names) + 1):
        for subset in itertools.combinations(names, size):
            sub = platform.subset(subset)
            if size == 1:
                ms = single_device_latencies(sub, graph)[subset[0]]
                row = {"devices": list(subset), "optimum_ms": ms, "hsdag_ms": ms, "hsdag_finetuned_ms": ms,
                       "optimum_devices": list(subset) if ms is not None else [], "notes": []}
            else:
                r = headroom_row(sub, "", graph, finetune_budget=finetune_budget, seed=seed,
                                 milp_seconds=milp_seconds, methods=methods)
                row = {"devices": list(subset), **{k: r.get(k) for k in ("optimum_ms", "hsdag_ms",
                                                                         "hsdag_finetuned_ms", "optimum_devices",
                                                                         "notes")}}
            rows.append(row)
    rows.sort(key=lambda r: math.inf if r["optimum_ms"] is None else r["optimum_ms"])
    return rows


def _ms(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def format_table(platform, model: str, rows: list[dict], finetune_budget: int) -> str:
    best = next((r["optimum_ms"] for r in rows if r["optimum_ms"] is not None), None)
    lines = [f"What-if for {model} on the simulated platform '{platform.name}' ({platform.title}); "
             f"all latencies SIMULATED (batch-1 device model, {platform.kind}), precision {platform.precision}",
             f"{'rank':>4}  {'devices':<14} {'optimum ms':>11} {'vs best':>8} {'uses':<12} {'HSDAG ms':>9}"
             + (f" {'fine-tuned':>10}" if finetune_budget > 0 else "")]
    for i, r in enumerate(rows, start=1):
        opt = r["optimum_ms"]
        lines.append(f"{i:>4}  {'+'.join(r['devices']):<14} "
                     f"{'cannot run' if opt is None else f'{opt:.3f}':>11} "
                     f"{'' if opt is None or best is None else f'{opt / best:.2f}x':>8} "
                     f"{'+'.join(r.get('optimum_devices') or []):<12} "
                     f"{_ms(r['hsdag_ms']):>9}"
                     + ("" if finetune_budget <= 0 else f" {_ms(r.get('hsdag_finetuned_ms')):>10}"))
    lines.append("'uses': the devices the optimum actually places ops on; a subset whose optimum leaves a device "
                 "idle gains nothing from it.")
    return "\n".join(lines)


def cmd_whatif(args: argparse.Namespace) -> int:
    from .costmodel.suite import get_platform

    platform = get_platform(args.platform)
    graph = load_model_graph(args.model)
    rows = rank_subsets(platform, graph, finetune_budget=args.finetune_budget, seed=args.seed,
                        milp_seconds=args.milp_seconds)
    print(platform.describe())
    print(format_table(platform, args.model, rows, args.finetune_budget))
    if args.json:
        Path(args.json).write_text(json.dumps({"platform": platform.name, "model": args.model, "simulated": True,
                                               "subsets": rows}, indent=1) + "\n")
    return 0


def add_whatif_parser(sub) -> None:
    parser = sub.add_parser("whatif", help="rank a simulated platform's device subsets for a model (simulated)",
                            description="For every subset of a simulated platform's devices, the model's optimum "
                                        "and HSDAG latency (all simulated), fastest first.")
    parser.add_argument("-m", "--model", required=True, help="model file, or a zoo model name (e.g. bert_base)")
    parser.add_argument("--platform", default="laptop",
                        help="suite platform: paper, laptop, npu_cpu, small_memory, cpu_igpu (default: laptop)")
    parser.add_argument("--finetune-budget", type=int, default=0,
                        help="also fine-tune the policy with this many simulated placements (needs torch)")
    parser.add_argument("--milp-seconds", type=float, default=20.0, help="time limit of the exact optimum")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the ranking as JSON")
    parser.set_defaults(func=cmd_whatif)


__all__ = ["add_whatif_parser", "cmd_whatif", "format_table", "load_model_graph", "rank_subsets"]
