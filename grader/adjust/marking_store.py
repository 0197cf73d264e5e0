"""The marks people give in the review app, kept in the class's gradebook (OUT/gradebook.sqlite) beside the results.

Three kinds of record, each with a version that every save must name:

- a **rubric item** of a written question: a title, points (negative ones deduct) and a comment the student reads.
  Items come from the question's ``rubric`` in checks.py (added once, then the page's to edit) or from the page.
  A mark refers to items by id, so changing an item's points changes every mark that has it;
- a **mark**: one student's answer to one written question: the items applied, a free adjustment and comment, the
  hash of the answer it was given to (grader/adjust/manual.py's ``answer_hash``), who saved it and when;
- an **override** of one check's points for one student, with the reason (a regrade request).

A save names the version it changed (0: there was none). When that is no longer the version stored, someone else
saved in between: the save is refused with a ``Conflict`` that holds what is stored now, and nothing is written, so
no one's mark is overwritten unseen. Every write is also kept in ``review_changes``: who, when, the old and the new
value, as JSON.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grader.check.spec import WrittenQuestion
from grader.record.gradebook import damaged, is_damage, write_transaction
from grader.storage import storing

BUSY_TIMEOUT_S = 30.0  # a run's import waits this long for a write lock (another run, the review app)
RUBRIC = "id, question, origin, title, points, comment, position, version, deleted"
MARK = "student, question, items, adjustment, comment, answer_sha256, author, saved_at, version"
OVERRIDE = "student, check_id, points, reason, author, saved_at, version"
FROM_CHECKS = "checks.py"  # a rubric item's origin: the question's rubric in checks.py; otherwise the page

SCHEMA = """
CREATE TABLE IF NOT EXISTS review_rubric (
    id INTEGER PRIMARY KEY,
    assignment TEXT NOT NULL,
    question TEXT NOT NULL,
    origin TEXT NOT NULL,
    title TEXT NOT NULL,
    points REAL NOT NULL,
    comment TEXT NOT NULL,
    position INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS review_marks (
    assignment TEXT NOT NULL,
    student TEXT NOT NULL,
    question TEXT NOT NULL,
    items TEXT NOT NULL,
    adjustment REAL NOT NULL,
    comment TEXT NOT NULL,
    answer_sha256 TEXT NOT NULL,
    author TEXT NOT NULL,
    saved_at TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (assignment, student, question)
);
CREATE TABLE IF NOT EXISTS review_overrides (
    assignment TEXT NOT NULL,
    student TEXT NOT NULL,
    check_id TEXT NOT NULL,
    points REAL,
    reason TEXT NOT NULL,
    author TEXT NOT NULL,
    saved_at TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (assignment, student, check_id)
);
CREATE TABLE IF NOT EXISTS review_changes (
    id INTEGER PRIMARY KEY,
    assignment TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    author TEXT NOT NULL,
    at TEXT NOT NULL,
    old TEXT,
    new TEXT
);
CREATE INDEX IF NOT EXISTS review_changes_key ON review_changes (assignment, kind, key);
"""


class Conflict(Exception):
    """A save that named a version no longer stored: ``current`` is what is stored now (None: it was removed)."""

    def __init__(self, current: Any) -> None:
        super().__init__("saved by someone else in between")
        self.current = current


class ReviewError(ValueError):
    """A save that cannot be stored as asked (points out of range, an unknown rubric item): the message says why."""


@dataclass(frozen=True)
class RubricEntry:
    id: int
    question: str
    origin: str  # FROM_CHECKS or "page"
    title: str
    points: float
    comment: str
    position: int
    version: int
    deleted: bool = False


@dataclass(frozen=True)
class Mark:
    student: str
    question: str
    items: tuple[int, ...]  # rubric item ids applied
    adjustment: float
    comment: str
    answer_sha256: str
    author: str
    saved_at: str
    version: int


@dataclass(frozen=True)
class Override:
    student: str
    check_id: str
    points: float | None  # None: the override was removed (the check's own points count again)
    reason: str
    author: str
    saved_at: str
    version: int


@dataclass(frozen=True)
class Change:
    kind: str  # "rubric", "mark", "override"
    key: str
    author: str
    at: str
    old: dict[str, Any] | None
    new: dict[str, Any] | None


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def mark_points(mark: Mark, rubric: dict[int, RubricEntry], maximum: float) -> float:
    """The items' points plus the adjustment, kept within 0 and the question's maximum."""
    total = sum(rubric[i].points for i in mark.items if i in rubric and not rubric[i].deleted) + mark.adjustment
    return round(min(max(total, 0.0), maximum), 6)


def mark_comment(mark: Mark, rubric: dict[int, RubricEntry]) -> str:
    """What the student reads: each applied item's title and comment, then the free comment."""
    lines = []
    for item_id in mark.items:
        item = rubric.get(item_id)
        if item is None or item.deleted:
            continue
        lines.append(f"{item.title}: {item.comment}" if item.comment else item.title)
    if mark.comment.strip():
        lines.append(mark.comment.strip())
    return "\n".join(lines)


class MarkingStore:
    """One connection to the gradebook's review tables; safe to use from one thread at a time (the app opens one
    per request)."""

    def __init__(self, path: Path, assignment: str, *, busy_timeout_s: float = BUSY_TIMEOUT_S) -> None:
        """``busy_timeout_s``: how long a write waits for another's lock before SQLite says "database is locked"."""
        self.path = path
        self.assignment = assignment
        with storing(path):
            self.connection = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None,
                                              check_same_thread=False)
        try:
            with storing(path):
                self.connection.execute("PRAGMA journal_mode = WAL")
                present = self.connection.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = "
                                                  "'review_changes_key'").fetchone()[0]
                if not present:  # the last statement of SCHEMA: made once, in one transaction
                    with self._transaction() as db:
                        for statement in SCHEMA.split(";"):
                            if statement.strip():
                                db.execute(statement)
        except BaseException as exc:
            self.connection.close()
            if is_damage(exc):
                raise damaged(path, exc) from exc
            raise

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> MarkingStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return write_transaction(self.connection, self.path)

    def _select(self, db: sqlite3.Connection, columns: str, table: str, order: str = "", **equal: Any) -> list[tuple]:
        """Rows of this assignment in ``table`` whose columns equal the values given (None: any value)."""
        where = "".join(f" AND {column} = ?" for column, value in equal.items() if value is not None)
        query = f"SELECT {columns} FROM {table} WHERE assignment = ?{where}" + (f" ORDER BY {order}" if order else "")
        return db.execute(query, [self.assignment, *(v for v in equal.values() if v is not None)]).fetchall()

    def _log(self, db: sqlite3.Connection, kind: str, key: str, author: str, old: Any, new: Any) -> None:
        db.execute("INSERT INTO review_changes (assignment, kind, key, author, at, old, new) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (self.assignment, kind, key, author, now(), json.dumps(asdict(old)) if old else None,
                    json.dumps(asdict(new)) if new else None))

    # ----- rubric ---------------------------------------------------------------------------------------------
    def add_checks_rubric(self, written: Sequence[WrittenQuestion]) -> None:
        """The rubric items checks.py gives each written question, for a question that has none from there yet
        (once added they are the page's to edit: checks.py does not overwrite an edit)."""
        with self._transaction() as db:
            for question in written:
                if not question.rubric:
                    continue
                (present,) = db.execute("SELECT COUNT(*) FROM review_rubric WHERE assignment = ? AND question = ? "
                                        "AND origin = ?", (self.assignment, question.id, FROM_CHECKS)).fetchone()
                if present:
                    continue
                for position, item in enumerate(question.rubric):
                    db.execute("INSERT INTO review_rubric (assignment, question, origin, title, points, comment, "
                               "position, version) VALUES (?, ?, ?, ?, ?, ?, ?, 1)",
                               (self.assignment, question.id, FROM_CHECKS, item.title, item.points, item.comment,
                                position))

    def rubric(self, question: str | None = None, *, deleted: bool = False) -> dict[int, RubricEntry]:
        """The rubric items (of one question, or all), by id, in their order."""
        rows = self._select(self.connection, RUBRIC, "review_rubric", "question, position, id", question=question,
                            deleted=None if deleted else 0)
        return {row[0]: RubricEntry(*row[:8], deleted=bool(row[8])) for row in rows}

    def save_rubric_item(self, question: WrittenQuestion, *, item_id: int | None, title: str, points: float,
                         comment: str, base_version: int, author: str, deleted: bool = False) -> RubricEntry:
        """Add an item (``item_id`` None) or change one (its title, points, comment, or delete it)."""
        title = title.strip()
        if not title:
            raise ReviewError("a rubric item needs a title")
        if not abs(points) <= question.points:
            raise ReviewError(f"an item's points must be within ±{question.points:g}, {question.id}'s maximum")
        with self._transaction() as db:
            old = None
            if item_id is None:
                (position,) = db.execute("SELECT COALESCE(MAX(position) + 1, 0) FROM review_rubric WHERE "
                                         "assignment = ? AND question = ?", (self.assignment, question.id)).fetchone()
                if base_version != 0:
                    raise Conflict(None)
                item_id = db.execute("INSERT INTO review_rubric (assignment, question, origin, title, points, "
                                     "comment, position, version) VALUES (?, ?, 'page', ?, ?, ?, ?, 1) RETURNING id",
                                     (self.assignment, question.id, title, points, comment, position)).fetchone()[0]
            else:
                old = self._item(db, item_id)
                if old is None or old.question != question.id:
                    raise ReviewError(f"no rubric item {item_id} in {question.id}")
                if old.version != base_version:
                    raise Conflict(old)
                db.execute("UPDATE review_rubric SET title = ?, points = ?, comment = ?, deleted = ?, "
                           "version = version + 1 WHERE id = ?", (title, points, comment, int(deleted), item_id))
            new = self._item(db, item_id)
            self._log(db, "rubric", str(item_id), author, old, new)
        assert new is not None
        return new

    def _item(self, db: sqlite3.Connection, item_id: int) -> RubricEntry | None:
        rows = self._select(db, RUBRIC, "review_rubric", id=item_id)
        return RubricEntry(*rows[0][:8], deleted=bool(rows[0][8])) if rows else None

    # ----- marks ----------------------------------------------------------------------------------------------
    def marks(self, question: str | None = None) -> dict[tuple[str, str], Mark]:
        """Every mark (of one question, or all), by (student, question)."""
        return {(row[0], row[1]): _mark(row) for row in self._select(self.connection, MARK, "review_marks",
                                                                     question=question)}

    def mark(self, student: str, question: str) -> Mark | None:
        return self._mark(self.connection, student, question)

    def _mark(self, db: sqlite3.Connection, student: str, question: str) -> Mark | None:
        rows = self._select(db, MARK, "review_marks", student=student, question=question)
        return _mark(rows[0]) if rows else None

    def save_mark(self, question: WrittenQuestion, student: str, *, items: Sequence[int], adjustment: float,
                  comment: str, answer_sha256: str, base_version: int, author: str) -> Mark:
        if not abs(adjustment) <= question.points:
            raise ReviewError(f"the adjustment must be within ±{question.points:g}, {question.id}'s maximum")
        with self._transaction() as db:
            known = {row[0] for row in db.execute("SELECT id FROM review_rubric WHERE assignment = ? AND question = ? "
                                                  "AND deleted = 0", (self.assignment, question.id))}
            unknown = sorted(set(items) - known)
            if unknown:
                raise ReviewError(f"no rubric item {unknown[0]} in {question.id}")
            old = self._mark(db, student, question.id)
            if (old.version if old else 0) != base_version:
                raise Conflict(old)
            new = Mark(student, question.id, tuple(sorted(set(items))), float(adjustment), comment, answer_sha256,
                       author, now(), base_version + 1)
            db.execute("INSERT OR REPLACE INTO review_marks (assignment, student, question, items, adjustment, "
                       "comment, answer_sha256, author, saved_at, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (self.assignment, student, question.id, json.dumps(new.items), new.adjustment, new.comment,
                        new.answer_sha256, new.author, new.saved_at, new.version))
            self._log(db, "mark", f"{student}/{question.id}", author, old, new)
        return new

    # ----- overrides ------------------------------------------------------------------------------------------
    def overrides(self, student: str | None = None) -> dict[tuple[str, str], Override]:
        """Every override in force (points set), by (student, check id)."""
        return {(row[0], row[1]): Override(*row) for row in self._select(
            self.connection, OVERRIDE, "review_overrides", student=student) if row[2] is not None}

    def override(self, student: str, check_id: str) -> Override | None:
        rows = self._select(self.connection, OVERRIDE, "review_overrides", student=student, check_id=check_id)
        return Override(*rows[0]) if rows else None

    def save_override(self, student: str, check_id: str, *, points: float | None, maximum: float, reason: str,
                      base_version: int, author: str) -> Override:
        """Set a check's points for a student, with the reason (``points`` None: remove the override)."""
        if points is not None and not 0 <= points <= maximum:
            raise ReviewError(f"points must be within 0 and {maximum:g}, the check's maximum")
        if points is not None and not reason.strip():
            raise ReviewError("say why: the reason is shown to the student with the new points")
        with self._transaction() as db:
            old = self.override(student, check_id)
            if (old.version if old else 0) != base_version:
                raise Conflict(old)
            new = Override(student, check_id, points, reason.strip(), author, now(), base_version + 1)
            db.execute("INSERT OR REPLACE INTO review_overrides (assignment, student, check_id, points, reason, "
                       "author, saved_at, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (self.assignment, student, check_id, points, new.reason, author, new.saved_at, new.version))
            self._log(db, "override", f"{student}/{check_id}", author, old, new)
        return new

    # ----- history --------------------------------------------------------------------------------------------
    def changes(self, kind: str | None = None, key: str | None = None) -> list[Change]:
        """Every change kept, oldest first (of one kind and key, when given)."""
        return [Change(k, key_, author, at, json.loads(old) if old else None, json.loads(new) if new else None)
                for k, key_, author, at, old, new in self._select(self.connection, "kind, key, author, at, old, new",
                                                                  "review_changes", "id", kind=kind, key=key)]


def _mark(row: tuple) -> Mark:
    return Mark(row[0], row[1], tuple(json.loads(row[2])), *row[3:])


def is_busy(exc: BaseException) -> bool:
    """Whether SQLite gave up waiting for another connection's lock ("database is locked")."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return isinstance(exc, sqlite3.OperationalError) and name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
