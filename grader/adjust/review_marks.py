"""The review app's marks and overrides (grader/adjust/marking_store.py), put on each result at every run, as
manual.csv's are.

The gradebook holds every mark; manual.csv is its export and an import. At the start of a run, each row of
manual.csv with points or a comment typed is compared with the gradebook's mark for that answer:

- no mark yet, or one that came from manual.csv itself: the row's points and comment are imported (as the mark of
  "manual.csv": a spreadsheet's marks are kept with the browser's);
- a mark given in the browser that says otherwise: the browser's mark counts, and the run says so (the row is then
  written again with the browser's mark);
- points that cannot count (not a number, below 0, above the maximum) over a mark the gradebook holds: that mark
  stays, and the run says why the points typed went (the row is written again with the mark);
- a row of a student the class does not have: nothing is imported (manual.csv's rewrite reports the row).

A mark counts for the answer it was given to: when the student's answer has changed since, it is shown to the
instructor as set aside, as manual.csv's are, until someone marks the answer again. Whether it still counts is known
only once the run has graded the class, so what a row typed is said when manual.csv is written again
(``row_problem``), once per row, with the one reason that holds then.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from grader.adjust.manual import ManualSheet, answer_hash, parse_points
from grader.adjust.marking_store import Mark, MarkingStore, Override, RubricEntry, mark_comment, mark_points
from grader.check.spec import Assignment
from grader.points import shown
from grader.record.gradebook import Gradebook, check_readable
from grader.record.output import GRADEBOOK, MANUAL_CSV
from grader.results import CHANGED, MARKED, CheckOverride, ManualMark, SubmissionResult

SHEET = MANUAL_CSV  # the author of a mark imported from the spreadsheet


@dataclass(frozen=True)
class Typed:
    """Points a manual.csv row typed over a mark of the gradebook that they did not replace."""

    points: str  # as typed
    problem: str  # why they cannot count at all ("": they are points, but a browser's mark says otherwise)
    mark: Mark  # the gradebook's mark, which stays


@dataclass
class ReviewMarks:
    """Read once at the start of a run, after manual.csv's rows are imported."""

    marks: dict[tuple[str, str], Mark] = field(default_factory=dict)
    rubric: dict[int, RubricEntry] = field(default_factory=dict)
    overrides: dict[tuple[str, str], Override] = field(default_factory=dict)
    imported: int = 0
    typed: dict[tuple[str, str], Typed] = field(default_factory=dict)  # by (student, question)

    @classmethod
    def load(cls, out_dir: Path, assignment: Assignment, sheet: ManualSheet) -> ReviewMarks:
        path = out_dir / GRADEBOOK
        typed = [row for row in (sheet.sheet.rows if sheet.sheet else ()) if row.get("points")]
        if not path.exists() and not typed:
            return cls()
        found = cls()
        with MarkingStore(path, assignment.name) as store:
            check_readable(store.connection, path)  # the run's first read of the gradebook: damage said as such
            store.add_checks_rubric(assignment.written)
            if typed:
                found._import(store, assignment, sheet, out_dir)
            found.marks = store.marks()
            found.rubric = store.rubric(deleted=True)
            found.overrides = store.overrides()
        return found

    def _import(self, store: MarkingStore, assignment: Assignment, sheet: ManualSheet, out_dir: Path) -> None:
        written = {w.id: w for w in assignment.written}
        rubric = store.rubric(deleted=True)
        students = _graded_students(store.connection, assignment.name)
        stored_answers: dict[str, dict[str, str]] | None = None
        for (student, question_id), row in sheet.first.items():
            question = written.get(question_id)
            points_text, comment = row.get("points"), row.get("comment")
            if question is None or not student or not points_text:
                continue  # a comment alone is not a mark: manual.csv keeps it ("not marked yet")
            if student not in students:
                continue  # no student of this class: manual.csv's rewrite reports the row
            points, problem = parse_points(points_text, question)
            mark = store.mark(student, question_id)
            if points is None:
                if mark is not None:  # the row is written again with that mark: say where the points typed went
                    self.typed[(student, question_id)] = Typed(points_text, problem, mark)
                continue  # without a mark, manual.csv's own check reports it
            if mark is not None and _same(mark, rubric, question.points, points, comment):
                continue
            if mark is not None and mark.author != SHEET:
                self.typed[(student, question_id)] = Typed(points_text, "", mark)
                continue
            marked_hash = row.get("answer_sha256")
            if not marked_hash:  # emptied by the instructor: the marks are for the answer as it is now
                if stored_answers is None:
                    stored_answers = _answers(out_dir, assignment.name)
                marked_hash = answer_hash(stored_answers.get(student, {}).get(question_id, ""))
            store.save_mark(question, student, items=(), adjustment=points,
                            comment=comment, answer_sha256=marked_hash, base_version=mark.version if mark else 0,
                            author=SHEET)
            self.imported += 1

    def manual_mark(self, student: str, question_id: str, maximum: float, answer: str) -> ManualMark | None:
        """The gradebook's mark for this answer, as the result shows it (None: there is none)."""
        mark = self.marks.get((student, question_id))
        if mark is None:
            return None
        comment = mark_comment(mark, self.rubric)
        if mark.answer_sha256 != answer_hash(answer):
            if mark.author == SHEET:  # as manual.csv says it of its own rows
                return ManualMark(question_id, maximum, None, comment, CHANGED, (
                    f"the answer changed since it was marked ({shown(mark_points(mark, self.rubric, maximum))} "
                    f"points in {MANUAL_CSV}): not counted until you read the new answer and empty the row's "
                    "answer_sha256 cell (or change the marks)"))
            return ManualMark(question_id, maximum, None, comment, CHANGED,
                              f"the answer changed since {mark.author} marked it in the browser "
                              f"({mark.saved_at[:16].replace('T', ' ')}): not counted until it is marked again "
                              "(grader review)")
        return ManualMark(question_id, maximum, mark_points(mark, self.rubric, maximum), comment, MARKED)

    def row_problem(self, student: str, question_id: str, counted: ManualMark) -> str:
        """Why the points a manual.csv row typed over the gradebook's mark did not count ("" when it typed none
        such), given what counted for the answer once the run graded it (``counted``: the gradebook's mark, or
        CHANGED when that mark is for an earlier answer)."""
        typed = self.typed.get((student, question_id))
        if typed is None:
            return ""
        mark = typed.mark
        when = mark.saved_at[:16].replace("T", " ")
        given = shown(mark_points(mark, self.rubric, counted.max_score))
        by = "the mark imported before" if mark.author == SHEET else f"{mark.author}'s mark in the browser"
        if counted.state == CHANGED:
            stays = (f"{by} ({when}) is for an earlier answer: nothing counts until the answer is marked again "
                     "(grader review)")
        else:
            stays = f"{by}, {given}, counts"
        if typed.problem:
            return f"{typed.problem}: not counted; {stays}"
        if counted.state == CHANGED:
            return f"{typed.points} points typed there: not counted, as {stays}"
        return (f"{typed.points} points typed there, but {mark.author} marked it {given} in the browser ({when}): the "
                "browser's mark counts; change it there (grader review)")

    def sheet_cells(self, student: str, question_id: str, maximum: float) -> dict[str, str] | None:
        """What manual.csv's row shows of the gradebook's mark for this answer (None: there is none): its points,
        its free comment, the answer it was given to and who gave it."""
        mark = self.marks.get((student, question_id))
        if mark is None:
            return None
        return {"points": shown(mark_points(mark, self.rubric, maximum)), "comment": mark.comment,
                "answer_sha256": mark.answer_sha256, "marked_by": mark.author}

    def overridden(self, result: SubmissionResult) -> SubmissionResult:
        """``result`` with its student's overrides in force (and none of an earlier run's that were removed)."""
        questions = []
        for question in result.questions:
            checks = []
            for check in question.checks:
                if check.override is not None:  # the stored result as the checks graded it
                    check = dataclasses.replace(check, score=check.override.original, override=None)
                override = self.overrides.get((result.student, check.check_id))
                if override is not None and override.points is not None:
                    check = dataclasses.replace(check, score=min(override.points, check.max_score),
                                                override=CheckOverride(check.score, override.reason, override.author,
                                                                       override.saved_at))
                checks.append(check)
            questions.append(dataclasses.replace(question, checks=tuple(checks)))
        return dataclasses.replace(result, questions=tuple(questions))


def _same(mark: Mark, rubric: dict[int, RubricEntry], maximum: float, points: float, comment: str) -> bool:
    """Whether a row says what the mark says: its points and its free comment."""
    return abs(mark_points(mark, rubric, maximum) - points) <= 1e-9 and mark.comment.strip() == comment.strip()


def _graded_students(db: sqlite3.Connection, assignment: str) -> set[str]:
    """The students of the class: those the gradebook holds a result of (none before the first run)."""
    try:
        return {row[0] for row in db.execute("SELECT DISTINCT student FROM submissions WHERE assignment = ?",
                                             (assignment,))}
    except sqlite3.OperationalError:  # no submissions table: nothing graded into this gradebook yet
        return set()


def _answers(out_dir: Path, assignment: str) -> dict[str, dict[str, str]]:
    with Gradebook(out_dir / GRADEBOOK) as book:
        return {s: {a.id: a.text for a in r.result.answers} for s, r in book.stored(assignment, summaries=True).items()
                if r.result is not None}
