"""Drawing time and file sizes of `show`'s picture for models of 200 to 3,000+ nodes (targets: <= 5 s, <= 1 MB).

    python benchmarks/bench_viz.py [--repeats 5] [--zoo]

Each model is placed with alternating runs of nodes on two devices (many
submodels and cut edges: the hardest case for the drawing), priced on the
SIMULATED "paper" platform (no devices needed). The time is the median over
``--repeats`` of analyse + collapse + lay out + timeline + summary + SVG +
HTML + PNG (matplotlib), i.e. everything `show` does after placing and
measuring; "no-PNG s" is the same without the PNG (matplotlib's text
rendering is most of the rest). ``--zoo`` adds the zoo models (BERT-base, ResNet-50, Inception-V3)
when they are built.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ov_autoplace.costmodel.platforms import PLATFORMS  # noqa: E402
from ov_autoplace.costmodel.sim_costs import cost_model_for  # noqa: E402
from ov_autoplace.graph.arrays import extract_graph  # noqa: E402
from ov_autoplace.placement.legalizer import legalize  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace_lab.viz import placement_picture, write_picture  # noqa: E402
from ov_autoplace_lab.viz.scene import to_png  # noqa: E402
from tests import synthetic_graphs as sg  # noqa: E402


def _models(zoo: bool):
    yield "attention_like(layers=4)", sg.attention_like(layers=4)
    yield "long_chain(40) ~320 nodes", sg.long_chain(40)
    yield "long_chain(150) ~1,200 nodes", sg.long_chain(150)
    yield "long_chain(375) ~3,000 nodes", sg.long_chain(375)
    if zoo:
        from ov_autoplace_lab import models as model_zoo

        for name in ("resnet50", "inception_v3", "bert_base"):
            try:
                yield name, model_zoo.load(name)
            except Exception as exc:  # noqa: BLE001 - a zoo model that is not built is skipped, and said so
                print(f"  ({name} skipped: {exc})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--zoo", action="store_true")
    args = parser.parse_args(argv)
    out = Path(tempfile.mkdtemp(prefix="ov_autoplace_viz_"))
    print(f"{'model':<32}{'nodes':>7}{'boxes':>7}{'subm.':>6}{'all s median [min-max]':>25}{'no-PNG s':>10}"
          f"{'svg kB':>8}{'html kB':>9}{'png kB':>8}")
    for name, model in _models(args.zoo):
        graph = extract_graph(prepare_model(model))
        cost = cost_model_for(graph, PLATFORMS["paper"])
        support = np.ones((graph.num_nodes, len(cost.devices)), dtype=bool)
        proposal = (np.arange(graph.num_nodes) // max(graph.num_nodes // 12, 5)) % 2
        placement = legalize(graph, proposal, cost.devices, support, max_submodels=8, strategy="alternating")
        totals, without_png = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            picture = placement_picture(graph, placement, title=name, cost=cost)
            written, _ = write_picture(picture, out / "p", png=False)
            t1 = time.perf_counter()
            to_png(picture.scene, out / "p.png")
            totals.append(time.perf_counter() - t0)
            without_png.append(t1 - t0)
        written.append(out / "p.png")
        sizes = {p.suffix: p.stat().st_size / 1e3 for p in written}
        boxes = sum(1 for k in picture.hover if k.startswith("box"))
        print(f"{name:<32}{graph.num_nodes:>7}{boxes:>7}{placement.num_submodels:>6}"
              f"{statistics.median(totals):>12.2f} [{min(totals):.2f}-{max(totals):.2f}]"
              f"{statistics.median(without_png):>10.2f}{sizes['.svg']:>8.0f}{sizes['.html']:>9.0f}{sizes.get('.png', float('nan')):>8.0f}")
    print(f"(SIMULATED costs: 'paper' platform; files in {out}; targets: <= 5 s, <= 1,000 kB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
