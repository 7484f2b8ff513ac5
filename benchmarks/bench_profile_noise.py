"""Profile noise on the testbed: quick profiles taken quiet and with a one-core CPU hog, and the splits they make.

    python benchmarks/bench_profile_noise.py [--model attention|residual|<zoo name>] [--rounds 3]

Each round profiles the model twice with ``quick_model_profile`` (no store: always measured), once as
the machine is and once with one extra process busy-looping on one core, quiet first (interleaved
rounds, so a drift in the background load hits both). Per profile it prints each device's
end-to-end median and IQR, the other processes' busy cores it saw (``noise.LoadProbe``), whether the
window was measured again and whether the profile is marked loaded; then the placement the local
search makes from HETERO's own placement (every node on CPU) under that profile - nodes per device, the
predicted gain and the spread of the move -, the same with the loaded flag ignored (the spreads alone
decide) and, for contrast, with the spreads dropped too (the rule off: every predicted gain counts; its
spread column is what the measured spreads say of that move). "Quiet" is the machine as found:
other users' processes count as load, and the load average is printed with every round.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ov_autoplace.costmodel.cost_terms import CostTerms  # noqa: E402
from ov_autoplace.search.local_search import LocalSearchRefiner  # noqa: E402
from ov_autoplace.measuring.quick_profile import quick_model_profile  # noqa: E402
from ov_autoplace.graph.arrays import extract_graph  # noqa: E402
from ov_autoplace.placement.legalizer import query_support  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402
from tests import synthetic_graphs as sg  # noqa: E402

#: The hog never outlives this.
HOG_SECONDS = 120


def _model(name: str, core):
    if name == "attention":
        return sg.attention_like(seq=128, hidden=256, heads=4, layers=4)
    if name == "residual":
        return sg.residual(blocks=6, channels=32, size=56)
    from ov_autoplace_lab import models as zoo

    return zoo.load(name, core)


def _split(cost, graph, support, measured=None) -> tuple[str, str]:
    """Nodes per device of the local search's placement from all-on-the-first-device, and its numbers (the
    spread of the move under ``measured``'s spreads when given)."""
    start = np.zeros(graph.num_nodes, np.int64)
    result = LocalSearchRefiner(cost, graph, support, max_submodels=8, max_seconds=2.0).refine(start)
    counts = np.bincount(result.proposal, minlength=len(cost.devices))
    nodes = " ".join(f"{d} {c}" for d, c in zip(cost.devices, counts))
    gain = 100 * (result.start_ms - result.final_ms) / result.start_ms
    spread = result.spread_ms
    if measured is not None:
        terms = CostTerms(measured, graph, support)
        spread = terms.move_spread_ms(terms.legal_devices(start, max_submodels=8)[0],
                                      terms.legal_devices(result.proposal, max_submodels=8)[0])
    return nodes, (f"predicted gain {gain:+5.1f} % ({result.start_ms - result.final_ms:.3f} ms), spread of the move "
                   f"{spread:.3f} ms ({result.stopped})")


def _profile_row(label: str, model, graph, support, testbed) -> None:
    profile = quick_model_profile(model, testbed.core, testbed.devices, store=None)
    cost = profile.cost_model
    for d, report in enumerate(profile.reports):
        share = cost.compute_spread_ms[:, d].sum() / max(cost.compute_ms[:, d].sum(), 1e-12)
        print(f"  {label:5s} {report.device:4s} e2e {report.e2e_ms:8.3f} ms IQR {report.e2e_spread_ms:6.3f} ms "
              f"per-op IQR sum {100 * share:5.1f} % | other cores {report.other_cores:4.2f} "
              f"remeasured {str(report.remeasured):5s} loaded {report.loaded}")
    nodes, numbers = _split(cost, graph, support)
    print(f"  {label:5s} {f'rule on (loaded={cost.loaded})':29s} {nodes:18s} {numbers}")
    nodes, numbers = _split(dataclasses.replace(cost, loaded=False), graph, support)
    print(f"  {label:5s} {'spreads only (flag ignored)':29s} {nodes:18s} {numbers}")
    free = dataclasses.replace(cost, compute_spread_ms=None, e2e_spread_ms=None, loaded=False)
    nodes, numbers = _split(free, graph, support, measured=cost)
    print(f"  {label:5s} {'rule off (spreads dropped)':29s} {nodes:18s} {numbers}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="attention")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    testbed = make_testbed()
    model = _model(args.model, testbed.core)
    prepared = prepare_model(model)
    graph = extract_graph(prepared)
    support = query_support(testbed.core, prepared, graph, testbed.devices)
    print(f"testbed {testbed.hetero} (bf16 on CPU: {testbed.bf16}); model {args.model}, {graph.num_nodes} nodes; "
          f"{os.cpu_count()} cores")
    for r in range(args.rounds):
        print(f"round {r + 1}: load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
        _profile_row("quiet", model, graph, support, testbed)
        hog = subprocess.Popen([sys.executable, "-c",
                                f"import time\nend = time.time() + {HOG_SECONDS}\nwhile time.time() < end: pass"])
        try:
            time.sleep(0.3)
            _profile_row("hog", model, graph, support, testbed)
        finally:
            hog.kill()
            hog.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
