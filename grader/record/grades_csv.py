"""grades.csv: one row per student."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from grader.record.atomic import write_text_atomic
from grader.results import SubmissionResult

LATE_COLUMNS = ("submitted_at", "deadline", "late_hours", "late_penalty")  # UTC times; hours after the deadline


def write_grades_csv(path: Path, results: Sequence[SubmissionResult]) -> None:
    """``score`` is the total: the checks' points, plus manual points, less the late penalty. Written questions
    worth points get a column each (empty until marked); when a deadline applies, four columns say when each
    submission came (UTC) and what lateness cost."""
    question_ids = [q.id for q in results[0].questions] if results else []
    written_ids = list(dict.fromkeys(m.question for r in results for m in r.manual if m.max_score))
    dated = any(r.late is not None for r in results)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student", "score", "max_score", "status", *question_ids, *written_ids, "source", "reason",
                     "duration_s", *(LATE_COLUMNS if dated else ())])
    for result in sorted(results, key=lambda r: r.student):
        scores = {q.id: q.score for q in result.questions}
        marks = {m.question: m.points for m in result.manual}
        late = result.late
        writer.writerow([result.student, f"{result.score:g}", f"{result.max_score:g}", result.status,
                         *(f"{scores.get(q, 0):g}" for q in question_ids),
                         *("" if marks.get(w) is None else f"{marks[w]:g}" for w in written_ids),
                         result.source, result.reason, f"{result.duration_s:.2f}",
                         *(() if not dated else ("", "", "", "") if late is None else
                           (late.submitted_at, late.deadline, f"{late.late_s / 3600:.2f}", f"{result.late_points:g}"))])
    write_text_atomic(path, buffer.getvalue())
