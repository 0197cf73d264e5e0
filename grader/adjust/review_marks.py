"""The review app's marks and overrides (grader/review/store.py), put on each result at every run, as manual.csv's are.

The gradebook holds every mark; manual.csv is its export and an import. At the start of a run, each row of
manual.csv with points or a comment typed is compared with the gradebook's mark for that answer:

- no mark yet, or one that came from manual.csv itself: the row's points and comment are imported (as the mark of
  "manual.csv": a spreadsheet's marks are kept with the browser's);
- a mark given in the browser that says otherwise: the browser's mark counts, and the run says so (the row is then
  written again with the browser's mark).

A mark counts for the answer it was given to: when the student's answer has changed since, it is shown to the
instructor as set aside, as manual.csv's are, until someone marks the answer again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from grader.adjust.manual import ManualSheet, answer_hash, parse_points
from grader.check.spec import Assignment
from grader.points import shown
from grader.record.gradebook import Gradebook
from grader.record.output import GRADEBOOK, MANUAL_CSV
from grader.results import CHANGED, MARKED, CheckOverride, ManualMark, SubmissionResult
from grader.review.store import Mark, MarkingStore, Override, RubricEntry, mark_comment, mark_points

SHEET = MANUAL_CSV  # the author of a mark imported from the spreadsheet


@dataclass
class ReviewMarks:
    """Read once at the start of a run, after manual.csv's rows are imported."""

    marks: dict[tuple[str, str], Mark] = field(default_factory=dict)
    rubric: dict[int, RubricEntry] = field(default_factory=dict)
    overrides: dict[tuple[str, str], Override] = field(default_factory=dict)
    imported: int = 0
    problems: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, out_dir: Path, assignment: Assignment, sheet: ManualSheet) -> ReviewMarks:
        path = out_dir / GRADEBOOK
        typed = [row for row in (sheet.sheet.rows if sheet.sheet else ()) if row.get("points")]
        if not path.exists() and not typed:
            return cls()
        found = cls()
        with MarkingStore(path, assignment.name) as store:
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
        stored_answers: dict[str, dict[str, str]] | None = None
        for (student, question_id), row in sheet.first.items():
            question = written.get(question_id)
            points_text, comment = row.get("points"), row.get("comment")
            if question is None or not student or not points_text:
                continue  # a comment alone is not a mark: manual.csv keeps it ("not marked yet")
            points, _ = parse_points(points_text, question)
            if points is None:
                continue  # manual.csv's own check reports it
            mark = store.mark(student, question_id)
            if mark is not None and _same(mark, rubric, question.points, points, comment):
                continue
            if mark is not None and mark.author != SHEET:
                self.problems.append(
                    f"{MANUAL_CSV} row {row.number} ({student}, {question_id}): {points_text} points typed "
                    f"there, but {mark.author} marked it {shown(mark_points(mark, rubric, question.points))} in the "
                    f"browser ({mark.saved_at[:16].replace('T', ' ')}): the browser's mark counts; change it there "
                    "(grader review)")
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


def _answers(out_dir: Path, assignment: str) -> dict[str, dict[str, str]]:
    with Gradebook(out_dir / GRADEBOOK) as book:
        return {s: {a.id: a.text for a in r.result.answers} for s, r in book.stored(assignment, summaries=True).items()
                if r.result is not None}
