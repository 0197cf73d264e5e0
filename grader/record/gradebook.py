"""The SQLite gradebook: students, submissions and test results. Regrading replaces a row, never duplicates it.

Each result is recorded in one transaction: its ``submissions`` row, its ``test_results`` rows and the whole result as
JSON (``result_json``, with the ``fingerprint`` of the grading that produced it), so a later run can report a student
again without regrading them. The database runs in WAL mode with a busy timeout; SQLite's journal makes a write cut
short by a crash (even SIGKILL) invisible: the next open sees the gradebook as it was before that transaction.

The schema's version is SQLite's ``user_version``. Version 0 is a gradebook written before versioning (no
``result_json`` and ``fingerprint`` columns); opening one adds them, and its rows are regraded on the next run since
they hold no stored result.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from grader.errors import ConfigurationError, GradebookDamaged
from grader.record.result_json import ResultFormatError, result_from_json, result_to_json
from grader.results import SubmissionResult
from grader.storage import storing

SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 30.0

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
    fingerprint TEXT NOT NULL DEFAULT '',
    result_json TEXT,
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
# Columns added since the first, unversioned schema: what an older gradebook's submissions table lacks.
ADDED_COLUMNS = {
    "fingerprint": "TEXT NOT NULL DEFAULT ''",
    "result_json": "TEXT",
}


@dataclass(frozen=True)
class StoredResult:
    """What the gradebook holds for one student: enough to decide whether grading again would change anything."""

    student: str
    sha256: str
    fingerprint: str
    result: SubmissionResult | None  # None: no stored result (an older gradebook) or one that no longer reads


def _parse(text: str | None) -> SubmissionResult | None:
    if text is None:
        return None
    try:
        return result_from_json(text)
    except (ResultFormatError, TypeError):
        return None


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite refused a file because it is not a database it can read, SQLITE_NOTADB ("file is not a
    database") or SQLITE_CORRUPT and its kinds ("database disk image is malformed"), as opposed to a busy or a full
    one."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return isinstance(exc, sqlite3.DatabaseError) and (name == "SQLITE_NOTADB" or name.startswith("SQLITE_CORRUPT"))


def damaged(path: Path, exc: BaseException) -> GradebookDamaged:
    """What to tell the instructor about a gradebook SQLite cannot read: the file, what is wrong, what to do."""
    why = " ".join(str(exc).split())[:200]  # one line, whatever SQLite's report holds
    return GradebookDamaged(
        f"{path} is damaged, not a gradebook SQLite can read ({why}): move it aside (mv {path} {path}.damaged) and run "
        "`grader grade` again, which builds a new one but without the marks and overrides made in the browser "
        "(grader review); keep the moved file as a backup")


def check_readable(connection: sqlite3.Connection, path: Path) -> None:
    """``GradebookDamaged`` when the file at ``path`` is not a whole SQLite database. quick_check reads every page
    once (milliseconds for a class's gradebook), so damage is found when the gradebook is opened, not in the middle of
    a run."""
    try:
        (verdict,) = connection.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError as exc:
        if is_damage(exc):
            raise damaged(path, exc) from exc
        raise
    if verdict != "ok":  # "*** in database main ***\nPage 2: btreeInitPage() returns error code 11"
        raise damaged(path, verdict.splitlines()[-1])


@contextmanager
def write_transaction(connection: sqlite3.Connection, path: Path) -> Iterator[sqlite3.Connection]:
    """One write transaction on the gradebook at ``path`` (``connection`` in autocommit mode), taken at once: rolled
    back whole on any error; a refused write ("database or disk is full", a read-only gradebook) is Refused."""
    with storing(path):
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            if connection.in_transaction:  # SQLite itself rolls back on a full disk
                connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")


class Gradebook:
    def __init__(self, path: Path) -> None:
        self.path = path
        with storing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            # Autocommit mode: every transaction is an explicit BEGIN ... COMMIT (see _transaction), DDL included.
            self.connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            with storing(path):
                self.connection.execute("PRAGMA journal_mode = WAL")
                self.connection.execute("PRAGMA foreign_keys = ON")
                check_readable(self.connection, path)
                self._migrate()
        except BaseException as exc:
            self.connection.close()
            if is_damage(exc):
                raise damaged(path, exc) from exc
            if isinstance(exc, sqlite3.DatabaseError):
                raise ConfigurationError(f"{path} is not a gradebook this grader can open ({exc}); "
                                         "move it away or grade into another --out folder") from exc
            raise

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return write_transaction(self.connection, self.path)

    def _migrate(self) -> None:
        with self._transaction() as db:
            (version,) = db.execute("PRAGMA user_version").fetchone()
            if version > SCHEMA_VERSION:
                raise ConfigurationError(f"the gradebook has schema version {version}, newer than this grader's "
                                         f"({SCHEMA_VERSION}); grade with the newer grader or into another --out")
            if version == SCHEMA_VERSION:
                return
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            present = {row[1] for row in db.execute("PRAGMA table_info(submissions)")}
            for column, declaration in ADDED_COLUMNS.items():
                if column not in present:
                    db.execute(f"ALTER TABLE submissions ADD COLUMN {column} {declaration}")
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @property
    def schema_version(self) -> int:
        return self.connection.execute("PRAGMA user_version").fetchone()[0]

    def record(self, result: SubmissionResult, *, fingerprint: str = "") -> None:
        """Store one student's result in a single transaction."""
        with self._transaction() as db:
            db.execute("INSERT OR IGNORE INTO students (student) VALUES (?)", (result.student,))
            (submission_id,) = db.execute(
                """INSERT INTO submissions (student, assignment, source, kind, sha256, status, reason, score,
                                            max_score, submitted_at, graded_at, duration_s, fingerprint, result_json)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (student, assignment) DO UPDATE SET
                     source = excluded.source, kind = excluded.kind, sha256 = excluded.sha256,
                     status = excluded.status, reason = excluded.reason, score = excluded.score,
                     max_score = excluded.max_score, submitted_at = excluded.submitted_at,
                     graded_at = excluded.graded_at, duration_s = excluded.duration_s,
                     fingerprint = excluded.fingerprint, result_json = excluded.result_json
                   RETURNING id""",
                (result.student, result.assignment, result.source, result.kind, result.sha256, result.status,
                 result.reason, result.score, result.max_score, result.submitted_at, result.graded_at,
                 result.duration_s, fingerprint, result_to_json(result)),
            ).fetchone()
            db.execute("DELETE FROM test_results WHERE submission_id = ?", (submission_id,))
            db.executemany(
                """INSERT INTO test_results (submission_id, check_id, question, title, visibility, status, score,
                                             max_score, message, detail, seed)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [(submission_id, c.check_id, c.question, c.title, c.visibility, c.status, c.score, c.max_score,
                  c.message, c.detail, c.seed) for c in result.checks],
            )

    def stored(self, assignment: str, *, summaries: bool = False) -> dict[str, StoredResult]:
        """Every student's stored result for ``assignment``, by student; with ``summaries``, each result without what
        only its pages show (SubmissionResult.summary), so that a large class's results fit in little memory."""
        found = {}
        rows = self.connection.execute(
            "SELECT student, sha256, fingerprint, result_json FROM submissions WHERE assignment = ?", (assignment,))
        for student, sha256, fingerprint, text in rows:
            result = _parse(text)
            if summaries and result is not None:
                result = result.summary()
            found[student] = StoredResult(student, sha256, fingerprint, result)
        return found

    def result(self, assignment: str, student: str) -> SubmissionResult | None:
        """One student's whole stored result (None: none, or one that no longer reads)."""
        row = self.connection.execute("SELECT result_json FROM submissions WHERE assignment = ? AND student = ?",
                                      (assignment, student)).fetchone()
        return _parse(row[0]) if row is not None else None

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Gradebook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stored_result(path: Path, assignment: str, student: str) -> SubmissionResult | None:
    """One student's whole stored result, read without opening the gradebook for writing (the review app reads one
    per page; a gradebook it cannot read gives None)."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S) as db:
            row = db.execute("SELECT result_json FROM submissions WHERE assignment = ? AND student = ?",
                             (assignment, student)).fetchone()
    except sqlite3.Error:
        return None
    return _parse(row[0]) if row is not None else None
