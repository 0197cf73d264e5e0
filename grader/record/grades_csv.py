"""grades.csv: one row per student."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from grader.csv_cells import csv_text
from grader.discover.canvas import canvas_late
from grader.discover.finder import Submission
from grader.files import write_text_atomic
from grader.points import shown
from grader.record.placed import Placed
from grader.results import SubmissionResult

LATE_COLUMNS = ("submitted_at", "deadline", "late_hours", "late_penalty")  # UTC times; hours after the deadline


def write_grades_csv(path: Path, results: Sequence[SubmissionResult],
                     submissions: Mapping[str, Submission] | None = None) -> Placed:
    """``score`` is the total: the checks' points, plus manual points, less the late penalty. Written questions
    worth points get a column each (empty until marked); when a deadline applies, four columns say when each
    submission came (UTC) and what lateness cost. From a course platform's download (``submissions``), the
    student's name and whether the platform marked the submission late."""
    people = submissions or {}
    named = any(s.name for s in people.values())
    marked = any(canvas_late(s) for s in people.values())
    question_ids = [q.id for q in results[0].questions] if results else []
    written_ids = list(dict.fromkeys(m.question for r in results for m in r.manual if m.max_score))
    dated = any(r.late is not None for r in results)
    rows = [["student", *(("name",) if named else ()), *(("marked_late",) if marked else ()),
             "score", "max_score", "status", *question_ids, *written_ids, "source", "reason",
             "duration_s", *(LATE_COLUMNS if dated else ())]]
    for result in sorted(results, key=lambda r: r.student):
        scores = {q.id: q.score for q in result.questions}
        marks = {m.question: m.points for m in result.manual}
        late = result.late
        person = people.get(result.student)
        rows.append([result.student, *((person.name if person else "",) if named else ()),
                     *(("yes" if person and canvas_late(person) else "",) if marked else ()),
                     f"{shown(result.score)}", f"{shown(result.max_score)}", result.status,
                     *(f"{shown(scores.get(q, 0))}" for q in question_ids),
                     *("" if marks.get(w) is None else f"{shown(marks[w])}" for w in written_ids),
                     result.source, result.reason, f"{result.duration_s:.2f}",
                     *(() if not dated else ("", "", "", "") if late is None else
                       (late.submitted_at, late.deadline, f"{late.late_s / 3600:.2f}", f"{result.late_points:g}"))])
    write_text_atomic(path, csv_text(rows).text)
    return Placed(path, path.name, len(results), tuple(sorted(r.student for r in results)))
