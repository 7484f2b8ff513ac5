"""What compiling a one-device decision through HETERO costs, against the device compiled alone (measured).

A HETERO call whose placement keeps one device is compiled through the caller's HETERO string: the plain call
itself for HETERO's first device, every node's affinity on the device otherwise (``compile_decided.py``), so the
app gets a HETERO compiled model (its properties, an exported blob that imports with its string). This times, in
paired interleaved rounds on the native timer (``verification.time_rounds``), each model compiled three ways:

* ``alone``: ``core.compile_model(model, "CPU")``, what ov_autoplace compiled before;
* ``plain``: ``core.compile_model(model, "HETERO:CPU,CPUF")``, the replaced call (and the first-device decision);
* ``affinity``: every node's affinity on ``CPUF``, through ``"HETERO:CPU,CPUF"`` (another device's decision; on
  the testbed CPUF is the CPU plugin in f32, so compare it with ``CPUF`` alone, also timed).

It also times what an app does next with the compiled model: ``export_model()`` and ``core.import_model(blob,
device string)`` of each, in paired interleaved rounds (the order rotates each round), with the blob's size: the
cost of handing back a HETERO compiled model instead of the device's own.

    python benchmarks/bench_one_device_hetero.py [--rounds 15] [--blob-rounds 11]
        [--markdown docs/bench/one_device_hetero.md]

With ``--decoder openvino_model.xml`` (a stateful decoder, e.g. optimum-intel's export: ``tests/llm_models.py``) it
times that model's generation instead (``verification.time_rounds`` on a ``Generation(prompt, --new)`` for each of
``--prompts``), and replaces only the page's decoder section: per-token latency and time to first token of each
contender, the per-round per-token ratio against the device alone, and the teacher-forced logits' largest
difference from those of the device it runs on, compiled alone (over their scale). A decoder gets a fifth
contender, ``returned``: the first device's decision as ``compile_model`` returns it, the plain call plus the
model's runtime options on each device (``compile/placed_compile.py``: optimum-intel writes
``KV_CACHE_PRECISION``, which HETERO's submodels lose), and ``affinity`` gets them too, as
``compile_on_one_device`` gives them. ``--standard`` runs the testbed's ``CPU`` in
bf16 where the CPU has it (default: both devices f32).
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ov_autoplace.compile.placed_compile import compile_on_one_device  # noqa: E402
from ov_autoplace.decision.verification import time_rounds  # noqa: E402
from ov_autoplace.devices.properties import with_runtime_options  # noqa: E402
from ov_autoplace.devices.testbed import shared_testbed  # noqa: E402
from ov_autoplace.devices.timing import random_inputs  # noqa: E402
from ov_autoplace.model.generation import Generation  # noqa: E402
from tests import synthetic_graphs as sg  # noqa: E402

MODELS = {"residual": lambda: sg.residual(blocks=4, channels=32, size=56),
          "attention_like": lambda: sg.attention_like(),
          "residual_small": lambda: sg.residual()}


#: Each contender's device string, for import_model (the one its blob imports with).
IMPORT_DEVICE = {"alone": "CPU", "plain": None, "CPUF alone": "CPUF", "affinity": None,
                 "returned": None}  # None: the HETERO string


def measure_blobs(core, hetero: str, compiled: dict, rounds: int) -> dict:
    """Per contender: median export ms, median import ms, per-round ratios against the device alone, blob bytes."""
    labels = list(compiled)
    export_ms: dict[str, list[float]] = {k: [] for k in labels}
    import_ms: dict[str, list[float]] = {k: [] for k in labels}
    size = {}
    for r in range(rounds):
        for label in labels[r % len(labels):] + labels[:r % len(labels)]:  # rotate who goes first
            t = time.perf_counter()
            blob = compiled[label].export_model()
            export_ms[label].append(1e3 * (time.perf_counter() - t))
            t = time.perf_counter()
            core.import_model(blob, IMPORT_DEVICE[label] or hetero)
            import_ms[label].append(1e3 * (time.perf_counter() - t))
            size[label] = blob.getbuffer().nbytes if hasattr(blob, "getbuffer") else len(blob)
    pairs = {"plain/alone": ("plain", "alone"), "affinity/CPUF alone": ("affinity", "CPUF alone")}
    ratio = {name: {kind: _spread([a / b for a, b in zip(times[x], times[y])])
                    for kind, times in (("export", export_ms), ("import", import_ms))}
             for name, (x, y) in pairs.items()}
    return {"export_ms": {k: statistics.median(v) for k, v in export_ms.items()},
            "import_ms": {k: statistics.median(v) for k, v in import_ms.items()}, "bytes": size, "ratio": ratio}


def _spread(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def four_ways(tb, model) -> dict:
    """label -> a call compiling ``model`` that way on the testbed ``tb`` (the module doc's four)."""
    return {"alone": lambda: tb.core.compile_model(model, "CPU"),
            "plain": lambda: tb.core.compile_model(model, tb.hetero),
            "CPUF alone": lambda: tb.core.compile_model(model, "CPUF"),
            "affinity": lambda: compile_on_one_device(tb.core, model, tb.hetero, "CPUF")}


def measure(rounds: int, iterations: int, blob_rounds: int) -> list[dict]:
    tb = shared_testbed(True)  # both devices f32: CPUF alone is what the affinity contender runs
    rows = []
    for name, build in MODELS.items():
        model = build()
        started = {}
        compiled = {}
        for label, make in four_ways(tb, model).items():
            t = time.perf_counter()
            compiled[label] = make()
            started[label] = 1e3 * (time.perf_counter() - t)
        inputs = random_inputs(compiled["alone"])
        ms = time_rounds(compiled, inputs, rounds=rounds, min_rounds=rounds, iterations=iterations, budget_s=1e9)
        ratios = {"plain/alone": [p / a for p, a in zip(ms["plain"], ms["alone"])],
                  "affinity/CPUF alone": [p / a for p, a in zip(ms["affinity"], ms["CPUF alone"])]}
        rows.append({"model": name, "median_ms": {k: statistics.median(v) for k, v in ms.items()},
                     "compile_ms": started,
                     "ratio": {k: (statistics.median(v), min(v), max(v)) for k, v in ratios.items()},
                     "blobs": measure_blobs(tb.core, tb.hetero, compiled, blob_rounds)})
    return rows


def markdown(rows: list[dict], command: str) -> str:
    out = [f"# One-device decisions compiled through HETERO ({datetime.date.today()}, measured)", "",
           f"`{command}`; medians of paired interleaved rounds; per-round ratio median [min, max].", "",
           "| model | alone ms | plain HETERO ms | ratio | CPUF alone ms | affinity ms | ratio | compile ms (alone / plain / affinity) |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m, c = r["median_ms"], r["compile_ms"]
        p, a = r["ratio"]["plain/alone"], r["ratio"]["affinity/CPUF alone"]
        out.append(f"| {r['model']} | {m['alone']:.3f} | {m['plain']:.3f} | {p[0]:.3f} [{p[1]:.3f}, {p[2]:.3f}] | "
                   f"{m['CPUF alone']:.3f} | {m['affinity']:.3f} | {a[0]:.3f} [{a[1]:.3f}, {a[2]:.3f}] | "
                   f"{c['alone']:.0f} / {c['plain']:.0f} / {c['affinity']:.0f} |")
    out += ["", "Export and import (what an app does next): medians of paired rounds in ms, the per-round ratio "
            "against the device alone median [min, max], and the blob's bytes. `plain` imports with `HETERO:CPU,CPUF` (the "
            "first-device decision returns exactly this call), `affinity` too; `alone` / `CPUF alone` with their "
            "device.", "",
            "| model | contender | export ms | import ms | blob bytes | export ratio | import ratio |",
            "|---|---|---|---|---|---|---|"]
    for r in rows:
        b = r["blobs"]
        for label, against in (("alone", None), ("plain", "plain/alone"), ("CPUF alone", None),
                               ("affinity", "affinity/CPUF alone")):
            e, i = (b["ratio"][against]["export"], b["ratio"][against]["import"]) if against else (None, None)
            cell = (lambda x: f"{x[0]:.2f} [{x[1]:.2f}, {x[2]:.2f}]" if x else "")
            out.append(f"| {r['model']} | {label} | {b['export_ms'][label]:.2f} | {b['import_ms'][label]:.2f} | "
                       f"{b['bytes'][label]:,} | {cell(e)} | {cell(i)} |")
    return "\n".join(out) + "\n"


DECODER_HEADING = "## A stateful decoder: per-token latency"


def measure_decoder(xml: Path, rounds: int, prompts: tuple[int, ...], new: int, standard: bool) -> dict:
    """The decoder compiled five ways; per prompt, its generations timed in paired rounds (per-round parts per
    contender) and each contender's teacher-forced logits against those of its device compiled alone."""
    from tests.llm_models import generate  # the tests' generation loop: reset_state, prefill, one token per step

    tb = shared_testbed(not standard)
    model = tb.core.read_model(xml)
    ways = four_ways(tb, model)
    ways["returned"] = lambda: tb.core.compile_model(model, tb.hetero,
                                                     with_runtime_options(tb.core, model, tb.devices, {}))
    compiled = {label: make() for label, make in ways.items()}
    out = {}
    for prompt in prompts:
        parts: dict = {}
        time_rounds(compiled, [], rounds=rounds, min_rounds=rounds, iterations=4, budget_s=1e9,
                    generation=Generation(prompt, new), parts=parts)
        tokens = list(np.random.default_rng(prompt).integers(1, 1000, size=prompt))
        references = {label: generate(compiled[label], tokens, 8) for label in ("alone", "CPUF alone")}
        logits = {}
        for label, c in compiled.items():  # against the device it runs on, compiled alone
            own = "CPUF alone" if label in ("CPUF alone", "affinity") else "alone"
            reference_tokens, reference = references[own]
            forced = generate(c, tokens, 8, teacher=reference_tokens)[1]
            logits[label] = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(forced, reference))
        out[prompt] = {"parts": parts, "logits": logits}
    return out


def decoder_markdown(xml: Path, measured: dict, new: int, standard: bool, command: str) -> str:
    precision = "the testbed's CPU in bf16 where the CPU has it, CPUF f32" if standard else "both devices f32"
    out = [f"{DECODER_HEADING} ({datetime.date.today()}, measured)", "",
           f"`{command}`: `{xml.name}` from `{xml.parent.name}`, {precision}; per prompt, paired rounds (each a "
           "median of 2 generations, `devices/timing.time_generation`), the per-round per-token ratio against the "
           "device alone median [min, max], and the teacher-forced logits' largest difference over 8 steps from "
           "those of the device it runs on, compiled alone (max |difference| over that one's max |logit|). "
           "`returned` is the first device's decision as `compile_model` returns it (the plain call with the "
           "model's runtime options on each device); `affinity` is CPUF's (`compile_on_one_device`, with them too)."]
    for prompt, m in measured.items():
        parts, logits = m["parts"], m["logits"]
        med = {k: {q: statistics.median(p[q] for p in v) for q in ("per_token_ms", "ttft_ms")}
               for k, v in parts.items()}
        out += ["", f"Prompt {prompt}, {new} tokens, {len(parts['alone'])} rounds:", "",
                "| contender | per token ms | ratio to the device alone | time to first token ms "
                "| logits vs the device alone |",
                "|---|---|---|---|---|"]
        for label, against in (("alone", None), ("plain", "alone"), ("returned", "alone"), ("CPUF alone", None),
                               ("affinity", "CPUF alone")):
            cell = ""
            if against:
                r = [a["per_token_ms"] / b["per_token_ms"] for a, b in zip(parts[label], parts[against])]
                cell = f"{statistics.median(r):.3f} [{min(r):.3f}, {max(r):.3f}]"
            out.append(f"| {label} | {med[label]['per_token_ms']:.4f} | {cell} | {med[label]['ttft_ms']:.3f} | "
                       f"{logits[label]:.1e} |")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--blob-rounds", type=int, default=11)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--decoder", type=Path, help="a stateful decoder's XML: time its generation instead")
    parser.add_argument("--prompts", default="128", type=lambda t: tuple(int(x) for x in t.split(",")))
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--standard", action="store_true", help="CPU in bf16 where the CPU has it (decoder only)")
    args = parser.parse_args()
    command = "python benchmarks/bench_one_device_hetero.py " + " ".join(sys.argv[1:])
    if args.decoder:
        measured = measure_decoder(args.decoder, args.rounds, args.prompts, args.new, args.standard)
        text = decoder_markdown(args.decoder, measured, args.new, args.standard, command)
        print(text)
        if args.markdown:  # replaces the decoder section only
            page = args.markdown.read_text() if args.markdown.exists() else ""
            kept = page.split(DECODER_HEADING)[0].rstrip("\n")
            args.markdown.write_text((kept + "\n\n" if kept else "") + text)
        return 0
    rows = measure(args.rounds, args.iterations, args.blob_rounds)
    text = markdown(rows, command)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
