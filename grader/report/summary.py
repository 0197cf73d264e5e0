"""A self-check's result as text: what ``grader check`` prints in a terminal and the student kit shows as plain text.

One implementation for both, so a student reads the same lines whichever way they checked their work.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from typing import Protocol

from grader.points import shown
from grader.results import GRADED, PASSED, CheckResult, QuestionResult, SubmissionResult, UnitStatus, status_label

_COLOURS = {"green": "32", "red": "31", "yellow": "33", "bold": "1", "dim": "2"}
HIDDEN_SENTENCE = ("Hidden checks, on other inputs, also count towards your grade: your instructor runs them when "
                   "grading.")
# The heading of the choices the grader made for the student (results.Choice), on every page and in every summary.
CHOICES_HEADING = "How your code was read"


class Summarised(Protocol):
    """What a summary is made from: a ``SelfCheck`` (grader check) or a ``KitReport`` (the kit)."""

    @property
    def result(self) -> SubmissionResult: ...

    @property
    def title(self) -> str: ...

    @property
    def unchecked(self) -> tuple[tuple[str, str], ...]: ...

    @property
    def has_hidden(self) -> bool: ...

    @property
    def out_of(self) -> float: ...  # the grade's whole: every check's points and the written answers'


def all_passed(result: SubmissionResult) -> bool:
    """Every public check passed (and the file could be run)."""
    return result.status == GRADED and all(c.passed for c in result.checks)


def question_notes(question: QuestionResult) -> tuple[str, ...]:
    """What the checks point to (a problem they share, said once); not the note on grading with the reference that
    results stored before choices were recorded hold (it is a choice now, listed apart)."""
    return tuple(n for n in question.notes if not n.startswith("Graded with the reference"))


def question_passed(question: QuestionResult) -> bool:
    return all(c.status == PASSED for c in question.checks)


def question_verdict(question: QuestionResult) -> str:
    """'passed (5 public checks)', or '0 of 3 public checks passed'."""
    passed = sum(1 for c in question.checks if c.status == PASSED)
    total = len(question.checks)
    if passed == total:
        return f"passed ({total} public check{'s' * (total != 1)})"
    return f"{passed} of {total} public checks passed"


def total_line(result: SubmissionResult, out_of: float = 0.0) -> str:
    """The verdict on the whole file, with its points; ``out_of``: the grade's whole (hidden checks and written
    answers too), said where it is more than the public checks' own."""
    checks = result.checks
    rest = f"; the grade is out of {shown(out_of)}: your instructor grades the rest" if out_of > result.max_score \
        else ""
    points = f"({shown(result.score)} / {shown(result.max_score)} points{rest})."
    if all_passed(result):
        every = f"All {len(checks)} public checks" if len(checks) != 1 else "The public check"
        return f"{every} passed {points}"
    failed = sum(1 for c in checks if c.status != PASSED)
    return f"{failed} of {len(checks)} public checks did not pass {points}"


def unfinished_units(result: SubmissionResult) -> tuple[str, str] | None:
    """How many cells (statements) did not finish normally, and the first of them with its error's last line."""
    broken = [u for u in result.units if u.status not in (UnitStatus.OK, UnitStatus.SKIPPED)]
    if not broken:
        return None
    what = "cell" if result.kind == "notebook" else "statement"
    first = broken[0]
    why = first.error.strip().splitlines()[-1] if first.error.strip() else status_label(first.status)
    return (f"While your {result.kind} ran, {len(broken)} {what}(s) did not finish normally; the first:",
            f"{first.label}: {why}")


def empty_answers(result: SubmissionResult) -> str:
    """The written answers left empty, in a sentence; "" when none is."""
    empty = [a.id for a in result.answers if not a.text]
    return f"Written answers still empty: {', '.join(empty)} (read by your instructor)." if empty else ""


def outcome(status: str) -> str:
    """A check's status as a terminal shows it: its label in capitals ("NOT RUN")."""
    return status_label(status).upper()


class _Lines:
    def __init__(self, colour: bool) -> None:
        self.colour = colour
        self.lines: list[str] = []

    def paint(self, text: str, colour: str) -> str:
        return paint(text, colour, self.colour)

    def line(self, text: str = "") -> None:
        self.lines.append(text)

    def block(self, text: str, indent: int) -> None:
        """Multi-line text under a label, every line indented to the same column."""
        pad = " " * indent
        for line in text.strip().splitlines() or [""]:
            self.line(f"{pad}{line}".rstrip())


def paint(text: str, colour: str, on: bool) -> str:
    """``text`` in an ANSI colour (or bold, dim) when ``on``."""
    return f"\033[{_COLOURS[colour]}m{text}\033[0m" if on else text


def _same_cause(message: str) -> str:
    """The message with a call's arguments left out: checks that raised the same way share it."""
    return re.sub(r"\([^()]*\)(?= raised )", "(...)", message)


def _failed_lines(out: _Lines, failed: Iterable[CheckResult]) -> None:
    """Each failed check with its message; checks in a row that failed the same way (a function not written yet)
    are listed together under one message, and a diagnosis already given is not repeated in full."""
    told: set[str] = set()
    for _, group in itertools.groupby(failed, key=lambda c: (c.status, _same_cause(c.message))):
        checks = list(group)
        for check in checks:
            out.line(f"    {out.paint(outcome(check.status), 'red')}  {check.title}")
        first = checks[0]
        out.block(first.message, 6)
        if first.diagnosis is not None:
            cause = out.paint(f"Likely cause: {first.diagnosis.name}.", "bold")
            out.block(f"{cause} (as above)" if first.diagnosis.variant in told
                      else f"{cause} {first.diagnosis.said}", 6)
            told.add(first.diagnosis.variant)
        if first.smallest is not None:  # a failing random check, run again at the smallest sizes that fail it
            out.block(f"Smallest failing case: {first.smallest.text}. {first.smallest.message}", 6)
        for note in dict.fromkeys(n for c in checks for n in c.notes):
            out.block(note, 6)


def summary_lines(check: Summarised, *, heading: str = "", colour: bool = False) -> list[str]:
    """The summary, a line each: ``heading`` (already painted) before the assignment's title on the first line;
    ANSI colours when ``colour``."""
    out = _Lines(colour)
    result = check.result
    out.line(f"{heading}{check.title} ({result.assignment}), public checks only")
    if result.status != GRADED:
        out.line()
        out.line(out.paint(f"Your {result.kind} could not be checked ({result.status}):", "red"))
        out.block(result.reason, 2)
    else:
        width = max((len(f"{q.id}  {q.title}") for q in result.questions), default=0)
        out.line()
        for question in result.questions:
            verdict = out.paint(question_verdict(question), "green" if question_passed(question) else "red")
            out.line(f"{f'{question.id}  {question.title}':<{width}}  {question.score:>5g} / {question.max_score:<4g}"
                     f"  {verdict}")
            for note in question_notes(question):
                out.block(out.paint(note, "red" if note.startswith("Not graded") else "dim"), 4)
            _failed_lines(out, (c for c in question.checks if c.status != PASSED))
        for qid, title in check.unchecked:
            out.line(f"{f'{qid}  {title}':<{width}}  {out.paint('no public check', 'dim')}")
        if result.choices:
            out.line()
            out.line(f"{CHOICES_HEADING}:")
            for choice in result.choices:
                out.block(choice.line, 2)
        unfinished = unfinished_units(result)
        if unfinished:
            out.line()
            out.line(unfinished[0])
            out.block(unfinished[1], 2)
        empty = empty_answers(result)
        if empty:
            out.line(empty)
    out.line()
    out.line(out.paint(total_line(result, check.out_of), "green" if all_passed(result) else "red"))
    if check.has_hidden:
        out.line(HIDDEN_SENTENCE)
    return out.lines
