"""Where the per-token spread of identical compiles lives: in the compile, or in the infer request an app creates on it.

    python benchmarks/bench_request_lottery.py [--family llama] [--size small] [--dir /tmp/llm] [--device CPU]
                                               [--compiles 4] [--requests 3] [--rounds 60] [--prompt 128] [--new 64]
                                               [--write docs/bench/request-lottery.md]

Compiles of the same decoder on the same device, in one process, run a few per cent apart per token, resolved
(``bench_llm.py``'s spread line). A compiled model is what ``compile_model`` returns; the app then creates its own
infer request on it. This benchmark separates the two draws: ``--compiles`` plain compiles of one stateful decoder
(``core.compile_model(model, device)``, exported by optimum-intel as ``bench_llm.py`` does, or ``--xml``), each with
``--requests`` infer requests created in turn right after it, every request timed once per round in ``--rounds``
paired rounds (a rotated order; ``reset_state``, a ``--prompt`` prefill, ``--new - 1`` greedy decode steps; per-token
latency: their mean, as ``bench_llm.py``). Each round's reference is the median over all the requests of that round,
so the machine's drift cancels; a request's effect is the median over rounds of its log ratio to it.

From the effects, with a 95 % interval from resampling the rounds:

* the request spread: the standard deviation of the effects of requests on one compile, less what the timing noise
  alone would give (the noise of each effect: its bootstrap variance);
* the compile spread: the standard deviation of the compiles' mean effects, less what their requests' spread and the
  noise give through the mean;
* the first request's excess: the first request created on each compile against the later ones, averaged over the
  compiles, and the request spread without the first requests (with three or more requests).

If the request spread is at least the compile spread, choosing among compiles by timing one request each reads
mostly the request's luck, which the app does not get: it creates a request of its own.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_llm import load_average, time_contenders  # noqa: E402

BOOTSTRAP = 2000


def time_requests(compiled_models: list, requests: int, rounds: int, prompt: int, new: int,
                  vocabulary: int) -> np.ndarray:
    """Per-token ms, array[compiles, requests, rounds]: ``requests`` infer requests created in turn on each compiled
    model, each a contender of ``bench_llm.time_contenders`` (one request each, timed once per paired round in a
    rotated order)."""
    made = {(c, r): (compiled,) for c, compiled in enumerate(compiled_models) for r in range(requests)}
    times = time_contenders(made, (prompt,), new, rounds, vocabulary)
    return np.array([[times[(c, r)][prompt][:, 1] for r in range(requests)] for c in range(len(compiled_models))])


def _request_sd(log_ratio: np.ndarray, noise_var: np.ndarray) -> tuple[float, float]:
    """(sd of the requests on one compile beyond the noise, the within-compile variance it was read from)."""
    if log_ratio.shape[1] < 2:
        return float("nan"), float("nan")
    within = float(np.mean(np.var(log_ratio, axis=1, ddof=1)))
    return max(0.0, within - float(np.mean(noise_var))) ** 0.5, within


def _components(log_ratio: np.ndarray, noise_var: np.ndarray) -> tuple[float, float, float, float]:
    """(request sd, compile sd, first request's excess, later requests' sd) from effects ``log_ratio[c, r]`` and
    their noise variances."""
    compiles, requests = log_ratio.shape
    request_sd, within = _request_sd(log_ratio, noise_var)
    between = float(np.var(log_ratio.mean(axis=1), ddof=1)) if compiles > 1 else 0.0
    compile_var = max(0.0, between - within / requests)
    first = float(np.mean(log_ratio[:, 0] - log_ratio[:, 1:].mean(axis=1)))
    return request_sd, compile_var ** 0.5, first, _request_sd(log_ratio[:, 1:], noise_var[:, 1:])[0]


def _effects(times: np.ndarray, rounds: np.ndarray) -> np.ndarray:
    """Each request's median log ratio to its round's median over every request, over the given rounds."""
    t = np.log(times[:, :, rounds])
    return np.median(t - np.median(t.reshape(-1, t.shape[-1]), axis=0), axis=2)


def spread_components(times: np.ndarray, draws: int = BOOTSTRAP, seed: int = 0) -> dict:
    """Effects, noise, and the three statistics with 95 % intervals over rounds resampled with replacement."""
    n = times.shape[-1]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(draws, n))
    boot = np.stack([_effects(times, p) for p in picks])  # [draws, compiles, requests]
    effects, noise_var = _effects(times, np.arange(n)), np.var(boot, axis=0)
    stats = np.array([_components(b, noise_var) for b in boot])
    point = _components(effects, noise_var)
    lo, hi = np.percentile(stats, [2.5, 97.5], axis=0)
    names = ("request_sd", "compile_sd", "first_request", "later_request_sd")
    return {"effects": effects, "noise_sd": np.sqrt(noise_var),
            **{k: (point[i], float(lo[i]), float(hi[i])) for i, k in enumerate(names)}}


def _pct(log_value: float) -> str:
    return f"{100 * (np.exp(log_value) - 1):+.1f} %"


def page(times: np.ndarray, result: dict, header: str) -> str:
    compiles, requests, rounds = times.shape
    lines = [header, "",
             "| compile | request | per token ms (median) | against the round's median | noise sd of that |",
             "|---|---|---:|---:|---:|"]
    for c in range(compiles):
        for r in range(requests):
            lines.append(f"| {c + 1} | {r + 1} | {np.median(times[c, r]):.3f} | {_pct(result['effects'][c, r])} | "
                         f"{100 * result['noise_sd'][c, r]:.1f} % |")
    names = {"request_sd": "Request spread (sd of requests on one compile, beyond the timing noise)",
             "compile_sd": "Compile spread (sd of compiles' means, beyond their requests' spread and noise)",
             "first_request": "First request's excess (first created against the later ones, mean over compiles)",
             "later_request_sd": "Request spread without the first requests (sd of the later requests on one compile)"}
    lines.append("")
    for key, text in names.items():
        point, lo, hi = result[key]
        fmt = (lambda v: f"{100 * v:.1f} %") if key != "first_request" else _pct
        if np.isfinite(point):
            lines.append(f"- {text}: {fmt(point)} (95 %: {fmt(lo)} to {fmt(hi)})")
    lines += ["", "The intervals resample the rounds: they carry the timing noise, not the luck of which compiles and "
              f"requests were drawn ({compiles} and {requests} of them)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="llama")
    parser.add_argument("--size", default="small")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/llm"))
    parser.add_argument("--xml", type=Path, default=None, help="an IR to time instead of the exported decoder")
    parser.add_argument("--device", default="CPU")
    parser.add_argument("--compiles", type=int, default=4)
    parser.add_argument("--requests", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--write", type=Path, default=None, help="write the page here")
    args = parser.parse_args(argv)
    import openvino as ov

    if args.compiles < 2 or args.requests < 2:
        parser.error("--compiles and --requests must each be at least 2 to separate the two spreads")
    if args.xml is None:
        from tests.llm_models import export_decoder

        args.dir.mkdir(parents=True, exist_ok=True)
        args.xml = export_decoder(args.family, args.dir, args.size) / "openvino_model.xml"
    core = ov.Core()
    model = core.read_model(args.xml)
    vocabulary = int(model.output("logits").get_partial_shape()[-1].get_length())
    started, load_before, t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load_average(), time.perf_counter()
    compiled = [core.compile_model(model, args.device) for _ in range(args.compiles)]
    times = time_requests(compiled, args.requests, args.rounds, args.prompt, args.new, vocabulary)
    result = spread_components(times)
    command = "python benchmarks/bench_request_lottery.py " + " ".join(argv if argv is not None else sys.argv[1:])
    header = (f"# Compile or request: where identical compiles' per-token spread lives\n\n[Back to LLMs](../llm.md)\n\n"
              f"Made by `{command}` (the script's docstring says what each number is), measured {started}, "
              f"{(time.perf_counter() - t0) / 60:.1f} min; load average before: {load_before}, after: "
              f"{load_average()}. `{args.xml.parent.name}` on `{args.device}`, {args.compiles} compiles x "
              f"{args.requests} infer requests, {args.rounds} paired rounds, a {args.prompt}-token prompt and "
              f"{args.new} new tokens.")
    text = page(times, result, header)
    print(text)
    if args.write:
        args.write.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
