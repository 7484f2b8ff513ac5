"""Every placing path on stateful decoders: correct generations, and time to first token / per-token latency of what
``compile_model`` returns against the plain call and each single device, on a quiet machine and with a core busy.

    python benchmarks/bench_llm.py [--families llama,qwen2] [--size tiny] [--reverse] [--conditions quiet,busy]
                                   [--prompts 16,128] [--new 32] [--rounds 9] [--search-budget 4] [--path-runs 1]
                                   [--dir /tmp/llm]
                                   [--write docs/bench/llm.md] [--note "shared with 3 other sessions"]

Run in the LLM venv (``. .venv-llm/bin/activate``, docs/llm.md). For each family, it exports a random-weight decoder
of ``--size`` with optimum-intel (``tests/llm_models.SIZES``: ``tiny``, 4 layers of hidden 64, a decode step of ~0.5
ms where HETERO's per-infer cost and the scheduler's jitter weigh; ``small``, 8 layers of hidden 512, ~42 M
parameters; reused from ``--dir``) and, for each condition, on the testbed's two devices that differ
(``tests/testbeds.distinct_devices``): ``HETERO:CPU,CPUF`` (bf16 and f32) where the CPU has bf16, else
``HETERO:CPU,CPUS`` (the CPU plugin on all cores and on one thread):

* compiles the plain call ``core.compile_model(model, "HETERO:CPU,CPUS")``, each single device, and
  ``ov_autoplace.compile_model`` by every path with ``generation=(max prompt, --new)``, each in a cache of its own:
  the default path (its first start, and its next start after the background worker stored what it measured),
  ``profile="now"``, ``profile="background"`` then the next start (after the worker stored its placement),
  ``strategy="heft"``, ``"hsdag_local_search"``, ``search_budget=`` (the lab), and the pinned pipeline split (the
  second half of the layers on CPUS);
* checks each against the plain call at every prompt length over ``--new`` greedy steps: teacher-forced logits
  within 1 % of the logits' scale at every step, and whether the greedy tokens are the same (CPU and CPUS are both
  f32: like for like, the same tokens; bf16 against f32 may flip a near-tie of random weights), and a contender on
  one device against that device compiled by itself too (the plain call through HETERO loses the model's runtime
  options, e.g. its KV cache precision, which what ``compile_model`` returns keeps: ``compile/placed_compile.py``);
* runs each path ``--path-runs`` times from scratch (a cache of its own each time; every path once before any
  twice): a path's compile is one draw too, of the device's compiles and of the path's own decision, so above 1
  each path is also read as the per-round median of its runs, as the best device is read as the median of its
  compiles;
* compiles each single device ``--reference-compiles`` times (the first before the paths place, the others after):
  compiles of the same model on the same device, in one process, timed through one infer request each, differed
  per token by a few percent, resolved (not by the order they are timed in: a shuffled order gave the same), so
  one compile is one draw of what the device runs (mostly its first request's draw: below);
* times them in ``--rounds`` paired rounds, every contender once per round in a rotated order, at every prompt
  length: ``reset_state``, a prefill (time to first token), then ``--new - 1`` greedy decode steps (per-token
  latency: their mean). Each contender has ``--requests`` infer requests, created in turn, and round ``r`` times
  request ``r % --requests`` of every contender: the first request created on a compiled model ran about 2 % slower
  per token than later ones on it, by an amount that varies from compile to compile, while later requests ran
  alike (``bench_request_lottery.py``), so one request per contender reads the first request's luck as much as
  the compiled model; each slot is timed alike for every contender. Ratios are per round, against the plain call
  and against the best single device (the one whose compiles have the lower median per-token latency; per round,
  the median of its compiles); the median, a 95 % bootstrap interval of that median (over the rounds) and the
  rounds' range are reported, and how far the device's own compiles lie from that reference. The target:
  per-token latency <= 1.02x the best single device's, read off the median; the interval says how far this run can
  tell (one whose interval holds 1.02 is not resolved either way). A line under each table counts the path rows
  within it and those resolved slower, beside the same count for the best device's own later compiles against the
  same reference: how often one more draw of the device itself misses the target.

``--reverse`` lists the two devices the other way round (``HETERO:CPUF,CPU``): the plain call then runs the device
that is the slower one where the CPU has bf16 (f32 against bf16: each decode step reads twice the weight bytes), as
a user's first device may be; the paths that measure are to find the other one (the default path's first start
measures nothing and runs the plain call's device; its next start runs what the background worker measured).

``busy``: a process this benchmark starts spins on one core for the whole condition (placing and timing: the load
the app runs under), bounded by ``--hog-seconds`` and ended when the condition ends. ``--write`` replaces this run's
sections of the page (one per family and condition) and keeps the others, so a rerun of one condition updates it.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import openvino as ov

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ov_autoplace  # noqa: E402
from ov_autoplace.devices.timing import round_order  # noqa: E402
from tests.llm_models import SIZES, export_decoder, generate  # noqa: E402
from tests.testbeds import distinct_devices  # noqa: E402

TARGET = 1.02  # per-token latency of what compile_model returns over the best single device's
LOGIT_TOLERANCE = 1e-2  # teacher-forced logits: max |difference| over the reference's max |logit|


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


@contextlib.contextmanager
def core_busy(busy: bool, seconds: float):
    """With ``busy``, one process spinning on a core for at most ``seconds``, ended when the block ends."""
    if not busy:
        yield
        return
    hog = subprocess.Popen([sys.executable, "-c", f"import time\nend = time.time() + {seconds}\n"
                            "while time.time() < end:\n    pass"])
    try:
        time.sleep(1.0)  # the load is there before anything is placed
        yield
    finally:
        hog.kill()
        hog.wait()


class _Log(logging.Handler):
    """The placing calls' WARNINGs (a fallback names itself there) and their verification lines."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.warnings: list[str] = []
        self.verifications: list[str] = []

    def emit(self, record):
        text = record.getMessage()
        if record.levelno >= logging.WARNING and ("fall" in text or "failed" in text):
            self.warnings.append(text)
        elif text.startswith(("placement source:", "verification (", "placed ", "search:")):
            self.verifications.append(text)


def wait_for_worker(cache: Path, timeout: float = 900.0) -> str:
    """The background worker's last line once it stored a placement (or why it did not), waiting up to ``timeout``."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for log in cache.glob("workers/*/worker.log"):
            text = log.read_text(errors="replace")
            done = [line for line in text.splitlines() if "stored the " in line or "failed" in line]
            if done:
                return done[-1]
        time.sleep(2.0)
    return f"no placement stored within {timeout:.0f} s"


def place_every_path(core, hetero: str, second: str, model, gen: tuple[int, int], budget: int, log: _Log,
                     root: Path, runs: int = 1):
    """label -> (compiled model, how it was made, seconds to place); each path in a cache directory of its own
    under ``root`` (which the caller removes once it has timed them).
    A "next start" path compiles again once the background worker its first start spawned stored its placement;
    any other path's worker is waited for too (unused), so no worker runs while the others place or are timed.
    ``runs``: each path (not the pinned split) run that many times from scratch, all paths once before any twice;
    the later runs are labelled ``"<path>, run <k>"``."""
    layers = sum(op.get_type_name() == "ReadValue" for op in model.get_ops()) // 2  # a key and a value per layer
    paths = {"default path": {}, "default path, next start": {}, "profile=now": {"profile": "now"},
             "background, next start": {"profile": "background"},
             "heft": {"strategy": "heft"}, "hsdag_local_search": {"strategy": "hsdag_local_search"},
             f"search_budget={budget}": {"search_budget": budget},
             "pipeline split": {"pins": {f"*layers.{k}.*": second for k in range(layers // 2, layers)}}}
    out = {}
    for label, kwargs in [(label if run == 1 else f"{label}, run {run}", kwargs)
                          for run in range(1, runs + 1) for label, kwargs in paths.items()
                          if run == 1 or label != "pipeline split"]:
        cache = Path(tempfile.mkdtemp(dir=root))
        t0 = time.perf_counter()
        try:
            compiled = ov_autoplace.compile_model(model, hetero, core=core, cache_dir=cache, generation=gen, **kwargs)
            first_call = time.perf_counter() - t0
            if any(cache.glob("workers/*")):
                log.verifications.append(f"worker ({label}): {wait_for_worker(cache)}")
            if "next start" in label:  # the next start, once the worker stored its placement
                compiled = ov_autoplace.compile_model(model, hetero, core=core, cache_dir=cache, generation=gen)
        except Exception as exc:  # noqa: BLE001 - a path that raises is reported, the others still run
            log.warnings.append(f"{label} raised {type(exc).__name__}: {exc}")
            continue
        args, total = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()), time.perf_counter() - t0
        out[label] = (compiled, f"`compile_model(..., generation={gen}{', ' + args if args else ''})`"
                      + (" twice" if "next start" in label else "")
                      + (f", its first call {first_call:.1f} s" if total > first_call + 0.05 else ""), total)
        print(f"  placed {label}: {_devices_of(compiled)} ({total:.1f} s)", flush=True)
    return out


def _devices_of(compiled: ov.CompiledModel) -> str:
    try:
        return ", ".join(compiled.get_property("EXECUTION_DEVICES"))
    except RuntimeError:
        return "?"


def check_generations(plain, compiled, prompts, steps: int, vocabulary: int) -> tuple[float, bool]:
    """(largest teacher-forced logit error over the logits' scale, whether greedy tokens equal the plain call's)
    over ``steps`` greedy steps at each prompt length."""
    rng, worst, same = np.random.default_rng(7), 0.0, True
    for prompt_len in prompts:
        prompt = rng.integers(0, vocabulary, size=prompt_len).tolist()
        tokens, reference = generate(plain, prompt, steps)
        _, forced = generate(compiled, prompt, steps, teacher=tokens)
        worst = max([worst] + [float(np.abs(g - w).max() / np.abs(w).max()) for g, w in zip(forced, reference)])
        same &= generate(compiled, prompt, steps)[0] == tokens
    return worst, same


def time_contenders(made: dict, prompts, new: int, rounds: int, vocabulary: int, requests: int = 1) -> dict:
    """label -> prompt -> array[rounds, 3] (TTFT ms, per-token ms, generation ms), paired and interleaved. Each
    contender gets ``requests`` infer requests, created in turn; round ``r`` times request ``r % requests`` of every
    contender, so a compiled model is read over several of the request draws an app may get, each slot alike."""
    made_requests = {label: [compiled.create_infer_request() for _ in range(requests)]
                     for label, (compiled, *_) in made.items()}
    rng = np.random.default_rng(0)
    for each in made_requests.values():  # warm-up
        for request in each:
            one_generation(request, max(prompts), 4, vocabulary, rng)
    rows = {label: {p: [] for p in prompts} for label in made_requests}
    for r in range(rounds):
        for label in round_order(list(made_requests), r):
            for p in prompts:
                rows[label][p].append(one_generation(made_requests[label][r % requests], p, new, vocabulary, rng))
    return {label: {p: np.array(v) for p, v in by.items()} for label, by in rows.items()}


def _ratio(values: np.ndarray, reference: np.ndarray, k: int) -> tuple[float, float, float]:
    ratios = values[:, k] / reference[:, k]
    return float(np.median(ratios)), float(ratios.min()), float(ratios.max())


def _median_interval(values: np.ndarray, reference: np.ndarray, k: int, draws: int = 4000) -> tuple[float, float]:
    """95 % bootstrap interval of the median per-round ratio (rounds resampled with replacement)."""
    ratios = values[:, k] / reference[:, k]
    picks = np.random.default_rng(0).integers(0, ratios.size, size=(draws, ratios.size))
    lo, hi = np.percentile(np.median(ratios[picks], axis=1), [2.5, 97.5])
    return float(lo), float(hi)


def reference_times(times: dict, labels: list[str], prompt: int) -> np.ndarray:
    """A single device's times per round: the median over its compiles (array[rounds, 3]). Two compiles of the same
    model on the same device, in the same process, ran up to 5 % apart per token through one request each, resolved,
    however long they were timed: one compile is one draw of what the device runs, and a target read against one
    draw reads its luck."""
    return np.median(np.stack([times[label][prompt] for label in labels]), axis=0)


def spread_line(times: dict, compiles: dict[str, list[str]], prompt: int) -> str:
    """How far a device's compiles differ: each later compile against its first, per token (the median per-round
    ratio and its 95 % interval, as the table's)."""
    parts = []
    for device, (first, *later) in compiles.items():
        for label in later:
            (ratio, *_), (lo, hi) = (_ratio(times[label][prompt], times[first][prompt], 1),
                                     _median_interval(times[label][prompt], times[first][prompt], 1))
            parts.append(f"{device} compile {label.rsplit(' ', 1)[-1]} {ratio:.3f} ({lo:.3f}-{hi:.3f})")
    return ("The same device compiled again, per token against its first compile (median per-round ratio, 95 % "
            f"interval): {'; '.join(parts) if parts else 'one compile each (--reference-compiles 1)'}.")


def target_line(times: dict, paths: list[str], later_compiles: list[str], reference: np.ndarray, prompt: int,
                runs: dict[str, list[str]] | None = None) -> str:
    """How many path rows meet the target by point estimate and how many are resolved slower, beside the same count
    for the best device's own later compiles read against the same reference: the rate at which one more draw of
    the device itself misses it. ``runs`` (path -> the labels of its runs), where a path ran more than once: each
    path also read as the per-round median of its runs, as the reference is the median of the device's compiles,
    so a path is judged on what it returns, not on one compile's draw."""
    def count(rows: dict[str, np.ndarray]) -> str:
        within, slower = 0, []
        for label, values in rows.items():
            ratio = _ratio(values, reference, 1)[0]
            lo = _median_interval(values, reference, 1)[0]
            within += ratio <= TARGET
            slower += [f"{label} {ratio:.3f}x"] if lo > TARGET else []
        return f"{within} of {len(rows)} (resolved slower: {', '.join(slower) if slower else 'none'})"
    line = (f"Within {TARGET}x of the best single device by point estimate at prompt {prompt}: path rows "
            f"{count({label: times[label][prompt] for label in paths})}; the best device's own later compiles "
            f"{count({label: times[label][prompt] for label in later_compiles})}.")
    most = max((len(labels) for labels in runs.values()), default=1) if runs else 1
    if most > 1:
        pooled = {path: reference_times(times, labels, prompt) for path, labels in runs.items()}
        each = ", ".join(f"{path} {_ratio(values, reference, 1)[0]:.3f}x" for path, values in pooled.items())
        line += f" Each path as the per-round median of its {most} runs: {count(pooled)}; {each}."
    return line


def load_average() -> str:
    try:
        return ", ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def run_condition(core, devices, family: str, model, condition: str, args, key: str) -> str:
    """One family under one condition: place, check, time; the page's section as markdown."""
    hetero = f"HETERO:{','.join(devices)}"
    gen = (max(args.prompts), args.new)
    vocabulary = int(model.output("logits").get_partial_shape()[-1].get_length())
    log = _Log()
    logging.getLogger("ov_autoplace").addHandler(log)
    started, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load_average()
    t0 = time.perf_counter()
    with core_busy(condition == "busy", args.hog_seconds):
        t_plain = time.perf_counter()
        made = {"plain call": (core.compile_model(model, hetero), f"`core.compile_model(model, \"{hetero}\")`",
                               time.perf_counter() - t_plain)}
        for device in devices:
            made[f"{device} alone"] = (core.compile_model(model, device), f"`core.compile_model(model, \"{device}\")`",
                                       0.0)
        root = Path(tempfile.mkdtemp(prefix="bench_llm_"))
        placed = place_every_path(core, hetero, devices[1], model, gen, args.search_budget, log, root,
                                  args.path_runs)
        paths = [label for label in placed if label != "pipeline split"]
        runs: dict[str, list[str]] = {}  # path -> the labels of its runs, as place_every_path names them
        for label in paths:
            runs.setdefault(label.split(", run ")[0], []).append(label)
        made |= placed
        for k in range(2, args.reference_compiles + 1):  # the same device compiled again: its compiles' spread
            for device in devices:
                made[f"{device} alone, compile {k}"] = (
                    core.compile_model(model, device), "the same again, after the paths placed", 0.0)
        checks = {label: check_generations(made["plain call"][0], compiled, args.prompts, args.new, vocabulary)
                  for label, (compiled, *_) in made.items() if label != "plain call"}
        alone_checks = {}  # a contender on one device against that device compiled by itself (its own precision)
        for label, (compiled, *_) in made.items():
            one = _devices_of(compiled)
            if f"{one} alone" in made and label != f"{one} alone":
                alone_checks[label] = (one, check_generations(made[f"{one} alone"][0], compiled, args.prompts,
                                                              args.new, vocabulary)[0])
        load_timing = load_average()
        times = time_contenders(made, args.prompts, args.new, args.rounds, vocabulary, args.requests)
    shutil.rmtree(root, ignore_errors=True)  # every worker was waited for; the compiled models are in memory
    logging.getLogger("ov_autoplace").removeHandler(log)
    minutes = (time.perf_counter() - t0) / 60
    compiles = {d: [label for label in made if label == f"{d} alone" or label.startswith(f"{d} alone, compile")]
                for d in devices}
    reference = {d: {p: reference_times(times, labels, p) for p in args.prompts} for d, labels in compiles.items()}
    lines = [f"<!-- section: {key} -->",
             f"### {family} ({args.size}), {condition}: {args.rounds} paired rounds on `{hetero}`, "
             f"prompts {list(args.prompts)}, "
             f"{args.new} new tokens, {args.requests} infer request(s) each in turn, measured {started}", "",
             f"Load average (1, 5, 15 min) before: {load_before}; when timing started: {load_timing} ({args.note}; "
             f"{'plus the one-core hog this benchmark started' if condition == 'busy' else 'no hog'}). "
             f"{minutes:.1f} min for this section.", ""]
    for p in args.prompts:
        best = min(devices, key=lambda d: np.median(reference[d][p][:, 1]))
        lines += [f"Prompt {p}: best single device by per-token latency: {best} (per round, the median of its "
                  f"{len(compiles[best])} compiles: the reference of the `/ best single` columns).", "",
                  "| contender | devices | TTFT ms | per token ms | per token / plain [range] | "
                  f"per token / best single [range] | its 95 % interval | <= {TARGET}x best | TTFT / plain [range] |",
                  "|---|---|---:|---:|---:|---:|---:|---|---:|"]
        for label, by in times.items():
            v = by[p]
            plain, single = _ratio(v, times["plain call"][p], 1), _ratio(v, reference[best][p], 1)
            ttft, (lo, hi) = _ratio(v, times["plain call"][p], 0), _median_interval(v, reference[best][p], 1)
            resolved = "" if hi <= TARGET or lo > TARGET else " (unresolved)"
            resolved += " (a reference compile)" if label in compiles[best] else ""
            lines.append(f"| {label} | {_devices_of(made[label][0])} | {np.median(v[:, 0]):.2f} | "
                         f"{np.median(v[:, 1]):.3f} | {plain[0]:.3f} [{plain[1]:.2f}-{plain[2]:.2f}] | "
                         f"{single[0]:.3f} [{single[1]:.2f}-{single[2]:.2f}] | {lo:.3f}-{hi:.3f} | "
                         f"{'yes' if single[0] <= TARGET else 'no'}{resolved} | "
                         f"{ttft[0]:.3f} [{ttft[1]:.2f}-{ttft[2]:.2f}] |")
        lines += ["", spread_line(times, compiles, p), "",
                  target_line(times, paths, compiles[best][1:], reference[best][p], p, runs), ""]
    lines += ["Generations against the plain call (teacher-forced logits: largest |difference| over the logits' "
              f"scale, {args.new} steps at each prompt; greedy tokens), and a contender on one device against that "
              "device compiled by itself:", ""]
    lines += [f"- {label}: logits {err:.1e} ({'within' if err <= LOGIT_TOLERANCE else 'OUTSIDE'} "
              f"{LOGIT_TOLERANCE:.0e}), tokens {'identical' if same else 'DIFFERENT'}"
              + (f"; against {alone_checks[label][0]} alone: logits {alone_checks[label][1]:.1e}"
                 if label in alone_checks else "")
              for label, (err, same) in checks.items()]
    lines += ["", "How each was made (seconds to place, any background worker waited for): " + "; ".join(
        f"{label}: {how}" + (f" ({s:.1f} s)" if s else "") for label, (_, how, s) in made.items()) + ".", "",
        "Fallback WARNINGs: " + ("; ".join(log.warnings) if log.warnings else "none") + ".", "",
        "Decisions (INFO):", ""] + [f"- {line}" for line in log.verifications] + [""]
    return "\n".join(lines)


def write_sections(page: Path, sections: dict[str, str], command: str) -> None:
    """Replace the sections of ``page`` this run made (by their marker), keep the others, in family order."""
    old = page.read_text() if page.exists() else ""
    kept = {key: text for text, key in re.findall(r"(<!-- section: (\S+) -->.*?)(?=<!-- section: |\Z)", old,
                                                     flags=re.S)}
    kept |= {key: text + "\n" for key, text in sections.items()}
    head = old.split("<!-- section: ")[0] if old else ""
    head = re.sub(r"Last command: `[^`]*`", f"Last command: `{command}`", head) if head else (
        "# LLMs on the testbed: every path, quiet and with a core busy\n\n[Back to LLMs](../llm.md)\n\n"
        f"Made by `benchmarks/bench_llm.py` (its docstring says what each number is). Last command: `{command}`\n\n")
    page.write_text(head + "".join(kept[k] for k in sorted(kept)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="llama,qwen2")
    parser.add_argument("--size", default="tiny", choices=sorted(SIZES),
                        help="the decoders' geometry (tests/llm_models)")
    parser.add_argument("--reverse", action="store_true", help="the testbed's two devices the other way round")
    parser.add_argument("--conditions", default="quiet,busy")
    parser.add_argument("--prompts", default="16,128", type=lambda s: tuple(int(x) for x in s.split(",")))
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--search-budget", type=int, default=4)
    parser.add_argument("--reference-compiles", type=int, default=3,
                        help="compiles of each single device; the best's per-round median is the target's reference")
    parser.add_argument("--path-runs", type=int, default=1,
                        help="runs of each path from scratch; above 1, each path is also read as their median")
    parser.add_argument("--requests", type=int, default=3,
                        help="infer requests per contender, taken in turn by round (bench_request_lottery.py: why)")
    parser.add_argument("--hog-seconds", type=float, default=1800.0, help="upper bound of the busy condition's hog")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "ov_autoplace_bench_llm")
    parser.add_argument("--write", type=Path, default=None, help="replace this run's sections of this page")
    parser.add_argument("--note", default=f"{os.cpu_count()} cores; any other process's load is in these numbers",
                        help="what the page should say about the machine's other users while this ran")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("ov_autoplace").setLevel(logging.INFO)
    logging.getLogger("ov_autoplace").propagate = False  # INFO to the handler only, WARNINGs printed below
    core, devices, _ = distinct_devices()
    devices = tuple(reversed(devices)) if args.reverse else tuple(devices)
    sections = {}
    for family in args.families.split(","):
        model = core.read_model(export_decoder(family, args.dir, args.size) / "openvino_model.xml")
        for condition in args.conditions.split(","):
            print(f"{family} ({args.size}), {condition}:", flush=True)
            key = (f"{family}{'' if args.size == 'tiny' else '_' + args.size}/{condition}"
                   f"{'/' + ','.join(devices) if args.reverse else ''}")
            sections[key] = text = run_condition(core, devices, family, model, condition, args, key)
            print(text, flush=True)
            if args.write:
                write_sections(args.write, {key: text},
                               "python benchmarks/bench_llm.py " + shlex.join(argv if argv is not None else sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
