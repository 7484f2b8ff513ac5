"""Per-token latency of a decoder placed within memory caps against the plain call on the device that fits (paired).

    python benchmarks/bench_llm_memory.py [--family llama] [--size tiny] [--prompt 128] [--new 32] [--rounds 7]
                                          [--dir /tmp/llm] [--out docs/bench/llm-memory.md]

Exports a random-weight decoder of ``--size`` with optimum-intel (``tests/llm_models.SIZES``: ``tiny``, 4 layers of
hidden 64; ``small``, 8 layers of hidden 512, ~42 M parameters; reused from ``--dir``; run in the
LLM venv, ``. .venv-llm/bin/activate``) and compiles it on the testbed's ``HETERO:CPU,CPUF`` with ``memory_caps`` stated
relative to what it holds on one device (weights + KV cache at 256 tokens + its largest activation, as the cost
model charges them):

* **CPU capped**: ``{"CPU": 50 %}``: CPU cannot hold it, CPUF can; the split is chosen by latency within the cap;
* **both capped**: ``{"CPU": 70 %, "CPUF": 70 %}``: no device holds it alone, so it must be split.

Each round runs every contender once, in a rotated order (``bench_llm.one_generation``: ``reset_state``, a prefill
of ``--prompt`` tokens, then ``--new`` one-token decode steps; per-token latency is their median). Ratios are per
round against the plain call on the device that fits (``core.compile_model(model, "CPUF")``); the median and the
rounds' range are reported, and written to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ov_autoplace  # noqa: E402
from bench_llm import one_generation  # noqa: E402
from ov_autoplace.call_request import build_request  # noqa: E402
from ov_autoplace.costmodel.simulator import Simulator  # noqa: E402
from ov_autoplace.decision.memory_path import capped_cost  # noqa: E402
from ov_autoplace.devices.memory_caps import format_bytes  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402
from ov_autoplace.devices.timing import round_order  # noqa: E402
from ov_autoplace.graph.arrays import extract_graph  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from tests.llm_models import SIZES, export_decoder  # noqa: E402

REFERENCE = "plain CPUF"


def one_device_bytes(core, model, hetero) -> float:
    """What the decoder holds on one device, as the capped cost model charges it."""
    req = build_request(model, hetero, core=core, memory_caps={"CPU": 10**12})
    graph = extract_graph(prepare_model(req.placement_model))
    cost = capped_cost(req, graph, None)
    return float(Simulator(cost, graph).resident_bytes(np.zeros((1, graph.num_nodes), np.int64))[0, 0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="llama", choices=("llama", "qwen2"))
    parser.add_argument("--size", default="tiny", choices=sorted(SIZES), help="the decoder's geometry")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "ov_autoplace_bench_llm")
    parser.add_argument("--out", type=Path, default=None, help="write the table as a docs/bench page")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    testbed = make_testbed()
    core = testbed.core
    model = core.read_model(export_decoder(args.family, args.dir, args.size) / "openvino_model.xml")
    whole = one_device_bytes(core, model, testbed.hetero)
    cases = {"CPU capped": {"CPU": int(0.5 * whole)},
             "both capped": {"CPU": int(0.7 * whole), "CPUF": int(0.7 * whole)}}
    with tempfile.TemporaryDirectory() as cache:
        contenders = {"plain CPU": core.compile_model(model, "CPU"), REFERENCE: core.compile_model(model, "CPUF")}
        placed = {}
        for label, caps in cases.items():
            placed[label] = ov_autoplace.place(model, testbed.hetero, core=core, memory_caps=caps)
            contenders[label] = ov_autoplace.compile_model(model, testbed.hetero, core=core, memory_caps=caps,
                                                           cache_dir=cache)
    lines = [f"{args.family} ({args.size}): {format_bytes(whole)} on one device (weights + KV cache at 256 tokens + the largest "
             f"activation)"]
    for label, caps in cases.items():
        lines.append(f"{label} {', '.join(f'{d} {format_bytes(c)}' for d, c in caps.items())}: "
                     f"{placed[label].counts_per_device()} nodes, {placed[label].num_submodels} submodel(s), "
                     f"execution devices {list(contenders[label].get_property('EXECUTION_DEVICES'))}")
    print("\n".join(lines))
    vocabulary = int(model.output("logits").get_partial_shape()[-1].get_length())
    requests = {label: c.create_infer_request() for label, c in contenders.items()}
    rng = np.random.default_rng(0)
    for request in requests.values():  # warm-up
        one_generation(request, args.prompt, 4, vocabulary, rng)
    rows: dict[str, list[tuple[float, float]]] = {label: [] for label in requests}
    for r in range(args.rounds):
        for label in round_order(list(requests), r):
            rows[label].append(one_generation(requests[label], args.prompt, args.new, vocabulary, rng))
    load = os.getloadavg()[0]  # other processes on the machine: their load is the ratios' noise
    reference = np.array(rows[REFERENCE])
    table = ["| contender | TTFT ms | per token ms | TTFT / plain CPUF [range] | per token / plain CPUF [range] |",
             "|---|---:|---:|---:|---:|"]
    for label, values in rows.items():
        v = np.array(values)
        ratios = v / reference
        table.append(f"| {label} | {np.median(v[:, 0]):.2f} | {np.median(v[:, 1]):.3f} | "
                     f"{np.median(ratios[:, 0]):.3f} [{ratios[:, 0].min():.3f}-{ratios[:, 0].max():.3f}] | "
                     f"{np.median(ratios[:, 1]):.3f} [{ratios[:, 1].min():.3f}-{ratios[:, 1].max():.3f}] |")
    header = (f"{args.family} ({args.size}), prompt {args.prompt}, {args.new} new tokens, {args.rounds} paired rounds, load "
              f"average {load:.1f} on {os.cpu_count()} cores at the end ({testbed.describe()})")
    print(f"\n{header}:\n" + "\n".join(table))
    if args.out:
        command = "python benchmarks/bench_llm_memory.py " + " ".join(argv if argv is not None else sys.argv[1:])
        args.out.write_text(
            "# A decoder placed within memory caps (`memory_caps=`)\n\n"
            f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with `{command.strip()}` (the LLM venv, "
            "`. .venv-llm/bin/activate`; docs/llm.md, \"Memory\").\n\n"
            + "\n".join(f"- {line}" for line in lines) + f"\n\n{header}:\n\n" + "\n".join(table) + "\n")
        print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
