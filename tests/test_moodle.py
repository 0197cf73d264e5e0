"""Moodle both ways: the "Download all submissions" zip in (grader.discover.moodle), the grading worksheet and the
feedback zip out (grader.export.moodle), checked against the formats Moodle's own code writes and reads."""

from __future__ import annotations

import csv
import io
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from grader.discover.layouts import LAYOUTS, MOODLE, detect_layout, discover
from grader.errors import ConfigurationError
from grader.export.moodle import write_moodle_exports
from grader.pipeline import RunOptions, RunRequest, grade_class
from grader.results import CheckResult, QuestionResult, SubmissionResult

from .conftest import ROOT

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

FIXTURES = ROOT / "tests" / "fixtures" / "moodle"
ASSIGNMENT = "attention_scoring"
# A Moodle zip stamps every entry with the time of the download: one time for all (mod/assign/classes/downloader.php).
DOWNLOADED = 1_709_600_000
# The worksheet's headers as Moodle writes them (mod/assign/gradingtable.php with lang/en/assign.php); the first
# three are the ones its importer refuses a file without (assignfeedback_offline importgradeslib.php).
IMPORTER_NEEDS = ["Identifier", "Grade", "Last modified (grade)"]
GRADED = ["101", "102", "103", "104", "105", "106", "108"]


def copy_download(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        os.utime(path, (DOWNLOADED, DOWNLOADED))
    return target


def rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


def test_folder_form_one_submission_per_participant_with_name_and_origin(tmp_path: Path) -> None:
    download = copy_download(FIXTURES / "download", tmp_path / "download")
    submissions, skipped = discover(download)
    by_id = {s.student: s for s in submissions}
    assert sorted(by_id, key=int) == GRADED
    jose = by_id["102"]
    assert jose.name == "José María Núñez-Ávila"
    assert jose.origin == (("moodle_participant", "102"),
                           ("moodle_folder", "José María Núñez-Ávila_102_assignsubmission_file"),
                           ("moodle_name", "José María Núñez-Ávila"))
    assert jose.path == download / "José María Núñez-Ávila_102_assignsubmission_file" / "attention_scoring.py"
    # Moodle's clean_filename drops the apostrophe: the download's name is what there is
    assert by_id["103"].name == "Zoë OBrien" and by_id["103"].path.name == "Attention Scoring (final).py"
    # Two files, one download time: the notebook, as in a flat folder; the scratch file is named
    li = by_id["104"]
    assert li.path.name == "attention_scoring.ipynb" and li.kind == "notebook"
    assert any("scratch.py" in note for note in li.notes)
    assert by_id["105"].submitted_at.timestamp() == DOWNLOADED  # the zip's time: no lateness in the download
    reasons = {p.name: reason for p, reason in ((s.path, s.reason) for s in skipped)}
    assert set(reasons) == {"grading notes.txt", "Kim Lee_107_assignsubmission_file",
                            "Kim Lee_107_assignsubmission_onlinetext"}
    assert "not named as Moodle names" in reasons["grading notes.txt"]
    assert "participant 107 (Kim Lee)" in reasons["Kim Lee_107_assignsubmission_file"]
    assert "onlinetext.html" in reasons["Kim Lee_107_assignsubmission_file"]


def test_flat_form_prefixes(tmp_path: Path) -> None:
    flat = copy_download(FIXTURES / "flat", tmp_path / "flat")
    submissions, skipped = discover(flat, layout="moodle")
    assert [(s.student, s.name) for s in submissions] == [("101", "Ana Díaz"), ("102", "José María Núñez-Ávila")]
    ana = submissions[0]
    assert ana.path.name == "Ana Díaz_101_assignsubmission_file_attention_scoring.ipynb"
    assert dict(ana.origin)["moodle_folder"] == "Ana Díaz_101_assignsubmission_file_"
    assert any("Ana Díaz_101_assignsubmission_file_scratch.py" in note for note in ana.notes)
    assert sorted((p.name, r.split(" (")[0]) for p, r in ((s.path, s.reason) for s in skipped)) == [
        ("Zoë OBrien_103_assignsubmission_onlinetext_onlinetext.html", "participant 103"),
        ("notes.txt", "not named as Moodle names a participant's files")]


def test_auto_detects_the_download_or_the_one_folder_it_unzipped_into(tmp_path: Path) -> None:
    assert MOODLE == "moodle" and MOODLE in LAYOUTS
    wrapped = copy_download(FIXTURES / "download", tmp_path / "unzipped" / "AI101-Attention scoring-42")
    found = detect_layout(tmp_path / "unzipped")
    assert (found.name, found.folder, found.detected) == (MOODLE, wrapped, True)
    assert "Moodle download in AI101-Attention scoring-42/" in found.describe(tmp_path / "unzipped")
    submissions, _ = discover(tmp_path / "unzipped")
    assert [s.student for s in submissions] == GRADED
    assert detect_layout(wrapped, "moodle").detected is False
    # A class folder of students' own files is still flat, and naming moodle for it says what to do
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(FIXTURES / "flat" / "José María Núñez-Ávila_102_assignsubmission_file_attention_scoring.py",
                plain / "rui.py")
    assert detect_layout(plain).name == "flat"
    with pytest.raises(ConfigurationError, match="Download all submissions"):
        detect_layout(plain, "moodle")


def result(student: str, score: float, status: str = "graded") -> SubmissionResult:
    checks = (CheckResult("q1.a", "q1", "a", "public", "passed", 25.0, 25.0, "", "", 0),
              CheckResult("q2.a", "q2", "a", "public", "failed", score - 25.0, 75.0, "", "", 0))
    return SubmissionResult(student=student, assignment=ASSIGNMENT, source="x.py", kind="python", sha256="",
                            status=status, reason="" if status == "graded" else "syntax error at line 3",
                            questions=(QuestionResult("q1", "Masking", checks[:1]),
                                       QuestionResult("q2", "Additive <attention>", checks[1:])),
                            units=(), answers=(), notes=(), submitted_at="", graded_at="", duration_s=0.0)


def test_without_a_worksheet_the_columns_moodles_importer_matches(tmp_path: Path) -> None:
    submissions, _ = discover(copy_download(FIXTURES / "flat", tmp_path / "flat"))
    sheet, _zip = (p.path for p in write_moodle_exports(tmp_path / "out", submissions,
                                                         [result("101", 62.5), result("102", 100.0)]))
    assert sheet == tmp_path / "out" / "moodle" / "grading-worksheet.csv"
    header = sheet.read_text(encoding="utf-8").splitlines()[0]
    assert header == "Identifier,Full name,Grade,Maximum Grade,Last modified (grade),Feedback comments"
    assert all(name in header.split(",") for name in IMPORTER_NEEDS)
    got = rows(sheet)
    assert [(r["Identifier"], r["Full name"], r["Grade"], r["Maximum Grade"], r["Last modified (grade)"])
            for r in got] == [("Participant 101", "Ana Díaz", "62.5", "100", "-"),
                              ("Participant 102", "José María Núñez-Ávila", "100", "100", "-")]
    assert "q2 Additive &lt;attention&gt; (37.5 / 75)" in got[0]["Feedback comments"]
    assert "q1" not in got[0]["Feedback comments"]


def test_a_flat_download_gets_its_reports_back_after_each_prefix(tmp_path: Path) -> None:
    submissions, _ = discover(copy_download(FIXTURES / "flat", tmp_path / "flat"))
    out = tmp_path / "out"
    for student in ("101", "102"):
        (out / "students" / student).mkdir(parents=True)
        (out / "students" / student / "report.html").write_text(f"<p>{student}</p>", encoding="utf-8")
        (out / "students" / student / "instructor.html").write_text("secret", encoding="utf-8")
    _, feedback = (p.path for p in write_moodle_exports(out, submissions, [result("101", 62.5), result("102", 100.0)]))
    with zipfile.ZipFile(feedback) as archive:
        assert {name: archive.read(name) for name in archive.namelist()} == {
            "Ana Díaz_101_assignsubmission_file_report.html": b"<p>101</p>",
            "José María Núñez-Ávila_102_assignsubmission_file_report.html": b"<p>102</p>"}


def test_a_worksheet_that_is_not_moodles_is_refused(tmp_path: Path) -> None:
    submissions, _ = discover(copy_download(FIXTURES / "flat", tmp_path / "flat"))
    other = tmp_path / "grades.csv"
    other.write_text("student_id,score\n101,3\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="'Identifier'"):
        write_moodle_exports(tmp_path / "out", submissions, [result("101", 50.0)], worksheet=other)


def test_the_worksheets_maximum_grade_rescales_the_score(tmp_path: Path) -> None:
    submissions, _ = discover(copy_download(FIXTURES / "download", tmp_path / "download"))
    ten = tmp_path / "ten.csv"
    ten.write_text((FIXTURES / "worksheet.csv").read_text(encoding="utf-8").replace(",100.00,", ",10.00,"),
                   encoding="utf-8")
    sheet, _ = (p.path for p in write_moodle_exports(tmp_path / "out", submissions, [result("101", 62.5)],
                                                      worksheet=ten))
    assert rows(sheet)[0]["Grade"] == "6.25"  # Moodle skips a grade above its maximum


def test_round_trip_grade_a_moodle_download_and_fill_in_its_worksheet(tmp_path: Path) -> None:
    download = copy_download(FIXTURES / "download", tmp_path / "download")
    out = tmp_path / "out"
    run = grade_class(RunRequest(assignment=ASSIGNMENT, submissions_dir=download, out_dir=out, layout="moodle"),
                      RunOptions(jobs=4))
    submissions, _ = discover(download, layout="moodle")
    results = {r.student: r for r in run.results}
    assert sorted(results, key=int) == GRADED
    assert results["101"].score == results["101"].max_score == 100
    assert results["102"].score < 100 and results["108"].score == 0
    written = write_moodle_exports(out, submissions, run.results, worksheet=FIXTURES / "worksheet.csv")
    sheet, feedback = (p.path for p in written)
    assert [p.path for p in written] == [out / "moodle" / "grading-worksheet.csv", out / "moodle" / "feedback.zip"]
    assert [sorted(p.placed, key=int) for p in written] == [GRADED, GRADED]  # every graded participant, both files
    assert not any(p.not_placed for p in written)

    before, after = rows(FIXTURES / "worksheet.csv"), rows(sheet)
    assert list(after[0]) == list(before[0])  # every column, in Moodle's order
    assert [r["Identifier"] for r in after] == [r["Identifier"] for r in before]
    for old, new in zip(before, after):
        ident = old["Identifier"].removeprefix("Participant ")
        untouched = {k: v for k, v in new.items() if k not in ("Grade", "Feedback comments")}
        assert untouched == {k: v for k, v in old.items() if k not in ("Grade", "Feedback comments")}
        if ident in results:
            assert float(new["Grade"]) == pytest.approx(results[ident].score, abs=0.005)
            assert new["Feedback comments"].startswith(f"Autograder: {new['Grade']} / 100.")
        else:  # Kim Lee (nothing gradable) and Mia Chen (no submission): Moodle keeps what it has
            assert new == old
    comments = {r["Identifier"]: r["Feedback comments"] for r in after}
    assert "q2" in comments["Participant 102"] and "q3" not in comments["Participant 102"]
    assert "Not graded" in comments["Participant 108"]
    assert {r["Full name"] for r in after} >= {"Zoë O'Brien"}  # the worksheet's own names are kept

    folders = {s.student: dict(s.origin)["moodle_folder"] for s in submissions}
    with zipfile.ZipFile(feedback) as archive:
        names = archive.namelist()
        assert sorted(names) == sorted(f"{folders[ident]}/report.html" for ident in GRADED)
        for ident in GRADED:
            data = archive.read(f"{folders[ident]}/report.html")
            assert data == (out / "students" / ident / "report.html").read_bytes()
            assert data != (out / "students" / ident / "instructor.html").read_bytes()
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    first = feedback.read_bytes()
    write_moodle_exports(out, submissions, run.results, worksheet=FIXTURES / "worksheet.csv")
    assert feedback.read_bytes() == first  # the same bytes at every run
