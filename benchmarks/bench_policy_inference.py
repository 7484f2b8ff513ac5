"""Speed of the torch-free HSDAG policy at placement time: inputs, forward pass, legalizer.

    python benchmarks/bench_policy_inference.py [--runs 9] [--blocks 2500] [--policy PATH] [--decodings K]

For the prepared BERT-base graph (needs the ``zoo`` extras) and a synthetic
~20,000-node graph (``long_chain(2500)``) it prints the median/min/max wall time
of

* ``inputs``: features + chain coarsening + device features (``NumpyHSDAGPolicy.inputs``),
* ``forward``: the numpy forward pass with greedy decoding,
* ``legalize``: ``ov_autoplace.placement.legalizer.legalize`` of the proposal,
* ``total``: the three together, what a placement costs after ``extract_graph``;
* with ``--decodings K``: ``decoded``, the same pass + K offset decodings priced
  and the cheapest legalised in full with the bound of 8 (``ov_autoplace_lab/training/decoding.py``),
  and ``total+decoded``, what ``HSDAGStrategy(decodings=K)`` costs before the
  caller's legalize.

Targets: total <= 100 ms on BERT-base, <= 5 s on the 20,000-node graph.
On a loaded 2-core machine ``OPENBLAS_NUM_THREADS=1`` is several times faster
(idle BLAS worker threads spin on the core the Python code needs).
Without ``--policy`` a randomly initialised policy (hidden 128, 2 GCN layers)
is exported, with its merge threshold calibrated on the graph so that
pooling merges as a trained policy would (that needs torch; the timed code
does not use it). The CostModel is the tests' flops-based stand-in
(``tests/policy/conftest.py``), since only its shape matters here.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from _common import fmt_samples, time_runs  # noqa: E402

import numpy as np  # noqa: E402

from ov_autoplace.api import DEFAULT_MAX_SUBMODELS  # noqa: E402
from ov_autoplace.placement.legalizer import legalize  # noqa: E402
from ov_autoplace.policy import NumpyHSDAGPolicy  # noqa: E402
from ov_autoplace_lab.training.decoding import priced_decoding  # noqa: E402
from tests import synthetic_graphs  # noqa: E402
from tests.policy.conftest import prepared_graph, stand_in_cost_model  # noqa: E402

TARGETS_MS = {"bert_base": 100.0, "long_chain": 5000.0}




def random_policy(graph, path: pathlib.Path) -> NumpyHSDAGPolicy:
    import torch

    from ov_autoplace_lab.policy_export import export_policy
    from ov_autoplace_lab.hsdag_torch.model import HSDAGPolicy, PolicyInputs

    torch.manual_seed(0)
    policy = HSDAGPolicy()
    policy.calibrate_merging(PolicyInputs.from_graph(graph, stand_in_cost_model(graph), config=policy.config))
    return NumpyHSDAGPolicy.load(export_policy(policy, path))


def bench(name: str, graph, policy_path: str | None, runs: int, workdir: pathlib.Path, decodings: int = 0) -> bool:
    devices = ("CPU", "CPUF")
    cost = stand_in_cost_model(graph, devices)
    support = np.ones((graph.num_nodes, len(devices)), dtype=bool)
    policy = (NumpyHSDAGPolicy.load(policy_path) if policy_path
              else random_policy(graph, workdir / f"{name}.npz"))
    arrays = policy.inputs(graph, cost)
    out = policy.forward(arrays)
    per_device = np.bincount(out.node_placement(), minlength=len(devices)).tolist()
    print(f"{name}: {graph.num_nodes} nodes -> {arrays.num_coarse} coarse nodes -> {out.num_groups} groups "
          f"({out.pool_iterations} pooling iterations), greedy nodes per device {per_device}")

    def total():
        proposal = policy.forward(policy.inputs(graph, cost)).node_placement()
        return legalize(graph, proposal, devices, support, strategy="hsdag")

    proposal = out.node_placement()
    timings = {
        "inputs": time_runs(lambda: policy.inputs(graph, cost), runs),
        "forward": time_runs(lambda: policy.forward(arrays), runs),
        "legalize": time_runs(lambda: legalize(graph, proposal, devices, support, strategy="hsdag"), runs),
        "total": time_runs(total, runs),
    }
    if decodings:
        def decoded(output):
            return priced_decoding(output.logits, output.node_group, graph, cost, support, decodings,
                                   max_submodels=DEFAULT_MAX_SUBMODELS)

        _, report = decoded(out)
        print(f"  {decodings} decodings: {report.priced} distinct priced, {report.legalised} legalised; "
              f"{report.note(cost.label)}")
        timings["decoded"] = time_runs(lambda: decoded(out), runs)
        timings["total+decoded"] = time_runs(lambda: legalize(graph, decoded(policy.forward(policy.inputs(
            graph, cost)))[0], devices, support, max_submodels=DEFAULT_MAX_SUBMODELS, strategy="hsdag"), runs)
    for label, samples in timings.items():
        print(f"  {label:14s}{fmt_samples(samples)}")
    target, ok = TARGETS_MS[name], True
    for key in ("total", "total+decoded") if decodings else ("total",):
        median_ms = statistics.median(timings[key]) * 1e3
        ok &= median_ms <= target
        print(f"  target {key} <= {target:.0f} ms: {'PASS' if median_ms <= target else 'FAIL'} ({median_ms:.1f} ms)")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9, help="timed runs per measurement (>= 5)")
    ap.add_argument("--blocks", type=int, default=2500, help="blocks of the synthetic long chain (8 nodes each)")
    ap.add_argument("--policy", default=None, help="an exported policy (.npz); default: a random calibrated one")
    ap.add_argument("--decodings", type=int, default=0, metavar="K",
                    help="also time the pass + K priced offset decodings (the lab's training/decoding.py); 0: not")
    args = ap.parse_args(argv)
    runs = max(5, args.runs)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        try:
            import ov_autoplace_lab.models as zoo

            bert = zoo.load("bert_base")
        except Exception as exc:  # torch/transformers missing or broken
            print(f"[skip] cannot load zoo model 'bert_base' ({type(exc).__name__}: {exc}); "
                  "install the zoo extras: pip install 'ov-autoplace-lab[zoo]'")
        else:
            ok &= bench("bert_base", prepared_graph(bert)[1], args.policy, runs, workdir, args.decodings)
        ok &= bench("long_chain", prepared_graph(synthetic_graphs.long_chain(args.blocks))[1], args.policy,
                    max(5, runs // 2), workdir, args.decodings)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
