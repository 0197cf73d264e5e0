"""Canvas both ways: discovering an unpacked "Download Submissions" zip, and the gradebook CSV and feedback zip that go
back. The fixture (tests/fixtures/canvas/) is named as canvas-lms's ContentZipper names a download's files, with
copies of the sample submissions; gradebook.csv is laid out as Canvas's Gradebook export."""

from __future__ import annotations

import csv
import io
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from grader.discover import detect_layout, discover
from grader.discover.canvas import LATE_NOTE, canvas_download_in
from grader.errors import ConfigurationError
from grader.export.canvas import canvas_late, fill_gradebook, write_canvas_exports
from grader.pipeline import RunOptions, RunRequest, grade_class

from .conftest import ROOT, SAMPLES

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

FIXTURE = ROOT / "tests" / "fixtures" / "canvas"
GRADEBOOK = FIXTURE / "gradebook.csv"
COLUMN = "Attention Scoring (3001)"
ACCENTED = "díazñúñezjosémaría"


def download(tmp_path: Path) -> Path:
    """A copy of the fixture download, with the times an unpacked zip would give: Emmy's notebook newer than her
    scratch file."""
    folder = shutil.copytree(FIXTURE / "download", tmp_path / "download")
    for path in folder.iterdir():
        os.utime(path, (1_700_000_000, 1_700_000_000))
    os.utime(folder / "noetheremmy_1004_50006_scratch.py", (1_699_000_000, 1_699_000_000))
    return folder


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline="")))


# ----- discovery -----------------------------------------------------------------------------------------------------
def test_discovers_one_submission_per_canvas_user(tmp_path: Path) -> None:
    folder = download(tmp_path)
    submissions, _ = discover(folder)
    by_id = {s.student: s for s in submissions}
    assert list(by_id) == ["1001", "1002", "1003", "1004", "1005", "1006"]
    assert {s: by_id[s].name for s in by_id} == {
        "1001": "lovelaceada", "1002": "hoppergrace", "1003": "turingalan", "1004": "noetheremmy",
        "1005": ACCENTED, "1006": "obriensmithpat"}
    assert by_id["1001"].origin == (("canvas_user", "1001"), ("canvas_submission", "50001"),
                                    ("canvas_name", "lovelaceada"))
    assert by_id["1001"].path.name == "lovelaceada_1001_50001_attention_scoring.ipynb"
    assert by_id["1001"].kind == "notebook"
    # Canvas's name part keeps accented letters and drops spaces and punctuation; the file's own name keeps its space
    assert by_id["1005"].path.name == f"{ACCENTED}_1005_50007_Attention Scoring.py"
    assert by_id["1005"].kind == "python"


def test_late_resubmission_and_two_files(tmp_path: Path) -> None:
    folder = download(tmp_path)
    submissions, skipped = discover(folder)
    by_id = {s.student: s for s in submissions}
    late = by_id["1002"]
    assert ("canvas_late", "yes") in late.origin and canvas_late(late)
    assert LATE_NOTE in late.notes
    assert late.name == "hoppergrace"
    assert not any(canvas_late(s) or LATE_NOTE in s.notes for s in submissions if s.student != "1002")
    # a file uploaded again under the same name: Canvas's -1 and the higher attachment id are the newer one
    assert by_id["1003"].path.name == "turingalan_1003_50021_attention-1.py"
    assert dict(by_id["1003"].origin)["canvas_submission"] == "50021"
    # two different files: finder's rule (the newest, a notebook on a tie)
    assert by_id["1004"].path.name == "noetheremmy_1004_50005_attention_scoring.ipynb"
    assert any("2 files found for 1004" in n for n in by_id["1004"].notes)
    os.utime(folder / "noetheremmy_1004_50006_scratch.py", (1_700_000_000, 1_700_000_000))
    tie = {s.student: s for s in discover(folder)[0]}["1004"]
    assert tie.path.suffix == ".ipynb"
    assert by_id["1004"].submitted_at.timestamp() == 1_700_000_000  # the file's time, as finder gives it
    reasons = {s.path.name: s.reason for s in skipped}
    assert set(reasons) == {"turingalan_1003_50004_attention.py", "lovelaceada_1001_50002_notes.txt",
                            "babbagecharles_1007_text.html", "grading_notes.txt"}
    assert "older version" in reasons["turingalan_1003_50004_attention.py"]
    assert "not a notebook or Python file" in reasons["lovelaceada_1001_50002_notes.txt"]
    assert "text entry" in reasons["babbagecharles_1007_text.html"]
    assert "not named as Canvas names" in reasons["grading_notes.txt"]


def test_student_with_no_code_gets_a_page_saying_so(tmp_path: Path) -> None:
    folder = tmp_path / "download"
    folder.mkdir()
    shutil.copy(SAMPLES / "einsum_style.py", folder / "lovelaceada_1001_50001_attention.py")
    (folder / "hoppergrace_1002_50002_answers.pdf").write_bytes(b"%PDF-1.4")
    (folder / "anon_Ab3xZ_50003_attention.py").write_text("x = 1\n")
    submissions, skipped = discover(folder, layout="canvas")
    grace = {s.student: s for s in submissions}["1002"]
    assert "holds no notebook" in grace.problem and "answers.pdf" in grace.problem
    assert [(s.path.name, "anonymous" in s.reason) for s in skipped] == [("anon_Ab3xZ_50003_attention.py", True)]


def test_detected_by_auto_and_named_by_layout(tmp_path: Path) -> None:
    folder = download(tmp_path)
    found = detect_layout(folder)
    assert (found.name, found.folder, found.detected) == ("canvas", folder, True)
    assert "Canvas download" in found.describe(folder)
    # the folder the zip was unpacked into, inside the one given
    outer = tmp_path / "outer"
    shutil.move(folder, outer / "attention-scoring submissions")
    inner = detect_layout(outer)
    assert inner.name == "canvas" and inner.folder == outer / "attention-scoring submissions"
    assert canvas_download_in(outer) == inner.folder
    asked = discover(outer, layout="canvas")
    assert [s.student for s in asked[0]] == [s.student for s in discover(outer)[0]]
    assert asked[0][0].path.is_relative_to(outer / "attention-scoring submissions")
    # a flat class is not a Canvas download, and asking for one there says what to do
    assert detect_layout(SAMPLES).name == "flat"
    assert canvas_download_in(SAMPLES) is None
    with pytest.raises(ConfigurationError, match="Download Submissions"):
        detect_layout(SAMPLES, layout="canvas")


# ----- the gradebook CSV ----------------------------------------------------------------------------------------------
def test_gradebook_filled_as_canvas_imports_it(tmp_path: Path) -> None:
    original = GRADEBOOK.read_text(encoding="utf-8-sig")
    filled = fill_gradebook(GRADEBOOK, {"1001": 100.0, "1002": 87.5, "1005": 33.333333, "4242": 5.0},
                            names=["attention_scoring"])
    text, chosen, missing = filled.text, filled.column, filled.missing
    assert filled.reread == filled.mangled == []
    assert chosen == COLUMN
    assert missing == ["4242"]
    assert text.startswith("\ufeff")  # the export's byte-order mark is kept
    before, after = rows(original), rows(text)
    header = after[0]
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert after[0] == before[0] and after[1] == before[1]  # header and Points Possible row unchanged
    assert after[1][0].strip() == "Points Possible"
    col, ids = header.index(COLUMN), header.index("ID")
    cells = {r[ids]: r[col] for r in after[2:]}
    assert cells == {"1001": "100", "1002": "87.5", "1003": "", "1004": "", "1005": "33.3333", "1006": "",
                     "1007": "0.00", "1008": "", "1099": ""}
    for old, new in zip(before, after, strict=True):  # every other cell as exported
        assert old[:col] + old[col + 1:] == new[:col] + new[col + 1:]


def test_gradebook_column_named_or_refused(tmp_path: Path) -> None:
    assert fill_gradebook(GRADEBOOK, {}, column="3001")[1] == COLUMN
    assert fill_gradebook(GRADEBOOK, {}, column="Attention Scoring")[1] == COLUMN
    assert fill_gradebook(GRADEBOOK, {}, names=["Attention Scoring", "attention_scoring"])[1] == COLUMN
    with pytest.raises(ConfigurationError, match=r"Quiz 1 \(2990\); Attention Scoring \(3001\)"):
        fill_gradebook(GRADEBOOK, {}, names=["practical10"])
    with pytest.raises(ConfigurationError, match="no assignment column is 'Current Score'"):
        fill_gradebook(GRADEBOOK, {}, column="Current Score")
    other = tmp_path / "roster.csv"
    other.write_text("name,email\nAda,ada@example.edu\n")
    with pytest.raises(ConfigurationError, match="not a Canvas gradebook export"):
        fill_gradebook(other, {})


# ----- round trip -----------------------------------------------------------------------------------------------------
def test_round_trip(tmp_path: Path) -> None:
    folder = download(tmp_path)
    out = tmp_path / "out"
    run = grade_class(RunRequest(assignment="attention_scoring", submissions_dir=folder, out_dir=out, layout="canvas"),
                      RunOptions(jobs=2))
    submissions, _ = discover(folder, layout="canvas")
    results = {r.student: r for r in run.results}
    assert sorted(results) == ["1001", "1002", "1003", "1004", "1005", "1006"]
    assert results["1001"].score == results["1001"].max_score == 100  # textbook
    assert results["1003"].score == 100  # the resubmission (einsum_style), not the older mistake_no_tanh
    assert results["1002"].score < 100  # mistake_no_scaling

    written = write_canvas_exports(out, submissions, run.results, gradebook=GRADEBOOK)
    assert [p.label for p in written] == ["canvas/gradebook-import.csv", "canvas/feedback.zip"]
    assert [sorted(p.placed) for p in written] == [sorted(results)] * 2 and not any(p.not_placed for p in written)
    assert (out / "canvas" / "README.txt").is_file()
    table = rows((out / "canvas" / "gradebook-import.csv").read_text(encoding="utf-8"))
    col, ids = table[0].index(COLUMN), table[0].index("ID")
    cells = {r[ids]: r[col] for r in table[2:]}
    for student, result in results.items():
        assert float(cells[student]) == pytest.approx(result.score, abs=1e-4), student
    assert cells["1007"] == "0.00" and cells["1008"] == "" and cells["1099"] == ""  # no submission: as exported

    feedback = out / "canvas" / "feedback.zip"
    with zipfile.ZipFile(feedback) as archive:
        names = archive.namelist()
        assert sorted(names) == sorted([
            "lovelaceada_1001_50001_report.html", "hoppergrace_LATE_1002_50003_report.html",
            "turingalan_1003_50021_report.html", "noetheremmy_1004_50005_report.html",
            f"{ACCENTED}_1005_50007_report.html", "obriensmithpat_1006_50008_report.html"])
        for name in names:
            user = name.split("_")[-3]
            assert archive.read(name) == (out / "students" / user / "report.html").read_bytes()
            assert archive.read(name) != (out / "students" / user / "instructor.html").read_bytes()
    # Canvas's re-upload reads the first two all-digit parts as user id and attachment id
    for name in names:
        user, attachment = [p for p in name.split("_") if p.isdigit()][:2]
        assert dict(next(s for s in submissions if s.student == user).origin)["canvas_submission"] == attachment
    first = feedback.read_bytes()
    write_canvas_exports(out, submissions, run.results, gradebook=None)
    assert feedback.read_bytes() == first  # deterministic
    assert not (out / "canvas" / "gradebook-import.csv").exists()  # not left from the run before
    assert "No gradebook-import.csv" in (out / "canvas" / "README.txt").read_text()
