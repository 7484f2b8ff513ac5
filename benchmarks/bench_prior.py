"""How good is the prior (placing without a profile)? Its error on this CPU, and its placements on the calibrated platforms.

    python benchmarks/bench_prior.py [--parts A,B] [--models ...] [--platforms paper,laptop] [--json OUT.json]

Part A - the prior's error, MEASURED on this machine's CPU: a quick profile
(one compile, a few PERF_COUNT runs) gives each op's measured time; the prior
gives its predicted time from the graph and the CPU's reported properties.
A two-way split moves a topological prefix of the graph to the other device,
so what matters is how well the prior knows the *share* of the latency such a
prefix carries. For prefixes holding 5 %, 10 %, ..., 95 % of the compute ops:
``error = max(|pred/meas - 1|)`` over the prefix and the rest. Its 90th
percentile over all models is what ``PRIOR_SPLIT_MARGIN`` must cover.

Part B - the prior's placements on the calibrated SIMULATED platforms of the
suite (``paper``, ``laptop``; ``--platforms`` adds the derived ones). The
"true" costs are the platform's batch-1 device models fitted to published
OpenVINO latencies (``data/fitted_terms.json``). The prior sees what those
devices would report (kind, integrated/discrete, ``FULL_DEVICE_NAME``,
``DEVICE_GOPS`` = the spec sheet's best rate per precision, GPU memory,
precision) and builds its own cost model exactly as at run time
(``prior_cost_model``), in two variants: ``prior`` (the shipped prior: it
recognizes the platform's devices by name, models them by their own fits and
uses ``PRIOR_SPLIT_MARGIN_RECOGNIZED``) and ``prior-LOO`` (leave the platform
out: its devices are modelled on the *other* platform's fits, as for hardware
nobody calibrated, with ``PRIOR_SPLIT_MARGIN``).
Its decision is ``placement_sources.prior_outcome`` (the policy on the prior
plus the margin rule, legalized) - the function the default path runs -, and
is scored under the true costs against the best single device, the exact
optimum (MILP) and the profiled policy (HSDAG one pass on the true costs, as
in the headroom table). Target (issue #13): the prior <= 1.05x the optimum
wherever the profiled policy is, and never slower than the best single device.
All Part B numbers are simulated.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ov_autoplace import zoo  # noqa: E402
from ov_autoplace.api import DEFAULT_MAX_SUBMODELS  # noqa: E402
from ov_autoplace.bench.headroom import headroom_row  # noqa: E402
from ov_autoplace.costmodel.prior import PRIOR_SPLIT_MARGIN, DeviceFacts, prior_cost_model  # noqa: E402
from ov_autoplace.costmodel.quick_profile import quick_model_profile  # noqa: E402
from ov_autoplace.costmodel.sim_costs import simulated_support  # noqa: E402
from ov_autoplace.costmodel.simulator import Simulator  # noqa: E402
from ov_autoplace.costmodel.suite import load_suite  # noqa: E402
from ov_autoplace.device_facts import read_device_facts  # noqa: E402
from ov_autoplace.first_start import POLICY_FILE  # noqa: E402
from ov_autoplace.graph import NodeRole, extract_graph  # noqa: E402
from ov_autoplace.placement_sources import _policy_proposal, prior_outcome  # noqa: E402
from ov_autoplace.prepare import prepare_model  # noqa: E402
from ov_autoplace.testbed import make_testbed  # noqa: E402


def share_errors(predicted: np.ndarray, measured: np.ndarray) -> list[float]:
    """Relative error of the latency share of each topological prefix (5 % .. 95 % of the ops) and its rest."""
    out = []
    n = len(predicted)
    p_total, m_total = predicted.sum(), measured.sum()
    for frac in np.arange(0.05, 0.96, 0.05):
        k = max(1, int(frac * n))
        p_share, m_share = predicted[:k].sum() / p_total, measured[:k].sum() / m_total
        if m_share <= 0 or m_share >= 1:
            continue
        out.append(max(abs(p_share / m_share - 1), abs((1 - p_share) / (1 - m_share) - 1)))
    return out


#: FULL_DEVICE_NAME of the calibrated devices as OpenVINO reports them (the CPU plugin reads the CPU's model
#: name; the GPU plugin appends "(iGPU)"/"(dGPU)"; every Core Ultra NPU is "Intel(R) AI Boost").
REPORTED_NAMES = {"paper/CPU": "12th Gen Intel(R) Core(TM) i9-12900K",
                  "paper/GPU": "Intel(R) Data Center GPU Flex 170 (dGPU)",
                  "laptop/CPU": "Intel(R) Core(TM) Ultra 7 165H",
                  "laptop/GPU": "Intel(R) Arc(TM) Graphics (iGPU)",
                  "laptop/NPU": "Intel(R) AI Boost"}


def platform_facts(platform) -> list[DeviceFacts]:
    """What each simulated device would report to the prior: the properties ``read_device_facts`` reads."""
    facts = []
    for device in platform.devices:
        spec = device.spec
        rates = {**spec.peak_flops, **spec.matrix_peak_flops}  # DEVICE_GOPS: the best rate per precision
        gops = tuple(sorted((p, r / 1e9) for p, r in rates.items())) if spec.kind != "cpu" else ()
        facts.append(DeviceFacts(spec.name, f"openvino_intel_{spec.kind}_plugin",
                                 "Type.INTEGRATED" if spec.shares_host_memory else "Type.DISCRETE", None,
                                 REPORTED_NAMES.get(device.calibration_key or "", spec.product),
                                 (), gops, spec.memory_bytes if spec.kind == "gpu" else None, platform.precision, None))
    return facts


def prior_row(platform, model: str, graph, time_limit: float) -> dict:
    """Best single, optimum, profiled policy and the prior's two variants on one platform (simulated ms)."""
    row = headroom_row(platform, model, graph, milp_seconds=time_limit,
                       methods=("Optimum (MILP)", "HSDAG (pretrained, one pass)"))
    truth = platform.cost_model(graph)
    support = simulated_support(truth, graph)
    simulator = Simulator(truth, graph)
    devices = platform.device_names
    cpu = next((d.spec for d in platform.devices if d.spec.kind == "cpu"), None)
    facts = platform_facts(platform)
    for variant, exclude in (("prior", ()), ("prior_loo", (platform.name,))):
        prior = prior_cost_model(graph, facts, cpu_spec=cpu, exclude_platforms=exclude)
        single, placement, reason = prior_outcome(
            prior.cost, graph, devices, lambda: support, lambda c: _policy_proposal(c, graph, devices, POLICY_FILE),
            max_submodels=DEFAULT_MAX_SUBMODELS, margin=prior.margin)
        row[f"{variant}_margin"] = prior.margin
        if placement is None:
            ms, what = row["single_device_ms"][single], f"{single} alone"
        else:
            assignment = np.array([devices.index(placement.assignment[n]) for n in graph.names])
            ms = float(simulator(assignment))
            ms = ms if np.isfinite(ms) and bool(simulator.memory_ok(assignment)) else None
            what = f"split {placement.counts_per_device()}"
        row[f"{variant}_ms"], row[f"{variant}_choice"] = ms, what
    return row


def check_prior_targets(rows: list[dict]) -> list[str]:
    lines = []
    for r in rows:
        opt, best, profiled = r.get("optimum_ms"), r.get("best_single_device_ms"), r.get("hsdag_ms")
        for variant in ("prior", "prior_loo"):
            ms = r.get(f"{variant}_ms")
            if ms is None or opt is None:
                lines.append(f"{r['platform']}/{r['model']} {variant}: NO FEASIBLE PLACEMENT")
                continue
            if profiled is not None and profiled <= 1.05 * opt and ms > 1.05 * opt:
                lines.append(f"{r['platform']}/{r['model']} {variant}: {ms / opt:.3f}x the optimum where the profiled "
                             f"policy is {profiled / opt:.3f}x (MISSED)")
            if best is not None and ms > best * (1 + 1e-9):
                lines.append(f"{r['platform']}/{r['model']} {variant}: {ms / best:.3f}x the best single device "
                             "(SLOWER)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="A,B", help="A (measured, this CPU), B (simulated platforms) or both")
    parser.add_argument("--models", nargs="+", default=None,
                        help="default: the zoo models for A, every suite model for B")
    parser.add_argument("--platforms", default="paper,laptop", help="suite platforms for part B")
    parser.add_argument("--time-limit", type=float, default=20.0, help="MILP time limit (part B)")
    parser.add_argument("--json", help="write part B's rows here")
    args = parser.parse_args(argv)
    parts = {p.strip().upper() for p in args.parts.split(",")}
    if "A" in parts:
        part_a(args.models or ["resnet50", "inception_v3", "bert_base"])
    if "B" in parts:
        rows = part_b(args.models or list(zoo.ALL_MODELS), args.platforms.split(","), args.time_limit)
        if args.json:
            Path(args.json).write_text(json.dumps({"simulated": True, "rows": rows}, indent=1, default=str))
    return 0


def part_a(models: list[str]) -> None:
    testbed = make_testbed()
    errors: dict[str, list[float]] = {}
    for name in models:
        model = zoo.load(name, testbed.core)
        graph = extract_graph(prepare_model(model))
        measured = quick_model_profile(model, testbed.core, ("CPU",)).cost_model
        prior = prior_cost_model(graph, [read_device_facts(testbed.core, "CPU")]).cost
        compute = (np.asarray(graph.role) == NodeRole.COMPUTE) & np.isfinite(prior.compute_ms[:, 0])
        errors[name] = share_errors(prior.compute_ms[compute, 0], measured.compute_ms[compute, 0])
        e = np.asarray(errors[name])
        print(f"A {name:<13} prior {prior.compute_ms[compute, 0].sum():8.2f} ms vs measured "
              f"{measured.compute_ms[compute, 0].sum():8.2f} ms (CPU, total); prefix share error median "
              f"{np.median(e):.3f}, p90 {np.quantile(e, 0.9):.3f}, max {e.max():.3f}", flush=True)
    every = np.concatenate([np.asarray(v) for v in errors.values()])
    p90 = float(np.quantile(every, 0.9))
    print(f"\nA: prefix share error over {len(every)} prefixes of {len(errors)} models (measured, CPU): median "
          f"{np.median(every):.3f}, p90 {p90:.3f}, max {every.max():.3f}; PRIOR_SPLIT_MARGIN = {PRIOR_SPLIT_MARGIN}"
          f" ({'covers' if PRIOR_SPLIT_MARGIN >= p90 else 'does NOT cover'} the p90)\n")


def _fmt(ms, ref) -> str:
    return "—" if ms is None else f"{ms:.3f} ({ms / ref:.3f}x)" if ref else f"{ms:.3f}"


def part_b(models: list[str], platforms: list[str], time_limit: float) -> list[dict]:
    suite = load_suite()
    rows = []
    for platform_name in platforms:
        for name in models:
            graph = extract_graph(prepare_model(zoo.load(name)))
            row = prior_row(suite[platform_name], name, graph, time_limit)
            rows.append(row)
            opt = row.get("optimum_ms")
            print(f"B {platform_name:<7} {name:<20} best single {_fmt(row['best_single_device_ms'], None):>8} "
                  f"({row['best_single_device']})  optimum {_fmt(opt, None)}  profiled policy "
                  f"{_fmt(row.get('hsdag_ms'), opt)}  prior {_fmt(row['prior_ms'], opt)} [{row['prior_choice']}]  "
                  f"prior-LOO {_fmt(row['prior_loo_ms'], opt)} [{row['prior_loo_choice']}]  [ms, simulated]",
                  flush=True)
    print("\n| platform | model | best single device | optimum | profiled policy (HSDAG one pass) | prior | prior choice "
          "| prior, leave-platform-out | its choice |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        opt = r.get("optimum_ms")
        print(f"| {r['platform']} | {r['model']} | {_fmt(r['best_single_device_ms'], None)} "
              f"({r['best_single_device']}) | {_fmt(opt, None)} | {_fmt(r.get('hsdag_ms'), opt)} | "
              f"{_fmt(r['prior_ms'], opt)} | {r['prior_choice']} | {_fmt(r['prior_loo_ms'], opt)} | "
              f"{r['prior_loo_choice']} |")
    misses = check_prior_targets(rows)
    reached = sum(1 for r in rows if r.get("hsdag_ms") is not None and r.get("optimum_ms")
                  and r["hsdag_ms"] <= 1.05 * r["optimum_ms"])
    per_variant = {v: len({line.split(" ")[0] for line in misses if line.split(" ")[1].rstrip(":") == v})
                   for v in ("prior", "prior_loo")}
    print(f"\nB targets (simulated): {len(rows)} rows, the profiled policy <= 1.05x the optimum in {reached}; rows "
          f"the prior misses (above 1.05x where the profiled policy is not, or slower than the best single "
          f"device): prior {per_variant['prior']}, prior-LOO {per_variant['prior_loo']}")
    for line in misses:
        print("  " + line)
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
