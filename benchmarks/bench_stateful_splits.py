"""Does every split the legalizer returns for a stateful decoder compile and run? Random proposals on optimum-intel's
exports, legalised with and without stateful rules 4 and 5, compiled on HETERO (real compiles on the testbed, nothing
timed).

    python benchmarks/bench_stateful_splits.py [--families llama,qwen2,opt,...] [--size tiny] [--proposals 120] [--seeds 1 2]
                                               [--dir /tmp/llm] [--markdown docs/bench/stateful-splits.md]

Run in the LLM venv (docs/llm.md). For each family, a random-weight decoder exported by optimum-intel
(``tests/llm_models.export_decoder``: ``--size tiny``, 4 layers, or ``small``, 8 layers and ~42 M parameters) is
placed on its prefill's static clone with the dynamic model's graph, as every decision path places a decoder
(``placement_graph``). Each proposal puts one to three windows of the clone's
topological order (1-120 active nodes each) on the second device of the f32 testbed (``HETERO:CPU,CPUF``) and is
legalised three times: with stateful rules 1-3 only (the legalizer before rules 4 and 5), with rule 4 too
(``stateful.keep_state_devices_whole``: no path out of a device holding state and back to where the device also
reaches directly; ``submodels.move_parameters_to_fewest_parts`` in ``Placement.apply``: none through a Parameter), and as
the legalizer does, with rule 5 too (a variable's attention in its group: ``stateful._with_attention``). Every
placement that stays a split is compiled by ``ov_autoplace.compile_placement`` (carried over to the dynamic model
and run once) and checked for rule 4's path on the dynamic model HETERO compiles (with the shared initializer
copied per device, as ``Placement.apply`` copies it). The table counts splits, how many compiled and ran, how many
of each kind had such a path and how many the compile's carry-over ran on one device: the evidence for rules 4 and
5 (sufficient conditions found by compiling, not HETERO's own rules). Each split the legalizer keeps that compiled
also generates ``--steps`` tokens after a 16-token prompt, greedily and teacher-forced on the plain compile's tokens
(``tests/llm_models.generate``): the table counts the splits whose greedy tokens equal the plain compile's and gives
the largest teacher-forced logits difference over the logits' scale.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np
import openvino as ov

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ov_autoplace  # noqa: E402
from ov_autoplace.devices.testbed import shared_testbed  # noqa: E402
from ov_autoplace.graph.arrays import NodeRole, constant_subgraph_mask, extract_graph  # noqa: E402
from ov_autoplace.model.prepare import placement_graph, prepare_model  # noqa: E402
from ov_autoplace.model.shapes import static_clone  # noqa: E402
from ov_autoplace.placement import legalizer, stateful, submodels  # noqa: E402
from ov_autoplace.placement.dynamic_model import transfer_placement  # noqa: E402
from ov_autoplace.placement.stateful import _reentries, with_initializer_copies  # noqa: E402
from tests.llm_models import FAMILIES, SIZES, export_decoder, generate, window_proposal  # noqa: E402
from _common import cpu_description  # noqa: E402

VARIANTS = ("rules 1-3 (before)", "rules 1-4", "rules 1-5 (the legalizer)")
PROMPT = 16  # tokens of the generation each split of the legalizer's runs


@contextlib.contextmanager
def rules_up_to(last: int):
    """The legalizer with stateful rules after ``last`` switched off (rule 4: no re-entry, through a Parameter
    either; rule 5: the attention with its cache, which state_groups adds and caches per graph)."""
    with contextlib.ExitStack() as stack:
        if last < 4:
            stack.enter_context(mock.patch.object(legalizer, "keep_state_devices_whole", lambda *a: (0, True)))
            stack.enter_context(mock.patch.object(submodels, "move_parameters_to_fewest_parts", lambda *a: 0))
        if last < 5:
            stack.enter_context(mock.patch.object(stateful, "_with_attention", lambda graph, groups: groups))
        stateful._STATE_GROUPS.clear()
        try:
            yield
        finally:
            stateful._STATE_GROUPS.clear()


def reenters_state(graph, device: np.ndarray) -> bool:
    """Rule 4's test on ``graph`` (the dynamic model's): a path out of a device holding a variable and back in to
    where the device also reaches directly, on the edges HETERO meets (the shared initializer copied per device)."""
    active = (graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph)
    holders, copies = {int(device[r]) for r, _ in graph.variables}, with_initializer_copies(graph, device)
    return any(_reentries(copies, device, active, d)[0].any() for d in holders)


def run_family(family: str, directory: Path, proposals: int, seed: int, testbed, size: str = "tiny",
               steps: int = 8) -> dict[str, dict[str, int]]:
    core, devices = testbed.core, testbed.devices
    model = core.read_model(export_decoder(family, directory, size) / "openvino_model.xml")
    inputs = {name for port in model.inputs for name in port.get_names()}  # BLOOM has no position_ids
    clone = prepare_model(static_clone(model, {k: v for k, v in {"input_ids": [1, 16], "attention_mask": [1, 16],
                                               "position_ids": [1, 16], "beam_idx": [1]}.items() if k in inputs}))
    graph = placement_graph(clone, model)
    dynamic = extract_graph(prepare_model(model))
    active = np.flatnonzero((graph.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(graph))
    support = np.ones((graph.num_nodes, len(devices)), bool)
    rng = np.random.default_rng(seed)
    counts = {v: dict.fromkeys(("splits", "compiled", "refused", "refused_reentry", "compiled_reentry", "one_device",
                                "same_tokens", "logits_error"), 0) for v in VARIANTS}
    dynamic_active = (dynamic.role == NodeRole.COMPUTE) & ~constant_subgraph_mask(dynamic)
    prompt = np.random.default_rng(0).integers(0, int(model.output("logits").get_partial_shape()[2].get_length()),
                                               PROMPT).tolist()
    plain_tokens, plain_logits = generate(core.compile_model(model, devices[0]), prompt, steps)
    for _ in range(proposals):
        proposal = window_proposal(rng, active, graph.num_nodes)
        for variant in VARIANTS:
            with rules_up_to(3 + VARIANTS.index(variant)):
                placement = legalizer.legalize(graph, proposal, devices, support)
                if len(set(placement.assignment.values())) < 2:
                    continue
                carried = transfer_placement(placement, prepare_model(model), core)
                device = np.array([devices.index(carried.assignment[n]) for n in dynamic.names])
                reentry = reenters_state(dynamic, device)
                try:
                    split = ov_autoplace.compile_placement(model, placement, core=core)
                    compiled = True
                except Exception as exc:  # noqa: BLE001 - HETERO's refusal is what is counted
                    compiled = False
                    print(f"  {family}, {variant}: {type(exc).__name__}: {str(exc).strip().splitlines()[-1][:200]}")
            row = counts[variant]
            if compiled and variant == VARIANTS[-1]:
                tokens, _ = generate(split, prompt, steps)
                _, logits = generate(split, prompt, steps, teacher=plain_tokens)
                row["same_tokens"] += int(tokens == plain_tokens)
                row["logits_error"] = max(row["logits_error"], max(
                    float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(logits, plain_logits)))
            row["splits"] += 1
            row["compiled" if compiled else "refused"] += 1
            row["compiled_reentry" if compiled else "refused_reentry"] += int(reentry)
            row["one_device"] += int(compiled and np.unique(device[dynamic_active]).size < 2)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--size", default="tiny", choices=tuple(SIZES), help="the exports' geometry")
    parser.add_argument("--steps", type=int, default=8, help="tokens each legal split generates (prefill included)")
    parser.add_argument("--proposals", type=int, default=120, help="random proposals per family")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2], help="one table per seed of the proposals")
    parser.add_argument("--dir", default=None, help="where the exports are kept (default: a temporary folder)")
    parser.add_argument("--markdown", default=None)
    args = parser.parse_args()
    testbed = shared_testbed(True)  # both devices f32: a split's failure is HETERO's, never a precision
    directory = Path(args.dir or tempfile.mkdtemp(prefix="stateful-splits-"))
    started = time.perf_counter()
    lines = []
    for seed in args.seeds:
        lines += ["", f"Seed {seed}:", "", "| family | legalizer | splits | compiled and ran | refused by HETERO | "
                  "refused, with a re-entry | compiled, with a re-entry | compiled on one device | greedy tokens as "
                  "the plain compile's | teacher-forced logits, largest difference |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for family in args.families.split(","):
            counts = run_family(family, directory, args.proposals, seed, testbed, args.size, args.steps)
            for variant, row in counts.items():
                checked = variant == VARIANTS[-1]
                lines.append(f"| {family} | {variant} | {row['splits']} | {row['compiled']} | {row['refused']} | "
                             f"{row['refused_reentry']} | {row['compiled_reentry']} | {row['one_device']} | "
                             f"{row['same_tokens'] if checked else '-'} | "
                             f"{format(row['logits_error'], '.1e') if checked else '-'} |")
                print(lines[-1], flush=True)
    seconds = time.perf_counter() - started
    page = "\n".join([
        "# Random splits of stateful decoders, compiled on HETERO",
        "",
        f"`python benchmarks/bench_stateful_splits.py --families {args.families} --size {args.size} "
        f"--proposals {args.proposals} --steps {args.steps} --seeds {' '.join(map(str, args.seeds))}` "
        f"({time.strftime('%Y-%m-%d')}, {cpu_description()}, OpenVINO {ov.get_version()}, {seconds:.0f} s): "
        f"optimum-intel's {args.size} exports ({SIZES[args.size]['num_hidden_layers']} layers, hidden "
        f"{SIZES[args.size]['hidden_size']}; the families beyond Llama and Qwen2 at the geometry "
        "`tests/llm_models.MORE_FAMILIES` gives them), each proposal legalised with stateful rules 1-3, 1-4 and 1-5, compiled "
        "on `HETERO:CPU,CPUF` (both f32) and run once at a 128-token prefill (a failure at either counts as "
        "refused); a re-entry is rule 4's: a path out of a device holding state and back to where the device also "
        "reaches directly, on the dynamic model as HETERO meets it (the shared initializer copied per device); on one "
        "device: a split that `compile_model`, legalizing again on the dynamic model, ran on one device. Each split "
        "of the legalizer's that compiled then generated "
        f"{args.steps} tokens after a {PROMPT}-token prompt, greedily and teacher-forced on the plain compile's "
        "(`CPU`, f32) tokens: the last two columns. What the rules are: [architecture](../architecture.md), "
        "\"Stateful models\".",
        *lines, ""])
    if args.markdown:
        Path(args.markdown).write_text(page)
    print(f"{seconds:.0f} s")


if __name__ == "__main__":
    main()
