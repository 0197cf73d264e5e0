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

import dataclasses
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
from grader.record.output import MOODLE, OutputFolder
from grader.record.placed import Placed
from grader.results import GRADED, MARKED, SubmissionResult

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


def feedback_comment(result: SubmissionResult, grade: float, maximum: float) -> str:
    """The worksheet's "Feedback comments": the score, where points were lost, the written answers' marks and the
    checks regraded by hand (their reasons), then the attached report for the rest."""
    if result.status != GRADED:
        reason = (result.reason.splitlines() or ["see the report"])[0][:200]
        text = f"Autograder: {_number(grade)} / {_number(maximum)}. Not graded: {reason}"
    else:
        lost = [f"{q.id} {q.title} ({_number(q.score)} / {_number(q.max_score)})"
                for q in result.questions if q.score < q.max_score]
        text = f"Autograder: {_number(grade)} / {_number(maximum)}."
        text += f" Lost points on: {'; '.join(lost)}." if lost else " Full marks on every question."
        marked = [f"{m.question} {_number(m.score)} / {_number(m.max_score)}" for m in result.manual
                  if m.max_score and m.state == MARKED]
        if marked:
            text += f" Written answers: {', '.join(marked)}."
        regraded = [f"{c.check_id} {_number(c.score)} / {_number(c.max_score)} ({c.override.reason})"
                    for c in result.checks if c.override is not None]
        if regraded:
            text += f" Regraded by hand: {'; '.join(regraded)}."
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


def _in_order(graded: dict[str, tuple[Submission, SubmissionResult]]) -> list[tuple[str, tuple[Submission,
                                                                                              SubmissionResult]]]:
    return sorted(graded.items(), key=lambda item: int(item[0]))


def _minimal_worksheet(graded: dict[str, tuple[Submission, SubmissionResult]]) -> str:
    rows = [list(MINIMAL)]
    for ident, (submission, result) in _in_order(graded):
        grade, maximum = _scaled(result, None)
        rows.append([PARTICIPANT_PREFIX + ident, submission.name, _number(grade), _number(maximum), "-",
                     feedback_comment(result, grade, maximum)])
    return _csv(rows)


def _who(submission: Submission) -> str:
    return f"Participant {_participant(submission)} ({submission.name})" if submission.name \
        else f"Participant {_participant(submission)}"


def _filled_worksheet(worksheet: Path, graded: dict[str, tuple[Submission, SubmissionResult]],
                      label: str) -> tuple[str, Placed]:
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
    filled: dict[str, int] = {}  # participant id -> rows filled (a worksheet names each participant once)
    others = 0
    for row in rows[1:]:
        if len(row) <= column[IDENTIFIER]:
            continue
        # Moodle's importer takes what follows its "Participant " prefix; the digits are that, in any language.
        match = re.search(r"(\d+)\s*$", row[column[IDENTIFIER]])
        if match is None or match[1] not in graded:
            others += match is not None
            continue  # no submission graded here: Moodle keeps what it has
        row.extend([""] * (len(header) - len(row)))
        _submission, result = graded[match[1]]
        grade, maximum = _scaled(result, row[column[MAXIMUM]] if MAXIMUM in column else None)
        row[column[GRADE]] = _number(grade)
        if COMMENTS in column:
            row[column[COMMENTS]] = feedback_comment(result, grade, maximum)
        filled[match[1]] = filled.get(match[1], 0) + 1
    not_placed = tuple(
        (result.student, _who(submission),
         f"not in the worksheet given ({worksheet.name}): download the grading worksheet again (a participant who "
         "joined after it was downloaded is not in it) and grade again, or enter the grade in Moodle")
        for ident, (submission, result) in sorted(graded.items(), key=lambda item: int(item[0]))
        if ident not in filled)
    twice = [f"Participant {ident} is in the worksheet {n} times; every row was filled"
             for ident, n in sorted(filled.items()) if n > 1]
    placed = tuple(graded[ident][1].student for ident in sorted(filled, key=int))
    return bom + _csv(rows), Placed(None, label, sum(filled.values()), placed, not_placed, tuple(twice), others)


def _write_zip(path: Path, members: list[tuple[str, bytes]]) -> None:
    with atomic_writer(path) as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)


def write_moodle_exports(out_dir: Path, submissions: Sequence[Submission], results: Sequence[SubmissionResult], *,
                         worksheet: Path | None = None) -> list[Placed]:
    """Write ``out_dir/moodle/grading-worksheet.csv`` and ``out_dir/moodle/feedback.zip`` (each participant's
    ``out_dir/students/<id>/report.html`` in their download folder) for the submissions of a Moodle download and
    their results; ``worksheet``: the grading worksheet downloaded from Moodle, whose rows are filled in. Returns
    what each file placed: a graded participant missing from the worksheet is named there, as not placed."""
    graded = _graded(submissions, results)
    folder = OutputFolder(out_dir).moodle
    sheet = folder / "grading-worksheet.csv"
    label = f"{MOODLE}/{sheet.name}"
    if worksheet is not None:
        text, placed = _filled_worksheet(worksheet, graded, label)
    else:
        text = _minimal_worksheet(graded)
        placed = Placed(None, label, len(graded), tuple(r.student for _, (_, r) in _in_order(graded)))
    write_text_atomic(sheet, text)
    members = []
    pages: list[str] = []
    no_page: list[tuple[str, str, str]] = []
    for _ident, (submission, result) in _in_order(graded):
        report = OutputFolder(out_dir).student(result.student).report
        where = dict(submission.origin).get(FOLDER)
        if where and report.is_file():
            # Back where the download had the participant's file: in their folder, or after their prefix (a flat
            # download, which Moodles before 3.1 import only as file names).
            folder_form = where in submission.path.parts[:-1]
            members.append((f"{where}/{REPORT}" if folder_form else f"{where}{REPORT}", report.read_bytes()))
            pages.append(result.student)
        else:
            why = "the download named no folder for them" if not where else f"no {REPORT} was written for them"
            no_page.append((result.student, _who(submission), why))
    feedback = folder / "feedback.zip"
    _write_zip(feedback, members)
    return [dataclasses.replace(placed, path=sheet),
            Placed(feedback, f"{MOODLE}/{feedback.name}", len(members), tuple(pages), tuple(no_page))]
