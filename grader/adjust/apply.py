"""Apply a run's adjustments to each result: the marks for written answers (the review app's, in the gradebook, and
manual.csv's), the checks' points overridden in the review app, and the late penalty.

The check results are facts about the code, stored in the gradebook and reused while the submission and the grading
are unchanged; manual points and late penalties are recomputed from manual.csv, extensions.csv and the deadline at
every run and put on top (``SubmissionResult.manual`` and ``.late``, which its totals include). So changing
manual.csv or the deadline changes totals and pages at the next run without running anyone's code again, and never
changes the resume fingerprint.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from grader.adjust.late import EXTENSION_COLUMNS, DeadlineRule, Extension, late_penalty, read_extension
from grader.adjust.manual import ManualSheet
from grader.adjust.review_marks import ReviewMarks
from grader.adjust.sheet import SheetError, read_sheet, write_sheet
from grader.check.spec import Assignment
from grader.discover import Submission
from grader.points import shown
from grader.record.output import EXTENSIONS_CSV
from grader.results import CHANGED, MARKED, SubmissionResult
from grader.times import describe_time, offset_of, utc_iso


@dataclass(frozen=True)
class AdjustmentReport:
    """What a run's adjustments came to, for the command line."""

    summary: tuple[str, ...] = ()  # one line each: written answers marked, late submissions
    problems: tuple[str, ...] = ()  # rows of manual.csv or extensions.csv that could not count, and why


def _read_extensions(path: Path, rule: DeadlineRule) -> tuple[dict[str, Extension], list[str], str]:
    """The students' extensions, the problems with the file's rows, and why the whole file could not be read."""
    if not path.exists():
        return {}, [], ""
    try:
        sheet = read_sheet(path, required=EXTENSION_COLUMNS[:2])
    except SheetError as exc:
        return {}, [], str(exc)
    extensions: dict[str, Extension] = {}
    problems = list(sheet.notes)
    for row in sheet.rows:
        student = row.get("student")
        if not student:
            problems.append(f"{path.name} row {row.number}: no student")
            continue
        if student in extensions:
            problems.append(f"{path.name} row {row.number}: a second row for {student} (row "
                            f"{extensions[student].row} counts)")
            continue
        extension = read_extension(student, row.number, row.get("deadline"), row.get("reason"), rule.deadline)
        if extension.problem:
            problems.append(f"{path.name} row {row.number} ({student}): {extension.problem}; no late penalty for "
                            f"{student} until it is fixed")
        extensions[student] = extension
    return extensions, problems, ""


class Adjustments:
    """Read once at the start of a run (under the output folder's lock); ``apply`` to every result written;
    ``finish`` once the class is complete."""

    def __init__(self, out_dir: Path, assignment: Assignment, rule: DeadlineRule, *,
                 review: ReviewMarks | None = None) -> None:
        """``review``: the review app's marks as the run read them (a job process's); otherwise they are read from
        the gradebook, after manual.csv's new marks are brought into it (the run's own process does, once)."""
        self.out_dir = out_dir
        self.assignment = assignment
        self.rule = rule
        self.manual = ManualSheet.load(out_dir, assignment.written)
        self.review = review if review is not None else ReviewMarks.load(out_dir, assignment, self.manual)
        self.extensions_path = out_dir / EXTENSIONS_CSV
        self.extensions, self.extension_problems, self.extensions_unreadable = _read_extensions(
            self.extensions_path, rule)

    def apply(self, result: SubmissionResult, submission: Submission | None) -> SubmissionResult:
        """``result`` with this run's manual marks and late penalty (whatever it held before). The submission time
        is the one found now (a reused result was graded from the same content, but its time may have been read
        from an export since), so a reused result ends as a regraded one would."""
        answers = {a.id: a.text for a in result.answers}
        manual = tuple(self.review.manual_mark(result.student, w.id, w.points, answers.get(w.id, ""))
                       or self.manual.mark(result.student, w, answers.get(w.id, "")) for w in self.assignment.written)
        result = self.review.overridden(result)
        submitted_at = utc_iso(submission.submitted_at) if submission is not None else result.submitted_at
        late = None
        if self.rule.deadline is not None:
            late = late_penalty(datetime.fromisoformat(submitted_at), self.rule,
                                self.extensions.get(result.student))
            if late is not None and self.extensions_unreadable:
                late = dataclasses.replace(late, fraction=0.0, note=(
                    f"{EXTENSIONS_CSV} could not be read ({self.extensions_unreadable}): no late penalty applied "
                    "until it is fixed"))
        return dataclasses.replace(result, manual=manual, late=late, submitted_at=submitted_at)

    def finish(self, results: Sequence[SubmissionResult], *, missing: Sequence[str] = ()) -> AdjustmentReport:
        """Write manual.csv (and an empty extensions.csv to fill in, when a deadline applies and there is none);
        say what the adjustments came to."""
        summary: list[str] = []
        problems: list[str] = []
        if self.review.imported:
            summary.append(f"{self.review.imported} mark(s) of {self.manual.path.name} brought into the gradebook")
        overridden = sum(1 for r in results for q in r.questions for c in q.checks if c.override is not None)
        if overridden:
            summary.append(f"{overridden} check score(s) overridden in the review app (grader review), each with "
                           "its reason on the student's page")
        if self.assignment.written:
            problems += self.manual.rewrite(results, missing, marks=self.review.sheet_cells,
                                            typed_over=self.review.row_problem)
            marks = [m for r in results for m in r.manual if m.max_score]
            if marks:
                marked = sum(1 for m in marks if m.state == MARKED)
                changed = sum(1 for m in marks if m.state == CHANGED)
                summary.append(f"Written answers: {marked} of {len(marks)} marked"
                               + (f", {changed} changed since marked (not counted)" if changed else "")
                               + f"; {shown(sum(m.score for m in marks))} points in all. Mark them in "
                                 f"{self.manual.path.resolve()}")
            else:
                commented = sum(1 for r in results for m in r.manual if m.comment)
                summary.append(f"Written answers (no points; comments shown to students): {commented} commented in "
                               f"{self.manual.path.resolve()}")
        if self.rule.deadline is not None:
            late = [r for r in results if r.late is not None and r.late.is_late]
            deducted = sum(r.late_points for r in results)
            deadline = describe_time(utc_iso(self.rule.deadline), offset_of(self.rule.deadline))
            summary.append(f"Deadline {deadline} ({self.rule.source}; {self.rule.policy.describe()}): {len(late)} of "
                           f"{len(results)} late, {shown(deducted)} point{'s' if deducted != 1 else ''} deducted; "
                           f"{len(self.extensions)} extension(s) "
                           f"in {self.extensions_path.resolve()}")
            if not self.extensions_path.exists():
                write_sheet(self.extensions_path, EXTENSION_COLUMNS, ())
            if self.extensions_unreadable:
                problems.append(f"{self.extensions_path} could not be read ({self.extensions_unreadable}): no late "
                                "penalty is applied to anyone until it is fixed")
            students = {r.student for r in results}
            problems += self.extension_problems
            problems += [f"{EXTENSIONS_CSV} row {e.row}: no student {e.student!r} in this class"
                         for e in self.extensions.values() if e.student not in students and e.student not in missing]
        elif self.extensions:
            problems.append(f"{EXTENSIONS_CSV} grants {len(self.extensions)} extension(s), but no deadline is set "
                            "for this assignment: they change nothing")
        return AdjustmentReport(tuple(summary), tuple(problems))
