"""What goes back to Canvas after a class run on a Canvas download: the gradebook to import, and the feedback.

- ``canvas/gradebook-import.csv``: the instructor's own Gradebook export (Grades > Export > Export Entire Gradebook)
  with this assignment's column filled in. Canvas's importer (instructure/canvas-lms,
  ``app/models/gradebook_importer.rb``) finds students by the ``ID`` column (the user id, then SIS User ID, SIS Login
  ID, then name), assignments by the ``(<assignment id>)`` at the end of a column's header, skips the "Points
  Possible" row and the "Manual Posting"/"Muted" row, and ignores read-only columns; a cell left as it was is no
  change. So the file is the export itself, one column filled: Canvas needs its own columns and ids, which only its
  export holds.
- ``canvas/feedback.zip``: each student's report.html for "Re-Upload Submissions" (assignment page, right sidebar),
  which attaches every file in the zip as a comment ("See attached file") on the submission its name points to.
  Canvas reads the name as its download writes it (``Assignment#infer_comment_context_from_filename``): the first two
  all-digit ``_``-separated parts are the user id and an attachment id, and the attachment must be one of that
  student's current submission files; anything else it lists as ignored.
- ``canvas/README.txt``: what was written, what to upload where, and who was left out and why.

``canvas_late`` (re-exported here) says whether Canvas marked a submission late, for grades.csv's late column.
Only the student's page (OUT/students/<student>/report.html) ever goes into the zip: never instructor.html.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from grader.containment import containment
from grader.csv_cells import csv_rows, csv_text
from grader.discover.canvas import canvas_late
from grader.discover.finder import Submission
from grader.errors import ConfigurationError
from grader.files import atomic_writer, write_text_atomic
from grader.points import decimal
from grader.record.output import CANVAS, OutputFolder
from grader.record.placed import Placed
from grader.results import SubmissionResult

CANVAS_DIR = CANVAS
GRADEBOOK = "gradebook-import.csv"
FEEDBACK = "feedback.zip"
README = "README.txt"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # no export time in the bytes: the same reports give the same zip
# Canvas's header for an assignment column: "<title> (<assignment id>)" (Assignment.title_and_id).
_ASSIGNMENT_COLUMN = re.compile(r"^(?P<title>.*)\s\((?P<id>\d+)\)$", re.DOTALL)
# Columns Canvas computes (and exports "(read only)"): never an assignment's, even with an id-like ending.
_COMPUTED = re.compile(r"Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|"
                       r"Override Score|Override Grade|Override Status")
_STUDENT_COLUMNS = {"Student", "LastName", "FirstName", "ID", "SIS User ID", "SIS Login ID", "Section",
                    "Integration ID", "Root Account"}


def _origin(submission: Submission, key: str) -> str:
    return next((value for k, value in submission.origin if k == key), "")


def _normal(text: str) -> str:
    """A title compared loosely: "Attention Scoring" and attention_scoring are the same."""
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.casefold()).split())


def _title_and_id(name: str) -> tuple[str, str]:
    match = _ASSIGNMENT_COLUMN.match(name.strip())
    return (match["title"], match["id"]) if match else (name.strip(), "")


def _assignment_columns(header: list[str]) -> list[int]:
    return [i for i, name in enumerate(header) if name.strip() not in _STUDENT_COLUMNS
            and _ASSIGNMENT_COLUMN.match(name.strip()) and not _COMPUTED.search(name)]


def _pick_column(header: list[str], *, column: str | None, names: Sequence[str], gradebook: Path) -> int:
    columns = _assignment_columns(header)
    listed = "; ".join(header[i] for i in columns) or "none"
    if column is not None:
        # The whole header, its title, or its assignment id, as the instructor may copy any of them.
        wanted = column.strip()
        found = [i for i in columns if wanted in (header[i].strip(), *_title_and_id(header[i]))]
        if len(found) != 1:
            raise ConfigurationError(f"{gradebook}: {'no' if not found else 'more than one'} assignment column is "
                                     f"{column!r} (its assignment columns: {listed})")
        return found[0]
    keys = {_normal(n) for n in names if n}
    found = [i for i in columns if _normal(_title_and_id(header[i])[0]) in keys]
    if len(found) != 1:
        how = "matches" if not found else "match"
        raise ConfigurationError(f"{gradebook}: {'no' if not found else str(len(found))} assignment column "
                                 f"{how} {' or '.join(repr(n) for n in names if n)}; name the column to fill "
                                 f"(its assignment columns: {listed})")
    return found[0]


def _read_gradebook(path: Path) -> tuple[list[list[str]], str, str, bool]:
    """The export's rows, with its delimiter, line ending and whether it starts with a byte-order mark (Canvas writes
    one when the instructor asked for it): the file is written back the same way."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read the Canvas gradebook {path}: {exc.strerror or exc}") from exc
    bom = raw.startswith(b"\xef\xbb\xbf")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{path} is not UTF-8 text, as Canvas exports its gradebook") from exc
    first = text.split("\n", 1)[0]
    # Canvas exports with ; where the decimal mark is a comma, and its importer accepts either.
    delimiter = ";" if first.count(";") > first.count(",") else ","
    newline = "\r\n" if "\r\n" in text[: len(first) + 2] else "\n"
    rows = csv_rows(text, delimiter=delimiter)
    if not rows or len(rows[0]) < 4 or "Student" not in rows[0][0] or "ID" not in rows[0]:
        raise ConfigurationError(f"{path} is not a Canvas gradebook export: its header does not start with Student "
                                 "and hold ID (Grades > Export > Export Entire Gradebook gives one)")
    return rows, delimiter, newline, bom


def _not_a_student(row: list[str]) -> bool:
    """The rows Canvas's importer passes over: Points Possible, Manual Posting/Muted, empty ones."""
    if row and "Points Possible" in row[0]:
        return True
    return all(re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", cell, re.IGNORECASE) for cell in row)


class Filled(NamedTuple):
    text: str  # the gradebook to import
    column: str  # the header of the column filled
    missing: list[str]  # user ids graded and not found in it
    reread: list[str]  # ID cells a spreadsheet had rewritten ("3001.0"), written back as Canvas's ids
    students: int  # student rows in it
    mangled: list[str]  # ID cells a spreadsheet wrote in scientific notation ("3.001E+03"): no id is in them


# What a spreadsheet makes of an all-digit id it re-saves: a number with a decimal point ("3001.0", "3001,00"); or,
# in a narrow column, a number in scientific notation ("3.001E+03"), whose digits may be lost: never read as an id.
_RESAVED = re.compile(r"(?P<id>\d+)[.,]0+")
_SCIENTIFIC = re.compile(r"\d(?:[.,]\d+)?[eE][+-]?\d+")


def _canvas_id(cell: str) -> tuple[str, bool]:
    """The user id an ID cell holds, and whether it had to be read through a spreadsheet's re-save."""
    text = cell.strip()
    if (match := _RESAVED.fullmatch(text)) is not None:
        return match["id"], True
    return text, False


def fill_gradebook(gradebook: Path, scores: dict[str, float], *, column: str | None = None,
                   names: Sequence[str] = ()) -> Filled:
    """Canvas's gradebook export ``gradebook`` with one assignment column set to ``scores`` (user id -> score), as
    text; with the column filled, the user ids not found in it, and the ID cells read through a re-save (each is
    written back as the plain id Canvas matches on)."""
    rows, delimiter, newline, bom = _read_gradebook(gradebook)
    header = rows[0]
    index = _pick_column(header, column=column, names=names, gradebook=gradebook)
    id_column = header.index("ID")
    points = next((r for r in rows[1:3] if r and "Points Possible" in r[0]), None)
    if points is not None and len(points) > index and re.search(r"read\s+only", points[index]):
        raise ConfigurationError(f"{gradebook}: the column {header[index]!r} is read-only in Canvas (its Points "
                                 "Possible cell says so): Canvas would ignore the scores")
    filled: list[str] = []
    reread: list[str] = []
    mangled: list[str] = []
    students = 0
    for row in rows[1:]:
        if _not_a_student(row) or len(row) <= max(index, id_column):
            continue
        students += 1
        user, resaved = _canvas_id(row[id_column])
        if _SCIENTIFIC.fullmatch(user):
            mangled.append(user)
        if resaved:
            reread.append(row[id_column].strip())
            row[id_column] = user
        if user in scores:
            row[index] = decimal(scores[user])  # as lms.csv writes it
            filled.append(user)
    missing = sorted(set(scores) - set(filled), key=lambda u: (len(u), u))
    # A cell of the export a spreadsheet would run (a name starting with =) gains a quote; Canvas finds a student by
    # ID before the other columns, and an ID so altered matched no score above: its student is in ``missing``.
    text = csv_text(rows, delimiter=delimiter, newline=newline, bom=bom).text
    return Filled(text, header[index], missing, reread, students, mangled)


def feedback_name(submission: Submission) -> str | None:
    """The name Canvas's re-upload matches to the student: the download's prefix, its attachment id, then the
    report; None when the download named no user and attachment (nothing would match)."""
    user, attachment = _origin(submission, "canvas_user"), _origin(submission, "canvas_submission")
    if not (user.isdigit() and attachment.isdigit()):
        return None
    name = _origin(submission, "canvas_name") or "student"
    late = "_LATE" if canvas_late(submission) else ""
    return f"{name}{late}_{user}_{attachment}_report.html"


def _write_zip(path: Path, members: dict[str, Path]) -> None:
    with atomic_writer(path) as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, _ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, members[name].read_bytes())


def _who(submission: Submission | None, student: str) -> str:
    name = _origin(submission, "canvas_name") if submission else ""
    return f"user {student} ({name})" if name else f"user {student}"


def write_canvas_exports(out_dir: Path, submissions: Sequence[Submission], results: Sequence[SubmissionResult], *,
                         gradebook: Path | None, column: str | None = None,
                         title: str | None = None) -> list[Placed]:
    """Write OUT/canvas/: gradebook-import.csv (only with the instructor's ``gradebook`` export; ``column`` names
    the assignment's column, else the one titled like the assignment: ``title`` or its name), feedback.zip and
    README.txt. Returns what the gradebook and the zip placed (the gradebook's ``absent`` says why it was not
    written); README.txt says the same for whoever uploads the files."""
    folder = out_dir / CANVAS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    by_student = {s.student: s for s in submissions}
    lines = ["Canvas exports of this run (see the grader's README, \"Grading your class\").", ""]
    if warning := containment(results).warning():
        lines += [warning, ""]

    # Grades: Canvas's user id is the student id a Canvas download gives; anything else cannot be matched.
    scores: dict[str, float] = {}
    unmatched: list[tuple[str, str, str]] = []
    for result in results:
        submission = by_student.get(result.student)
        user = _origin(submission, "canvas_user") if submission else ""
        if user:
            scores[user] = result.score
        else:
            unmatched.append((result.student, result.student, "not from a Canvas download: no Canvas user id"))
    label = f"{CANVAS_DIR}/{GRADEBOOK}"
    if gradebook is None:
        (folder / GRADEBOOK).unlink(missing_ok=True)  # an earlier run's file would pass for this run's grades
        grades = Placed(None, label, 0, absent="no Canvas gradebook export was given (--canvas-gradebook FILE)")
        lines += ["No gradebook-import.csv: no Canvas gradebook export was given (--canvas-gradebook FILE).",
                  "Canvas imports grades only into its own export's columns; export it (Grades > Export > Export",
                  "Entire Gradebook) and run again with it.", ""]
    else:
        names = [n for n in (title, results[0].assignment if results else None) if n]
        filled = fill_gradebook(gradebook, scores, column=column, names=names)
        target = folder / GRADEBOOK
        write_text_atomic(target, filled.text)
        missing = set(filled.missing)
        placed = tuple(sorted((u for u in scores if u not in missing), key=lambda u: (len(u), u)))
        absent = [(user, _who(by_student.get(user), user),
                   f"not in the gradebook given ({gradebook.name}): dropped the course, another section's export, or "
                   "an export older than their enrolment; export the gradebook again") for user in filled.missing]
        warnings = (f"{len(filled.reread)} ID cell(s) of {gradebook.name} were numbers a spreadsheet had re-saved "
                    f"({', '.join(filled.reread[:5])}{', ...' if len(filled.reread) > 5 else ''}): read and written "
                    "back as Canvas's ids",) if filled.reread else ()
        if filled.mangled:
            warnings += (f"{len(filled.mangled)} ID cell(s) of {gradebook.name} hold numbers in scientific notation "
                         f"({', '.join(filled.mangled[:3])}), as a spreadsheet writes a long number in a narrow "
                         "column: the ids are lost; export the gradebook from Canvas again and give it as it "
                         "downloads",)
        grades = Placed(target, label, len(placed), placed, (*absent, *unmatched), warnings,
                        others=filled.students - len(placed))
        lines += [f"{GRADEBOOK}: {gradebook.name} with the column {filled.column!r} filled for {len(placed)}"
                  " students; every other cell as exported.",
                  "Upload it in Grades > Import, check the changes Canvas lists, then Upload Data.", ""]
        if filled.missing:
            lines += ["Graded but not in the gradebook (dropped the course, or another section's export): "
                      + ", ".join(filled.missing), ""]
        lines += [*warnings, *([""] if warnings else [])]
    if unmatched:
        lines += ["Not from a Canvas download (no Canvas user id), so not in the CSV or the zip: "
                  + ", ".join(sorted(s for s, _, _ in unmatched)), ""]

    # Feedback: each student's own page, named so Canvas's re-upload finds their submission.
    members: dict[str, Path] = {}
    sent: list[str] = []
    no_report: list[tuple[str, str, str]] = []
    for result in results:
        submission = by_student.get(result.student)
        name = feedback_name(submission) if submission else None
        report = OutputFolder(out_dir).student(result.student).report
        if name is None:
            no_report.append((result.student, _who(submission, result.student),
                              "the download named no user and attachment id for it, which Canvas matches on"))
            continue
        if not report.is_file():
            no_report.append((result.student, _who(submission, result.student), "no report.html was written"))
            continue
        members[name] = report
        sent.append(result.student)
    target = folder / FEEDBACK
    _write_zip(target, members)
    lines += [f"{FEEDBACK}: {len(members)} student pages (report.html), named as Canvas's download names the file",
              "graded, <lastfirst>[_LATE]_<user id>_<attachment id>_report.html. Upload it on the assignment's page:",
              "Re-Upload Submissions (right sidebar). Canvas adds each as a comment (\"See attached file\") on that",
              "student's submission; it matches the ids, so it must be the same attempt as the download graded.",
              "Canvas may show the attached page under the name of the student's own file.", ""]
    if no_report:
        lines += ["No report.html to send for: " + ", ".join(sorted(s for s, _, _ in no_report)), ""]
    write_text_atomic(folder / README, "\n".join(lines).rstrip("\n") + "\n")
    return [grades, Placed(target, f"{CANVAS_DIR}/{FEEDBACK}", len(members), tuple(sent), tuple(no_report))]
