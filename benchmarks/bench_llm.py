"""Time to first token and per-token latency of a placed decoder against the plain call (paired, interleaved).

    python benchmarks/bench_llm.py [--family llama] [--prompt 128] [--new 32] [--rounds 7] [--dir /tmp/llm]

Exports a 4-layer random-weight decoder with optimum-intel (tests/llm_models.py; reused from ``--dir``), then
compiles it as an app would: the plain ``core.compile_model(model, "CPU")``, ``ov_autoplace.compile_model`` on
the testbed's ``HETERO:CPU,CPUF`` by the default path, and a pipeline split (layers 2-3 pinned to CPUF).
Each round runs every contender once, in a rotated order: ``reset_state``, a prefill of ``--prompt`` tokens
(time to first token), then ``--new`` decode steps of one token each (per-token latency: their median). The
ratios are per round against the plain call's, and their median is reported with the rounds' range.
On a CPU without bf16 the testbed's two devices are the same f32 device: a split can only tie or lose there.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import openvino as ov

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ov_autoplace  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402
from ov_autoplace.devices.timing import round_order  # noqa: E402
from tests.llm_models import export_tiny  # noqa: E402


def one_generation(request: ov.InferRequest, prompt: int, new: int, vocabulary: int, rng) -> tuple[float, float]:
    """(time to first token, median per-token latency) in ms for one greedy generation from a reset state."""
    request.reset_state()
    ids = rng.integers(0, vocabulary, size=prompt)
    feed = {"input_ids": ids[None], "attention_mask": np.ones((1, prompt), np.int64),
            "position_ids": np.arange(prompt)[None], "beam_idx": np.zeros(1, np.int32)}
    t0 = time.perf_counter()
    token = int(np.argmax(request.infer(feed)["logits"][0, -1]))
    first = 1e3 * (time.perf_counter() - t0)
    steps = []
    for past in range(prompt, prompt + new):
        feed = {"input_ids": np.array([[token]]), "attention_mask": np.ones((1, past + 1), np.int64),
                "position_ids": np.array([[past]]), "beam_idx": np.zeros(1, np.int32)}
        t0 = time.perf_counter()
        token = int(np.argmax(request.infer(feed)["logits"][0, -1]))
        steps.append(1e3 * (time.perf_counter() - t0))
    return first, float(np.median(steps))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="llama", choices=("llama", "qwen2"))
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "ov_autoplace_bench_llm")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    testbed = make_testbed()
    core = testbed.core
    model = core.read_model(export_tiny(args.family, args.dir) / "openvino_model.xml")
    second = testbed.devices[1]
    with tempfile.TemporaryDirectory() as cache:
        contenders = {
            "plain CPU": core.compile_model(model, "CPU"),
            "default path": ov_autoplace.compile_model(model, testbed.hetero, core=core, cache_dir=cache),
            "pipeline split": ov_autoplace.compile_model(model, testbed.hetero, core=core, cache_dir=cache,
                                                         pins={"*layers.2.*": second, "*layers.3.*": second}),
        }
    for label, compiled in contenders.items():
        print(f"{label}: execution devices {list(compiled.get_property('EXECUTION_DEVICES'))}")
    vocabulary = int(model.output("logits").get_partial_shape()[-1].get_length())
    requests = {label: c.create_infer_request() for label, c in contenders.items()}
    rng = np.random.default_rng(0)
    for request in requests.values():  # warm-up
        one_generation(request, args.prompt, 4, vocabulary, rng)
    rows: dict[str, list[tuple[float, float]]] = {label: [] for label in requests}
    for r in range(args.rounds):
        for label in round_order(list(requests), r):
            rows[label].append(one_generation(requests[label], args.prompt, args.new, vocabulary, rng))
    print(f"\n{args.family}, prompt {args.prompt}, {args.new} new tokens, {args.rounds} paired rounds "
          f"({testbed.describe()}):")
    print(f"{'contender':<16} {'TTFT ms':>9} {'per token ms':>13} {'TTFT ratio [range]':>24} "
          f"{'per-token ratio [range]':>26}")
    plain = np.array(rows["plain CPU"])
    for label, values in rows.items():
        v = np.array(values)
        ratios = v / plain
        print(f"{label:<16} {np.median(v[:, 0]):9.2f} {np.median(v[:, 1]):13.3f} "
              f"{np.median(ratios[:, 0]):>8.3f} [{ratios[:, 0].min():.3f}-{ratios[:, 0].max():.3f}]  "
              f"{np.median(ratios[:, 1]):>10.3f} [{ratios[:, 1].min():.3f}-{ratios[:, 1].max():.3f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
