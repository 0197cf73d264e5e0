"""grades.csv: one row per student."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from grader.record.atomic import write_text_atomic
from grader.results import SubmissionResult


def write_grades_csv(path: Path, results: Sequence[SubmissionResult]) -> None:
    question_ids = [q.id for q in results[0].questions] if results else []
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student", "score", "max_score", "status", *question_ids, "source", "reason", "duration_s"])
    for result in sorted(results, key=lambda r: r.student):
        scores = {q.id: q.score for q in result.questions}
        writer.writerow([result.student, f"{result.score:g}", f"{result.max_score:g}", result.status,
                         *(f"{scores.get(q, 0):g}" for q in question_ids), result.source, result.reason,
                         f"{result.duration_s:.2f}"])
    write_text_atomic(path, buffer.getvalue())
