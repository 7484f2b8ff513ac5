"""``ov-autoplace show`` and ``compare``: the lab's commands that draw placements.

The runtime's CLI (``ov_autoplace.cli.main``) registers them through the entry-point group
``ov_autoplace.commands`` (``lab/pyproject.toml``) with :func:`add_show_parser` and :func:`add_compare_parser`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ov_autoplace.cli.args import DEFAULT_NITER
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.model.shapes import resolve_shapes, static_clone
from ov_autoplace.placement.assignment import Placement
from ov_autoplace_lab.compare import measured_cost_model
from ov_autoplace_lab.viz.placed_graph import check_placement_matches
from ov_autoplace.strategies.registry import strategy_names
from ov_autoplace_lab.same_device_note import same_device_note


def cmd_show(args) -> int:
    from ov_autoplace.cli.args import core_and_device
    from ov_autoplace.cli.placed_run import placed_and_measured
    from ov_autoplace_lab.viz import placement_picture, write_picture
    from ov_autoplace_lab.viz.measured import measured_timeline
    from ov_autoplace_lab.viz.placed_graph import analyze

    core, device = core_and_device(args)
    run = placed_and_measured(args, (core, device), given=_given_placement(args.placement) if args.placement else None)
    model, placement = run.model, run.placement
    shapes = resolve_shapes(model, args.shape)
    if shapes:  # a dynamic model is drawn as placed: its static clone
        model = static_clone(model, shapes)
    graph, cost = measured_cost_model(model, placement.devices, core)
    measured = None
    if not args.no_measure:
        measured = measured_timeline(analyze(graph, placement), placement, model, core, cost=cost,
                                     iterations=args.niter or DEFAULT_NITER, total_ms=placement.measured_latency_ms)
    title = f"{Path(args.model).stem} on {placement.device_string}, strategy {placement.strategy}"
    picture = placement_picture(graph, placement, title=title, cost=cost, measured=measured)
    written, skipped = write_picture(picture, args.output, png=not args.no_png)
    dot_path = Path(f"{args.output}.dot")
    dot_path.write_text(placement_dot(graph, placement, title))
    written = [*written, dot_path]
    print(placement.summary(run.compiled_label))
    for block in picture.text_blocks[:-1]:
        print(block)
    if skipped:
        print(skipped)
    if note := same_device_note(placement.device_string):  # CPU and CPUF are one f32 device without bf16
        print(f"note: {note}")
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def _given_placement(path: Path):
    """``--placement FILE``: the model's placement read from the file, checked against the model it is drawn on."""

    def given(model):
        placement = Placement.load(path)
        check_placement_matches(placement, extract_graph(prepare_model(model)), source=f"placement {path}")
        return placement

    return given


#: Fill colours of the devices in the .dot graph, in the placement's device order.
DOT_COLOURS = ("#8ecae6", "#ffb703", "#b5e48c", "#f4a3a8", "#cdb4db", "#d9d9d9")


def placement_dot(graph, placement, title: str) -> str:
    """The placed graph in Graphviz's language: one node per op filled by device, edges that cross devices red.

    The same picture OpenVINO's ``OPENVINO_HETERO_VISUALIZE=1`` writes for a HETERO compile (``dot -Tsvg``).
    """
    colour = {d: DOT_COLOURS[i % len(DOT_COLOURS)] for i, d in enumerate(placement.devices)}

    def quote(text: str) -> str:  # a JSON string is a valid DOT quoted ID (backslashes and quotes escaped)
        return json.dumps(text, ensure_ascii=False)

    lines = [f"digraph placement {{", f"  label={quote(title)};", "  node [shape=box, style=filled, fontsize=10];"]
    for device in placement.devices:
        lines.append(f"  {quote('legend ' + device)} [label={quote(device)}, fillcolor={quote(colour[device])}, "
                     "shape=note];")
    device_of = [placement.assignment.get(name) for name in graph.names]
    for i, name in enumerate(graph.names):
        fill = colour.get(device_of[i], "#ffffff")
        label = f"{name}\n{graph.op_types[i]} @ {device_of[i]}"
        lines.append(f"  n{i} [label={quote(label)}, fillcolor={quote(fill)}];")  # JSON's \n is DOT's line break
    for src, dst in zip(graph.edge_src.tolist(), graph.edge_dst.tolist()):
        cut = device_of[src] != device_of[dst]
        lines.append(f"  n{src} -> n{dst}" + (" [color=red, penwidth=2];" if cut else ";"))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _strategy_list(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in names if s not in strategy_names()]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown strategy name(s) {unknown or [text]}; expected a comma-separated "
                                         f"list of {strategy_names()} (see `ov-autoplace strategies`)")
    return names


DEFAULT_COMPARE = "hsdag,heft,critical_path,optimum,heavy_ops,openvino_hetero_auto,random"


def cmd_compare(args) -> int:
    from ov_autoplace.cli.args import core_and_device
    from ov_autoplace import api
    from ov_autoplace_lab.compare import compare_strategies, write_comparison

    core, device = core_and_device(args)
    model = api.load_model(args.model, core)
    result = compare_strategies(model, device, core=core, strategies=args.strategies, runs=args.niter,
                                rounds=args.rounds, measure=not args.no_measure, max_submodels=args.max_submodels)
    title = f"{Path(args.model).stem} on {device or 'this machine'}: {len(result.rows)} strategies"
    written, skipped = write_comparison(result, args.output, title=title, png=not args.no_png)
    print(result.table())
    if skipped:
        print(skipped)
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def add_show_parser(sub) -> None:
    """Register ``show`` on the runtime CLI's subparsers (entry-point group ``ov_autoplace.commands``)."""
    from ov_autoplace.cli.args import add_model_device_args as add_model_device_args, add_run_args

    show = sub.add_parser("show", help="draw the placement: timeline, per-device summary and graph (SVG, PNG, HTML)",
                          description="Place a model (or load --placement) and draw what deciding on it needs: a "
                                      "per-device summary against each single device, the timeline of one inference "
                                      "(measured with PERF_COUNT unless --no-measure, and simulated on the measured "
                                      "cost model) and the graph collapsed into labelled boxes coloured by device, "
                                      "cut edges in red. The HTML page is self-contained and interactive.")
    add_model_device_args(show)
    show.add_argument("-o", "--output", type=Path, default=Path("placement"),
                      help="output path prefix; writes PREFIX.svg, PREFIX.html, PREFIX.png and PREFIX.dot "
                           "(Graphviz, as OPENVINO_HETERO_VISUALIZE; default: ./placement)")
    show.add_argument("--placement", type=Path, help="draw this placement JSON (from `place -o`) instead of placing")
    add_run_args(show)
    show.add_argument("--no-measure", action="store_true", help="do not run the model: simulated timeline only")
    show.add_argument("--no-png", action="store_true",
                      help="skip the PNG (it needs matplotlib, the lab's pictures extra)")
    show.set_defaults(func=cmd_show)


def add_compare_parser(sub) -> None:
    """Register ``compare`` on the runtime CLI's subparsers (entry-point group ``ov_autoplace.commands``)."""
    from ov_autoplace.cli.args import add_device_args

    compare = sub.add_parser("compare", help="several strategies' placements and latencies side by side",
                             description="Place one model with several strategies, time each placement and each "
                                         "single device interleaved (native timer), and write one picture and one "
                                         "table (PREFIX.svg/.html/.png/.md).")
    compare.add_argument("-m", "--model", required=True, help="model file OpenVINO can read (IR .xml, .onnx, ...)")
    add_device_args(compare)
    # a str default: argparse converts it only when compare runs (the exact optimum is the lab's own strategy)
    compare.add_argument("--strategies", type=_strategy_list, default=DEFAULT_COMPARE,
                         help=f"comma-separated registered strategies (default: {DEFAULT_COMPARE})")
    compare.add_argument("--max-submodels", type=int, default=8, help="bound on HETERO submodels (default 8)")
    compare.add_argument("-niter", "--number_iterations", dest="niter", type=int, default=30, help="timed inferences per placement (default 30)")
    compare.add_argument("--rounds", type=int, default=3, help="interleaved rounds the runs are split into (default 3)")
    compare.add_argument("--no-measure", action="store_true", help="only place and simulate; do not run the model")
    compare.add_argument("--no-png", action="store_true", help="skip the PNG (it needs matplotlib)")
    compare.add_argument("-o", "--output", type=Path, default=Path("compare"), help="output prefix (default ./compare)")
    compare.set_defaults(func=cmd_compare)


__all__ = ["add_compare_parser", "add_show_parser", "cmd_compare", "cmd_show"]
