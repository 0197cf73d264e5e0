"""lms.csv: the gradebook as an LMS imports it, one row per student: ``student_id,score,out_of``.

The layout is Moodle's CSV grade import (Grades > Import > CSV file): one column identifies the user (mapped to
Moodle's ID number, e-mail address or username, whichever the student ids are), one holds the grade (mapped to the
assignment's grade item), and ``out_of`` (mapped to "Ignore") says what the grade item's maximum must be. Numbers are
plain decimals with a point, as Moodle reads them. grades.csv keeps the per-question detail; this file holds only
what an LMS takes.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from grader.files import write_text_atomic
from grader.points import decimal
from grader.record.placed import Placed
from grader.results import SubmissionResult

HEADER = ("student_id", "score", "out_of")


def write_lms_csv(path: Path, results: Sequence[SubmissionResult]) -> Placed:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(HEADER)
    for result in sorted(results, key=lambda r: r.student):
        writer.writerow([result.student, decimal(result.score), decimal(result.max_score)])
    write_text_atomic(path, buffer.getvalue())
    return Placed(path, path.name, len(results), tuple(sorted(r.student for r in results)))
