"""Two identical devices measured one after the other: how often their profile splits a model, with the machine's
speed drift between the two windows in the spreads (``noise.speed_drift``) and without it.

    python benchmarks/bench_profile_drift.py [--rounds 20] [--markdown docs/bench/profile-drift.md]

The testbed in f32 (``make_testbed(like_for_like=True)``: ``CPU`` and ``CPUF`` run the same f32 kernels on the same
cores), so no split of it can be faster than one device: every split its profile proposes is noise becoming
placement. Each round takes one full profile (``measure_model_profile``, the path that measures both devices; the
quick profile copies a twin's costs) of each model, 8 profiled runs, the prior's links, no store, and runs the
local search from HETERO's own placement (everything on ``CPU``) three ways:

* **as profiled**: the spreads the profiler stored, the drift included, and its loaded flag;
* **drift taken out**: the same profile with ``speed_drift * compute_ms`` subtracted from every op's spread (what
  the profiler stored before it timed the first device again);
* **flag ignored**: as profiled with the loaded flag off (the spreads alone decide).

A round "splits" when the local search moves any compute node off ``CPU``. The drift column is the first device's
end-to-end median after the last window against its own window's, ``max / min - 1``. Models are the synthetic
graphs the tests use (``tests/synthetic_graphs.py``): the 0.3 ms attention block of the test that once split on a
CI run, a 4-layer attention stack and a residual CNN.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _common import cpu_description, load_average, markdown_table  # noqa: E402
import openvino as ov  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402
from ov_autoplace.graph.arrays import NodeRole, extract_graph  # noqa: E402
from ov_autoplace.measuring.profiler import measure_model_profile  # noqa: E402
from ov_autoplace.measuring.quick_profile import stored_or_prior_links  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace.placement.legalizer import query_support  # noqa: E402
from ov_autoplace.search.local_search import LocalSearchRefiner  # noqa: E402
from tests import synthetic_graphs as sg  # noqa: E402

MODELS = {
    "attention_small": lambda: sg.attention_like(seq=64, hidden=64),
    "attention_4l": lambda: sg.attention_like(seq=128, hidden=256, heads=4, layers=4),
    "residual": lambda: sg.residual(blocks=6, channels=32, size=56),
}


def _splits(cost, graph, support) -> tuple[bool, float]:
    """Whether the local search moves a compute node off the first device, and its predicted gain (ms)."""
    result = LocalSearchRefiner(cost, graph, support, max_submodels=8, max_seconds=2.0).refine(
        np.zeros(graph.num_nodes, np.int64))
    moved = bool((result.proposal[graph.role == NodeRole.COMPUTE] != 0).any())
    return moved, (result.start_ms - result.final_ms) if moved else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--markdown", help="write the table to this file")
    args = parser.parse_args(argv)
    testbed = make_testbed(like_for_like=True)
    links = stored_or_prior_links(testbed.core, testbed.devices, None)
    cases = {}
    for name in args.models:
        model = MODELS[name]()
        prepared = prepare_model(model)
        graph = extract_graph(prepared)
        cases[name] = (model, graph, query_support(testbed.core, prepared, graph, testbed.devices))
    header = (f"testbed {testbed.hetero} in f32 on {cpu_description()}, OpenVINO {ov.get_version().split('-')[0]}; "
              f"{args.rounds} rounds; {load_average()} at the start")
    print(header)
    rows = {name: [] for name in cases}
    for r in range(args.rounds):
        for name, (model, graph, support) in cases.items():
            profile = measure_model_profile(model, testbed.core, testbed.devices, iterations=8, links=links)
            cost, drift = profile.cost_model, profile.reports[0].speed_drift
            without = dataclasses.replace(cost, compute_spread_ms=np.maximum(
                cost.compute_spread_ms - drift * cost.compute_ms, 0.0))
            row = dict(drift=drift, loaded=cost.loaded, e2e_ms=[rep.e2e_ms for rep in profile.reports],
                       as_profiled=_splits(cost, graph, support), drift_out=_splits(without, graph, support),
                       flag_ignored=_splits(dataclasses.replace(cost, loaded=False), graph, support))
            rows[name].append(row)
            print(f"round {r + 1:2d} {name:16s} e2e {' / '.join(f'{e:.3f}' for e in row['e2e_ms'])} ms, drift "
                  f"{100 * drift:5.1f} %, loaded {cost.loaded!s:5s} | splits: as profiled {row['as_profiled'][0]!s:5s}"
                  f" drift out {row['drift_out'][0]!s:5s} flag ignored {row['flag_ignored'][0]!s:5s}", flush=True)

    def count(samples, key):
        hits = [s[key][1] for s in samples if s[key][0]]
        gain = f" (predicted gain median {np.median(hits):.3f} ms)" if hits else ""
        return f"{len(hits)} / {len(samples)}{gain}"

    table = markdown_table(
        ["model", "CPU e2e median (ms)", "drift median [max]", "loaded", "splits as profiled", "drift taken out",
         "flag ignored"],
        [[name, f"{np.median([s['e2e_ms'][0] for s in samples]):.3f}",
          f"{100 * np.median([s['drift'] for s in samples]):.0f} % [{100 * max(s['drift'] for s in samples):.0f} %]",
          f"{sum(s['loaded'] for s in samples)} / {len(samples)}", count(samples, "as_profiled"),
          count(samples, "drift_out"), count(samples, "flag_ignored")] for name, samples in rows.items()])
    print(table)
    if args.markdown:
        text = (f"# Two identical devices: splits from their profile\n\nGenerated by `python "
                f"benchmarks/bench_profile_drift.py --rounds {args.rounds}` on {datetime.date.today()}: {header}. "
                f"What each column means: the benchmark's docstring. Every split counted here is noise (the two "
                f"devices are one f32 CPU), so fewer is better; the end-to-end check of any split is the "
                f"verification's, not this table's.\n\n{table}\n")
        pathlib.Path(args.markdown).write_text(text)
        print(f"written to {args.markdown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
