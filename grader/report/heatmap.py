"""Heatmaps of attention weights as inline SVG, drawn from Python: no plotting library, a few milliseconds a page.

Like the textbook's ``show_heatmaps``: queries down, keys across, a colour bar beside. The colour map is viridis
(perceptually uniform, readable with the common colour-vision deficiencies and in greyscale), interpolated between
nine of its colours. Every cell is a ``<rect>`` holding a ``<title>`` with the exact value, which a browser shows
under the pointer. The student's weights and the reference's share one scale; their absolute difference has its own.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

from markupsafe import Markup, escape

from grader.results import Heatmap

# viridis at 0, 1/8, ..., 1 (matplotlib's map, as viridisLite lists its nine colours).
VIRIDIS = (
    (0x44, 0x01, 0x54), (0x47, 0x2D, 0x7B), (0x3B, 0x52, 0x8B), (0x2C, 0x72, 0x8E), (0x21, 0x91, 0x8C),
    (0x27, 0xAD, 0x81), (0x5D, 0xC8, 0x63), (0xAA, 0xDC, 0x32), (0xFD, 0xE7, 0x25),
)
NOT_FINITE = "#b0b0b0"  # NaN and infinities: grey, outside the map (their title says which)
COLOUR_BAR_STEPS = 24
# Differences below this are float rounding (float32 students against a float64 reference), not a mistake.
ROUNDING = 1e-6

FONT = 'font-family="system-ui, sans-serif"'


def _interpolated(t: float) -> str:
    position = t * (len(VIRIDIS) - 1)
    low = min(int(position), len(VIRIDIS) - 2)
    frac = position - low
    rgb = (round(a + (b - a) * frac) for a, b in zip(VIRIDIS[low], VIRIDIS[low + 1]))
    return "#{:02x}{:02x}{:02x}".format(*rgb)


LEVELS = 256  # as many as a colour channel has: the table is as fine as the colours themselves
_TABLE = tuple(_interpolated(i / (LEVELS - 1)) for i in range(LEVELS))


def colour(t: float) -> str:
    """The viridis colour at ``t`` in [0, 1] (clipped), as #rrggbb (looked up: a page draws thousands of cells)."""
    if not math.isfinite(t):
        return NOT_FINITE
    return _TABLE[round(min(max(t, 0.0), 1.0) * (LEVELS - 1))]


def exact(value: float) -> str:
    """A value to full precision: Python's shortest repr that reads back as the same float."""
    return repr(float(value))


def short(value: float) -> str:
    return f"{value:.3g}"


def _finite(rows: Sequence[Sequence[float]]) -> list[float]:
    return [v for row in rows for v in row if math.isfinite(v)]


def value_range(*matrices: Sequence[Sequence[float]] | None) -> tuple[float, float]:
    """One scale for several matrices: from min(0, lowest) to the highest finite value."""
    values = [v for m in matrices if m is not None for v in _finite(m)]
    if not values:
        return 0.0, 1.0
    low, high = min(min(values), 0.0), max(values)
    return (low, high) if high > low else (low, low + 1.0)


def _singular(label: str) -> str:
    """An axis label as one index's name: Queries -> query, Keys -> key, Heads -> head."""
    word = label.lower()
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def heatmap_svg(rows: Sequence[Sequence[float]], vmin: float, vmax: float, *, xlabel: str, ylabel: str, title: str,
                cell: int = 16, describe: Callable[[int, int, float], str] | None = None,
                xticks: Sequence[str] = (), yticks: Sequence[str] = (), row_start: int = 0,
                col_start: int = 0) -> Markup:
    """One heatmap as an ``<svg class="heatmap">``: a rect per cell (with its exact value as a title), the axes'
    labels and indices (or ``xticks``/``yticks``, one label each), and a colour bar from ``vmin`` to ``vmax``.
    ``describe(i, j, value)`` writes a cell's title, ``i`` and ``j`` the cell's indices in the whole matrix: ``rows``
    are part of a larger one from row ``row_start`` and column ``col_start`` on."""
    n_rows, n_cols = len(rows), max((len(r) for r in rows), default=0)
    row_name, col_name = _singular(ylabel), _singular(xlabel)

    def default(i: int, j: int, value: float) -> str:
        return f"{row_name} {i}, {col_name} {j}: {exact(value)}"

    describe = describe or default
    left, top, gap, bar_w = 34, 20, 8, 10
    grid_w, grid_h = n_cols * cell, n_rows * cell
    bar_h = max(grid_h, 48)
    width = max(left + grid_w + gap + bar_w + 40, 120)
    height = top + max(grid_h + 30, bar_h + 8)
    span = vmax - vmin if vmax > vmin else 1.0
    out = [f'<svg class="heatmap" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}: {n_rows} {escape(ylabel)} '
           f'by {n_cols} {escape(xlabel)}, scale {short(vmin)} to {short(vmax)}">',
           f'<text x="{left}" y="13" font-size="12" font-weight="600" {FONT}>{escape(title)}</text>',
           '<g shape-rendering="crispEdges">']
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            fill = colour((value - vmin) / span) if math.isfinite(value) else NOT_FINITE
            out.append(f'<rect x="{left + j * cell}" y="{top + i * cell}" width="{cell}" height="{cell}" '
                       f'fill="{fill}"><title>{escape(describe(row_start + i, col_start + j, value))}</title></rect>')
    out.append("</g>")
    # Axis indices: every one when few, else about eight.
    font = 9 if cell < 14 else 10
    step_x = 1 if len(xticks) == n_cols else max(1, math.ceil(n_cols / 8))
    step_y = 1 if len(yticks) == n_rows else max(1, math.ceil(n_rows / 8))
    out.append(f'<g font-size="{font}" fill="#444" {FONT}>')
    for j in range(0, n_cols, step_x):
        text = escape(xticks[j]) if len(xticks) == n_cols else col_start + j
        out.append(f'<text x="{left + j * cell + cell / 2:g}" y="{top + grid_h + font + 2}" '
                   f'text-anchor="middle">{text}</text>')
    for i in range(0, n_rows, step_y):
        text = escape(yticks[i]) if len(yticks) == n_rows else row_start + i
        out.append(f'<text x="{left - 4}" y="{top + i * cell + cell / 2 + font / 2 - 1:g}" '
                   f'text-anchor="end">{text}</text>')
    out.append("</g>")
    out.append(f'<text x="{left + grid_w / 2:g}" y="{top + grid_h + font + 16}" font-size="11" '
               f'text-anchor="middle" {FONT}>{escape(xlabel)}</text>')
    out.append(f'<text transform="translate(11 {top + grid_h / 2:g}) rotate(-90)" font-size="11" '
               f'text-anchor="middle" {FONT}>{escape(ylabel)}</text>')
    # Colour bar: high values at the top, as in matplotlib.
    bar_x = left + grid_w + gap
    step_h = bar_h / COLOUR_BAR_STEPS
    out.append('<g shape-rendering="crispEdges">')
    for k in range(COLOUR_BAR_STEPS):
        t = 1 - (k + 0.5) / COLOUR_BAR_STEPS
        out.append(f'<path d="M{bar_x} {top + k * step_h:.2f}h{bar_w}v{step_h + 0.5:.2f}h-{bar_w}z" '
                   f'fill="{colour(t)}"/>')
    out.append("</g>")
    out.append(f'<g font-size="9" fill="#444" {FONT}>'
               f'<text x="{bar_x + bar_w + 3}" y="{top + 8}">{short(vmax)}</text>'
               f'<text x="{bar_x + bar_w + 3}" y="{top + bar_h}">{short(vmin)}</text></g>')
    out.append("</svg>")
    return Markup("".join(out))


def _same_shape(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> bool:
    return len(a) == len(b) and all(len(x) == len(y) for x, y in zip(a, b))


def _cell_size(n_cols: int, large: bool) -> int:
    base, room = (22, 300) if large else (11, 150)
    return max(5, min(base, room // max(n_cols, 1)))


def heatmap_figure(heatmap: Heatmap, *, large: bool = False, difference: bool = True) -> Markup:
    """A ``<figure>``: the student's weights beside the reference's on one scale, and where they differ, the absolute
    difference on its own scale. ``large`` for a failing check; small ones show a passing student their attention."""
    return _figure(heatmap, large, difference)


# A student's page and their instructor page draw the same figures, and correct work gives the same weights on the
# fixed textbook tensors: drawn once (a heatmap is plain tuples, hashable).
@functools.lru_cache(maxsize=256)
def _figure(heatmap: Heatmap, large: bool, difference: bool) -> Markup:
    reference, student = heatmap.reference, heatmap.student
    vmin, vmax = value_range(reference, student)
    cell = _cell_size(max((len(r) for r in reference), default=1), large)
    axes = {"xlabel": heatmap.xlabel, "ylabel": heatmap.ylabel, "cell": cell, "xticks": heatmap.xticks,
            "yticks": heatmap.yticks, "row_start": heatmap.row_start, "col_start": heatmap.col_start}
    panels, notes = [], []
    if student is not None:
        panels.append(heatmap_svg(student, vmin, vmax, title="Yours", **axes))
    else:
        notes.append("Your tensor was missing or of another shape: only the reference is drawn.")
    panels.append(heatmap_svg(reference, vmin, vmax, title=heatmap.reference_title, **axes))
    if difference and student is not None and _same_shape(student, reference):
        diff = [[abs(s - r) for s, r in zip(srow, rrow)] for srow, rrow in zip(student, reference)]
        finite = _finite(diff)
        largest = max(finite, default=0.0)
        if largest > ROUNDING:
            row_name, col_name = _singular(heatmap.ylabel), _singular(heatmap.xlabel)

            def describe(i: int, j: int, value: float) -> str:  # i, j: in the whole matrix
                here_i, here_j = i - heatmap.row_start, j - heatmap.col_start
                return (f"{row_name} {i}, {col_name} {j}: |yours - reference| = {exact(value)} "
                        f"(yours {exact(student[here_i][here_j])}, reference {exact(reference[here_i][here_j])})")

            panels.append(heatmap_svg(diff, 0.0, largest, title="|Yours − reference|", describe=describe, **axes))
        elif finite:
            notes.append(f"Yours and the reference agree here (differences below {ROUNDING:g}).")
    # A matrix larger than the report draws: which part the pictures show (the same part in each).
    window = Markup(f' <span class="window">({escape(heatmap.window_text)})</span>') if heatmap.full_shape else ""
    caption = Markup(f"<figcaption>{escape(heatmap.title)}{window}</figcaption>")
    body = Markup("").join(Markup(f'<div class="panel">{p}</div>') for p in panels)
    extra = Markup("").join(Markup(f'<p class="small muted">{escape(n)}</p>') for n in notes)
    size = "large" if large else "small"
    return Markup(f'<figure class="heatmaps {size}">{caption}<div class="panels">{body}</div>{extra}</figure>')
