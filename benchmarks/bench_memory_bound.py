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

The capped device holds at least everything but the chain set should every between node stay with it. Whether one
can leave is probed, not proven: the chain set on the other device plus one between node, and plus every window of
the between nodes in topological order (start and end in steps of ``--step``), each legalised as every decision
path legalises it (no bound on the submodels: the row's devices force their count). The page counts the proposals
the legalizer returned with a between node still on the other device, and the fewest bytes any of them left on the
capped device.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_platforms import load_graph  # noqa: E402
from ov_autoplace.costmodel.sim_costs import simulated_support  # noqa: E402
from ov_autoplace.costmodel.suite import load_suite  # noqa: E402
from ov_autoplace.graph.arrays import NodeRole, constant_subgraph_mask  # noqa: E402
from ov_autoplace.placement.legalizer import legalize  # noqa: E402
from ov_autoplace.placement.stateful import _reach  # noqa: E402
from ov_autoplace_lab.models.decoder_models import load_decoder  # noqa: E402
from ov_autoplace_lab.paper_bench import decoder_rows  # noqa: E402
from _common import load_average  # noqa: E402

MIB = 2 ** 20


def node_sets(graph, support: np.ndarray, other: int) -> dict[str, np.ndarray]:
    """The held, chain and between masks (module doc) over the active nodes, for moving to device ``other``."""
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    held = active & ~support[:, other]
    ids = np.flatnonzero(held).tolist()
    reached, reaches = _reach(graph, ids, True) & ~held, _reach(graph, ids, False) & ~held
    movable = active & support[:, other]
    return {"held": held, "chain": movable & (~reached | ~reaches), "between": movable & reached & reaches,
            "active": active}


def probe(graph, cost, support, sets, capped: int, other: int, step: int) -> dict:
    """Legalise the chain set plus each single between node and each window of them (module doc)."""
    mem = np.asarray(cost.node_memory_bytes, np.float64)
    between = np.flatnonzero(sets["between"])
    base = np.where(sets["chain"], other, capped)
    windows = [(i, i + 1) for i in range(between.size)] + [
        (s, e) for s in range(0, between.size, step) for e in range(s + step, between.size + 1, step)]
    kept = kept_bytes = 0
    least = np.inf
    start = time.perf_counter()
    for s, e in windows:
        proposal = base.copy()
        proposal[between[s:e]] = other
        placed = legalize(graph, proposal, cost.devices, support, max_submodels=None, strategy="probe")
        device = placed.device_indices(graph.names, cost.devices)
        left = sets["between"] & (device == other)
        kept += bool(left.any())
        kept_bytes = max(kept_bytes, float(mem[left].sum()))
        least = min(least, float(mem[device == capped].sum()))
    return {"proposals": len(windows), "kept": kept, "kept_bytes": kept_bytes, "least_capped_bytes": least,
            "seconds": time.perf_counter() - start}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2_dec_l")
    ap.add_argument("--platform", default="npu_cpu")
    ap.add_argument("--cap", default="CPU=0.2", help="DEVICE=GIB: the capped device and its cap")
    ap.add_argument("--step", type=int, default=5, help="window starts and ends, in between nodes")
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
    sets = node_sets(graph, support, other)
    mem = np.asarray(cost.node_memory_bytes, np.float64)
    total, cap = float(mem.sum()), float(gib) * 2 ** 30
    bound = total - float(mem[sets["chain"]].sum()) - float(mem[~sets["active"]].sum())
    found = probe(graph, cost, support, sets, capped, other, args.step)
    lines = [f"# What can leave a capped device: {args.platform} / {args.model}, {device_name} capped at {gib} GiB "
             "(SIMULATED)", "",
             f"Generated by `python benchmarks/bench_memory_bound.py --model {args.model} --platform {args.platform} "
             f"--cap {args.cap} --step {args.step}` ({time.strftime('%Y-%m-%d', time.gmtime())}; "
             f"{load_average()}). The sets and the probe: the benchmark's docstring.", "",
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
             f"{found['least_capped_bytes'] / MIB:.1f} MiB."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
