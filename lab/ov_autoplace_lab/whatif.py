"""``ov-autoplace whatif``: which devices of a (simulated) platform pay for a model?

    ov-autoplace whatif -m bert_base --platform laptop [--finetune-budget 50] [--json out.json]

For every non-empty subset of the platform's devices it simulates the model's
latency under the exact optimum (MILP), the shipped HSDAG policy (one pass,
with and without the cost-model local search, optionally fine-tuned), HEFT and
HETERO's own affinity, and ranks the subsets by the best placement known from
any of them. A subset's optimum is "proven" only when the MILP finished optimal
with its objective within 0.5 % of the simulator's latency
(``costmodel.optimum.proven_optimal``); otherwise the table says it is the best
placement known and whose (a MILP stopped at its time limit says so). The
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

from ov_autoplace.errors import ModelNotFoundError


def load_model_graph(model: str):
    """The prepared graph of a model file or zoo model name."""
    import openvino as ov

    from ov_autoplace_lab import models as zoo
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.model.prepare import prepare_model

    path = Path(model)
    if path.exists():
        return extract_graph(prepare_model(ov.Core().read_model(path)))
    if model in zoo.ALL_MODELS:
        return extract_graph(prepare_model(zoo.load(model)))
    raise ModelNotFoundError(f"no model file {model!r}, and it is not a zoo model name; pass an IR/ONNX path "
                             f"or one of {', '.join(zoo.ALL_MODELS)}")


#: The methods each multi-device subset runs (``bench.headroom`` names); the fine-tuned policy only on request.
WHATIF_METHODS = ("Optimum (MILP)", "HSDAG (pretrained, one pass)", "HSDAG (pretrained, one pass) + local search",
                  "HEFT", "OpenVINO HETERO auto")
#: Their JSON keys, in column order.
METHOD_COLUMNS = ("milp_ms", "hsdag_ms", "hsdag_refined_ms", "heft_ms", "openvino_hetero_auto_ms",
                  "hsdag_finetuned_ms")
ROW_KEYS = ("optimum_ms", "optimum_exact", "optimum_source", "optimum_proof", "optimum_devices", "notes",
            *METHOD_COLUMNS)
_SOURCE_TITLES = {"milp_ms": "MILP", "hsdag_ms": "HSDAG", "hsdag_refined_ms": "HSDAG+local search", "heft_ms": "HEFT",
                  "openvino_hetero_auto_ms": "HETERO auto", "hsdag_finetuned_ms": "HSDAG fine-tuned",
                  "best single device": "one device"}


def proof_cell(row: dict) -> str:
    """'proven', or why not: the MILP's time limit or objective gap, or whose placement is the best known."""
    if row.get("optimum_ms") is None:
        return ""
    if row.get("optimum_exact"):
        return "proven"
    source = row.get("optimum_source")
    if source != "milp_ms":
        return f"best known: {_SOURCE_TITLES.get(source, source)}"
    proof = row.get("optimum_proof") or ""
    return "MILP gap to simulator" if "differs from the simulator" in proof else "MILP time limit"


def rank_subsets(platform, graph, *, finetune_budget: int = 0, seed: int = 0, milp_seconds: float = 20.0) -> list[dict]:
    """One row per non-empty device subset, fastest best-known placement first (infeasible subsets last)."""
    from ov_autoplace_lab.paper_bench.headroom import headroom_row, single_device_latencies

    rows = []
    names = platform.device_names
    methods = WHATIF_METHODS + (("HSDAG (pretrained + fine-tune)",) if finetune_budget > 0 else ())
    for size in range(1, len(names) + 1):
        for subset in itertools.combinations(names, size):
            sub = platform.subset(subset)
            if size == 1:  # one device: its only placement is the optimum
                ms = single_device_latencies(sub, graph)[subset[0]]
                row = {"devices": list(subset), "optimum_ms": ms, "optimum_exact": ms is not None,
                       "optimum_source": "single device", "optimum_proof": "one device: the only placement",
                       "optimum_devices": list(subset) if ms is not None else [], "notes": [],
                       **{key: ms for key in METHOD_COLUMNS}}
            else:
                r = headroom_row(sub, "", graph, finetune_budget=finetune_budget, seed=seed,
                                 milp_seconds=milp_seconds, methods=methods)
                row = {"devices": list(subset), **{k: r.get(k) for k in ROW_KEYS}}
            rows.append(row)
    rows.sort(key=lambda r: math.inf if r["optimum_ms"] is None else r["optimum_ms"])
    return rows


def _ms(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def format_table(platform, model: str, rows: list[dict], finetune_budget: int) -> str:
    best = next((r["optimum_ms"] for r in rows if r["optimum_ms"] is not None), None)
    lines = [f"What-if for {model} on the simulated platform '{platform.name}' ({platform.title}); "
             f"all latencies SIMULATED (batch-1 device model, {platform.kind}), precision {platform.precision}",
             f"{'rank':>4}  {'devices':<14} {'best ms':>11} {'vs best':>8} {'optimum':<24} {'uses':<12} "
             f"{'MILP ms':>9} {'HSDAG ms':>9} {'+local':>9}" + (f" {'fine-tuned':>10}" if finetune_budget > 0 else "")]
    for i, r in enumerate(rows, start=1):
        opt = r["optimum_ms"]
        lines.append(f"{i:>4}  {'+'.join(r['devices']):<14} "
                     f"{'cannot run' if opt is None else f'{opt:.3f}':>11} "
                     f"{'' if opt is None or best is None else f'{opt / best:.2f}x':>8} "
                     f"{proof_cell(r):<24} {'+'.join(r.get('optimum_devices') or []):<12} "
                     f"{_ms(r.get('milp_ms')):>9} {_ms(r.get('hsdag_ms')):>9} {_ms(r.get('hsdag_refined_ms')):>9}"
                     + ("" if finetune_budget <= 0 else f" {_ms(r.get('hsdag_finetuned_ms')):>10}"))
    lines.append("'best ms': the fastest placement any method found (MILP, HSDAG with and without the local search, "
                 "HEFT, HETERO's own affinity); 'uses': the devices it places ops on (a subset whose best placement "
                 "leaves a device idle gains nothing from it).")
    unproven = [r for r in rows if r.get("optimum_ms") is not None and not r.get("optimum_exact")]
    if unproven:
        lines.append(f"NOT PROVEN OPTIMAL in {len(unproven)} subset(s) ({', '.join('+'.join(r['devices']) for r in unproven)}): "
                     "the MILP stopped at its time limit or its objective differs from the simulator by more than "
                     "0.5 %; a faster placement may exist (raise --milp-seconds).")
    else:
        lines.append("Every subset's optimum is proven (MILP optimal, objective within 0.5 % of the simulator).")
    return "\n".join(lines)


def named_platform(name: str):
    """One named platform of the shipped suite, or a clear error listing the names."""
    from ov_autoplace.costmodel.suite import load_suite
    from ov_autoplace.errors import CalibrationDataError

    suite = load_suite()
    if name not in suite:
        raise CalibrationDataError(f"unknown platform {name!r}; the suite has {sorted(suite)}")
    return suite[name]


def cmd_whatif(args: argparse.Namespace) -> int:
    platform = named_platform(args.platform)
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
                            description="For every subset of a simulated platform's devices, the model's best known "
                                        "placement (MILP, HSDAG, local search, HEFT; all simulated), fastest first, "
                                        "and whether its optimum is proven.")
    parser.add_argument("-m", "--model", required=True, help="model file, or a zoo model name (e.g. bert_base)")
    parser.add_argument("--platform", default="laptop",
                        help="suite platform: paper, laptop, npu_cpu, small_memory, cpu_igpu (default: laptop)")
    parser.add_argument("--finetune-budget", type=int, default=0,
                        help="also fine-tune the policy with this many simulated placements (needs torch)")
    parser.add_argument("--milp-seconds", type=float, default=20.0, help="time limit of the exact optimum")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the ranking as JSON")
    parser.set_defaults(func=cmd_whatif)


__all__ = ["METHOD_COLUMNS", "WHATIF_METHODS", "add_whatif_parser", "cmd_whatif", "format_table", "load_model_graph",
           "named_platform", "proof_cell", "rank_subsets"]
