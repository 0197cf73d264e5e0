"""`grader grade` on a course platform's download hands back what the platform imports, with no step between: the
Moodle worksheet and feedback zip, the Canvas gradebook and feedback zip, each student's name and Canvas's late mark
in grades.csv and the pages; and the instructor's dashboard lists similar submissions (never a student's page)."""

from __future__ import annotations

import csv
import subprocess
import sys
import zipfile
from pathlib import Path

from grader.paths import PROJECT_ROOT

FIXTURES = PROJECT_ROOT / "tests" / "fixtures"


def grade(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "grader", "grade", "attention_scoring", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_moodle_download_is_graded_and_handed_back(tmp_path: Path) -> None:
    out = tmp_path / "out"
    said = grade(str(FIXTURES / "moodle" / "download"), "--out", str(out),
                 "--moodle-worksheet", str(FIXTURES / "moodle" / "worksheet.csv"))
    assert "For Moodle:" in said
    grades = {r["student"]: r for r in rows(out / "grades.csv")}
    assert grades["102"]["name"] == "José María Núñez-Ávila"
    sheet = {r["Identifier"]: r for r in rows(out / "moodle" / "grading-worksheet.csv")}
    for student, row in grades.items():
        assert float(sheet[f"Participant {student}"]["Grade"]) == float(row["score"])
    with zipfile.ZipFile(out / "moodle" / "feedback.zip") as feedback:
        names = feedback.namelist()
    assert len(names) == len(grades) and all(n.endswith("/report.html") for n in names)
    assert "José María Núñez-Ávila" in (out / "students" / "102" / "report.html").read_text(encoding="utf-8")


def test_a_canvas_download_is_graded_and_handed_back(tmp_path: Path) -> None:
    out = tmp_path / "out"
    said = grade(str(FIXTURES / "canvas" / "download"), "--out", str(out),
                 "--canvas-gradebook", str(FIXTURES / "canvas" / "gradebook.csv"), "--no-similarity")
    assert "For Canvas:" in said
    grades = {r["student"]: r for r in rows(out / "grades.csv")}
    assert grades["1002"]["marked_late"] == "yes" and grades["1001"]["marked_late"] == ""
    imported = {r["ID"]: r for r in rows(out / "canvas" / "gradebook-import.csv")}
    column = next(c for c in imported["1001"] if c.startswith("Attention"))
    for student, row in grades.items():
        assert float(imported[student][column]) == float(row["score"])
    with zipfile.ZipFile(out / "canvas" / "feedback.zip") as feedback:
        assert len(feedback.namelist()) == len(grades)
    assert not (out / "similar").exists()


def test_the_dashboard_lists_similar_submissions_and_no_student_page_does(tmp_path: Path) -> None:
    out = tmp_path / "out"
    grade(str(PROJECT_ROOT / "tests" / "submissions" / "attention_scoring"), "--out", str(out),
          "--similarity-threshold", "0.5")
    pages = sorted((out / "similar").glob("*.html"))
    assert pages  # the samples were written from one base: several pairs share most of their own code
    dashboard = (out / "index.html").read_text(encoding="utf-8")
    assert 'id="similar"' in dashboard and all(f"similar/{p.name}" in dashboard for p in pages)
    for report in (out / "students").glob("*/report.html"):
        assert "similar/" not in report.read_text(encoding="utf-8") and "Similar submissions" not in \
            report.read_text(encoding="utf-8")
