"""What ``grader serve`` keeps, in one SQLite file beside the gradebook (``DATA/serve.sqlite``): the launches, every
upload with its place in the queue and its result, the scores to send to the platform with what it answered, and
the OIDC state and nonces of logins under way (pylti1p3's launch data, kept here rather than in a cookie).

Each change is one transaction (the gradebook's ``write_transaction``), so a crash or a restart loses nothing
committed: an upload being graded when the tool stopped is queued again at the next start, and a score not yet
accepted by the platform is sent again.

A platform's user id (``sub``) is unique within its issuer only, and a user is in several courses: everything about a
student is kept under (issuer, context, sub), and the name a student's results go by in the gradebook (the review
app's marks, manual.csv) is drawn once per (issuer, context, sub) in ``students``: the user id itself for the first
to use it, the id with its platform and course for another (``student_of``)."""

from __future__ import annotations

import itertools
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grader.errors import ConfigurationError
from grader.record.gradebook import BUSY_TIMEOUT_S, check_readable, damaged, is_damage, write_transaction

SCHEMA_VERSION = 2  # 2: students (the gradebook's names), filled from the uploads of 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS lti_values (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    expires REAL
);
CREATE TABLE IF NOT EXISTS used_nonces (
    nonce TEXT PRIMARY KEY,
    used REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS launches (
    id TEXT PRIMARY KEY,
    issuer TEXT NOT NULL,
    client_id TEXT NOT NULL,
    deployment_id TEXT NOT NULL,
    context TEXT NOT NULL,
    sub TEXT NOT NULL,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    assignment TEXT NOT NULL,
    ags TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS uploads (
    id INTEGER PRIMARY KEY,
    launch TEXT NOT NULL REFERENCES launches(id),
    issuer TEXT NOT NULL,
    context TEXT NOT NULL,
    sub TEXT NOT NULL,
    assignment TEXT NOT NULL,
    file TEXT NOT NULL,
    kind TEXT NOT NULL,
    size INTEGER NOT NULL,
    uploaded_name TEXT NOT NULL,
    submitted_at TEXT NOT NULL,
    status TEXT NOT NULL,
    status_reason TEXT NOT NULL DEFAULT '',
    score REAL,
    max_score REAL,
    graded_at TEXT,
    result_json TEXT
);
CREATE INDEX IF NOT EXISTS uploads_queue ON uploads (status, id);
CREATE INDEX IF NOT EXISTS uploads_owner ON uploads (issuer, context, sub, assignment);
CREATE TABLE IF NOT EXISTS scores (
    id INTEGER PRIMARY KEY,
    upload INTEGER NOT NULL REFERENCES uploads(id),
    issuer TEXT NOT NULL,
    client_id TEXT NOT NULL,
    ags TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_try REAL NOT NULL,
    last_tried TEXT,
    http_status INTEGER,
    answer TEXT NOT NULL DEFAULT '',
    accepted_at TEXT
);
CREATE TABLE IF NOT EXISTS students (
    issuer TEXT NOT NULL,
    context TEXT NOT NULL,
    sub TEXT NOT NULL,
    student TEXT NOT NULL UNIQUE,
    PRIMARY KEY (issuer, context, sub)
);
CREATE INDEX IF NOT EXISTS scores_due ON scores (status, next_try);
CREATE INDEX IF NOT EXISTS scores_upload ON scores (upload, id);
"""

QUEUED, GRADING, GRADED, FAILED = "queued", "grading", "graded", "failed"
NONCES_KEPT_S = 7 * 86400
PENDING, ACCEPTED, SUPERSEDED = "pending", "accepted", "superseded"


def _name_student(db: sqlite3.Connection, issuer: str, context: str, sub: str) -> str:
    """The gradebook's name for the platform's user ``sub`` in course ``context``, drawn at first: ``sub`` itself
    where no other (issuer, course) has it (a deployment with one platform and one course keeps the platform's ids),
    else ``sub`` with its platform and course."""
    row = db.execute("SELECT student FROM students WHERE issuer = ? AND context = ? AND sub = ?",
                     (issuer, context, sub)).fetchone()
    if row is not None:
        return row[0]
    qualified = f"{sub} ({issuer.split('://', 1)[-1].rstrip('/')}, course {context})"
    for number in itertools.count(1):
        name = sub if number == 1 else qualified if number == 2 else f"{qualified} #{number - 1}"
        if db.execute("INSERT OR IGNORE INTO students (issuer, context, sub, student) VALUES (?, ?, ?, ?)",
                      (issuer, context, sub, name)).rowcount:
            return name
    raise AssertionError("unreachable")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Launch:
    id: str
    issuer: str
    client_id: str
    deployment_id: str
    context: str
    sub: str
    name: str
    role: str  # "learner" or "instructor"
    assignment: str
    ags: dict[str, Any]


@dataclass(frozen=True)
class Upload:
    id: int
    launch: str
    issuer: str
    context: str
    sub: str
    assignment: str
    file: str
    kind: str
    size: int
    uploaded_name: str
    submitted_at: str
    status: str
    status_reason: str
    score: float | None
    max_score: float | None
    graded_at: str | None
    result_json: str | None


@dataclass(frozen=True)
class Score:
    id: int
    upload: int
    issuer: str
    client_id: str
    ags: dict[str, Any]
    payload: dict[str, Any]
    status: str
    attempts: int
    next_try: float
    last_tried: str | None
    http_status: int | None
    answer: str
    accepted_at: str | None


class KeyedLocks:
    """A lock per key, held only while someone holds it (the table never outgrows the threads waiting)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Any, list[Any]] = {}  # key -> [its lock, how many hold or wait for it]

    def holders(self, key: Any) -> int:
        """How many hold ``key`` or wait for it."""
        with self._lock:
            return self._held[key][1] if key in self._held else 0

    @contextmanager
    def hold(self, key: Any) -> Iterator[None]:
        with self._lock:
            entry = self._held.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._lock:
                entry[1] -= 1
                if not entry[1]:
                    del self._held[key]


class ServeStore:
    """The serve database; every method may be called from any thread (one connection, one lock)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._outbox = KeyedLocks()
        self.connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                          check_same_thread=False)
        try:
            self.connection.execute("PRAGMA journal_mode = WAL")
            self.connection.execute("PRAGMA foreign_keys = ON")
            check_readable(self.connection, path)
            with self.transaction() as db:
                (version,) = db.execute("PRAGMA user_version").fetchone()
                if version > SCHEMA_VERSION:
                    raise ConfigurationError(f"{path} has schema version {version}, newer than this grader's")
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                if version < 2:  # a database of schema 1: its students named in the order they first uploaded
                    for issuer, context, sub in db.execute(
                            "SELECT issuer, context, sub FROM uploads GROUP BY issuer, context, sub ORDER BY MIN(id)"
                    ).fetchall():
                        _name_student(db, issuer, context, sub)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException as exc:
            self.connection.close()
            if is_damage(exc):
                raise damaged(path, exc) from exc
            raise

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, write_transaction(self.connection, self.path) as db:
            yield db

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self.connection.execute(sql, args).fetchall()

    def close(self) -> None:
        with self._lock:
            self.connection.close()

    # pylti1p3's launch data: the OIDC state and nonce between login and launch (lti.py)
    def put_value(self, key: str, value: Any, lifetime_s: float | None) -> None:
        expires = time.time() + lifetime_s if lifetime_s else None
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO lti_values (key, value, expires) VALUES (?, ?, ?)",
                       (key, json.dumps(value), expires))
            db.execute("DELETE FROM lti_values WHERE expires IS NOT NULL AND expires < ?", (time.time(),))

    def get_value(self, key: str) -> Any:
        rows = self._read("SELECT value FROM lti_values WHERE key = ? AND (expires IS NULL OR expires >= ?)",
                          (key, time.time()))
        return json.loads(rows[0][0]) if rows else None

    def use_nonce(self, nonce: str) -> bool:
        """True the first time ``nonce`` is used, False ever after: a launch's id_token is taken once. A nonce is
        forgotten after NONCES_KEPT_S, once pylti1p3 has long forgotten issuing it (a day), so that it is refused
        as unknown by then."""
        with self.transaction() as db:
            db.execute("DELETE FROM used_nonces WHERE used < ?", (time.time() - NONCES_KEPT_S,))
            done = db.execute("INSERT OR IGNORE INTO used_nonces (nonce, used) VALUES (?, ?)", (nonce, time.time()))
            return done.rowcount == 1

    # launches
    def add_launch(self, launch: Launch) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO launches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (launch.id, launch.issuer, launch.client_id, launch.deployment_id, launch.context, launch.sub,
                        launch.name, launch.role, launch.assignment, json.dumps(launch.ags), now_iso()))

    def launch(self, launch_id: str) -> Launch | None:
        rows = self._read("SELECT id, issuer, client_id, deployment_id, context, sub, name, role, assignment, ags "
                          "FROM launches WHERE id = ?", (launch_id,))
        if not rows:
            return None
        *fields, ags = rows[0]
        return Launch(*fields, ags=json.loads(ags))

    # uploads: the queue
    def add_upload(self, launch: Launch, *, kind: str, size: int, uploaded_name: str, file_for: Any) -> Upload:
        """A new upload, queued; ``file_for(id)`` stores its bytes under the grader's own name and returns that name
        (relative to the data folder), inside the transaction: the row exists only with its file."""
        with self.transaction() as db:
            (upload_id,) = db.execute(
                """INSERT INTO uploads (launch, issuer, context, sub, assignment, file, kind, size, uploaded_name,
                                        submitted_at, status) VALUES (?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?) RETURNING id""",
                (launch.id, launch.issuer, launch.context, launch.sub, launch.assignment, kind, size, uploaded_name,
                 now_iso(), QUEUED)).fetchone()
            db.execute("UPDATE uploads SET file = ? WHERE id = ?", (file_for(upload_id), upload_id))
            _name_student(db, launch.issuer, launch.context, launch.sub)
        found = self.upload(upload_id)
        assert found is not None
        return found

    def student_of(self, issuer: str, context: str, sub: str) -> str:
        """The name the user's results go by in the gradebook (drawn at their first upload)."""
        with self.transaction() as db:
            return _name_student(db, issuer, context, sub)

    def upload(self, upload_id: int) -> Upload | None:
        rows = self._read("SELECT * FROM uploads WHERE id = ?", (upload_id,))
        return Upload(*rows[0]) if rows else None

    def uploads_of(self, issuer: str, context: str, sub: str, assignment: str) -> list[Upload]:
        return [Upload(*row) for row in self._read(
            "SELECT * FROM uploads WHERE issuer = ? AND context = ? AND sub = ? AND assignment = ? ORDER BY id DESC",
            (issuer, context, sub, assignment))]

    def uploads_for(self, issuer: str, context: str, assignment: str) -> list[Upload]:
        return [Upload(*row) for row in self._read(
            "SELECT * FROM uploads WHERE issuer = ? AND context = ? AND assignment = ? ORDER BY id",
            (issuer, context, assignment))]

    def counts_of(self, launch: Launch, since: str) -> tuple[int, int, int]:
        """For the launch's student and assignment: uploads waiting (queued or being graded), uploads since
        ``since`` (ISO time), and attempts (every upload but those the grader failed on)."""
        (waiting, recent, attempts), = self._read(
            """SELECT COALESCE(SUM(status IN (?, ?)), 0), COALESCE(SUM(submitted_at >= ?), 0),
                      COALESCE(SUM(status != ?), 0)
               FROM uploads WHERE issuer = ? AND context = ? AND sub = ? AND assignment = ?""",
            (QUEUED, GRADING, since, FAILED, launch.issuer, launch.context, launch.sub, launch.assignment))
        return waiting, recent, attempts

    def queue_position(self, upload: Upload) -> int:
        """How many uploads are graded before this one (0: being graded or next)."""
        (ahead,) = self._read("SELECT COUNT(*) FROM uploads WHERE status IN (?, ?) AND id < ?",
                              (QUEUED, GRADING, upload.id))[0]
        return ahead

    def regrade(self, issuer: str, context: str, assignment: str) -> int:
        """Each student's latest upload of the course's assignment queued again (the instructor's regrade, after the
        checks changed); how many. One being graded or queued already is left as it is."""
        with self.transaction() as db:
            return db.execute(
                """UPDATE uploads SET status = ? WHERE status IN (?, ?) AND id IN (
                       SELECT MAX(id) FROM uploads WHERE issuer = ? AND context = ? AND assignment = ? GROUP BY sub)""",
                (QUEUED, GRADED, FAILED, issuer, context, assignment)).rowcount

    def requeue_interrupted(self) -> int:
        """Uploads left being graded by a stop: queued again (at the next start)."""
        with self.transaction() as db:
            return db.execute("UPDATE uploads SET status = ? WHERE status = ?", (QUEUED, GRADING)).rowcount

    def take_next(self) -> Upload | None:
        """The oldest queued upload whose student has none being graded (a student's uploads in order), marked as
        being graded; None when there is none."""
        with self.transaction() as db:
            row = db.execute(
                """SELECT id FROM uploads AS u WHERE status = ? AND NOT EXISTS (
                       SELECT 1 FROM uploads AS v WHERE v.issuer = u.issuer AND v.context = u.context
                       AND v.sub = u.sub AND v.assignment = u.assignment AND v.id < u.id AND v.status IN (?, ?))
                   ORDER BY id LIMIT 1""", (QUEUED, QUEUED, GRADING)).fetchone()
            if row is None:
                return None
            db.execute("UPDATE uploads SET status = ? WHERE id = ?", (GRADING, row[0]))
        return self.upload(row[0])

    def finish(self, upload: Upload, *, status: str, reason: str, score: float | None, max_score: float | None,
               result_json: str | None, score_to_send: tuple[Launch, dict[str, Any]] | None,
               send_from: float | None = None) -> None:
        """An upload graded: its result, and the score to send (if any) queued in the same transaction, to be sent
        from ``send_from`` (a Unix time: the deadline, where the hidden checks count after it) or at once."""
        with self._student_outbox(upload, score_to_send), self.transaction() as db:
            db.execute("UPDATE uploads SET status = ?, status_reason = ?, score = ?, max_score = ?, graded_at = ?, "
                       "result_json = ? WHERE id = ?",
                       (status, reason, score, max_score, now_iso(), result_json, upload.id))
            if score_to_send is not None:
                self._queue_score(db, upload, *score_to_send, send_from=send_from)

    def latest_graded(self, issuer: str, context: str, assignment: str) -> list[Upload]:
        """Each student's latest upload of the course's assignment, where it is graded."""
        return [Upload(*row) for row in self._read(
            """SELECT * FROM uploads WHERE id IN (
                   SELECT MAX(id) FROM uploads WHERE issuer = ? AND context = ? AND assignment = ? GROUP BY sub)
               AND status = ? ORDER BY id""", (issuer, context, assignment, GRADED))]

    # the instructor's pages (instructor.py): the class dashboard and the review pages of one course's assignment
    def latest_results(self, issuer: str, context: str, assignment: str) -> list[Upload]:
        """Each student's latest upload of the course's assignment that has a result (graded, or failed by the
        grader): one being graded again keeps its last result meanwhile."""
        return [Upload(*row) for row in self._read(
            """SELECT * FROM uploads WHERE id IN (
                   SELECT MAX(id) FROM uploads WHERE issuer = ? AND context = ? AND assignment = ?
                   AND result_json IS NOT NULL GROUP BY sub) ORDER BY sub""", (issuer, context, assignment))]

    def students_with_results(self, issuer: str, context: str, assignment: str) -> set[str]:
        """The students of the course's assignment whose upload has a result, by the name their result goes by in
        the gradebook (what the review app's marks are kept under), read from their latest result."""
        return {student for (student,) in self._read(
            """SELECT json_extract(result_json, '$.student') FROM uploads WHERE id IN (
                   SELECT MAX(id) FROM uploads WHERE issuer = ? AND context = ? AND assignment = ?
                   AND result_json IS NOT NULL GROUP BY sub)""", (issuer, context, assignment)) if student}

    def adjusted(self, upload: Upload, *, score: float, max_score: float, result_json: str,
                 score_to_send: tuple[Launch, dict[str, Any]] | None, send_from: float | None = None) -> None:
        """An upload's result with the instructor's marks put on it, and its new score queued (if it changed)."""
        with self._student_outbox(upload, score_to_send), self.transaction() as db:
            db.execute("UPDATE uploads SET score = ?, max_score = ?, result_json = ? WHERE id = ?",
                       (score, max_score, result_json, upload.id))
            if score_to_send is not None:
                self._queue_score(db, upload, *score_to_send, send_from=send_from)

    def _queue_score(self, db: sqlite3.Connection, upload: Upload, launch: Launch, payload: dict[str, Any], *,
                     send_from: float | None) -> None:
        # A score of this student's not yet accepted (an older upload's, or this one's before a regrade) would only
        # put a stale grade over this one: superseded. Every score sent stays, with its answer.
        db.execute("""UPDATE scores SET status = ? WHERE status = ? AND upload IN (
                          SELECT id FROM uploads WHERE issuer = ? AND context = ? AND sub = ? AND assignment = ?
                          AND id <= ?)""",
                   (SUPERSEDED, PENDING, upload.issuer, upload.context, upload.sub, upload.assignment, upload.id))
        db.execute("INSERT INTO scores (upload, issuer, client_id, ags, payload, status, next_try) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (upload.id, launch.issuer, launch.client_id, json.dumps(launch.ags), json.dumps(payload),
                    PENDING, max(send_from or 0.0, time.time())))

    # scores: the outbox to the platform
    @contextmanager
    def _student_outbox(self, upload: Upload, score_to_send: object) -> Iterator[None]:
        """Queueing a score supersedes the student's unsent ones: never while one of them is on its way
        (``sending``), or a stale score could reach the platform after the superseding one was queued."""
        if score_to_send is None:
            yield
            return
        with self._outbox.hold((upload.issuer, upload.sub, upload.assignment)):
            yield

    def outbox_holders(self, issuer: str, sub: str, assignment: str) -> int:
        """How many threads hold the student's outbox or wait for it (a score being sent, one being queued)."""
        return self._outbox.holders((issuer, sub, assignment))

    @contextmanager
    def sending(self, score: Score) -> Iterator[bool]:
        """Hold the student's outbox while ``score`` is sent; True while it is still to be sent (not superseded by a
        later score of theirs, nor accepted, since it was read)."""
        with self._outbox.hold((score.issuer, score.payload["userId"], score.payload["assignment"])):
            rows = self._read("SELECT status FROM scores WHERE id = ?", (score.id,))
            yield bool(rows) and rows[0][0] == PENDING

    def retry_now(self) -> int:
        """Every score not yet accepted and already tried, due at once (a start: the platform may have been back for
        long); a score held for a deadline stays held."""
        with self.transaction() as db:
            return db.execute("UPDATE scores SET next_try = ? WHERE status = ? AND attempts > 0",
                              (time.time(), PENDING)).rowcount

    def retime_unsent(self, assignment: str, send_from: float | None) -> int:
        """Each score of ``assignment`` not yet tried due at ``send_from`` (None: now), as the policy at this start
        says: a deadline moved, a late window added, hidden checks now counting at once. How many changed."""
        when = max(send_from or 0.0, time.time())
        with self.transaction() as db:
            return db.execute("UPDATE scores SET next_try = ? WHERE status = ? AND attempts = 0 "
                              "AND ABS(next_try - ?) > 1 AND upload IN (SELECT id FROM uploads WHERE assignment = ?)",
                              (when, PENDING, when, assignment)).rowcount

    def due_scores(self, limit: int = 20) -> list[Score]:
        return [self._score(row) for row in self._read(
            "SELECT * FROM scores WHERE status = ? AND next_try <= ? ORDER BY next_try, id LIMIT ?",
            (PENDING, time.time(), limit))]

    def next_score_due(self) -> float | None:
        (when,) = self._read("SELECT MIN(next_try) FROM scores WHERE status = ?", (PENDING,))[0]
        return when

    def scores_of(self, upload_id: int) -> Score | None:
        """The upload's latest score (a regrade sends another)."""
        rows = self._read("SELECT * FROM scores WHERE upload = ? ORDER BY id DESC LIMIT 1", (upload_id,))
        return self._score(rows[0]) if rows else None

    def all_scores(self) -> list[Score]:
        return [self._score(row) for row in self._read("SELECT * FROM scores ORDER BY id")]

    @staticmethod
    def _score(row: tuple[Any, ...]) -> Score:
        (id_, upload, issuer, client_id, ags, payload, status, attempts, next_try, last_tried, http_status, answer,
         accepted_at) = row
        return Score(id_, upload, issuer, client_id, json.loads(ags), json.loads(payload), status, attempts,
                     next_try, last_tried, http_status, answer, accepted_at)

    def score_tried(self, score: Score, *, accepted: bool, http_status: int | None, answer: str,
                    retry_in_s: float) -> None:
        with self.transaction() as db:
            db.execute("UPDATE scores SET status = ?, attempts = attempts + 1, last_tried = ?, http_status = ?, "
                       "answer = ?, next_try = ?, accepted_at = ? WHERE id = ?",
                       (ACCEPTED if accepted else PENDING, now_iso(), http_status, answer[:2000],
                        time.time() + retry_in_s, now_iso() if accepted else None, score.id))
