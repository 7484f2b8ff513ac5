"""How much of a capped decoder can leave its device at all? The bound behind a decoder row no method fits.

    python benchmarks/bench_memory_bound.py [--model qwen2_dec_l] [--platform npu_cpu] [--cap CPU=0.2]
                                            [--markdown docs/bench/memory-bound.md]

A decoder row of the capped table (``bench_platforms.py --models decoders --memory-cap ...``) in which no method,
the MILP included, found a placement within the caps. Each node falls in one of three sets, from the platform's op
support alone (SIMULATED, as the row's):

* **held**: nodes the other device cannot run (on ``npu_cpu``: attention, the KV cache's ops, RoPE's Cos and Sin,
  the mask): they stay on the capped device in every placement;
* **chain**: nodes the other device runs that no held node reaches, or that reach no held node (the embedding and
  what follows it up to the first held op; the last layer's output projection, MLP, norm and LM head): on the other
  device they make a chain of submodels, which stateful rule 4 keeps (docs/llm.md);
* **between**: the rest, on a path from a held node to a held node. On the other device such a node leaves the
  device that holds the state and comes back to it (stateful rule 4).

The capped device holds at least everything but the chain set should every between node stay with it. A floor on
what it keeps in every placement the legalizer returns is proven for stateful rule 4 alone
(``ov_autoplace_lab/optimum/capped_floor.py``: a MILP that writes the rule as the legalizer computes it and
minimises the bytes left on the capped device; its dual bound, ``--floor-seconds``): the page's "Floor" line, and
the row has no split where that floor is over the cap. The probe asks the legalizer itself (every rule) and checks
the floor against it: the chain set on the other device plus one between node, and plus every window of
the between nodes in topological order (start and end in steps of ``--step``), each legalised as every decision
path legalises it (no bound on the submodels: the row's devices force their count). The page counts the proposals
the legalizer returned with a between node still on the other device, and the fewest bytes any of them left on the
capped device.

``--hetero K`` asks HETERO itself instead of the legalizer's rules: the row's own model, dynamic as the runtime
compiles it, on ``HETERO:CPU,CPUS`` (real compiles; the testbed's ``CPU`` holds what the capped device holds and
``CPUS``, the CPU plugin on one thread, stands in for the other device, whose op support stays the platform's,
SIMULATED). Each between node that reads at least 64 KiB of weights goes alone to ``CPUS``, then ``K`` proposals
of the chain set plus one to three windows of the between nodes, and the chain set alone as the control; each
placement is applied as ``Placement.apply`` applies it (the initializer copied per device, Parameters moved) with
nothing legalised, compiled, and run (a 16-token prompt and 4 steps teacher-forced on the plain compile's tokens).
The page counts HETERO's verdicts beside what stateful rules 2 and 4 said of the same placement, HETERO's errors,
and the most weights a placement HETERO ran as a split left on ``CPUS``.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_platforms import load_graph  # noqa: E402
from bench_stateful_splits import reenters_state  # noqa: E402
from ov_autoplace.costmodel.sim_costs import simulated_support  # noqa: E402
from ov_autoplace.costmodel.suite import load_suite  # noqa: E402
from ov_autoplace.graph.arrays import NodeRole, extract_graph  # noqa: E402
from ov_autoplace.model.prepare import prepare_model  # noqa: E402
from ov_autoplace.placement.assignment import Placement  # noqa: E402
from ov_autoplace.placement.legalizer import legalize  # noqa: E402
from ov_autoplace.placement.stateful import split_variables  # noqa: E402
from ov_autoplace_lab.models.decoder_models import load_decoder  # noqa: E402
from ov_autoplace_lab.optimum.capped_floor import capped_floor, node_sets  # noqa: E402
from ov_autoplace_lab.paper_bench import decoder_rows  # noqa: E402
from tests.llm_models import generate  # noqa: E402
from tests.testbeds import one_thread_core  # noqa: E402
from _common import load_average  # noqa: E402

MIB = 2 ** 20


def probe(graph, cost, support, sets, capped: int, other: int, step: int) -> dict:
    """Legalise the chain set plus each single between node and each window of them (module doc)."""
    mem = np.asarray(cost.node_memory_bytes, np.float64)
    between = np.flatnonzero(sets["between"])
    base = np.where(sets["chain"], other, capped)
    windows = [(i, i + 1) for i in range(between.size)] + [
        (s, e) for s in range(0, between.size, step) for e in range(s + step, between.size + 1, step)]
    left_any = kept_bytes = 0
    least = np.inf
    start = time.perf_counter()
    for s, e in windows:
        proposal = base.copy()
        proposal[between[s:e]] = other
        placed = legalize(graph, proposal, cost.devices, support, max_submodels=None, strategy="probe")
        device = placed.device_indices(graph.names, cost.devices)
        left = sets["between"] & (device == other)
        left_any += bool(left.any())
        kept_bytes = max(kept_bytes, float(mem[left].sum()))
        least = min(least, float(mem[device == capped].sum()))
    return {"proposals": len(windows), "kept": left_any, "kept_bytes": kept_bytes, "least_capped_bytes": least,
            "seconds": time.perf_counter() - start}


def on_dynamic(case, support: np.ndarray, other: int, spec) -> tuple:
    """``(graph, support, bytes)`` of the row's dynamic model: the clone's support and memory by name, and for the
    shape nodes the clone folded, ``spec``'s (the other device's) op support by type and no memory."""
    dynamic = extract_graph(prepare_model(case.model))
    index = {name: i for i, name in enumerate(case.graph.names)}
    mem = np.asarray(case.cost.node_memory_bytes, np.float64)
    on_clone = [index.get(name) for name in dynamic.names]
    ok = np.array([support[i, other] if i is not None else
                   (dynamic.role[k] != NodeRole.COMPUTE or spec.supports(dynamic.op_types[k]))
                   for k, i in enumerate(on_clone)])
    return dynamic, np.stack([np.ones_like(ok), ok], axis=1), np.array([mem[i] if i is not None else 0.0
                                                                           for i in on_clone])


def _said(exc: Exception) -> str:
    """An OpenVINO error's last line, names' numbers dropped (one message per kind of failure)."""
    return re.sub(r"_\d+", "_N", str(exc).strip().splitlines()[-1])[:120]


def hetero_verdict(core, model, dynamic, device: np.ndarray, prompt, plain,
                   messages: collections.Counter) -> tuple[str, int]:
    """HETERO's verdict on ``device`` (0: ``CPU``, 1: ``CPUS``) over ``dynamic``'s nodes, applied, not legalised:
    ``(refused | failed | wrong | ran, HETERO's submodel count)``; ``messages`` counts the errors' texts."""
    names, devices = dynamic.names, ("CPU", "CPUS")
    compute = frozenset(names[i] for i in np.flatnonzero(dynamic.role == NodeRole.COMPUTE))
    placement = Placement({n: devices[int(d)] for n, d in zip(names, device)}, devices, "probe", compute, 0)
    prepared = prepare_model(model)
    placement.apply(prepared)
    try:
        compiled = core.compile_model(prepared, "HETERO:CPU,CPUS")
    except Exception as exc:  # noqa: BLE001 - HETERO's refusal is what is counted
        messages[_said(exc)] += 1
        return "refused", 0
    count = int(compiled.get_property("HETERO_NUMBER_OF_SUBMODELS"))
    try:
        _, logits = generate(compiled, prompt, 5, teacher=plain[0])
    except Exception as exc:  # noqa: BLE001 - a failure at the first requests is counted too
        messages[_said(exc)] += 1
        return "failed", count
    error = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(logits, plain[1]))
    return ("ran" if error < 1e-3 else "wrong"), count  # both devices f32: any larger difference is a wrong split


def ask_hetero(case, support, other: int, spec, windows: int, seed: int = 0, min_bytes: float = 64 * 1024) -> dict:
    """HETERO's verdicts on the between nodes that read ``min_bytes`` of weights alone, ``windows`` chain-plus-windows
    proposals and the chain set alone (module doc); ``CPUS`` plays device ``other``."""
    core = one_thread_core()  # CPU and CPUS, both f32
    dynamic, dyn_support, mem = on_dynamic(case, support, other, spec)
    sets = node_sets(dynamic, dyn_support, 0)
    between, chain = np.flatnonzero(sets["between"]), np.flatnonzero(sets["chain"])
    vocab = int(case.model.output("logits").get_partial_shape()[2].get_length())
    prompt = np.random.default_rng(0).integers(0, vocab, 16).tolist()
    plain = generate(core.compile_model(case.model, "CPU"), prompt, 5)  # greedy: its tokens are the teacher's
    rng, groups = np.random.default_rng(seed), {"alone": [[int(b)] for b in between if mem[b] >= min_bytes]}
    groups["windows"] = []
    for _ in range(windows):
        group = set(chain.tolist())
        for _ in range(int(rng.integers(1, 4))):
            start = int(rng.integers(0, between.size))
            group |= set(between[start:start + int(rng.integers(1, 121))].tolist())
        groups["windows"].append(sorted(group))
    groups["control"] = [chain.tolist()]
    found = {"between": int(between.size), "chain": int(chain.size), "moved_bytes": 0.0,
             "messages": collections.Counter()}
    start = time.perf_counter()
    for kind, proposals in groups.items():
        tally = collections.Counter()
        for group in proposals:
            device = np.zeros(dynamic.num_nodes, np.int64)
            device[group] = 1
            flagged = bool(split_variables(dynamic, device, sets["active"])) or reenters_state(dynamic, device)
            verdict, count = hetero_verdict(core, case.model, dynamic, device, prompt, plain, found["messages"])
            split = verdict == "ran" and count > 1
            tally[(verdict, flagged, split)] += 1
            if split and kind != "control":
                weights = sets["between"] & (device == 1) & (mem >= min_bytes)
                found["moved_bytes"] = max(found["moved_bytes"], float(mem[weights].sum()))
            if kind == "control":
                found["control_run"] = (verdict, count)
        found[kind] = (len(proposals), tally)
    found["seconds"] = time.perf_counter() - start
    return found


def hetero_lines(found: dict, device_name: str, other_name: str) -> list[str]:
    """The page's line for :func:`ask_hetero`'s ``found``."""
    def said(kind):
        total, tally = found[kind]
        parts = [f"{verdict} {sum(v for (w, _, _), v in tally.items() if w == verdict)} "
                 f"(rules 2 / 4 flagged {sum(v for (w, f, _), v in tally.items() if w == verdict and f)})"
                 for verdict in ("refused", "failed", "wrong", "ran") if any(w == verdict for w, _, _ in tally)]
        one = sum(v for (w, _, split), v in tally.items() if w == "ran" and not split)
        return f"{total}: " + ", ".join(parts) + (f"; {one} of those that ran as one submodel" if one else "")
    verdict, count = found["control_run"]
    return [f"* HETERO asked (`--hetero`; the dynamic model: {found['between']} between and {found['chain']} chain "
            f"nodes, {found['seconds']:.0f} s; `CPUS` playing {other_name}): each between node that reads weights "
            f"(>= 64 KiB) alone on `CPUS`, {said('alone')}; the chain set with windows of the between nodes, "
            f"{said('windows')}. The control, the chain set alone: {verdict} in {count} submodels. The most between "
            f"weights (nodes of >= 64 KiB) a placement HETERO ran as a split left off {device_name}: "
            f"{found['moved_bytes'] / MIB:.2f} MiB. "
            "HETERO's errors: " + "; ".join(f"`{text}` ({n})" for text, n in found["messages"].most_common()) + "."]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2_dec_l")
    ap.add_argument("--platform", default="npu_cpu")
    ap.add_argument("--cap", default="CPU=0.2", help="DEVICE=GIB: the capped device and its cap")
    ap.add_argument("--step", type=int, default=5, help="window starts and ends, in between nodes")
    ap.add_argument("--hetero", type=int, default=None, metavar="K",
                    help="also ask HETERO, with K chain-plus-windows proposals (module doc)")
    ap.add_argument("--floor-seconds", type=float, default=300.0, help="the floor MILP's time limit")
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args()
    device_name, _, gib = args.cap.partition("=")
    platform = load_suite()[args.platform]
    case = decoder_rows.decoder_case(platform, load_decoder(args.model), load_graph(args.model),
                                     caps={device_name: float(gib) * 2 ** 30})
    graph, cost = case.graph, case.cost
    if len(cost.devices) != 2 or device_name not in cost.devices:
        raise SystemExit(f"--cap {args.cap!r}: expected one of the two devices of {args.platform} ({cost.devices})")
    capped = cost.devices.index(device_name)
    other = 1 - capped
    support = simulated_support(cost, graph)
    sets = node_sets(graph, support, capped)
    mem = np.asarray(cost.node_memory_bytes, np.float64)
    total, cap = float(mem.sum()), float(gib) * 2 ** 30
    bound = total - float(mem[sets["chain"]].sum()) - float(mem[~sets["active"]].sum())
    floor = capped_floor(graph, support, mem, cost.devices, device_name, cap, seconds=args.floor_seconds)
    found = probe(graph, cost, support, sets, capped, other, args.step)
    lines = [f"# What can leave a capped device: {args.platform} / {args.model}, {device_name} capped at {gib} GiB "
             "(SIMULATED)", "",
             f"Generated by `python benchmarks/bench_memory_bound.py --model {args.model} --platform {args.platform} "
             f"--cap {args.cap} --step {args.step} --floor-seconds {args.floor_seconds:g}"
             f"{'' if args.hetero is None else f' --hetero {args.hetero}'}` "
             f"({time.strftime('%Y-%m-%d', time.gmtime())}; {load_average()}). The sets and the probe: the "
             "benchmark's docstring.", "",
             f"* The model holds {total / MIB:.1f} MiB on one device (weights + KV cache at "
             f"{decoder_rows.GENERATION.prompt_tokens + decoder_rows.GENERATION.new_tokens} tokens); within the cap of "
             f"{cap / MIB:.1f} MiB, {(total - cap) / MIB:.1f} MiB must leave {device_name}.",
             *(f"* {name}: {int(sets[name].sum())} nodes, {mem[sets[name]].sum() / MIB:.1f} MiB"
               for name in ("held", "chain", "between")),
             f"* Nodes outside the active set (followers: a ReadValue whose initializer is folded, its cache charged "
             f"there): {mem[~sets['active']].sum() / MIB:.1f} MiB, counted as movable.",
             f"* With every between node on {device_name}, {device_name} holds at least {bound / MIB:.1f} MiB "
             f"({'over' if bound > cap else 'within'} its cap).",
             f"* Probe: {found['proposals']} proposals legalised in {found['seconds']:.0f} s; the legalizer left a "
             f"between node on {cost.devices[other]} in {found['kept']} of them (at most "
             f"{found['kept_bytes'] / MIB:.2f} MiB of weights); the fewest bytes any left on {device_name}: "
             f"{found['least_capped_bytes'] / MIB:.1f} MiB"
             f" ({'BELOW' if found['least_capped_bytes'] < floor.floor_bytes else 'not below'} the floor).",
             f"* Floor (`capped_floor.py`, {args.floor_seconds:.0f} s): {floor.describe()}: "
             + ("no placement the legalizer returns fits; the row has no split." if floor.proves_no_split else
                f"rule 4 alone does not rule a split out (the floor MILP's own placement moves "
                f"{floor.movable_bytes / MIB:.1f} MiB off {device_name}).")]
    if args.hetero is not None:
        lines += hetero_lines(ask_hetero(case, support, other, platform.device(cost.devices[other]).spec,
                                         args.hetero), device_name, cost.devices[other])
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
