"""Render the student's page, the instructor's page and the class dashboard from results (templates in templates/).

Every page is one self-contained file: CSS, SVG and the dashboard's script inline, no fonts, no CDN. A
Content-Security-Policy in each page says so to the browser as well: nothing may load from anywhere, and the only
script that may run is the grader's own (allowed by its hash), so nothing a student printed or wrote can run.

The student's page is rendered from ``result.for_student()`` (grader/results.py), a copy without what only the
instructor may see, so no template mistake can show it.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import jinja2
from markupsafe import Markup

from grader import points
from grader.containment import containment
from grader.discover import Submission
from grader.discover.inventory import fates
from grader.names import file_name, readable
from grader.paths import TEMPLATES_DIR
from grader.report.dashboard import class_stats, histogram_svg, written_stats
from grader.report.heatmap import exact, heatmap_figure
from grader.report.notebook import clip, highlight_css, notebook_section
from grader.report.summary import CHOICES_HEADING
from grader.results import GRADED, HIDDEN, PUBLIC, SubmissionResult, TensorDiff, UnitStatus, status_label
from grader.times import describe_duration, describe_late, describe_time

if TYPE_CHECKING:
    from grader.record.accounting import Accounting
    from grader.similar import SimilarityReport

OUTPUT_SHOWN = 6000  # characters of one cell's output on a page; the rest is cut from the middle
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src {script}; base-uri 'none'; "
       "form-action 'none'")


def when(iso: str) -> str:
    """2026-11-22T03:33:59+00:00 as 2026-11-22 03:33:59 UTC."""
    return iso.replace("T", " ").replace("+00:00", " UTC")


def diff_blocks(diff: TensorDiff) -> list[dict[str, Any]]:
    """A small differing tensor as 2-D blocks for tables: one per index of its leading dimensions."""
    shape = tuple(diff.shape) or (1,)
    cols = shape[-1]
    rows = shape[-2] if len(shape) >= 2 else 1
    lead = shape[:-2]
    bad = set(diff.bad)
    blocks = []
    for b, index in enumerate(itertools.product(*map(range, lead))):  # row-major, as the entries are stored
        caption = f"[{', '.join(map(str, index))}, :, :]" if lead else ""
        table = []
        for r in range(rows):
            cells = []
            for c in range(cols):
                flat = (b * rows + r) * cols + c
                if flat < len(diff.got) and flat < len(diff.expected):
                    cells.append({"got": diff.got[flat], "expected": diff.expected[flat], "bad": flat in bad})
            table.append(cells)
        blocks.append({"caption": caption, "rows": table})
    return blocks


def _number(value: float) -> str:
    return f"{value:.4g}"


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES_DIR), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(points=points.shown, clip=lambda text: clip(text, OUTPUT_SHOWN), when=when,
                       number=_number, exact=exact, label=status_label,
                       moment=describe_time, duration=describe_duration, folder=file_name, readable=readable)
    env.globals.update(heatmap_figure=heatmap_figure, diff_blocks=diff_blocks, PUBLIC=PUBLIC, HIDDEN=HIDDEN,
                       GRADED=GRADED, UnitStatus=UnitStatus, describe_late=describe_late,
                       CHOICES_HEADING=CHOICES_HEADING)
    return env


@cache
def _dashboard_script() -> tuple[Markup, str]:
    script = (TEMPLATES_DIR / "dashboard.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return Markup(script), Markup(CSP.format(script=f"'sha256-{digest}'"))


def _render(template: str, **context: Any) -> str:
    context.setdefault("csp", Markup(CSP.format(script="'none'")))
    return _environment().get_template(template).render(**context)


def _printed_while_graded(result: SubmissionResult) -> bool:
    return any(q.stdout or q.stderr for q in result.questions)


def render_student_report(result: SubmissionResult, *, title: str, name: str = "") -> str:
    """The student's page: hidden checks show their name, result and a message that names no input or value.
    ``name``: the person's name, as a course platform's download gives it beside its id."""
    return _render("report.html.j2", r=result.for_student(), title=title, instructor=False, name=name,
                   printed_while_graded=_printed_while_graded(result))


def render_instructor_report(result: SubmissionResult, *, title: str, submission: Submission | None = None) -> str:
    """Everything on the student's page, plus each check's detail and trace (hidden ones' inputs and expected values
    included), their heatmaps and differing entries, what the code printed while graded, and the notebook as it ran
    (``submission`` is read again for its cells; without it, the page says the file is gone)."""
    try:
        notebook, why, raw = notebook_section(result, submission)
    except Exception as exc:  # a notebook nbconvert cannot render costs the instructor that section, not the page
        notebook, why, raw = None, f"The {result.kind} could not be rendered ({type(exc).__name__}: {exc}).", None
    return _render("report.html.j2", r=result, title=title, instructor=True,
                   name=submission.name if submission is not None else "",
                   printed_while_graded=_printed_while_graded(result), notebook=notebook, notebook_missing=why,
                   raw_source=raw, highlight_css=Markup(highlight_css()))


def render_dashboard(results: Sequence[SubmissionResult], *, title: str, skipped: Sequence[Any] = (),
                     max_score: float, similarity: SimilarityReport | None = None,
                     accounting: Accounting | None = None) -> str:
    """The class dashboard; with ``similarity`` (grader/report/similar_pages.py ``write_similarity``), its "Similar
    submissions" section; with ``accounting`` (grader/record/accounting.py), what the run found, graded and wrote."""
    ordered = sorted(results, key=lambda r: r.student)
    stats = class_stats(ordered, max_score)
    script, csp = _dashboard_script()
    return _render("dashboard.html.j2", results=ordered, title=title, skipped=skipped, max_score=max_score,
                   stats=stats, histogram=histogram_svg(stats.histogram, max_score),
                   failed=[r for r in ordered if r.status != GRADED],
                   question_ids=[q.id for q in stats.questions], script=script, csp=csp,
                   written=written_stats(ordered), dated=any(r.late is not None for r in ordered),
                   similarity=similarity, accounting=accounting, fates=fates,
                   isolation=containment(ordered))
