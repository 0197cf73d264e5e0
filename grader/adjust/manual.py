"""OUT/manual.csv: the written answers, one row per student and written question, for the instructor to mark.

Columns: ``student``, ``question``, ``points`` and ``comment`` (the instructor's), ``max_points``, ``status``,
``answer`` (the first characters of the answer, on one line), ``answer_sha256`` and ``marked_by`` (the grader's).
The gradebook holds the marks given in the review app (`grader review`) and those brought in from this file
(grader/adjust/review_marks.py); a row of an answer marked there shows that mark, and ``marked_by`` says whose.
Every run reads the file, counts the marks, and writes it again with the class as it is now:

- the instructor's cells (points, comment, and any column they added) are kept as typed, never cleared;
- a new student or answer gets a row with empty points;
- ``answer_sha256`` is the hash of the answer the marks were given to. A row with marks keeps the hash it had; when
  the student's answer has changed since, the marks are not counted (``status`` says so, and the student sees "not
  marked yet") until the instructor has read the new answer and emptied that cell, which makes the marks apply to
  the answer as it is now. A row without marks always holds the hash of the current answer;
- a row that names no student of this class or no written question, or repeats one, is kept at the end with a status
  that says why, and reported, as are points that are not a number, below 0 or above the question's maximum.

A file that cannot be read as such a table is left as it is, and no manual points are counted until it is fixed.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from grader.adjust.sheet import Sheet, SheetError, SheetRow, read_sheet, write_sheet
from grader.check.spec import WrittenQuestion
from grader.points import shown
from grader.record.output import MANUAL_CSV
from grader.results import CHANGED, MARKED, REJECTED, UNMARKED, ManualMark, SubmissionResult

COLUMNS = ("student", "question", "points", "max_points", "comment", "status", "answer", "answer_sha256",
           "marked_by")
REQUIRED = ("student", "question", "points")
EXCERPT_CHARS = 300
DECIMAL_COMMA = re.compile(r"-?\d+,\d+")


def answer_hash(text: str) -> str:
    """Of the answer's words: re-saving a notebook (line endings, trailing spaces) does not change it. Prefixed,
    so a spreadsheet never reads it as a number."""
    return "sha256:" + hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


def excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS - 1] + "…"


def parse_points(text: str, question: WrittenQuestion) -> tuple[float | None, str]:
    """The points typed, or why they cannot count."""
    value = text.replace(",", ".") if DECIMAL_COMMA.fullmatch(text) else text
    try:
        points = float(value)
    except ValueError:
        return None, f"points {text!r} is not a number"
    if not math.isfinite(points):
        return None, f"points {text!r} is not a number"
    if points < 0:
        return None, f"points {text} is below 0"
    if points > question.points:
        if question.points == 0:
            return None, (f"{question.id} is worth 0 points (comments only): set points= in its WrittenQuestion in "
                          "checks.py to mark it")
        return None, f"points {text} is above {question.id}'s maximum, {shown(question.points)}"
    return points, ""


class ManualSheet:
    """manual.csv as read at the start of a run: the marks for each (student, written question)."""

    def __init__(self, path: Path, written: Sequence[WrittenQuestion], sheet: Sheet | None, unreadable: str = ""):
        self.path = path
        self.written = tuple(written)
        self.sheet = sheet
        self.unreadable = unreadable  # why the file could not be read; it is then left as it is
        self.first: dict[tuple[str, str], SheetRow] = {}
        for row in sheet.rows if sheet else ():
            self.first.setdefault((row.get("student"), row.get("question")), row)

    @classmethod
    def load(cls, out_dir: Path, written: Sequence[WrittenQuestion]) -> ManualSheet:
        path = out_dir / MANUAL_CSV
        if not written or not path.exists():
            return cls(path, written, None)
        try:
            return cls(path, written, read_sheet(path, required=REQUIRED))
        except SheetError as exc:
            return cls(path, written, None, str(exc))

    def mark(self, student: str, question: WrittenQuestion, answer: str) -> ManualMark:
        """The marks manual.csv gives ``student``'s ``answer`` to ``question``, and whether they count."""
        row = self.first.get((student, question.id))
        if row is None:
            return ManualMark(question.id, question.points, None, "", UNMARKED)
        points_text, comment, marked_hash = row.get("points"), row.get("comment"), row.get("answer_sha256")
        if (points_text or comment) and marked_hash and marked_hash != answer_hash(answer):
            given = f"{points_text} points" if points_text else "a comment"
            return ManualMark(question.id, question.points, None, comment, CHANGED,
                              f"the answer changed since it was marked ({given} in manual.csv): not counted until "
                              "you read the new answer and empty the row's answer_sha256 cell (or change the marks)")
        if not points_text:
            return ManualMark(question.id, question.points, None, comment, UNMARKED)
        points, problem = parse_points(points_text, question)
        if points is None:
            return ManualMark(question.id, question.points, None, comment, REJECTED, f"{problem}: not counted")
        return ManualMark(question.id, question.points, points, comment, MARKED)

    def rewrite(self, results: Sequence[SubmissionResult], missing: Sequence[str] = (),
                marks: Callable[[str, str, float], dict[str, str] | None] = lambda *_: None,
                typed_over: Callable[[str, str, ManualMark], str] = lambda *_: "") -> list[str]:
        """Write manual.csv for the class in ``results`` (whose ``manual`` marks came from ``mark``, or from the
        gradebook: ``marks(student, question, maximum)`` gives such a mark's cells, which the row then shows),
        keeping every mark the instructor typed; return the problems to report, one at most per row, each naming
        its row in the new file. ``typed_over(student, question, mark)``: why points the row typed over the
        gradebook's mark did not count (grader/adjust/review_marks.py), said instead of the mark's own problem."""
        if self.unreadable:
            return [f"{self.path} could not be read ({self.unreadable}): it is left as it is and no manual points "
                    "are counted; fix it, or move it away to have a new one written"]
        extra = tuple(c for c in (self.sheet.columns if self.sheet else ()) if c and c not in COLUMNS)
        rows: list[list[str]] = []
        problems: list[str] = list(self.sheet.notes if self.sheet else ())
        used: set[int] = set()

        def add(cells: dict[str, str], problem: str = "") -> None:
            rows.append([cells.get(c, "") for c in (*COLUMNS, *extra)])
            if problem:
                problems.append(f"{self.path.name} row {len(rows) + 1} ({cells.get('student') or '?'}, "
                                f"{cells.get('question') or '?'}): {problem}")

        for result in sorted(results, key=lambda r: r.student):
            answers = {a.id: a.text for a in result.answers}
            given = {m.question: m for m in result.manual}
            for question in self.written:
                row = self.first.get((result.student, question.id))
                cells = dict(row.cells) if row else {}
                if row:
                    used.add(row.number)
                answer = answers.get(question.id, "")
                mark = given.get(question.id) or self.mark(result.student, question, answer)
                has_marks = bool((cells.get("points") or "").strip() or (cells.get("comment") or "").strip())
                if not (has_marks and (cells.get("answer_sha256") or "").strip()):
                    cells["answer_sha256"] = answer_hash(answer)
                stored = marks(result.student, question.id, question.points)
                if stored is not None:
                    cells.update(stored)
                cells.update(student=result.student, question=question.id, max_points=f"{shown(question.points)}",
                             answer=excerpt(answer), status=_status(mark, answer))
                add(cells, typed_over(result.student, question.id, mark)
                    or (mark.problem if mark.state in (CHANGED, REJECTED) else ""))
        add_leftovers = [r for r in (self.sheet.rows if self.sheet else ()) if r.number not in used]
        students = {r.student for r in results}
        questions = {q.id for q in self.written}
        for row in add_leftovers:
            if not any(row.get(c) for c in ("points", "comment", *extra)):
                continue  # nothing of the instructor's: a row for an answer that is no longer asked for
            student, question = row.get("student"), row.get("question")
            cells = dict(row.cells)
            if not student or not question:
                status, problem = "no student or question: not counted", "no student or question: not counted"
            elif (student, question) in self.first and self.first[(student, question)].number in used:
                status = problem = "a second row for this answer: not counted (the first one is)"
            elif question not in questions:
                status = problem = (f"no written question {question!r} (they are {', '.join(sorted(questions))}): "
                                    "not counted")
            elif student in missing:
                status, problem = "no submission found now: kept, not counted", ""
            elif student not in students:
                status = problem = f"no student {student!r} in this class: not counted"
            else:  # a key of the class whose first row was used: handled above
                continue
            cells["status"] = status
            add(cells, problem)
        write_sheet(self.path, (*COLUMNS, *extra), rows)
        return problems


def _status(mark: ManualMark, answer: str) -> str:
    if mark.state == MARKED:
        return "marked"
    if mark.state == CHANGED:
        return "answer changed since marked: not counted"
    if mark.state == REJECTED:
        return f"error: {mark.problem}"
    if mark.max_score == 0:
        return "comments only (0 points)"
    return "to mark" if answer.strip() else "to mark (no answer)"
