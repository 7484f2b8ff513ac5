"""How good is the prior (placing without a profile)? Its error on this CPU, and its placements on simulated platforms.

    python benchmarks/bench_prior.py [--models resnet50 inception_v3 bert_base] [--time-limit 10]

Part A - the prior's error, MEASURED on this machine's CPU: a quick profile
(one compile, a few PERF_COUNT runs) gives each op's measured time; the prior
gives its predicted time from the graph and the CPU's reported properties.
A two-way split moves a topological prefix of the graph to the other device,
so what matters is how well the prior knows the *share* of the latency such a
prefix carries. For prefixes holding 5 %, 10 %, ..., 95 % of the compute ops:
``error = max(|pred/meas - 1|)`` over the prefix and the rest. Its 90th
percentile over all models is what ``PRIOR_SPLIT_MARGIN`` must cover.

Part B - placements on the SIMULATED platforms (``paper``, ``laptop``): the
"true" costs are each platform with its CPU calibrated on this machine's
measured profile (``sim_costs.calibrate``); the prior is the uncalibrated
spec-sheet platform (what is known without running the model). Compared
under the true costs: the best single device, the exact optimum (min cut /
MILP), the profiled policy (HSDAG on the true costs, guarded) and the prior's
choice (``placement_sources.prior_choice``: HSDAG on the prior plus the margin rule).
All Part B numbers are simulated.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ov_autoplace import zoo  # noqa: E402
from ov_autoplace.costmodel.cost_terms import CostTerms  # noqa: E402
from ov_autoplace.costmodel.platforms import PLATFORMS  # noqa: E402
from ov_autoplace.costmodel.prior import PRIOR_SPLIT_MARGIN, prior_cost_model  # noqa: E402
from ov_autoplace.costmodel.quick_profile import quick_model_profile  # noqa: E402
from ov_autoplace.costmodel.sim_costs import calibrate, cost_model_for, simulated_support  # noqa: E402
from ov_autoplace.device_facts import read_device_facts  # noqa: E402
from ov_autoplace.first_start import POLICY_FILE  # noqa: E402
from ov_autoplace.graph import NodeRole, extract_graph  # noqa: E402
from ov_autoplace.guard import guard_placement  # noqa: E402
from ov_autoplace.legalize import legalize  # noqa: E402
from ov_autoplace.placement_sources import _policy_proposal, prior_choice  # noqa: E402
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


def latency(cost, graph, support, placement) -> float:
    index = {d: k for k, d in enumerate(cost.devices)}
    return CostTerms(cost, graph, support).latency_ms(np.array([index[placement.assignment[n]] for n in graph.names]))


def optimum_ms(cost, graph, support, time_limit: float) -> float:
    if len(cost.devices) == 2:
        from ov_autoplace.costmodel.optimum import min_cut_placement

        return min_cut_placement(cost, graph, support=support).predicted_ms
    from ov_autoplace.costmodel.milp import milp_placement

    return milp_placement(cost, graph, support=support, time_limit=time_limit).predicted_ms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet50", "inception_v3", "bert_base"])
    parser.add_argument("--time-limit", type=float, default=10.0, help="MILP time limit (3-device platform)")
    args = parser.parse_args(argv)
    testbed = make_testbed()
    errors: dict[str, list[float]] = {}
    rows = []
    for name in args.models:
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
        for platform_name, platform in PLATFORMS.items():
            truth = cost_model_for(graph, calibrate(platform, measured, graph, measured_device="CPU"), precision="f16")
            guess = cost_model_for(graph, platform, precision="f16")
            support = simulated_support(truth, graph)
            devices = truth.devices
            singles = {d: latency(truth, graph, support, legalize(graph, np.full(graph.num_nodes, k), devices,
                                                                  support)) for k, d in enumerate(devices)}
            best = min(singles.values())
            opt = optimum_ms(truth, graph, support, args.time_limit)
            profiled = guard_placement(legalize(graph, _policy_proposal(truth, graph, devices, POLICY_FILE), devices,
                                                support, max_submodels=8), graph, truth, support)
            profiled_ms = latency(truth, graph, support, profiled)
            choice = prior_choice(guess, graph, devices, lambda: _policy_proposal(guess, graph, devices, POLICY_FILE))
            if choice.single is not None:
                prior_ms = singles[choice.single]
                what = f"{choice.single} alone"
            else:
                placed = legalize(graph, choice.proposal, devices, support, max_submodels=8)
                prior_ms = latency(truth, graph, support, placed)
                what = f"split {placed.counts_per_device()}"
            rows.append((name, platform_name, best, opt, profiled_ms, prior_ms, what))
            print(f"B {name:<13} {platform_name:<7} best single {best:8.3f}  optimum {opt:8.3f}  profiled policy "
                  f"{profiled_ms:8.3f} ({profiled_ms / opt:.3f}x opt)  prior {prior_ms:8.3f} ({prior_ms / opt:.3f}x opt, "
                  f"{prior_ms / best:.3f}x best single; {what})  [ms, simulated]", flush=True)
    every = np.concatenate([np.asarray(v) for v in errors.values()])
    p90 = float(np.quantile(every, 0.9))
    print(f"\nA: prefix share error over {len(every)} prefixes of {len(errors)} models (measured, CPU): median "
          f"{np.median(every):.3f}, p90 {p90:.3f}, max {every.max():.3f}; PRIOR_SPLIT_MARGIN = {PRIOR_SPLIT_MARGIN}"
          f" ({'covers' if PRIOR_SPLIT_MARGIN >= p90 else 'does NOT cover'} the p90)")
    print("\n| model | platform | best single | optimum | profiled policy | prior | prior choice |")
    print("|---|---|---|---|---|---|---|")
    for name, platform_name, best, opt, profiled_ms, prior_ms, what in rows:
        print(f"| {name} | {platform_name} | {best:.3f} | {opt:.3f} | {profiled_ms:.3f} ({profiled_ms / opt:.3f}x) | "
              f"{prior_ms:.3f} ({prior_ms / opt:.3f}x) | {what} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
