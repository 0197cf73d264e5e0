"""What a Moodle assignment imports back: the offline grading worksheet and a zip of feedback files.

``OUT/moodle/grading-worksheet.csv`` is for "Upload grading worksheet" (assignfeedback_offline). Moodle's importer
(importgradeslib.php) finds its columns by their English headers: "Identifier" ("Participant <id>"), "Grade" and
"Last modified (grade)" are required, "Feedback comments" is read when the comments plugin is on, and every other
column is ignored. It skips a row whose grade was changed in Moodle more than a minute after the sheet's "Last
modified (grade)", unless "Allow updating records that have been modified more recently in Moodle than in the
spreadsheet" is ticked. Given the worksheet the instructor downloaded, its rows are filled in and every other cell is
kept, so that check works; without it, the columns Moodle needs are written, "Last modified (grade)" as "-".

``OUT/moodle/feedback.zip`` is for "Upload multiple feedback files in a zip" (assignfeedback_file importziplib.php):
Moodle matches the participant by the ``<full name>_<participant id>_assignsubmission_file`` folder of the download,
so each participant's report.html goes into their own folder from the download, and only that file: never the
instructor's page.
"""

from __future__ import annotations

import html
import re
import zipfile
from collections.abc import Sequence
from pathlib import Path

from grader.csv_cells import csv_rows, csv_text
from grader.discover.finder import Submission
from grader.discover.moodle import FOLDER, PARTICIPANT
from grader.errors import ConfigurationError
from grader.files import atomic_writer, write_text_atomic
from grader.points import decimal
from grader.record.output import OutputFolder
from grader.results import GRADED, SubmissionResult

# The worksheet's headers as Moodle (English) writes them (mod/assign/gradingtable.php, lang/en/assign.php).
IDENTIFIER, FULL_NAME, EMAIL, STATUS = "Identifier", "Full name", "Email address", "Status"
GRADE, MAXIMUM, CHANGEABLE = "Grade", "Maximum Grade", "Grade can be changed"
SUBMITTED, GRADED_AT, COMMENTS = "Last modified (submission)", "Last modified (grade)", "Feedback comments"
PARTICIPANT_PREFIX = "Participant "  # get_string('hiddenuser', 'assign'), before the participant id
# What the importer needs to match rows, take grades and comments; "-" is what Moodle writes for "not graded yet".
MINIMAL = (IDENTIFIER, FULL_NAME, GRADE, MAXIMUM, GRADED_AT, COMMENTS)
REQUIRED = (IDENTIFIER, GRADE, GRADED_AT)  # without any of these Moodle refuses the whole file
REPORT = "report.html"
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the zip format's earliest date: the same bytes at every run


def _number(value: float) -> str:
    return decimal(value, places=2)  # 87.5, 100: Moodle's unformat_float reads a point


def _participant(submission: Submission) -> str | None:
    return dict(submission.origin).get(PARTICIPANT)


def _comment(result: SubmissionResult, grade: float, maximum: float) -> str:
    if result.status != GRADED:
        reason = (result.reason.splitlines() or ["see the report"])[0][:200]
        text = f"Autograder: {_number(grade)} / {_number(maximum)}. Not graded: {reason}"
    else:
        lost = [f"{q.id} {q.title} ({_number(q.score)} / {_number(q.max_score)})"
                for q in result.questions if q.score < q.max_score]
        text = f"Autograder: {_number(grade)} / {_number(maximum)}."
        text += f" Lost points on: {'; '.join(lost)}." if lost else " Full marks on every question."
        if result.late_points > 0:
            text += f" Late: -{_number(result.late_points)} points."
    # Moodle stores the comment as HTML: a question title's < or & must stay text.
    return html.escape(text + f" Details in the attached {REPORT}.", quote=False)


def _graded(submissions: Sequence[Submission],
            results: Sequence[SubmissionResult]) -> dict[str, tuple[Submission, SubmissionResult]]:
    """{participant id: (submission, result)} for every Moodle participant with a result."""
    by_student = {r.student: r for r in results}
    found = {}
    for submission in submissions:
        ident = _participant(submission)
        if ident is not None and submission.student in by_student:
            found[ident] = (submission, by_student[submission.student])
    if submissions and not any(_participant(s) for s in submissions):
        raise ConfigurationError("the submissions do not come from a Moodle download (grade it with --layout "
                                 "moodle): Moodle could not match them to its participants")
    return found


def _scaled(result: SubmissionResult, maximum: str | None) -> tuple[float, float]:
    """The grade on the Moodle assignment's scale: Moodle skips a grade above its "Maximum Grade"."""
    try:
        moodle_max = float((maximum or "").replace(",", "."))
    except ValueError:
        moodle_max = 0.0
    if moodle_max > 0 and result.max_score > 0 and abs(moodle_max - result.max_score) > 1e-9:
        return round(result.score * moodle_max / result.max_score, 2), moodle_max
    return result.score, result.max_score


def _csv(rows: list[list[str]]) -> str:
    return csv_text(rows).text


def _minimal_worksheet(graded: dict[str, tuple[Submission, SubmissionResult]]) -> str:
    rows = [list(MINIMAL)]
    for ident, (submission, result) in sorted(graded.items(), key=lambda item: int(item[0])):
        grade, maximum = _scaled(result, None)
        rows.append([PARTICIPANT_PREFIX + ident, submission.name, _number(grade), _number(maximum), "-",
                     _comment(result, grade, maximum)])
    return _csv(rows)


def _filled_worksheet(worksheet: Path, graded: dict[str, tuple[Submission, SubmissionResult]]) -> str:
    try:
        raw = worksheet.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read the Moodle grading worksheet {worksheet}: {exc}") from exc
    bom = "\ufeff" if raw.startswith("\ufeff") else ""
    rows = csv_rows(raw.removeprefix("\ufeff"))
    header = rows[0] if rows else []
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        raise ConfigurationError(f"{worksheet} is not a Moodle grading worksheet as Moodle in English writes it: no "
                                 f"{', '.join(repr(m) for m in missing)} column (download it again from the "
                                 "assignment's \"Download grading worksheet\", with the site in English)")
    column = {name: header.index(name) for name in header}
    for row in rows[1:]:
        if len(row) <= column[IDENTIFIER]:
            continue
        # Moodle's importer takes what follows its "Participant " prefix; the digits are that, in any language.
        match = re.search(r"(\d+)\s*$", row[column[IDENTIFIER]])
        if match is None or match[1] not in graded:
            continue  # no submission graded here: Moodle keeps what it has
        row.extend([""] * (len(header) - len(row)))
        _submission, result = graded[match[1]]
        grade, maximum = _scaled(result, row[column[MAXIMUM]] if MAXIMUM in column else None)
        row[column[GRADE]] = _number(grade)
        if COMMENTS in column:
            row[column[COMMENTS]] = _comment(result, grade, maximum)
    return bom + _csv(rows)


def _write_zip(path: Path, members: list[tuple[str, bytes]]) -> None:
    with atomic_writer(path) as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)


def write_moodle_exports(out_dir: Path, submissions: Sequence[Submission], results: Sequence[SubmissionResult], *,
                         worksheet: Path | None = None) -> list[Path]:
    """Write ``out_dir/moodle/grading-worksheet.csv`` and ``out_dir/moodle/feedback.zip`` (each participant's
    ``out_dir/students/<id>/report.html`` in their download folder) for the submissions of a Moodle download and
    their results; ``worksheet``: the grading worksheet downloaded from Moodle, whose rows are filled in. Returns
    the files written."""
    graded = _graded(submissions, results)
    folder = OutputFolder(out_dir).moodle
    sheet = folder / "grading-worksheet.csv"
    text = _filled_worksheet(worksheet, graded) if worksheet is not None else _minimal_worksheet(graded)
    write_text_atomic(sheet, text)
    members = []
    for _ident, (submission, result) in sorted(graded.items(), key=lambda item: int(item[0])):
        report = OutputFolder(out_dir).student(result.student).report
        where = dict(submission.origin).get(FOLDER)
        if where and report.is_file():
            # Back where the download had the participant's file: in their folder, or after their prefix (a flat
            # download, which Moodles before 3.1 import only as file names).
            folder_form = where in submission.path.parts[:-1]
            members.append((f"{where}/{REPORT}" if folder_form else f"{where}{REPORT}", report.read_bytes()))
    feedback = folder / "feedback.zip"
    _write_zip(feedback, members)
    return [sheet, feedback]
