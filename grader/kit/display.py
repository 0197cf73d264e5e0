"""The student kit's result as a notebook shows it: an HTML fragment for the output cell, plain text elsewhere.

A ``KitReport`` returned from a cell is drawn inline (``_repr_html_``); printed, it is the text ``grader check``
prints in a terminal (one implementation: grader/report/summary.py). The HTML is built from the student page's
pieces (templates/macros.html.j2, the heatmaps, the tables of differing entries), from ``result.for_student()`` as
that page is, so nothing a student may not see can reach either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from grader.report import summary
from grader.report.render import _environment
from grader.results import SubmissionResult

if TYPE_CHECKING:  # the pipeline brings the class run's machinery (dask), which a student's kernel need not import
    from grader.pipeline.self_check import SelfCheck

TEMPLATE = "kit.html.j2"


@dataclass(frozen=True, repr=False)
class KitReport:
    """The public checks' result on a student's work, with what the kit adds: how long it took, and its notes."""

    result: SubmissionResult  # public checks only
    title: str  # the assignment's
    unchecked: tuple[tuple[str, str], ...] = ()  # (id, title) of questions without a public check
    has_hidden: bool = False  # whether the instructor's grading runs checks not run here (never which)
    seconds: float = 0.0  # how long the check took
    notes: tuple[str, ...] = ()  # the kit's own, e.g. what it could not check in a kernel
    kit: str = ""  # which kit build checked it ("kit attention_scoring 1 · 3f2a1b9c"), to tell an old kit from a new
    out_of: float = 0.0  # the grade's whole (hidden checks and written answers too); 0: not known

    @classmethod
    def from_self_check(cls, check: SelfCheck, *, seconds: float, notes: tuple[str, ...] = ()) -> KitReport:
        return cls(check.result, check.title, check.unchecked, check.has_hidden, seconds, notes, out_of=check.out_of)

    @property
    def passed(self) -> bool:
        """Every public check passed (and the work could be run)."""
        return summary.all_passed(self.result)

    def _repr_html_(self) -> str:
        return html(self)

    def __str__(self) -> str:
        return text(self)

    def __repr__(self) -> str:
        # IPython's plain-text view of the cell's value, and what a terminal shows: the summary, not the fields.
        return text(self)


def html(report: KitReport) -> str:
    """A self-contained HTML fragment for a notebook's output cell: inline CSS scoped under ``.grader-kit``, inline
    SVG heatmaps, no script, nothing fetched; every value escaped."""
    # The student page's Jinja environment: its filters and globals are what the shared macros are written against.
    template = _environment().get_template(TEMPLATE)
    return template.render(
        r=report.result.for_student(), title=report.title, unchecked=report.unchecked, has_hidden=report.has_hidden,
        seconds=report.seconds, kit=report.kit, notes=report.notes, passed=report.passed, out_of=report.out_of,
        hidden_sentence=summary.HIDDEN_SENTENCE,
        question_passed=summary.question_passed, question_verdict=summary.question_verdict,
        question_notes=summary.question_notes, total_line=summary.total_line,
        unfinished_units=summary.unfinished_units, empty_answers=summary.empty_answers)


def text(report: KitReport) -> str:
    """``grader check``'s summary, without its colours and its report's path; the kit's notes after the first line,
    and how long the check took at the end."""
    lines = summary.summary_lines(report, colour=False)
    built = f" with {report.kit}" if report.kit else ""
    return "\n".join([lines[0], *report.notes, *lines[1:], f"Checked in {report.seconds:.1f} s{built}."])
