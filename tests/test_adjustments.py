"""Manual marks and late penalties on a graded class: merged into every output at the next run, without running the
students' code again.

One small class of the toy_written fixture (a 2-point code question, a written question worth 3 and one worth 0; due
2026-03-01 12:00 at UTC+01:00, 10% per started day, 0 after 3 days) is graded once; each test grades a copy of its
output folder again, as an instructor's next `grader grade` would.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from grader.adjust import LateOverride
from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class

from .conftest import FIXTURE_SOLUTIONS, ROOT, write

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("warm_class_runs")]

SOURCE = """
    def scale(x):
        return x * 2

    ANSWER_WHY = "It multiplies by 2 ({student})."
"""
# Submission times (the files' modification times) against the deadline, 2026-03-01 11:00 UTC.
SUBMITTED = {
    "ana": "2026-03-01T10:00:00+00:00",  # on time
    "ben": "2026-03-02T23:00:00+00:00",  # 1.5 days late: two started days, 20%
    "cleo": "2026-03-05T12:00:00+00:00",  # 4 days late: past the cut-off, 0
    "dan": "2026-03-02T23:00:00+00:00",  # 1.5 days late, with a 2-day extension: on time
}


def grade(submissions: Path, out: Path, late: LateOverride | None = None) -> ClassRun:
    return grade_class(RunRequest(assignment="toy_written", submissions_dir=submissions, out_dir=out,
                                  solutions_dir=FIXTURE_SOLUTIONS, late=late), RunOptions(jobs=2))


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> ClassRun:
    root = tmp_path_factory.mktemp("adjust")
    submissions = root / "class"
    for student, when in SUBMITTED.items():
        path = write(submissions, f"{student}.py", SOURCE.format(student=student))
        stamp = datetime.fromisoformat(when).timestamp()
        os.utime(path, (stamp, stamp))
    write(root / "out", "extensions.csv", "student,deadline,reason\ndan,+2,medical certificate\n")
    return grade(submissions, root / "out")


def again(first: ClassRun, tmp_path: Path) -> Path:
    """A copy of the first run's output folder, to grade again."""
    out = tmp_path / "out"
    shutil.copytree(first.out_dir, out)
    return out


def by_student(run: ClassRun) -> dict:
    return {r.student: r for r in run.results}


def grades_csv(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "grades.csv", newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def fill_manual(out: Path, changes: dict[tuple[str, str], dict[str, str]], extra: list[dict[str, str]]) -> None:
    """What an instructor does in a spreadsheet: type points and comments, add a row or two."""
    with open(out / "manual.csv", encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row.update(changes.get((row["student"], row["question"]), {}))
    with open(out / "manual.csv", "w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), restval="")
        writer.writeheader()
        writer.writerows([*rows, *extra])


def page(out: Path, student: str, name: str = "report.html") -> str:
    return (out / "students" / student / name).read_text()


# --- late penalties -----------------------------------------------------------------------------------------------

def test_late_penalties_on_time_late_past_the_cutoff_and_extended(first: ClassRun) -> None:
    results = by_student(first)
    assert {s: (r.code_score, r.score, r.max_score) for s, r in results.items()} == {
        "ana": (2, 2, 5), "ben": (2, 1.6, 5), "cleo": (2, 0, 5), "dan": (2, 2, 5)}
    assert not results["ana"].late.is_late
    assert (results["ben"].late.started_days, results["ben"].late.fraction) == (2, 0.2)
    assert results["cleo"].late.fraction == 1.0 and results["cleo"].late_points == 2
    dan = results["dan"].late
    assert dan.extended and not dan.is_late and dan.deadline == "2026-03-03T11:00:00+00:00"
    assert all(r.submitted_at == SUBMITTED[s] for s, r in results.items())  # stored in UTC
    assert "Deadline 2026-03-01 11:00 UTC = 12:00 UTC+01:00" in first.adjustments.summary[1]
    assert "3 of 4 late" not in first.adjustments.summary[1] and "2 of 4 late" in first.adjustments.summary[1]


def test_the_penalty_is_in_grades_csv_results_json_the_report_and_the_dashboard(first: ClassRun) -> None:
    rows = grades_csv(first.out_dir)
    assert (rows["ben"]["score"], rows["ben"]["late_hours"], rows["ben"]["late_penalty"]) == ("1.6", "36.00", "0.4")
    assert (rows["cleo"]["score"], rows["cleo"]["late_penalty"]) == ("0", "2")
    assert rows["dan"]["deadline"] == "2026-03-03T11:00:00+00:00" and rows["dan"]["late_penalty"] == "0"
    data = json.loads((first.out_dir / "students" / "ben" / "results.json").read_text())
    assert data["score"] == 1.6 and data["extra_data"]["late"]["points_deducted"] == 0.4
    assert "1 day 12 hours after the deadline" in data["output"]
    ben = page(first.out_dir, "ben")
    assert ("Submitted 2026-03-02 23:00 UTC, 1 day 12 hours after the deadline (2026-03-01 11:00 UTC = 12:00 "
            "UTC+01:00). Late rule: 10% of the score per started day late; 0 when more than 3 days late. 2 started "
            "days late: 20% of 2 points, -0.4 points.") in ben
    assert "The score is 0 (-2 points)." in page(first.out_dir, "cleo")
    assert "on time" in page(first.out_dir, "ana")
    # The extension's reason is the instructor's; the student sees their own deadline.
    assert "your extended deadline (2026-03-03 11:00 UTC" in page(first.out_dir, "dan")
    assert "medical certificate" not in page(first.out_dir, "dan")
    assert "medical certificate" in page(first.out_dir, "dan", "instructor.html")
    dashboard = (first.out_dir / "index.html").read_text()
    assert "2 late" in dashboard and "1 day 12 hours, −0.4" in dashboard


def test_a_new_deadline_for_a_run_changes_totals_without_running_code(first: ClassRun, tmp_path: Path) -> None:
    out = again(first, tmp_path)
    submissions = first.out_dir.parent / "class"
    moved = grade(submissions, out, LateOverride(deadline="2026-03-02 12:00 Europe/Lisbon", per_day=0.5))
    assert moved.graded_now == 0 and len(moved.unchanged) == 4
    results = by_student(moved)
    # ben is now 11 hours late at 50% a started day; cleo still past the 3-day cut-off.
    assert (results["ben"].score, results["cleo"].score, results["ana"].score) == (1, 0, 2)
    assert grades_csv(out)["ben"]["score"] == "1"
    with sqlite3.connect(out / "gradebook.sqlite") as db:  # the gradebook's totals follow
        assert db.execute("SELECT score FROM submissions WHERE student = 'ben'").fetchone() == (1.0,)
    db.close()
    none = grade(submissions, out, LateOverride(deadline="none"))
    assert all(r.late is None and r.score == 2 for r in none.results)
    assert "late_penalty" not in next(iter(grades_csv(out).values()))


# --- manual marks -------------------------------------------------------------------------------------------------

def test_manual_points_merge_into_every_output_without_regrading_code(first: ClassRun, tmp_path: Path) -> None:
    out = again(first, tmp_path)
    with open(out / "manual.csv", encoding="utf-8-sig", newline="") as handle:
        written = [(r["student"], r["question"], r["points"], r["answer"]) for r in csv.DictReader(handle)]
    assert written[:2] == [("ana", "why", "", "It multiplies by 2 (ana)."), ("ana", "notes", "", "")]
    fill_manual(out, {("ana", "why"): {"points": "2.5", "comment": "Right; say why it is 2."},
                      ("ben", "why"): {"points": "3", "comment": "Clear."},
                      ("ben", "notes"): {"comment": "Thanks for the notes."},
                      ("cleo", "why"): {"points": "3"},
                      ("dan", "why"): {"points": "lots"}},
                extra=[{"student": "zoe", "question": "why", "points": "2"}])
    command = [sys.executable, "-m", "grader", "grade", "toy_written", str(first.out_dir.parent / "class"), "--out",
               str(out), "--solutions", str(FIXTURE_SOLUTIONS), "--jobs", "2"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "4 unchanged since the last run" in done.stdout  # nobody's code ran again
    assert "Written answers: 3 of 4 marked" in done.stdout
    assert "warning: manual.csv row 8 (dan, why): points 'lots' is not a number: not counted" in done.stderr
    assert "warning: manual.csv row 10 (zoe, why): no student 'zoe' in this class: not counted" in done.stderr

    rows = grades_csv(out)
    # ana 2 + 2.5; ben (2 + 3) less 20%; cleo past the cut-off; dan's malformed points do not count.
    assert {s: (row["score"], row["why"]) for s, row in rows.items()} == {
        "ana": ("4.5", "2.5"), "ben": ("4", "3"), "cleo": ("0", "3"), "dan": ("2", "")}
    assert all(row["max_score"] == "5" for row in rows.values())
    data = json.loads((out / "students" / "ana" / "results.json").read_text())
    assert data["score"] == 4.5
    test = next(t for t in data["tests"] if t["name"].startswith("why:"))
    assert (test["score"], test["max_score"], test["output"]) == (2.5, 3, "Right; say why it is 2.")
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        assert dict(db.execute("SELECT student, score FROM submissions")) == {"ana": 4.5, "ben": 4.0, "cleo": 0.0,
                                                                            "dan": 2.0}
    db.close()
    ana = page(out, "ana")
    assert "2.5 / 3 points.</strong> Right; say why it is 2." in ana and "Checks 2 + written answers 2.5" in ana
    assert "Thanks for the notes." in page(out, "ben")
    assert "Not marked yet." in page(out, "dan") and "lots" not in page(out, "dan")
    assert "manual.csv: points &#39;lots&#39; is not a number" in page(out, "dan", "instructor.html")
    dashboard = (out / "index.html").read_text()
    assert "1 why answer to mark" in dashboard and "3 of 4 marked" in dashboard
    with open(out / "manual.csv", encoding="utf-8-sig", newline="") as handle:
        kept = {(r["student"], r["question"]): r for r in csv.DictReader(handle)}
    assert kept[("dan", "why")]["points"] == "lots" and kept[("zoe", "why")]["points"] == "2"  # never wiped


def test_an_answer_changed_since_it_was_marked_is_flagged_not_counted(first: ClassRun, tmp_path: Path) -> None:
    out = again(first, tmp_path)
    submissions = tmp_path / "class"
    shutil.copytree(first.out_dir.parent / "class", submissions)  # modification times kept
    fill_manual(out, {("ana", "why"): {"points": "3", "comment": "Good."}}, extra=[])
    path = submissions / "ana.py"
    stamp = path.stat().st_mtime
    path.write_text(path.read_text().replace("It multiplies by 2", "Scaling doubles it"))
    os.utime(path, (stamp, stamp))
    run = grade(submissions, out)
    assert run.graded_now == 1 and len(run.unchanged) == 3  # ana's file changed: only she is graded again
    ana = by_student(run)["ana"]
    assert ana.manual[0].state == "changed" and ana.score == 2
    assert "the answer changed since it was marked" in run.adjustments.problems[0]
    assert "Not marked yet." in page(out, "ana") and "Good." not in page(out, "ana")
