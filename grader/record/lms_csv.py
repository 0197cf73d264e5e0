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
from grader.record.placed import Placed
from grader.results import SubmissionResult

HEADER = ("student_id", "score", "out_of")


def write_lms_csv(path: Path, results: Sequence[SubmissionResult]) -> Placed:
    """Every result's row. An id a spreadsheet would run as a formula is written with a quote in front, which no LMS
    matches to a user: such a student is left out of ``placed`` and named in a warning."""
    rows = [HEADER, *([result.student, decimal(result.score), decimal(result.max_score)]
                      for result in sorted(results, key=lambda r: r.student))]
    written = csv_text(rows)
    write_text_atomic(path, written.text)
    quoted = {cell.value for cell in written.altered_in(HEADER.index("student_id"))}
    return Placed(path, path.name, len(results),
                  tuple(sorted(r.student for r in results if r.student not in quoted)),
                  warnings=tuple(f"the id {student!r} is written with a quote in front, as a spreadsheet would run it "
                                 "as a formula: an LMS will not match it to anyone" for student in sorted(quoted)))
