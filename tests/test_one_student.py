"""`grader grade ... --student ID`: regrade one student (or a few) into an existing output folder, keeping and
reporting everyone else's stored result."""

from __future__ import annotations

import csv
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from grader.errors import ConfigurationError
from grader.pipeline import RunOptions, RunRequest, grade_class

from .conftest import FIXTURE_SOLUTIONS, write

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

CORRECT = """
    def scale(x):
        return x * 2

    def twice_scaled(x):
        return scale(scale(x))

    def bump():
        return 1
"""
WRONG = CORRECT.replace("return x * 2", "return x * 3")


def grader(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args, "--solutions", str(FIXTURE_SOLUTIONS), "--jobs", "2"],
                          capture_output=True, text=True, timeout=300)


def grades(out: Path) -> dict[str, str]:
    with open(out / "grades.csv", newline="") as handle:
        return {row["student"]: row["score"] for row in csv.DictReader(handle)}


def gradebook(out: Path) -> dict[str, tuple[float, str]]:
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        return {student: (score, graded_at) for student, score, graded_at in
                db.execute("SELECT student, score, graded_at FROM submissions WHERE assignment = 'toy'")}


def test_student_regrades_only_that_student_and_reports_the_class(tmp_path: Path) -> None:
    submissions, out = tmp_path / "class", tmp_path / "out"
    write(submissions, "ana.py", CORRECT)
    write(submissions, "ben.py", WRONG)
    first = grader("grade", "toy", str(submissions), "--out", str(out))
    assert first.returncode == 0, first.stderr
    before = gradebook(out)
    assert grades(out) == {"ana": "5", "ben": "3"}
    # Ben fixes his work and asks for a regrade; meanwhile Ana changed hers and Carla handed hers in late.
    write(submissions, "ben.py", CORRECT)
    write(submissions, "ana.py", WRONG)
    write(submissions, "carla.py", CORRECT)
    again = grader("grade", "toy", str(submissions), "--out", str(out), "--student", "ben")
    assert again.returncode == 0, again.stderr
    assert "Grading 1 student(s) named with --student; 1 other(s) reported from the gradebook" in again.stdout
    assert "[1/1] ben" in again.stdout
    assert "not graded (--student), new or changed since their stored result: ana, carla" in again.stdout
    after = gradebook(out)
    assert after["ana"] == before["ana"]  # kept as it was, not regraded
    assert after["ben"][0] == 5 and after["ben"][1] >= before["ben"][1] and "carla" not in after
    assert grades(out) == {"ana": "5", "ben": "5"}  # the whole class as the gradebook holds it
    dashboard = (out / "index.html").read_text()
    assert "ana" in dashboard and "ben" in dashboard
    ben_page = (out / "students" / "ben" / "report.html").read_text()
    assert "5 / 5" in ben_page


def test_student_is_graded_even_when_unchanged(tmp_path: Path) -> None:
    submissions, out = tmp_path / "class", tmp_path / "out"
    write(submissions, "ana.py", CORRECT)
    write(submissions, "ben.py", CORRECT)
    grade_class(RunRequest(assignment="toy", submissions_dir=submissions, out_dir=out, solutions_dir=FIXTURE_SOLUTIONS),
                RunOptions(jobs=2))
    run = grade_class(RunRequest(assignment="toy", submissions_dir=submissions, out_dir=out,
                                 solutions_dir=FIXTURE_SOLUTIONS, students=("ana",)))
    assert run.graded_now == 1 and run.unchanged == ("ben",) and run.held_back == ()
    assert [r.student for r in run.results] == ["ana", "ben"]


def test_an_unknown_student_is_an_error_that_names_the_nearest(tmp_path: Path) -> None:
    submissions = tmp_path / "class"
    for name in ("ana_silva", "ben_costa", "benedita"):
        write(submissions, f"{name}.py", CORRECT)
    run = grader("grade", "toy", str(submissions), "--out", str(tmp_path / "out"), "--student", "ben_cota",
                 "--student", "zed")
    assert run.returncode == 2
    assert "no submission in" in run.stderr and "(3 students)" in run.stderr
    assert "'ben_cota' (did you mean ben_costa or benedita?)" in run.stderr and "'zed'" in run.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()  # nothing graded, nothing written


@pytest.mark.parametrize("typo", ["Ana_Silva", "silva"])
def test_near_matches_ignore_case_and_find_parts(tmp_path: Path, typo: str) -> None:
    submissions = tmp_path / "class"
    write(submissions, "ana_silva.py", CORRECT)
    with pytest.raises(ConfigurationError, match="did you mean ana_silva"):
        grade_class(RunRequest(assignment="toy", submissions_dir=submissions, out_dir=tmp_path / "out",
                               solutions_dir=FIXTURE_SOLUTIONS, students=(typo,)))
