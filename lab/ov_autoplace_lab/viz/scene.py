"""A picture as a list of shapes in pixel coordinates, written as SVG (no dependency) or PNG (matplotlib).

Every panel (timeline, graph, summary, comparison) draws into a :class:`Scene`;
the same scene becomes the SVG, the inline SVG of the HTML page and the PNG, so
the three always show the same thing. Shapes may carry ``hover`` text (an SVG
``<title>``, the browser's tooltip) and a ``key`` that the HTML page's script
uses to show a group's details on hover.
"""

from __future__ import annotations

import dataclasses
import html
from pathlib import Path

#: Device colours (colour-blind-safe Okabe-Ito order); the cut/transfer colour is kept apart from them.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999")
CUT_COLOUR = "#D00000"
TEXT_COLOUR = "#222222"
FONT = "DejaVu Sans, Arial, sans-serif"


def device_colour(k: int) -> str:
    return PALETTE[k % len(PALETTE)]


@dataclasses.dataclass
class Rect:
    x: float
    y: float
    w: float
    h: float
    fill: str
    stroke: str = "none"
    hover: str = ""
    key: str = ""
    radius: float = 0.0
    stroke_width: float = 1.0


@dataclasses.dataclass
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    colour: str = "#999999"
    width: float = 1.0
    arrow: bool = False
    dashed: bool = False
    hover: str = ""


@dataclasses.dataclass
class Text:
    x: float
    y: float
    text: str
    size: float = 11.0
    colour: str = TEXT_COLOUR
    anchor: str = "start"  # start | middle | end
    bold: bool = False


@dataclasses.dataclass
class Scene:
    """Shapes in drawing order inside a ``width`` x ``height`` pixel canvas."""

    width: float
    height: float
    shapes: list = dataclasses.field(default_factory=list)

    def add(self, shape) -> None:
        self.shapes.append(shape)

    def place(self, other: "Scene", dx: float, dy: float) -> None:
        """Copy ``other``'s shapes into this scene, shifted by (dx, dy)."""
        for shape in other.shapes:
            moved = dataclasses.replace(shape)
            if isinstance(moved, Line):
                moved.x1, moved.x2, moved.y1, moved.y2 = moved.x1 + dx, moved.x2 + dx, moved.y1 + dy, moved.y2 + dy
            else:
                moved.x, moved.y = moved.x + dx, moved.y + dy
            self.shapes.append(moved)


def stack(scenes: list[Scene], *, gap: float = 24.0, margin: float = 16.0) -> Scene:
    """Panels one under the other, left-aligned."""
    width = max(s.width for s in scenes) + 2 * margin
    height = sum(s.height for s in scenes) + gap * (len(scenes) - 1) + 2 * margin
    out = Scene(width, height)
    y = margin
    for s in scenes:
        out.place(s, margin, y)
        y += s.height + gap
    return out


def text_width(text: str, size: float) -> float:
    """Approximate rendered width of ``text`` (sans-serif averages ~0.58 em per character)."""
    return 0.58 * size * len(text)


def fit_text(text: str, width: float, size: float) -> str:
    """``text`` shortened with an ellipsis to fit ``width`` pixels ("" when not even 3 characters fit)."""
    room = int(width / (0.58 * size))
    if len(text) <= room:
        return text
    return text[: room - 1] + "…" if room >= 3 else ""


def fit_text_end(text: str, width: float, size: float) -> str:
    """Like :func:`fit_text` but keeps the end (``…layer.3.attention``): for scopes, whose tail says most."""
    room = int(width / (0.58 * size))
    if len(text) <= room:
        return text
    return "…" + text[len(text) - room + 1:] if room >= 3 else ""


def wrap_text(text: str, width: float, size: float, max_lines: int = 2) -> list[str]:
    """Greedy word wrap to ``width`` pixels; the last line is shortened with an ellipsis if needed."""
    room = max(int(width / (0.58 * size)), 8)
    lines, current = [], ""
    for word in text.split(" "):
        if current and len(current) + 1 + len(word) > room:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    lines.append(current)
    if len(lines) > max_lines:
        lines = lines[: max_lines - 1] + [fit_text(" ".join(lines[max_lines - 1:]), width, size)]
    return lines


#: Short names for long op types on labels (hover text keeps the full name).
SHORT_OP_NAMES = {"ScaledDotProductAttention": "SDPA", "Convolution": "Conv", "GroupConvolution": "GroupConv",
                  "ConvolutionBackpropData": "Deconv", "FullyConnected": "FC", "BatchNormInference": "BatchNorm",
                  "StridedSlice": "Slice"}


def short_ops(label: str) -> str:
    for long, short in SHORT_OP_NAMES.items():
        label = label.replace(long, short)
    return label


def _esc(s: str) -> str:
    return html.escape(s, quote=True)


def to_svg(scene: Scene) -> str:
    """The scene as a standalone SVG document."""
    w, h = round(scene.width), round(scene.height)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           f'font-family="{FONT}">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{CUT_COLOUR}"/></marker></defs>',
           f'<rect width="{w}" height="{h}" fill="white"/>']
    for s in scene.shapes:
        if isinstance(s, Rect):
            attrs = f' data-key="{_esc(s.key)}" class="hoverable"' if s.key else ""
            title = f"<title>{_esc(s.hover)}</title>" if s.hover else ""
            tag = (f'<rect x="{s.x:.1f}" y="{s.y:.1f}" width="{max(s.w, 0.5):.1f}" height="{s.h:.1f}" '
                   f'rx="{s.radius:g}" fill="{s.fill}" stroke="{s.stroke}" stroke-width="{s.stroke_width:g}"{attrs}')
            out.append(f"{tag}>{title}</rect>" if title else f"{tag}/>")
        elif isinstance(s, Line):
            extra = ' marker-end="url(#arrow)"' if s.arrow else ""
            extra += ' stroke-dasharray="4,3"' if s.dashed else ""
            title = f"<title>{_esc(s.hover)}</title>" if s.hover else ""
            out.append(f'<line x1="{s.x1:.1f}" y1="{s.y1:.1f}" x2="{s.x2:.1f}" y2="{s.y2:.1f}" stroke="{s.colour}" '
                       f'stroke-width="{s.width:g}"{extra}>{title}</line>')
        elif isinstance(s, Text):
            weight = ' font-weight="bold"' if s.bold else ""
            out.append(f'<text x="{s.x:.1f}" y="{s.y:.1f}" font-size="{s.size:g}" fill="{s.colour}" '
                       f'text-anchor="{s.anchor}"{weight}>{_esc(s.text)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def matplotlib_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def to_png(scene: Scene, path: str | Path, *, dpi: int = 100) -> None:
    """Render the scene to PNG with matplotlib (in the ``dev`` extra; SVG and HTML need nothing).

    Raises ImportError with the install command when matplotlib is missing.
    """
    try:  # no pyplot: its import alone costs seconds, and the Agg canvas is all a file needs
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import LineCollection, PatchCollection
        from matplotlib.figure import Figure
        from matplotlib.font_manager import FontProperties
        from matplotlib.patches import FancyArrowPatch, Rectangle
    except ImportError as exc:
        raise ImportError("PNG output needs matplotlib: pip install 'ov-autoplace-lab[pictures]' (or pip install matplotlib); "
                          "the SVG and HTML are written without it") from exc
    fig = Figure(figsize=(scene.width / dpi, scene.height / dpi), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, scene.width)
    ax.set_ylim(scene.height, 0)  # SVG's y axis points down
    ax.axis("off")
    points = 72.0 / dpi  # pixel sizes -> points
    align = {"start": "left", "middle": "center", "end": "right"}
    # consecutive plain rectangles and lines go in one collection each (one draw call, same stacking order)
    run: list = []
    fonts: dict = {}

    def flush(z: int) -> None:
        if not run:
            return
        if isinstance(run[0], Rect):
            patches = [Rectangle((r.x, r.y), max(r.w, 0.5), r.h) for r in run]
            ax.add_collection(PatchCollection(
                patches, facecolors=[r.fill if r.fill != "none" else (0, 0, 0, 0) for r in run],
                edgecolors=[r.stroke if r.stroke != "none" else (0, 0, 0, 0) for r in run],
                linewidths=[r.stroke_width * points for r in run], zorder=z))
        else:
            ax.add_collection(LineCollection([[(ln.x1, ln.y1), (ln.x2, ln.y2)] for ln in run],
                                             colors=[ln.colour for ln in run],
                                             linewidths=[ln.width * points for ln in run],
                                             linestyles=["--" if ln.dashed else "-" for ln in run], zorder=z))
        run.clear()

    for z, s in enumerate(scene.shapes):
        plain_line = isinstance(s, Line) and not s.arrow
        if run and (type(s) is not type(run[0]) or not (isinstance(s, Rect) or plain_line)):
            flush(z)
        if isinstance(s, Rect) or plain_line:
            run.append(s)
        elif isinstance(s, Line):
            ax.add_patch(FancyArrowPatch((s.x1, s.y1), (s.x2, s.y2), arrowstyle="-|>", mutation_scale=8,
                                         color=s.colour, linewidth=s.width * points,
                                         linestyle="--" if s.dashed else "-", shrinkA=0, shrinkB=0, zorder=z))
        elif isinstance(s, Text):
            font_key = (s.size, s.bold)
            if font_key not in fonts:  # one FontProperties per size/weight: font lookup is per object
                fonts[font_key] = FontProperties(family="DejaVu Sans", size=s.size * points,
                                                 weight="bold" if s.bold else "normal")
            ax.text(s.x, s.y, s.text, fontproperties=fonts[font_key], color=s.colour, ha=align[s.anchor],
                    va="baseline", zorder=z)
    flush(len(scene.shapes))
    fig.savefig(path, dpi=dpi)


__all__ = ["CUT_COLOUR", "Line", "PALETTE", "Rect", "Scene", "Text", "device_colour", "fit_text", "fit_text_end",
           "matplotlib_available", "short_ops", "stack", "text_width", "to_png", "to_svg", "wrap_text"]
