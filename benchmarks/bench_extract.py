"""Graph extraction speed: C++ ``extract_graph`` vs the pure-Python reference.

    python benchmarks/bench_extract.py [--runs 7] [--model bert_base] [--blocks 2500]

Prints, for one zoo model (BERT-base by default, needs the ``zoo`` extras), the
median/min/max wall time of ``ov_autoplace.graph.arrays.extract_graph`` and of
``tests.reference_graph.reference_extract`` and their ratio (target: native at
least 10x faster), then the native time on a synthetic ~20,000-node graph (a
chain of residual MLP blocks). Times include everything a caller pays
(``get_ordered_ops`` and wrapping into ``GraphArrays``), not model loading.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from _common import fmt_samples, time_runs  # noqa: E402

from ov_autoplace.graph.arrays import extract_graph  # noqa: E402
from tests import synthetic_graphs  # noqa: E402
from tests.reference_graph import reference_extract  # noqa: E402




def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="timed runs per measurement (>= 5)")
    ap.add_argument("--model", default="bert_base", help="zoo model to compare on")
    ap.add_argument("--blocks", type=int, default=2500, help="residual blocks of the synthetic graph (8 nodes each)")
    args = ap.parse_args(argv)
    runs = max(5, args.runs)

    try:
        import ov_autoplace_lab.models as zoo

        model = zoo.load(args.model)
    except Exception as exc:  # torch/transformers missing or broken
        print(f"[skip] cannot load zoo model {args.model!r} ({type(exc).__name__}: {exc}); "
              "install the zoo extras: pip install 'ov-autoplace-lab[zoo]'")
        model = None

    if model is not None:
        g = extract_graph(model)
        print(f"{args.model}: {g.num_nodes} nodes, {g.num_edges} edges")
        native = time_runs(lambda: extract_graph(model), runs)
        ref = time_runs(lambda: reference_extract(model), runs)
        print(f"  native    {fmt_samples(native, 3)}")
        print(f"  reference {fmt_samples(ref, 3)}")
        ratio = statistics.median(ref) / statistics.median(native)
        verdict = "ok" if ratio >= 10 else "MISSED"
        print(f"  ratio (median reference / median native): {ratio:.1f}x  (target >= 10x: {verdict})")

    t0 = time.perf_counter()
    big = synthetic_graphs.long_chain(args.blocks)
    build = time.perf_counter() - t0
    g = extract_graph(big)
    print(f"long_chain({args.blocks}): {g.num_nodes} nodes, {g.num_edges} edges (built in {build:.2f} s)")
    print(f"  native    {fmt_samples(time_runs(lambda: extract_graph(big), runs), 3)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
