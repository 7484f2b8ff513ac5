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

Part B's truth (``lab/ov_autoplace_lab/paper_bench/truth.py``, issue 19): the table above
scores the profiled policy and the optimum with the model they optimised, so
every placement is also scored under models nobody optimised: ``--truth-draws``
(default 20) draws of the fitted model with a per-device, per-op-category
log-normal error (sigma fitted to the held-out calibration points) and the
leave-platform-out model (the devices as the prior models them without their
platform's fit - the model ``prior-LOO`` itself chose by, so for that variant
only the draws are an independent truth). Each row's JSON gains ``truth`` and
``truth_leave_platform_out``; the run prints, per method, the median ratio to
the truth optimum and the share of draws slower than the plain call (HETERO's
own affinity) and than the best single device.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ov_autoplace_lab import models as zoo
from ov_autoplace.api import DEFAULT_MAX_SUBMODELS  # noqa: E402
from ov_autoplace_lab.paper_bench import truth  # noqa: E402
from ov_autoplace_lab.paper_bench.headroom import headroom_row  # noqa: E402
from ov_autoplace_lab.paper_bench.truth import platform_facts  # noqa: E402
from ov_autoplace.costmodel.prior_costs import PRIOR_SPLIT_MARGIN, DeviceFacts, prior_cost_model  # noqa: E402
from ov_autoplace.measuring.quick_profile import quick_model_profile  # noqa: E402
from ov_autoplace.costmodel.sim_costs import simulated_support  # noqa: E402
from ov_autoplace.costmodel.simulator import Simulator  # noqa: E402
from ov_autoplace.costmodel.suite import load_suite  # noqa: E402
from ov_autoplace.devices.facts import read_device_facts  # noqa: E402
from ov_autoplace.decision.first_start import POLICY_FILE  # noqa: E402
from ov_autoplace.graph.arrays import NodeRole, extract_graph  # noqa: E402
from ov_autoplace.decision.prior_rule import policy_proposal as _policy_proposal, prior_outcome, survives_prior_error  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402


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


def prior_row(platform, model: str, graph, time_limit: float, spec: truth.TruthSpec | None = None) -> dict:
    """Best single, optimum, profiled policy and the prior's two variants on one platform (simulated ms); with
    ``spec`` also every placement under the truth draws and leave-platform-out (``bench.truth``)."""
    placements: dict = {}
    row = headroom_row(platform, model, graph, milp_seconds=time_limit,
                       methods=("Optimum (MILP)", "HSDAG (pretrained, one pass)"), placements_out=placements)
    truth_cost = platform.cost_model(graph)
    support = simulated_support(truth_cost, graph)
    simulator = Simulator(truth_cost, graph)
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
            placements[f"{variant}_ms"] = placements[f"{truth.SINGLE_PREFIX}{single}"]
        else:
            assignment = placement.device_indices(graph.names, devices)
            ms = float(simulator(assignment))
            ms = ms if np.isfinite(ms) and bool(simulator.memory_ok(assignment)) else None
            what = f"split {placement.counts_per_device()}"
            placements[f"{variant}_ms"] = assignment
        row[f"{variant}_ms"], row[f"{variant}_choice"] = ms, what
        # what the first start compiles under the rule (placement_sources.settle): the plain call, unless every
        # device is recognized and the deviation beats the plain call in every draw of the prior's own error
        chosen, plain = np.asarray(placements[f"{variant}_ms"]), np.asarray(placements["plain_call"])
        live = (variant == "prior" and set(prior.recognized) == set(devices) and not np.array_equal(chosen, plain)
                and survives_prior_error(prior.cost, graph, support, chosen, plain) >= 1.0)
        first = "first_start" if variant == "prior" else "first_start_loo"
        placements[f"{first}_ms"] = chosen if live else plain
        row[f"{first}_ms"] = ms if live else float(simulator(plain))
        row[f"{first}_choice"] = what if live else "the plain call"
    if spec is not None:
        row["truth"] = truth.score_draws(platform, graph, placements, spec, truth_cost)
        row["truth_leave_platform_out"] = truth.score_leave_platform_out(platform, graph, placements,
                                                                         spec.milp_seconds)
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
    parser.add_argument("--markdown", help="write part B's lines, table and truth summary here (Markdown)")
    parser.add_argument("--truth-draws", type=int, default=truth.TRUTH_DRAWS,
                        help="perturbed truths per row in part B (0: none)")
    parser.add_argument("--truth-milp-seconds", type=float, default=truth.TRUTH_MILP_SECONDS)
    parser.add_argument("--seed", type=int, default=0, help="seed of the truth draws")
    args = parser.parse_args(argv)
    parts = {p.strip().upper() for p in args.parts.split(",")}
    if "A" in parts:
        part_a(args.models or ["resnet50", "inception_v3", "bert_base"])
    if "B" in parts:
        spec, log_errors = None, np.zeros(0)
        if args.truth_draws > 0:
            log_errors = truth.held_out_log_errors(load_suite(), lambda m: extract_graph(prepare_model(zoo.load(m))))
            spec = truth.TruthSpec(truth.held_out_sigma(log_errors), args.truth_draws, args.seed,
                                   args.truth_milp_seconds)
        rows, lines = part_b(args.models or list(zoo.ALL_MODELS), args.platforms.split(","), args.time_limit, spec)
        data: dict = {"simulated": True, "rows": rows}
        if spec is not None:
            text, summary = truth_section(rows, spec, log_errors)
            print("\n" + "\n".join(text))
            lines += ["", "TRUTH"] + text
            data["truth_model"] = {"draws": spec.draws, "sigma": spec.sigma, "seed": spec.seed,
                                   "milp_seconds": spec.milp_seconds,
                                   "held_out_log_errors": [round(float(e), 4) for e in log_errors]}
            data["truth_summary"] = summary
        if args.json:
            Path(args.json).write_text(json.dumps(data, indent=1, default=str))
        if args.markdown:
            write_markdown(args.markdown, lines, " ".join(argv if argv is not None else sys.argv[1:]))
    return 0


def write_markdown(path: str, lines: list[str], command: str) -> None:
    """Part B as Markdown: the printed lines in a code block, then the table, then the truth summary."""
    table_at, truth_at = lines.index("TABLE"), lines.index("TRUTH") if "TRUTH" in lines else len(lines)
    md = [f"## Part B (`python benchmarks/bench_prior.py {command}`, {time.strftime('%Y-%m-%d')}; all simulated)",
          "", "```", *lines[:table_at], "```", "", *lines[table_at + 1:truth_at], ""]
    if truth_at < len(lines):
        md += ["### Part B under models nobody optimised (truth)", "", "```", *lines[truth_at + 1:], "```", ""]
    Path(path).write_text("\n".join(md))


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


#: Part B's methods under the truths: (JSON key, title).
TRUTH_METHODS = (("milp_ms", "MILP placement (fitted model)"), ("hsdag_ms", "profiled policy (HSDAG one pass)"),
                 ("prior_ms", "prior's proposal"), ("prior_loo_ms", "prior's proposal, leave-platform-out"),
                 ("first_start_ms", "first start (the rule: plain call unless it survives the prior's error)"),
                 ("first_start_loo_ms", "first start, leave-platform-out (the plain call)"))


def truth_section(rows: list[dict], spec: truth.TruthSpec, log_errors: np.ndarray) -> tuple[list[str], dict]:
    """The per-method truth summary (printed text) and its JSON."""
    keys, titles = [k for k, _ in TRUTH_METHODS], dict(TRUTH_METHODS)
    summary = {key: truth.summarize(rows, keys, key) for key in ("truth", "truth_leave_platform_out")}
    proven = sum(sum(r["truth"]["optimum_proven"]) for r in rows if r.get("truth"))
    lines = [f"B truth: every placement under (a) {spec.draws} draws per row of the fitted model with a per-device, "
             f"per-op-category log-normal error, sigma {spec.sigma:.3f} fitted to {log_errors.size} held-out "
             f"calibration log errors (seed {spec.seed}; truth optimum = MILP {spec.milp_seconds:g} s or the best "
             f"known placement, proven in {proven} of {spec.draws * len(rows)} draws), and (b) leave-platform-out "
             "(the prior's model without the platform's fit: prior-LOO chose by it, so only (a) is independent for "
             "prior-LOO). '>plain' = slower than the plain call (HETERO's own affinity), '>best1' = slower than "
             "the best single device under the same truth."]
    for key, title in (("truth", "(a) perturbed fitted model"), ("truth_leave_platform_out", "(b) leave-platform-out")):
        lines += ["", f"B {title}:", *truth.summary_lines(summary[key], titles)]
    return lines, summary


def part_b(models: list[str], platforms: list[str], time_limit: float,
           spec: truth.TruthSpec | None = None) -> tuple[list[dict], list[str]]:
    """Part B's rows and the lines it printed (for --markdown)."""
    suite = load_suite()
    rows, out = [], []

    def say(line: str = "") -> None:
        print(line, flush=True)
        out.append(line)

    for platform_name in platforms:
        for name in models:
            graph = extract_graph(prepare_model(zoo.load(name)))
            row = prior_row(suite[platform_name], name, graph, time_limit, spec)
            rows.append(row)
            opt = row.get("optimum_ms")
            say(f"B {platform_name:<7} {name:<20} best single {_fmt(row['best_single_device_ms'], None):>8} "
                f"({row['best_single_device']})  optimum {_fmt(opt, None)}{'' if row['optimum_exact'] else ' (not proven)'}"
                f"  profiled policy {_fmt(row.get('hsdag_ms'), opt)}  prior {_fmt(row['prior_ms'], opt)} "
                f"[{row['prior_choice']}]  prior-LOO {_fmt(row['prior_loo_ms'], opt)} [{row['prior_loo_choice']}]  "
                "[ms, simulated]")
    table = ["| platform | model | best single device | optimum | profiled policy (HSDAG one pass) | prior | "
             "prior choice | prior, leave-platform-out | its choice |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        opt = r.get("optimum_ms")
        table.append(f"| {r['platform']} | {r['model']} | {_fmt(r['best_single_device_ms'], None)} "
                     f"({r['best_single_device']}) | {_fmt(opt, None)}{'' if r['optimum_exact'] else ' (not proven)'}"
                     f" | {_fmt(r.get('hsdag_ms'), opt)} | {_fmt(r['prior_ms'], opt)} | {r['prior_choice']} | "
                     f"{_fmt(r['prior_loo_ms'], opt)} | {r['prior_loo_choice']} |")
    print("\n" + "\n".join(table))
    misses = check_prior_targets(rows)
    reached = sum(1 for r in rows if r.get("hsdag_ms") is not None and r.get("optimum_ms")
                  and r["hsdag_ms"] <= 1.05 * r["optimum_ms"])
    per_variant = {v: len({line.split(" ")[0] for line in misses if line.split(" ")[1].rstrip(":") == v})
                   for v in ("prior", "prior_loo")}
    say()
    say(f"B targets (simulated, scored by the fitted model): {len(rows)} rows, the profiled policy <= 1.05x the "
        f"optimum in {reached}; rows the prior misses (above 1.05x where the profiled policy is not, or slower than "
        f"the best single device): prior {per_variant['prior']}, prior-LOO {per_variant['prior_loo']}")
    for line in misses:
        say("  " + line)
    return rows, out + ["", "TABLE"] + table


if __name__ == "__main__":
    raise SystemExit(main())
