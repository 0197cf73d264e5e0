"""lms.csv: the gradebook as an LMS imports it, one row per student: ``student_id,score,out_of``.

The layout is Moodle's CSV grade import (Grades > Import > CSV file): one column identifies the user (mapped to
Moodle's ID number, e-mail address or username, whichever the student ids are), one holds the grade (mapped to the
assignment's grade item), and ``out_of`` (mapped to "Ignore") says what the grade item's maximum must be. Numbers are
plain decimals with a point, as Moodle reads them. grades.csv keeps the per-question detail; this file holds only
what an LMS takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from grader.csv_cells import csv_text
from grader.files import write_text_atomic
from grader.points import decimal
from grader.results import SubmissionResult

HEADER = ("student_id", "score", "out_of")


def write_lms_csv(path: Path, results: Sequence[SubmissionResult]) -> list[str]:
    """Returns the student ids written with a quote in front, as a spreadsheet would have run them as formulas: the
    LMS cannot match those to a user, so the caller should say so."""
    rows = [HEADER, *([result.student, decimal(result.score), decimal(result.max_score)]
                      for result in sorted(results, key=lambda r: r.student))]
    written = csv_text(rows)
    write_text_atomic(path, written.text)
    return [cell.value for cell in written.altered_in(HEADER.index("student_id"))]
