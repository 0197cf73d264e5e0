"""Reading other tools' layouts: nbgrader's submitted/ folder and Gradescope's "Download Submissions" export, and
writing lms.csv. Fixture trees are built in tmp folders with real nbformat notebooks, as those tools leave them."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import nbformat
import pytest

from grader.discover import detect_layout, discover, read_submission
from grader.errors import ConfigurationError, InvalidSubmission
from grader.pipeline import RunOptions, RunRequest, grade_class
from grader.record import write_lms_csv

from .conftest import SAMPLES, write

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

ASSIGNMENT = "attention_scoring"


def notebook(path: Path, source: str = "x = 1") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nbformat.write(nb, path)
    return path


# ----- nbgrader ------------------------------------------------------------------------------------------------------
def nbgrader_course(course: Path) -> Path:
    """A course folder as nbgrader leaves it after `nbgrader collect` (source/ and release/ beside submitted/)."""
    notebook(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    write(course, "nbgrader_config.py", "c = get_config()\n")
    submitted = course / "submitted"
    # alice: the assignment's folder, with nbgrader's timestamp in UTC
    notebook(submitted / "alice" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    write(submitted, f"alice/{ASSIGNMENT}/timestamp.txt", "2024-03-01 12:00:00.250000 UTC\n")
    # bob: two assignments collected; the grader's own is read, ps0 is not
    notebook(submitted / "bob" / "ps0" / "ps0.ipynb")
    write(submitted, "bob/ps0/timestamp.txt", "2024-01-10 09:00:00.000000 UTC\n")
    notebook(submitted / "bob" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    write(submitted, f"bob/{ASSIGNMENT}/timestamp.txt", "2024-03-02 08:30:00.000000 America/Los_Angeles\n")
    # carol: nbgrader's assignment is named week10, her only one; a numeric offset in the timestamp
    notebook(submitted / "carol" / "week10" / "week10.ipynb")
    write(submitted, "carol/week10/timestamp.txt", "2024-03-03 10:00:00.000000 -0800\n")
    # dave: two other assignments: nothing to grade for this one
    notebook(submitted / "dave" / "ps0" / "ps0.ipynb")
    notebook(submitted / "dave" / "ps1" / "ps1.ipynb")
    # erin: a folder collected with a PDF only; frank: a timestamp nobody can read, so the file's time
    write(submitted, f"erin/{ASSIGNMENT}/timestamp.txt", "2024-03-04 10:00:00.000000 UTC\n")
    (submitted / "erin" / ASSIGNMENT / "answers.pdf").write_bytes(b"%PDF-1.4")
    frank = notebook(submitted / "frank" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    os.utime(frank, (1_700_000_000, 1_700_000_000))
    write(submitted, f"frank/{ASSIGNMENT}/timestamp.txt", "last tuesday\n")
    return course


def test_nbgrader_course_folder_is_detected_and_read(tmp_path: Path) -> None:
    course = nbgrader_course(tmp_path / "course")
    layout = detect_layout(course)
    assert (layout.name, layout.folder) == ("nbgrader", course / "submitted")
    assert "nbgrader's layout in submitted/" in layout.describe(course)
    submissions, skipped = discover(course, assignment=ASSIGNMENT)
    found = {s.student: s for s in submissions}
    assert sorted(found) == ["alice", "bob", "carol", "erin", "frank"]
    assert found["alice"].path == course / "submitted" / "alice" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert found["alice"].submitted_at == datetime(2024, 3, 1, 12, 0, 0, 250000, tzinfo=UTC)
    assert found["bob"].path.parent.name == ASSIGNMENT  # not ps0
    assert found["bob"].submitted_at == datetime(2024, 3, 2, 16, 30, tzinfo=UTC)  # 08:30 in Los Angeles
    assert found["carol"].path.name == "week10.ipynb"
    assert found["carol"].submitted_at == datetime(2024, 3, 3, 18, 0, tzinfo=UTC)
    assert found["carol"].notes == (f"graded the student's only nbgrader assignment folder, week10 (none is named "
                                    f"{ASSIGNMENT})",)
    assert found["frank"].submitted_at == datetime.fromtimestamp(1_700_000_000, tz=UTC)
    assert "timestamp.txt holds 'last tuesday', not a time the grader can read" in found["frank"].notes[0]
    # erin submitted, but nothing the grader reads: she gets a result that says so, not a skip
    assert found["erin"].submitted_at == datetime(2024, 3, 4, 10, 0, tzinfo=UTC)
    with pytest.raises(InvalidSubmission, match=r"holds no notebook \(\.ipynb\) or Python file \(\.py\) "
                                                r"\(found: answers\.pdf\)"):
        read_submission(found["erin"], written_ids=[])
    assert {s.path.name for s in skipped if s.ignored} == {"nbgrader_config.py", "source"}  # beside submitted/
    assert [(s.path.name, s.reason) for s in skipped if not s.ignored] == [
        ("dave", f"holds several assignment folders (ps0, ps1) and none is named {ASSIGNMENT}: grade submitted/ "
                 "with the grader's assignment of that name")]


def test_nbgrader_submitted_folder_itself_and_layout_named(tmp_path: Path) -> None:
    course = nbgrader_course(tmp_path / "course")
    submitted = course / "submitted"
    assert detect_layout(submitted).name == "nbgrader"
    by_itself, _ = discover(submitted, assignment=ASSIGNMENT)
    assert {s.student for s in by_itself} == {"alice", "bob", "carol", "erin", "frank"}
    # Read flat, the same folder would make each student's newest notebook anywhere the submission (ps0 included).
    flat, _ = discover(submitted, layout="flat")
    assert next(s for s in flat if s.student == "dave").path.name in ("ps0.ipynb", "ps1.ipynb")
    # A hand-made submitted/ folder without timestamps is recognised by its shape
    handmade = tmp_path / "handmade" / "submitted"
    notebook(handmade / "gina" / ASSIGNMENT / "work.ipynb")
    assert detect_layout(handmade).name == "nbgrader"
    # while a flat folder that happens to be called submitted stays flat
    flat_named = tmp_path / "other" / "submitted"
    notebook(flat_named / "hana.ipynb")
    notebook(flat_named / "ivan" / "nested" / "work.ipynb")
    assert detect_layout(flat_named).name == "flat"


# ----- Gradescope export ---------------------------------------------------------------------------------------------
EXPORT_METADATA = """\
submission_101:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1815'
    :email: ada@example.edu
  :created_at: 2024-03-01 12:00:00.123456789 -08:00
  :score: 0.0
  :history: []
  :results: !ruby/hash:ActiveSupport::HashWithIndifferentAccess
    score: 0.0
submission_102:
  :submitters:
  - :name: Bo Chen
    :sid:
    :email: bo@example.edu
  - :name: Cy Diaz
    :sid: 2002
    :email: cy@example.edu
  :created_at: 2024-03-02 09:30:00.000000000 +00:00
submission_103:
  :submitters:
  - :name: Dee Evans
    :sid: 'S/3'
    :email: dee@example.edu
  :created_at: 2024-03-03 10:00:00.000000000 +00:00
submission_104:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1815'
    :email: ada@example.edu
  :created_at: 2024-02-20 10:00:00.000000000 +00:00
submission_105:
  :submitters:
  - :name: Eve Fox
    :sid: '5005'
    :email: eve@example.edu
  :created_at: 2024-03-05 10:00:00.000000000 +00:00
"""


def gradescope_export(folder: Path, *, correct: Path, wrong: Path) -> Path:
    """A "Download Submissions" zip as it unpacks: one top folder, submission_metadata.yml and submission_<id>/."""
    export = folder / "assignment_4242_export"
    write(export, "submission_metadata.yml", EXPORT_METADATA)
    (export / "submission_101").mkdir()
    shutil.copy(correct, export / "submission_101" / "attention.ipynb")
    (export / "submission_102").mkdir()
    shutil.copy(wrong, export / "submission_102" / "my_attention.py")
    (export / "submission_103").mkdir()
    (export / "submission_103" / "scan.pdf").write_bytes(b"%PDF-1.4")  # uploaded the wrong thing
    (export / "submission_104").mkdir()
    shutil.copy(wrong, export / "submission_104" / "old.py")  # Ada's older submission
    # submission_105 is listed but not in the export; submission_199 is in the export but not listed
    (export / "submission_199").mkdir()
    shutil.copy(correct, export / "submission_199" / "attention.ipynb")
    (folder / "__MACOSX").mkdir()  # what macOS's unzip leaves beside the export
    return export


def test_gradescope_export_is_detected_and_read(tmp_path: Path) -> None:
    export = gradescope_export(tmp_path, correct=SAMPLES / "textbook.ipynb", wrong=SAMPLES / "mistake_no_tanh.py")
    layout = detect_layout(tmp_path)
    assert (layout.name, layout.folder) == ("gradescope", export)
    assert "Gradescope export in assignment_4242_export/" in layout.describe(tmp_path)
    submissions, skipped = discover(tmp_path)
    found = {s.student: s for s in submissions}
    # SID, else e-mail; an SID with a character no folder name may hold is made safe
    assert sorted(found) == ["1815", "2002", "S_3", "bo@example.edu", "submission_199"]
    ada = found["1815"]
    assert ada.path == export / "submission_101" / "attention.ipynb" and ada.kind == "notebook"
    assert ada.submitted_at == datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=timezone(timedelta(hours=-8)))
    # both members of the group submission get it, each told who the others are
    assert found["bo@example.edu"].path == found["2002"].path == export / "submission_102" / "my_attention.py"
    assert found["bo@example.edu"].notes == ("group submission submission_102, with Cy Diaz (2002)",)
    assert found["2002"].notes == ("group submission submission_102, with Bo Chen (bo@example.edu)",)
    assert found["2002"].submitted_at == datetime(2024, 3, 2, 9, 30, tzinfo=UTC)
    assert found["submission_199"].notes == (
        "submission_199 is not listed in submission_metadata.yml: graded under the folder's name",)
    with pytest.raises(InvalidSubmission, match=r"holds no notebook .* \(found: scan\.pdf\)"):
        read_submission(found["S_3"], written_ids=[])
    assert {s.path.name for s in skipped if s.ignored} == {"__MACOSX", "submission_metadata.yml"}
    assert sorted((s.path.name, s.reason) for s in skipped if not s.ignored) == [
        ("submission_104", "an older submission by 1815 (submission_101 is graded)"),
        ("submission_105", "listed in submission_metadata.yml, but the export holds no folder submission_105"),
    ]


def test_a_layout_named_on_the_command_line_must_be_there(tmp_path: Path) -> None:
    flat = tmp_path / "flat"
    write(flat, "alice.py", "x = 1\n")
    assert detect_layout(flat).name == "flat"
    with pytest.raises(ConfigurationError, match=r"holds no submission_metadata\.yml"):
        detect_layout(flat, "gradescope")
    with pytest.raises(ConfigurationError, match="unknown layout"):
        detect_layout(flat, "blackboard")
    write(tmp_path / "broken", "submission_metadata.yml", "submission_1: [unclosed\n")
    with pytest.raises(ConfigurationError, match=r"not a Gradescope submission_metadata\.yml the grader can read"):
        discover(tmp_path / "broken")


# ----- lms.csv -------------------------------------------------------------------------------------------------------
def test_lms_csv_and_a_gradescope_export_graded_end_to_end(tmp_path: Path) -> None:
    gradescope_export(tmp_path / "export", correct=SAMPLES / "textbook.ipynb", wrong=SAMPLES / "mistake_no_tanh.py")
    out = tmp_path / "out"
    run = grade_class(RunRequest(assignment=ASSIGNMENT, submissions_dir=tmp_path / "export", out_dir=out),
                      RunOptions(jobs=2))
    results = {r.student: r for r in run.results}
    assert sorted(results) == ["1815", "2002", "S_3", "bo@example.edu", "submission_199"]
    assert results["1815"].score == results["1815"].max_score == 100
    # from the export, not the file (12:00 at -08:00)
    assert datetime.fromisoformat(results["1815"].submitted_at) == datetime(2024, 3, 1, 20, 0, tzinfo=UTC)
    assert results["1815"].source == "assignment_4242_export/submission_101/attention.ipynb"
    assert results["2002"].score == results["bo@example.edu"].score < 100  # the group's wrong .py, for both
    assert any("group submission submission_102" in n for n in results["2002"].notes)
    assert results["S_3"].status == "invalid" and results["S_3"].score == 0
    assert "found: scan.pdf" in results["S_3"].reason
    assert {s.path.name for s in run.skipped if not s.ignored} == {"submission_104", "submission_105"}
    with open(out / "lms.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["student_id", "score", "out_of"]
    lms = {row[0]: (row[1], row[2]) for row in rows[1:]}
    assert lms == {r.student: (f"{r.score:g}", "100") for r in run.results}
    assert lms["1815"] == ("100", "100") and lms["S_3"] == ("0", "100")
    # The student's pages name the submission time from the export
    assert (out / "students" / "1815" / "report.html").is_file()
    # A second run reuses every result (the same files, the same metadata)
    again = grade_class(RunRequest(assignment=ASSIGNMENT, submissions_dir=tmp_path / "export", out_dir=out),
                        RunOptions(jobs=2))
    assert sorted(again.unchanged) == ["1815", "2002", "bo@example.edu", "submission_199"]  # S_3 is never read


def test_lms_csv_numbers_are_plain_decimals(tmp_path: Path) -> None:
    from grader.results import CheckResult, QuestionResult, SubmissionResult

    def result(student: str, score: float) -> SubmissionResult:
        check = CheckResult("q1.a", "q1", "a", "public", "passed", score, 30.0, "", "", 0)
        return SubmissionResult(student=student, assignment=ASSIGNMENT, source=f"{student}.py", kind="python",
                                sha256="", status="graded", reason="",
                                questions=(QuestionResult("q1", "Q1", (check,)),), units=(), answers=(), notes=(),
                                submitted_at="", graded_at="", duration_s=0.0)

    write_lms_csv(tmp_path / "lms.csv", [result("zoe", 20 / 3), result("amy", 0.0), result("ben", 27.5)])
    assert (tmp_path / "lms.csv").read_text() == "student_id,score,out_of\namy,0,30\nben,27.5,30\nzoe,6.6667,30\n"


def test_grade_command_says_which_layout_it_read(tmp_path: Path) -> None:
    submitted = tmp_path / "course" / "submitted"
    (submitted / "alice" / "week10").mkdir(parents=True)
    shutil.copy(SAMPLES / "textbook.ipynb", submitted / "alice" / "week10" / "week10.ipynb")
    write(submitted, "alice/week10/timestamp.txt", "2024-03-01 12:00:00.000000 UTC\n")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", ASSIGNMENT, str(tmp_path / "course"), "--out",
                           str(out), "--jobs", "1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Submissions: nbgrader's layout in submitted/ (detected: submitted/<student>/<assignment>/)" in done.stdout
    assert "alice" in done.stdout and "100 / 100" in done.stdout
    assert (out / "lms.csv").read_text() == "student_id,score,out_of\nalice,100,100\n"
    named = subprocess.run([sys.executable, "-m", "grader", "grade", ASSIGNMENT, str(tmp_path / "course"), "--out",
                            str(out), "--layout", "gradescope"], capture_output=True, text=True, timeout=300)
    assert named.returncode == 2 and "holds no submission_metadata.yml" in named.stderr
