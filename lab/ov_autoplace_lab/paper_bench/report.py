"""The benchmark's report: check a results dict, render it as Markdown, plot it.

``ov-autoplace bench`` produces one JSON-serialisable results dict (schema in
:func:`validate_results`); this module turns it into ``results.json``,
``results.md`` (Table-2-style latency tables, search cost, placements, a
Table-4-style correctness table for measured settings, per-model winners) and
PNG figures (speed-up bars, learning curves). Simulated settings are labelled
"simulated" everywhere a number from them appears. matplotlib is optional: it
is imported lazily and, without it, only the JSON and Markdown are written.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ov_autoplace_lab.paper_bench.results_schema import KINDS, validate_results  # noqa: F401 - KINDS: also read here

log = logging.getLogger(__name__)


# --- markdown -----------------------------------------------------------------------------------------

def _ms(x: float) -> str:
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 1 else f"{x:.3g}"


def _pct(x: float) -> str:
    return f"{100.0 * x:+.1f} %"


def _esc(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _ok(cell: Mapping[str, Any] | None) -> bool:
    return bool(cell) and cell.get("error") is None and cell.get("median_ms") is not None


#: Measured cells are compared per paired round (every round times every placement back to back, in a shuffled
#: order). One method is faster than another only when it is faster in EVERY paired round (its whole range of
#: paired ratios lies below 1: the difference exceeds the spread) AND its median paired ratio is at least
#: MIN_PAIRED_GAIN below 1. With R rounds and no real difference the first happens with probability 0.5**R per
#: comparison (3.1 % with the default 5 rounds); a table compares a dozen methods with one reference, so some
#: method would win all rounds by chance in up to a third of the tables - the minimum gain keeps such a chance win
#: (and sub-noise systematic effects, e.g. two ways of compiling for the same CPU) from being named. Fewer rounds
#: than MIN_PAIRED_ROUNDS (false-win rate above 12.5 % per comparison) never name a winner.
MIN_PAIRED_ROUNDS = 3
MIN_PAIRED_GAIN = 0.02


def _paired_ratios(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[float] | None:
    """Per-round ratio a / b of two measured cells timed in the same rounds; None without usable rounds."""
    ra, rb = (a or {}).get("round_ms"), (b or {}).get("round_ms")
    if not ra or not rb or len(ra) != len(rb) or len(ra) < MIN_PAIRED_ROUNDS or min(rb) <= 0:
        return None
    return [x / y for x, y in zip(ra, rb)]


def _faster(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, gain: float = MIN_PAIRED_GAIN) -> bool:
    """``a`` faster than ``b`` in every paired round and by ``gain`` in the median round (the rule above)."""
    ratios = _paired_ratios(a, b)
    return ratios is not None and max(ratios) < 1.0 and sorted(ratios)[len(ratios) // 2] <= 1.0 - gain


def _control(setting: Mapping[str, Any], model: str) -> float | None:
    """Median per-round ratio of the reference's second compile to its first (``runner._merge_control``)."""
    ratios = (setting.get("controls") or {}).get(model, {}).get("round_ratio")
    return float(np.median(ratios)) if ratios else None


def _min_gain(setting: Mapping[str, Any], model: str) -> float:
    """The gain a winner needs over the reference: MIN_PAIRED_GAIN, or what two compiles of the reference differ
    by in this very run when that is more (a gain below it could be the compile, not the placement)."""
    control = _control(setting, model)
    return MIN_PAIRED_GAIN if control is None else max(MIN_PAIRED_GAIN, abs(1.0 - control))


def _paired(setting: Mapping[str, Any], model: str) -> bool:
    """Measured cells with per-round medians: winners are judged by the paired rule, not the medians."""
    if setting["simulated"]:
        return False
    return any(_paired_ratios(row["cells"].get(model), row["cells"].get(model)) for row in setting["rows"]
               if _ok(row["cells"].get(model)))


def _best(setting: Mapping[str, Any], model: str) -> list[str]:
    """Winners on ``model``. Simulated, or measured without paired rounds: the lowest median (ties all win).
    Measured with paired rounds: the fastest median among the methods faster than the reference in every paired
    round, plus those it is not faster than in every round (not distinguishable); nobody when no method beats the
    reference that way (no difference)."""
    cells = {row["method"]: row["cells"][model] for row in setting["rows"] if _ok(row["cells"].get(model))}
    if not cells:
        return []
    if _paired(setting, model):
        reference = cells.get(setting["reference"])
        gain = _min_gain(setting, model)
        beating = [m for m, c in cells.items() if m != setting["reference"] and _faster(c, reference, gain)]
        if not beating:
            return []
        best = min(beating, key=lambda m: cells[m]["median_ms"])
        return [best] + [m for m in beating if m != best and not _faster(cells[best], cells[m])]
    low = min(c["median_ms"] for c in cells.values())
    return [m for m, c in cells.items() if c["median_ms"] <= low * (1 + 1e-9)]


def _latency_cell(cell: Mapping[str, Any] | None, simulated: bool) -> str:
    if not cell:
        return "—"
    if cell.get("error") is not None:
        return "error†"
    if cell.get("median_ms") is None:
        return "—"
    text = f"{_ms(cell['median_ms'])} ms"
    if not simulated and cell.get("q1_ms") is not None and cell.get("q3_ms") is not None:
        text += f" [{_ms(cell['q1_ms'])}–{_ms(cell['q3_ms'])}]"
    if cell.get("speedup") is not None:
        text += f" ({_pct(cell['speedup'])})"
    return text


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _per_cell_table(setting: Mapping[str, Any], render) -> list[str]:
    rows = [[_esc(row["method"])] + [render(row["cells"].get(m)) for m in setting["models"]] for row in setting["rows"]]
    return _table(["Method"] + [_esc(m) for m in setting["models"]], rows)


def _search_cell(cell: Mapping[str, Any] | None) -> str:
    if not cell or "evaluated" not in cell:
        return "—"
    budget = "–" if cell.get("budget") is None else str(cell["budget"])
    return f"{cell['evaluated']} / {cell['compiles']} / {cell['search_s']:.1f} s / {budget}"


def _placement_cell(cell: Mapping[str, Any] | None) -> str:
    if not _ok(cell) or "counts" not in cell:
        return "—"
    counts = ", ".join(f"{_esc(d)} {n}" for d, n in cell["counts"].items())
    return f"{cell['submodels']} sub; {counts}"


def _correctness_cell(cell: Mapping[str, Any] | None) -> str:
    if not _ok(cell) or cell.get("max_abs_diff") is None:
        return "—"
    cosine = "–" if cell.get("cosine") is None else f"{cell['cosine']:.6f}"
    return f"{cell['max_abs_diff']:.2e} / {cosine}"


def _no_difference_line(setting: Mapping[str, Any], model: str) -> str:
    rows = {row["method"]: row for row in setting["rows"] if _ok(row["cells"].get(model))}
    if not rows:
        return f"- **{_esc(model)}**: no method produced a latency."
    fastest = min(rows, key=lambda m: rows[m]["cells"][model]["median_ms"])
    cell, ref = rows[fastest]["cells"][model], rows.get(setting["reference"], {}).get("cells", {}).get(model)
    ratios = _paired_ratios(cell, ref)
    spread = "" if not ratios else f", paired ratio {min(ratios):.3f}–{max(ratios):.3f}"
    return (f"- **{_esc(model)}**: no difference: no method was faster than {_esc(setting['reference'])} in every "
            f"one of the {len(cell.get('round_ms') or [])} paired rounds by at least "
            f"{_gain_text(_min_gain(setting, model))} in the median round{_control_text(setting, model)} (lowest "
            f"median: {_esc(fastest)} at {_ms(cell['median_ms'])} ms, {_pct(cell['speedup'] or 0.0)}{spread}: "
            f"within the noise).")


def _gain_text(gain: float) -> str:
    return f"{100 * gain:.0f} %" if gain == MIN_PAIRED_GAIN else f"{100 * gain:.1f} %"


def _control_text(setting: Mapping[str, Any], model: str) -> str:
    control = _control(setting, model)
    return "" if control is None else (f" ({_esc(setting['reference'])} compiled twice differed by "
                                       f"{_pct(control - 1.0)} here, its control)")


def _winner_line(setting: Mapping[str, Any], model: str) -> str:
    best = _best(setting, model)
    if not best:
        return _no_difference_line(setting, model)
    rows = {row["method"]: row for row in setting["rows"]}
    cell = rows[best[0]]["cells"][model]
    line = f"- **{_esc(model)}**: {', '.join(_esc(b) for b in best)} at {_ms(cell['median_ms'])} ms"
    if cell.get("speedup") is not None:
        line += f", {_pct(cell['speedup'])} vs {_esc(setting['reference'])}"
    ref = rows.get(setting["reference"], {}).get("cells", {}).get(model)
    ratios = _paired_ratios(cell, ref)
    if _paired(setting, model) and ratios:
        line += (f", faster in all {len(ratios)} paired rounds (paired ratio {min(ratios):.3f}–{max(ratios):.3f}"
                 f"{_control_text(setting, model)})"
                 + (f"; not distinguishable from {', '.join(_esc(b) for b in best[1:])}" if len(best) > 1 else ""))
    elif not setting["simulated"]:
        line += " (no paired rounds recorded: lowest median only, not tested against the noise)"
    gaps = [f"{_esc(m)} {_pct(r['cells'][model]['vs_optimum'])}" for m, r in rows.items()
            if r["kind"] != "optimum" and _ok(r["cells"].get(model)) and r["cells"][model].get("vs_optimum") is not None]
    if gaps:
        line += "; from the optimum: " + ", ".join(gaps)
    return line + "."


def _setting_section(setting: Mapping[str, Any], meta: Mapping[str, Any], figures: list[str]) -> list[str]:
    simulated = setting["simulated"]
    title = setting["title"] + ("" if not simulated or "simulat" in setting["title"].lower() else " (simulated)")
    best = {m: set(_best(setting, m)) for m in setting["models"]}
    spread = "" if simulated else f" [Q1–Q3] over {meta['runs']} timed runs"
    bold = ("best per model in bold" if simulated else
            f"in bold the winner per model: faster than {_esc(setting['reference'])} in every paired round (each "
            f"round times every placement back to back; with no real difference that happens with probability "
            f"0.5^rounds per method, 3.1 % for 5 rounds) and in the median round by at least {100 * MIN_PAIRED_GAIN:.0f} "
            f"% or, when more, by what {_esc(setting['reference'])} compiled twice differs by in this run (its "
            f"control: the row's first compile is untimed, the reference is compiled again last and timed as the "
            f"geometric mean of both); no bold cell means no difference beyond the noise")
    lines = [f"## {_esc(title)}", "",
             f"Latency: median{spread}, speed-up over {_esc(setting['reference'])} in parentheses; "
             f"{bold}.{' All numbers are simulated (cost model), not measured.' if simulated else ''}",
             ""]
    rows = []
    for row in setting["rows"]:
        cells = []
        for m in setting["models"]:
            text = _latency_cell(row["cells"].get(m), simulated)
            cells.append(f"**{text}**" if row["method"] in best[m] else text)
        rows.append([_esc(row["method"]), row["kind"]] + cells)
    lines += _table(["Method", "Kind"] + [_esc(m) for m in setting["models"]], rows)
    errors = [f"- {_esc(row['method'])} / {_esc(m)}: {_esc(c['error'])}" for row in setting["rows"]
              for m, c in row["cells"].items() if c.get("error") is not None]
    if errors:
        lines += ["", "† Errors:"] + errors
    lines += ["", "**Winners.**", ""] + [_winner_line(setting, m) for m in setting["models"]]
    lines += ["", "### Search cost", "", "Evaluated placements / compiles / search time / sample budget.", ""]
    lines += _per_cell_table(setting, _search_cell)
    lines += ["", "### Placements", "", "HETERO submodels; compute nodes per device.", ""]
    lines += _per_cell_table(setting, _placement_cell)
    if not simulated:
        lines += ["", "### Correctness", "", "Max absolute difference / cosine similarity of the outputs against "
                  "the single-device reference.", ""]
        lines += _per_cell_table(setting, _correctness_cell)
    notes = [f"- {_esc(row['method'])} / {_esc(m)}: {_esc(n)}" for row in setting["rows"]
             for m, c in row["cells"].items() for n in c.get("notes", [])]
    if notes:
        lines += ["", "### Notes", ""] + notes
    if figures:
        lines += [""] + [f"![{name}]({name})" for name in figures]
    return lines + [""]


def markdown_report(results: Mapping[str, Any], *, figures: Mapping[str, list[str]] | None = None) -> str:
    """The Markdown report of ``results`` (validated first); ``figures``: setting name -> image file names."""
    validate_results(results)
    meta = results["meta"]
    lines = ["# ov-autoplace benchmark", "",
             f"- Date: {meta['date']}", f"- OpenVINO: {meta['openvino']}", f"- Command: `{meta['command']}`",
             f"- Machine: {_esc(meta['machine'])}",
             f"- Mode: {'quick' if meta['quick'] else 'full'}; sample budget {meta['budget']} placements per learned "
             f"method; {meta['runs']} timed runs per measurement; {meta['seconds']:.0f} s in total", ""]
    for setting in results["settings"]:
        lines += _setting_section(setting, meta, list((figures or {}).get(setting["name"], [])))
    return "\n".join(lines)


# --- figures ------------------------------------------------------------------------------------------

def _figure_api():
    """(Figure, FigureCanvasAgg), or None without matplotlib. Agg, with no global pyplot state."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure, FigureCanvasAgg


def _plot_title(setting: Mapping[str, Any]) -> str:
    simulated = setting["simulated"] and "simulat" not in setting["title"].lower()
    return setting["title"] + (" (simulated)" if simulated else "")


def _speedup_png(api, setting: Mapping[str, Any], path: Path) -> None:
    Figure, Canvas = api
    models = setting["models"]
    rows = [r for r in setting["rows"] if r["method"] != setting["reference"]]
    fig = Figure(figsize=(max(6.0, 1.2 + 0.35 * len(rows) * len(models)), 4.2))
    Canvas(fig)
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / max(len(rows), 1)
    for k, row in enumerate(rows):
        values = [100.0 * c["speedup"] if _ok(c := row["cells"].get(m)) and c.get("speedup") is not None
                  else math.nan for m in models]
        ax.bar([i - 0.4 + width * (k + 0.5) for i in range(len(models))], values, width, label=row["method"])
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(models)), models)
    ax.set_ylabel(f"speed-up over {setting['reference']} (%)")
    ax.set_title(_plot_title(setting), fontsize=9)
    ax.legend(fontsize=7, ncol=2, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _curves_png(api, setting: Mapping[str, Any], path: Path) -> None:
    Figure, Canvas = api
    models = setting["models"]
    kinds = {r["method"]: r["kind"] for r in setting["rows"]}
    learned = [m for m in setting["curves"] if kinds.get(m) == "learned"]
    fig = Figure(figsize=(4.0 * len(models), 3.4))
    Canvas(fig)
    for i, model in enumerate(models):
        ax = fig.add_subplot(1, len(models), i + 1)
        for method in learned:
            points = setting["curves"][method].get(model, [])
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], drawstyle="steps-post", label=method)
        for row in setting["rows"]:  # reference lines: the baseline and the optimum
            cell = row["cells"].get(model)
            if (row["method"] == setting["reference"] or row["kind"] == "optimum") and _ok(cell):
                ax.axhline(cell["median_ms"], linestyle="--", linewidth=0.8, color="grey")
                ax.annotate(row["method"], (0, cell["median_ms"]), fontsize=6, color="grey",
                            xycoords=("axes fraction", "data"))
        ax.set_title(model, fontsize=9)
        ax.set_xlabel("evaluated placements")
        if i == 0:
            ax.set_ylabel("best latency so far (ms)")
        if learned:
            ax.legend(fontsize=6)
    fig.suptitle(_plot_title(setting), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def write_report(results: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write results.json, results.md and per-setting PNGs into ``out_dir``; returns key -> path.

    Keys: ``json``, ``markdown``, ``speedup_<setting>``, ``curves_<setting>`` (the
    latter only for settings with learning curves). Without matplotlib the PNGs
    are skipped with a warning.
    """
    validate_results(results)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    api = _figure_api()
    if api is None:
        log.warning("matplotlib is not installed: writing results.json and results.md without figures "
                    "(pip install 'ov-autoplace-lab[pictures]' for the PNGs)")
    figures: dict[str, list[str]] = {}
    for setting in results["settings"] if api is not None else []:
        name = setting["name"]
        path = out / f"speedup_{name}.png"
        _speedup_png(api, setting, path)
        written[f"speedup_{name}"] = path
        figures[name] = [path.name]
        kinds = {row["method"]: row["kind"] for row in setting["rows"]}
        if any(points for method, per_model in setting["curves"].items() if kinds[method] == "learned"
               for points in per_model.values()):
            path = out / f"curves_{name}.png"
            _curves_png(api, setting, path)
            written[f"curves_{name}"] = path
            figures[name].append(path.name)
    written["json"] = out / "results.json"
    written["json"].write_text(json.dumps(results, indent=2, allow_nan=False) + "\n")
    written["markdown"] = out / "results.md"
    written["markdown"].write_text(markdown_report(results, figures=figures) + "\n")
    log.info("benchmark report written to %s", out)
    return written


__all__ = ["KINDS", "MIN_PAIRED_GAIN", "MIN_PAIRED_ROUNDS", "markdown_report", "validate_results", "write_report"]
