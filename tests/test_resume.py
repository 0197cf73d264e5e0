"""Crash safety and resumable grading: kill the grader mid-class, run it again, and nothing is lost or duplicated."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.discover import Submission
from grader.errors import ConfigurationError
from grader.files import remove_partial_writes, write_text_atomic
from grader.pipeline.resume import plan_resume
from grader.record.gradebook import SCHEMA_VERSION, Gradebook, StoredResult
from grader.record.output_lock import output_lock
from grader.record.result_json import ResultFormatError, result_from_json, result_to_json, to_data
from grader.results import (
    CheckResult,
    LatePenalty,
    ManualMark,
    QuestionResult,
    SubmissionResult,
    UnitResult,
    WrittenAnswer,
)

from .conftest import SAMPLES
from .processes import student_processes

# The gradebook schema as the first release wrote it: no schema version, no stored results.
UNVERSIONED_SCHEMA = """
CREATE TABLE students (student TEXT PRIMARY KEY);
CREATE TABLE submissions (
    id INTEGER PRIMARY KEY, student TEXT NOT NULL REFERENCES students(student), assignment TEXT NOT NULL,
    source TEXT NOT NULL, kind TEXT NOT NULL, sha256 TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL,
    score REAL NOT NULL, max_score REAL NOT NULL, submitted_at TEXT NOT NULL, graded_at TEXT NOT NULL,
    duration_s REAL NOT NULL, UNIQUE (student, assignment));
CREATE TABLE test_results (
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE, check_id TEXT NOT NULL,
    question TEXT NOT NULL, title TEXT NOT NULL, visibility TEXT NOT NULL, status TEXT NOT NULL, score REAL NOT NULL,
    max_score REAL NOT NULL, message TEXT NOT NULL, detail TEXT NOT NULL, seed INTEGER NOT NULL,
    PRIMARY KEY (submission_id, check_id));
"""


def sample_result(student: str = "ana", *, sha256: str = "ab" * 32, source: str = "ana.py",
                  check_status: str = "passed") -> SubmissionResult:
    checks = (
        CheckResult("q1.textbook", "q1", "textbook example", "public", check_status, 12.5, 12.5, "ok", "détail ✓",
                    2**40 + 3, notes=("graded with the reference",)),
        CheckResult("q1.random", "q1", "random shapes", "hidden", "failed", 0.0, 12.5, "differs", "", 7),
    )
    return SubmissionResult(
        student=student, assignment="attention_scoring", source=source, kind="python", sha256=sha256,
        status="graded", reason="",
        questions=(QuestionResult("q1", "masked softmax", checks, notes=("a note",), stdout="printed\n", stderr=""),
                   QuestionResult("q2", "additive", ())),
        units=(UnitResult("cell 1", "ok", "out", "warn", "", notes=("n",)),
               UnitResult("cell 2", "error", "", "", "ValueError: bad\n  line 3")),
        answers=(WrittenAnswer("ex1", "Why scale?", "Because the variance grows with d."),),
        notes=("2 files found",), submitted_at="2026-01-02T03:04:05+00:00", graded_at="2026-01-02T03:05:00+00:00",
        duration_s=1.234, environment=(("numpy", "2.1.0"), ("python", "3.11.9"), ("torch", "2.13.0")),
        manual=(ManualMark("ex1", 5.0, 2.5, "Right idea; say why ✓", "marked"),
                ManualMark("ex2", 0.0, None, "", "unmarked")),
        late=LatePenalty("2026-01-01T23:00:00+00:00", "2026-01-02T03:04:05+00:00", 14645.0, 0.1,
                         "10% of the score per started day late", "+01:00", True, "medical"))


# --- the result's JSON round-trip ---------------------------------------------------------------------------------

def test_a_result_is_equal_after_a_json_round_trip() -> None:
    result = sample_result()
    back = result_from_json(result_to_json(result))
    assert back == result
    assert back.score == result.score and back.max_score == 25 + 5
    assert back.manual[0].points == 2.5 and back.manual[1].points is None and back.late == result.late
    assert isinstance(back.environment, tuple) and back.environment[0] == ("numpy", "2.1.0")
    assert isinstance(back.questions[0].checks[0].notes, tuple)
    assert isinstance(back.duration_s, float) and isinstance(back.checks[0].seed, int)


def test_json_reading_follows_the_dataclass_fields() -> None:
    data = to_data(sample_result())
    # Written before fields with defaults existed: the defaults fill in. A field that no longer exists is ignored.
    del data["environment"]
    del data["questions"][0]["checks"][0]["notes"]
    data["questions"][0]["removed_since"] = 1
    back = result_from_json(json.dumps(data))
    assert back.environment == () and back.questions[0].checks[0].notes == ()
    # Integral floats come back as floats, so equality and formatting do not depend on how JSON wrote them.
    data["duration_s"] = 2
    assert result_from_json(json.dumps(data)).duration_s == 2.0
    for broken in ({k: v for k, v in data.items() if k != "sha256"}, {**data, "questions": "q1"},
                   {**data, "environment": [["python"]]}, {**data, "student": 3}):
        with pytest.raises(ResultFormatError):
            result_from_json(json.dumps(broken))
    with pytest.raises(ResultFormatError):
        result_from_json("{not json")
    # The message says where the misfit is.
    data["questions"][0]["checks"][0]["seed"] = "7"
    with pytest.raises(ResultFormatError, match=r"^result\.questions\[0\]\.checks\[0\]\.seed: expected int, got str$"):
        result_from_json(json.dumps(data))


# --- the gradebook: schema version, migration, stored results, damage ---------------------------------------------

def test_an_unversioned_gradebook_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(UNVERSIONED_SCHEMA)
        db.execute("INSERT INTO students VALUES ('old')")
        db.execute("""INSERT INTO submissions VALUES (1, 'old', 'attention_scoring', 'old.py', 'python', 'cd', 'graded',
                      '', 80, 100, '2025-01-01T00:00:00+00:00', '2025-01-01T00:00:01+00:00', 1.5)""")
        db.execute("INSERT INTO test_results VALUES (1, 'q1.a', 'q1', 't', 'public', 'passed', 25, 25, '', '', 1)")
    db.close()

    with Gradebook(path) as book:
        assert book.schema_version == SCHEMA_VERSION
        stored = book.stored("attention_scoring")
        assert stored["old"] == StoredResult("old", "cd", "", None)  # no stored result: it will be regraded
        book.record(sample_result("old", source="old.py"), fingerprint="f1")
        book.record(sample_result("new"), fingerprint="f1")
        stored = book.stored("attention_scoring")
        assert stored["old"].result == sample_result("old", source="old.py") and stored["old"].fingerprint == "f1"
    with Gradebook(path) as book:  # opening again changes nothing
        assert book.schema_version == SCHEMA_VERSION
        rows = book.connection.execute("SELECT student, COUNT(*) FROM submissions GROUP BY student").fetchall()
        assert sorted(rows) == [("new", 1), ("old", 1)]
        assert book.connection.execute("SELECT COUNT(*) FROM test_results").fetchone()[0] == 4
        columns = {row[1] for row in book.connection.execute("PRAGMA table_info(submissions)")}
        assert {"fingerprint", "result_json"} <= columns
        assert book.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_gradebook_from_a_newer_grader_or_not_a_gradebook_is_refused(tmp_path: Path) -> None:
    newer = tmp_path / "newer.sqlite"
    with sqlite3.connect(newer) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(ConfigurationError, match="newer than this grader"):
        Gradebook(newer)
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"half a file" * 100)
    with pytest.raises(ConfigurationError, match="not a gradebook"):
        Gradebook(garbage)


def test_a_stored_result_that_no_longer_reads_is_regraded(tmp_path: Path) -> None:
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        book.record(sample_result(), fingerprint="f1")
        book.connection.execute("UPDATE submissions SET result_json = '{\"student\": \"ana\"}'")
        assert book.stored("attention_scoring")["ana"].result is None


# --- which submissions a run grades ------------------------------------------------------------------------------

def test_resume_reuses_only_unchanged_results_graded_the_same_way(tmp_path: Path) -> None:
    import hashlib

    root = tmp_path / "class"
    root.mkdir()
    when = datetime(2026, 1, 1, tzinfo=UTC)
    submissions, stored = [], {}
    for student in ("same", "changed", "other_checks", "internal", "moved", "new"):
        path = root / f"{student}.py"
        path.write_text(f"# {student}\n")
        submissions.append(Submission(student, path, "python", when))
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        result = sample_result(student, sha256=digest, source=f"{student}.py",
                               check_status="internal_error" if student == "internal" else "passed")
        if student == "changed":
            result = dataclasses.replace(result, sha256="0" * 64)
        if student == "moved":
            result = dataclasses.replace(result, source=f"{student}/{student}.py")
        if student != "new":
            stored[student] = StoredResult(student, result.sha256, "f2" if student == "other_checks" else "f1", result)
    stored["gone"] = StoredResult("gone", "1" * 64, "f1", sample_result("gone"))

    plan = plan_resume(submissions, stored, fingerprint="f1", root=root)
    assert [r.student for r in plan.reused] == ["same"]
    assert [s.student for s in plan.to_grade] == ["changed", "other_checks", "internal", "moved", "new"]
    assert plan.missing == ("gone",)
    forced = plan_resume(submissions, stored, fingerprint="f1", root=root, force=True)
    assert forced.reused == () and len(forced.to_grade) == len(submissions)


def test_partial_writes_are_removed_and_one_grader_holds_the_output_folder(tmp_path: Path) -> None:
    write_text_atomic(tmp_path / "students" / "ana" / "report.html", "<p>done</p>")
    partial = tmp_path / "students" / "ana" / ".report.html.x1y2z3.tmp"
    partial.write_text("<p>half")
    assert remove_partial_writes(tmp_path) == [partial]
    assert [p.name for p in (tmp_path / "students" / "ana").iterdir()] == ["report.html"]
    with output_lock(tmp_path), pytest.raises(ConfigurationError, match=f"pid {os.getpid()}"), output_lock(tmp_path):
        pass
    with output_lock(tmp_path):  # released on exit
        pass


# --- the real CLI, killed with SIGKILL in the middle of a class ---------------------------------------------------

CLASS = ["broken_syntax.py", "einsum_style.py", "mistake_no_scaling.py", "mistake_no_tanh.py",
         "mistake_softmax_axis.py", "textbook.ipynb"]


def grader_command(submissions: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "grader", "grade", "attention_scoring", str(submissions), "--out", str(out),
            "--jobs", "1", *extra]


def graded_at(out: Path) -> dict[str, str]:
    with sqlite3.connect(f"file:{out / 'gradebook.sqlite'}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT student, graded_at FROM submissions").fetchall()
    db.close()
    return dict(rows)


def rerun(submissions: Path, out: Path, *extra: str) -> str:
    done = subprocess.run(grader_command(submissions, out, *extra), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def check_whole_class(out: Path, students: set[str]) -> None:
    with sqlite3.connect(f"file:{out / 'gradebook.sqlite'}?mode=ro", uri=True) as db:
        counts = dict(db.execute("SELECT student, COUNT(*) FROM submissions GROUP BY student").fetchall())
        checks = db.execute("SELECT COUNT(*) FROM test_results").fetchone()[0]
    db.close()
    assert counts == dict.fromkeys(students, 1)
    assert checks == 24 * len(students)
    with open(out / "grades.csv", newline="") as handle:
        assert sorted(row["student"] for row in csv.DictReader(handle)) == sorted(students)
    dashboard = (out / "index.html").read_text()
    assert all(f"students/{s}/report.html" in dashboard for s in students)
    for student in students:
        assert sorted(p.name for p in (out / "students" / student).iterdir()) == ["instructor.html", "report.html",
                                                                               "results.json"]
    assert [p for p in out.rglob(".*") if p.name != ".grader.lock"] == []


@pytest.mark.slow
def test_a_killed_run_resumes_without_regrading_or_losing_anything(tmp_path: Path) -> None:
    submissions, out = tmp_path / "class", tmp_path / "out"
    submissions.mkdir()
    for name in CLASS:
        shutil.copy(SAMPLES / name, submissions / name)
    students = {Path(name).stem for name in CLASS}

    first = subprocess.Popen(grader_command(submissions, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        before: dict[str, str] = {}
        while len(before) < 2:
            assert first.poll() is None, "the grader finished before it could be killed"
            assert time.monotonic() < deadline, "the grader recorded nothing in 120 s"
            time.sleep(0.05)
            with contextlib.suppress(sqlite3.Error):  # not created yet
                before = graded_at(out)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    # The students' processes run in sessions of their own, out of reach of that killpg: they die with the grader.
    deadline = time.monotonic() + 10
    while student_processes(first.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not student_processes(first.pid)
    before = graded_at(out)
    assert 2 <= len(before) < len(students)
    reports = {s: (out / "students" / s / "report.html").read_bytes() for s in before}
    # What a kill in the middle of writing a report leaves behind.
    (out / "students" / next(iter(before)) / ".report.html.k1ll3d.tmp").write_text("<html><body><p>half")

    output = rerun(submissions, out)
    after = graded_at(out)
    assert {s: after[s] for s in before} == before  # recorded before the kill: not regraded
    assert not any(f"] {s} " in output for s in before)
    assert f"{len(before)} unchanged since the last run (use --force to regrade); grading " \
           f"{len(students) - len(before)}." in output
    assert f"[{len(students) - len(before)}/{len(students) - len(before)}]" in output
    check_whole_class(out, students)
    # Reused results are reported again from the gradebook, exactly as when they were graded.
    assert {s: (out / "students" / s / "report.html").read_bytes() for s in before} == reports

    forced = rerun(submissions, out, "--force")
    assert "unchanged" not in forced and f"[{len(students)}/{len(students)}]" in forced
    regraded = graded_at(out)
    assert all(regraded[s] != after[s] for s in students)
    check_whole_class(out, students)

    with open(submissions / "mistake_no_tanh.py", "a") as handle:
        handle.write("\n# edited after the deadline\n")
    once = rerun(submissions, out)
    assert f"{len(students) - 1} unchanged since the last run" in once and "[1/1] mistake_no_tanh" in once
    latest = graded_at(out)
    assert {s for s in students if latest[s] != regraded[s]} == {"mistake_no_tanh"}
    assert sum(1 for line in once.splitlines() if line.startswith("[")) == 1
    check_whole_class(out, students)
