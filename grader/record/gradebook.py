"""The SQLite gradebook: students, submissions and test results. Regrading replaces a row, never duplicates it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from grader.results import SubmissionResult

SCHEMA = """
CREATE TABLE IF NOT EXISTS students (
    student TEXT PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY,
    student TEXT NOT NULL REFERENCES students(student),
    assignment TEXT NOT NULL,
    source TEXT NOT NULL,
    kind TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL,
    score REAL NOT NULL,
    max_score REAL NOT NULL,
    submitted_at TEXT NOT NULL,
    graded_at TEXT NOT NULL,
    duration_s REAL NOT NULL,
    UNIQUE (student, assignment)
);
CREATE TABLE IF NOT EXISTS test_results (
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    check_id TEXT NOT NULL,
    question TEXT NOT NULL,
    title TEXT NOT NULL,
    visibility TEXT NOT NULL,
    status TEXT NOT NULL,
    score REAL NOT NULL,
    max_score REAL NOT NULL,
    message TEXT NOT NULL,
    detail TEXT NOT NULL,
    seed INTEGER NOT NULL,
    PRIMARY KEY (submission_id, check_id)
);
"""


class Gradebook:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(path)
        self.connection.execute("PRAGMA foreign_keys = ON")
        self.connection.executescript(SCHEMA)

    def record(self, result: SubmissionResult) -> None:
        """Store one student's result in a single transaction."""
        with self.connection:
            self.connection.execute("INSERT OR IGNORE INTO students (student) VALUES (?)", (result.student,))
            (submission_id,) = self.connection.execute(
                """INSERT INTO submissions (student, assignment, source, kind, sha256, status, reason, score,
                                            max_score, submitted_at, graded_at, duration_s)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (student, assignment) DO UPDATE SET
                     source = excluded.source, kind = excluded.kind, sha256 = excluded.sha256,
                     status = excluded.status, reason = excluded.reason, score = excluded.score,
                     max_score = excluded.max_score, submitted_at = excluded.submitted_at,
                     graded_at = excluded.graded_at, duration_s = excluded.duration_s
                   RETURNING id""",
                (result.student, result.assignment, result.source, result.kind, result.sha256, result.status,
                 result.reason, result.score, result.max_score, result.submitted_at, result.graded_at,
                 result.duration_s),
            ).fetchone()
            self.connection.execute("DELETE FROM test_results WHERE submission_id = ?", (submission_id,))
            self.connection.executemany(
                """INSERT INTO test_results (submission_id, check_id, question, title, visibility, status, score,
                                             max_score, message, detail, seed)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [(submission_id, c.check_id, c.question, c.title, c.visibility, c.status, c.score, c.max_score,
                  c.message, c.detail, c.seed) for c in result.checks],
            )

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Gradebook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
