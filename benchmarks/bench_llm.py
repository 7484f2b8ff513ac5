"""Time to first token and tokens/s of what ``compile_model`` returns for a decoder, against the plain call and each
single device (paired, interleaved).

    python benchmarks/bench_llm.py [--family llama] [--prompt 128] [--new 128] [--rounds 11] [--distinct] [--verify]
                                   [--dir /tmp/llm] [--write docs/bench/llm.md]

Exports a 4-layer random-weight decoder with optimum-intel (tests/llm_models.py; reused from ``--dir``), then
compiles it as an app would, on the testbed's ``HETERO:CPU,CPUF`` (``--distinct``: ``HETERO:CPU,CPUS``, the CPU
plugin on one thread as the second device, so the prior and the measurements can tell the devices apart):

* the plain call ``core.compile_model(model, "HETERO:...")`` and each single device ``core.compile_model(model, d)``;
* ``ov_autoplace.compile_model`` by the default path, ``profile="now"`` and ``strategy="heft"``, each with
  ``generation=(--prompt, --new)`` (the LLM objective: placed and verified for the whole generation);
* the pipeline split (layers 2-3 pinned to the second device).

Each round runs every contender once, in a rotated order: ``reset_state``, a prefill of ``--prompt`` tokens (time
to first token), then ``--new - 1`` greedy decode steps (tokens/s over them; the generation's wall time is both).
Ratios are per round against the plain call's; their median is reported with the rounds' range. The objective's
estimate (``model/generation.py``: the prefill plus 3 timed decode steps, interpolated) is measured beside the
full loop once per contender, to show how close the 3-point mix is to the generation it stands for.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import openvino as ov

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ov_autoplace  # noqa: E402
from ov_autoplace.devices.testbed import make_testbed  # noqa: E402
from ov_autoplace.devices.timing import DECODE_WINDOW, round_order, time_generation  # noqa: E402
from ov_autoplace.model.generation import Generation, decode_pasts, generation_ms  # noqa: E402
from tests.llm_models import export_tiny  # noqa: E402


def one_generation(request: ov.InferRequest, prompt: int, new: int, vocabulary: int, rng) -> tuple[float, float, float]:
    """(time to first token ms, decode ms per token, whole generation ms) of one greedy generation from a reset."""
    request.reset_state()
    ids = rng.integers(0, vocabulary, size=prompt)
    feed = {"input_ids": ids[None], "attention_mask": np.ones((1, prompt), np.int64),
            "position_ids": np.arange(prompt)[None], "beam_idx": np.zeros(1, np.int32)}
    t0 = time.perf_counter()
    token = int(np.argmax(request.infer(feed)["logits"][0, -1]))
    first = 1e3 * (time.perf_counter() - t0)
    decode = 0.0
    for past in range(prompt, prompt + new - 1):
        feed = {"input_ids": np.array([[token]]), "attention_mask": np.ones((1, past + 1), np.int64),
                "position_ids": np.array([[past]]), "beam_idx": np.zeros(1, np.int32)}
        t0 = time.perf_counter()
        token = int(np.argmax(request.infer(feed)["logits"][0, -1]))
        decode += 1e3 * (time.perf_counter() - t0)
    return first, decode / max(1, new - 1), first + decode


def _devices_of(compiled: ov.CompiledModel) -> str:
    try:
        return ", ".join(compiled.get_property("EXECUTION_DEVICES"))
    except RuntimeError:
        return "?"


class _Warnings(logging.Handler):
    """The WARNINGs (a fallback names itself there) and the verifications' evidence lines of the placing calls."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.messages: list[str] = []
        self.verifications: list[str] = []

    def emit(self, record):
        if record.levelno >= logging.WARNING:
            self.messages.append(record.getMessage())
        elif "verification (" in record.getMessage():
            self.verifications.append(record.getMessage())


def contenders(core: ov.Core, hetero: str, devices, model: ov.Model, gen: Generation, cache: str, log: _Warnings):
    """label -> (compiled, how it was made); the placing calls' WARNINGs (fallbacks) land in ``log``."""
    second = devices[1]
    out = {"plain call": (core.compile_model(model, hetero), f"`core.compile_model(model, \"{hetero}\")`")}
    for device in devices:
        out[f"{device} alone"] = (core.compile_model(model, device), f"`core.compile_model(model, \"{device}\")`")
    calls = {"default path": {}, "profile=now": {"profile": "now"}, "heft": {"strategy": "heft"},
             "pipeline split": {"pins": {"*layers.2.*": second, "*layers.3.*": second}}}
    for label, kwargs in calls.items():
        t0 = time.perf_counter()
        compiled = ov_autoplace.compile_model(model, hetero, core=core, cache_dir=cache, generation=gen, **kwargs)
        args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        out[label] = (compiled, f"`ov_autoplace.compile_model(..., generation={(gen.prompt_tokens, gen.new_tokens)}"
                                f"{', ' + args if args else ''})` ({time.perf_counter() - t0:.1f} s)")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="llama", choices=("llama", "qwen2"))
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--distinct", action="store_true", help="second device CPUS (one thread) instead of CPUF")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "ov_autoplace_bench_llm")
    parser.add_argument("--write", type=Path, default=None, help="append the table to this markdown page")
    parser.add_argument("--interpolation", type=int, default=0, metavar="REPEATS",
                        help="also time every decode step of REPEATS generations on the plain call and report how far "
                             "the 3-point objective is from their sum (the interpolation's error, noise aside)")
    parser.add_argument("--verify", action="store_true",
                        help="also verify the pipeline split (the never-slower rule on the generation)")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.distinct:
        from tests.testbeds import distinct_devices

        core, devices, _ = distinct_devices()
    else:
        testbed = make_testbed()
        core, devices = testbed.core, tuple(testbed.devices)
    hetero = f"HETERO:{','.join(devices)}"
    model = core.read_model(export_tiny(args.family, args.dir) / "openvino_model.xml")
    gen = Generation(args.prompt, args.new)
    log = _Warnings()
    logging.getLogger("ov_autoplace").addHandler(log)
    logging.getLogger("ov_autoplace").setLevel(logging.INFO)
    with tempfile.TemporaryDirectory() as cache:
        made = contenders(core, hetero, devices, model, gen, cache, log)
    vocabulary = int(model.output("logits").get_partial_shape()[-1].get_length())
    requests = {label: c.create_infer_request() for label, (c, _) in made.items()}
    rng = np.random.default_rng(0)
    for request in requests.values():  # warm-up
        one_generation(request, args.prompt, 4, vocabulary, rng)
    rows: dict[str, list[tuple[float, float, float]]] = {label: [] for label in requests}
    objective: dict[str, list[float]] = {label: [] for label in requests}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = ov_load()
    for r in range(args.rounds):
        for label in round_order(list(requests), r):
            rows[label].append(one_generation(requests[label], args.prompt, args.new, vocabulary, rng))
            prefill, decode = time_generation(made[label][0], gen.prompt_tokens, decode_pasts(gen),
                                              request=requests[label], seed=r)
            objective[label].append(generation_ms(gen, prefill, decode))
    plain = np.array(rows["plain call"])
    head = (f"{args.family}, prompt {args.prompt}, {args.new} new tokens, {args.rounds} paired rounds on `{hetero}`, "
            f"measured {started} (load average {load} on the shared 2-core machine)")
    lines = [f"### {head}", "",
             "| contender | devices | TTFT ms | tokens/s | generation ms | objective ms (3 points) | TTFT ratio "
             "[range] | per-token ratio [range] | generation ratio [range] |", "|---|---|---|---|---|---|---|---|---|"]
    for label, values in rows.items():
        v = np.array(values)
        ratios = v / plain
        cells = " | ".join(f"{np.median(ratios[:, k]):.3f} [{ratios[:, k].min():.3f}-{ratios[:, k].max():.3f}]"
                           for k in range(3))
        lines.append(f"| {label} | {_devices_of(made[label][0])} | {np.median(v[:, 0]):.2f} | "
                     f"{1e3 / np.median(v[:, 1]):.0f} | {np.median(v[:, 2]):.1f} | {np.median(objective[label]):.1f} | "
                     f"{cells} |")
    lines += ["", "How each contender was made: " + "; ".join(f"{k}: {how}" for k, (_, how) in made.items()) + ".",
              "", "WARNINGs while placing: " + ("; ".join(log.messages) if log.messages else "none (no fallback)")
              + ".", "", "The verifications' evidence (INFO): " + (" | ".join(log.verifications) or "none ran") + ".",
              ""]
    if args.interpolation:
        lines += [interpolation_error(requests["plain call"], gen, vocabulary, args.interpolation), ""]
    if args.verify:
        lines += ["The verification of the pipeline split against the plain call and the single devices, on the "
                  f"generation (INFO line): {verify_split(core, hetero, devices, model, gen)}", ""]
    text = "\n".join(lines)
    print(text)
    if args.write:
        with args.write.open("a") as page:
            page.write(text + "\n")
    return 0


def interpolation_error(request: ov.InferRequest, gen: Generation, vocabulary: int, repeats: int) -> str:
    """Every decode step timed over ``repeats`` generations; each step's median, their sum against the objective's
    3 points read off the same medians: the interpolation's own error, the same samples on both sides."""
    rng = np.random.default_rng(1)
    steps = []
    for _ in range(repeats):
        request.reset_state()
        feed = {"input_ids": rng.integers(0, vocabulary, size=(1, gen.prompt_tokens)),
                "attention_mask": np.ones((1, gen.prompt_tokens), np.int64),
                "position_ids": np.arange(gen.prompt_tokens)[None], "beam_idx": np.zeros(1, np.int32)}
        token, row = int(np.argmax(request.infer(feed)["logits"][0, -1])), []
        for past in range(gen.prompt_tokens, gen.prompt_tokens + gen.new_tokens - 1):
            feed = {"input_ids": np.array([[token]]), "attention_mask": np.ones((1, past + 1), np.int64),
                    "position_ids": np.array([[past]]), "beam_idx": np.zeros(1, np.int32)}
            t0 = time.perf_counter()
            token = int(np.argmax(request.infer(feed)["logits"][0, -1]))
            row.append(1e3 * (time.perf_counter() - t0))
        steps.append(row)
    median = np.median(np.array(steps), axis=0)
    every = float(median.sum())
    window = [float(np.mean(median[max(0, min(p - gen.prompt_tokens, len(median) - DECODE_WINDOW)):][:DECODE_WINDOW]))
              for p in decode_pasts(gen)]  # each point as time_generation samples it: a window of steps
    three = generation_ms(gen, 0.0, window)
    return (f"Interpolation check on the plain call ({repeats} generations, each decode step's median): the "
            f"{gen.new_tokens - 1} decode steps sum to {every:.1f} ms; the objective's 3 points "
            f"{list(decode_pasts(gen))} (windows of {DECODE_WINDOW} steps at {', '.join(f'{w:.3f}' for w in window)} "
            f"ms) interpolate to {three:.1f} ms ({three / every - 1:+.1%}). Per-step medians from the first to the "
            f"last decode step: {median[0]:.3f} ... {median[-1]:.3f} ms.")


def verify_split(core: ov.Core, hetero: str, devices, model: ov.Model, gen: Generation) -> str:
    """``verification.verify_placement`` of the pipeline split (layers 2-3 on the second device) as the default path
    would verify a candidate: the dynamic model, contenders compiled as compile_model returns them, on ``gen``."""
    from ov_autoplace.call_request import build_request
    from ov_autoplace.decision.verification import verify_placement
    from ov_autoplace.graph.arrays import extract_graph
    from ov_autoplace.model.prepare import prepare_model
    from ov_autoplace.placement.legalizer import query_support

    pins = {"*layers.2.*": devices[1], "*layers.3.*": devices[1]}
    split = ov_autoplace.place(model, hetero, core=core, pins=pins, generation=gen)
    req = build_request(model, hetero, core=core, generation=gen)
    prepared = prepare_model(req.placement_model)
    graph = extract_graph(prepared)
    support = query_support(core, prepared, graph, req.devices)
    _, evidence = verify_placement(core, prepared, graph, split, support=support, model=model, device_name=hetero,
                                   generation=gen)
    return evidence.describe()


def ov_load() -> str:
    try:
        return ", ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
