"""`grader review OUT`: the class's written answers marked in the browser, one question at a time, and any check's
points overridden with a reason (a regrade request). A Flask app over the gradebook (grader/adjust/marking_store.py).

Safe by default: every request must carry the token printed in the URL, once (it is then kept in a cookie that
never leaves this site: HttpOnly, SameSite=Strict, named for this app and sent only under its own path, see
server.py); a request for another host name is refused (a web page cannot reach the app through a name it controls);
every change is a JSON POST that carries the page's own CSRF token in a header, which no other site's page can send;
pages forbid every script, style and load but the app's own (Content-Security-Policy). Student text is escaped by the
templates, and answers are markdown cleaned as on the instructor's page; no student code runs.

Every request is answered with what it asked or a short reason: a malformed body or field is a 400 (fields.py), a
gradebook another program holds locked a 503 after about a second (``REVIEW_BUSY_TIMEOUT_S``), never a traceback.
The class may be graded again while the app is open: each request compares the gradebook's grading of the class
with the one the app read (a few short columns), and reads the answers again when it changed; a mark is saved only
for the answer its page showed.

Embedded (``embedded_app``): the same pages under another app's path, which decides who comes in before a request
reaches them (`grader serve` mounts them under an instructor's launch of one course). There is then no token, no
cookie of the app's own and no Host check; the CSRF header stays; the pages may be framed by the sites the
embedding app names, and the class is the students ``students()`` names (one course's), each request. The embedding
app says who marks (``REMOTE_USER``, as WSGI servers put an authenticated user): every change is kept under that
name, whatever the page sends.
"""

from __future__ import annotations

import hmac
import json
import secrets
import sqlite3
import threading
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from flask import Flask, Response, abort, g, redirect, render_template, request, url_for
from markupsafe import Markup
from werkzeug.exceptions import HTTPException

from grader.adjust.manual import answer_hash
from grader.adjust.marking_store import Conflict, Mark, MarkingStore, ReviewError, is_busy, mark_points
from grader.check.spec import Assignment, WrittenQuestion
from grader.containment import containment_of
from grader.points import shown
from grader.record.gradebook import Gradebook, stored_result
from grader.record.output import ACCOUNTING, GRADEBOOK
from grader.record.result_json import ResultFormatError, result_from_json
from grader.report.heatmap import heatmap_svg, value_range
from grader.results import SubmissionResult, status_label
from grader.review import fields
from grader.review.answers import answer_view
from grader.review.fields import Malformed

COOKIE = "grader_review"
OUTSIDE = "grader.review.outside"  # set by the server on a request for a path outside the app's own
# How long a save waits for a write lock another program holds (`grader grade` writes a student in milliseconds):
# then the marker is told the gradebook is busy, rather than left waiting.
REVIEW_BUSY_TIMEOUT_S = 1.0
BUSY = ("the gradebook is busy: another program (`grader grade`, a script) is writing to it; nothing was saved, try "
        "again in a moment")
ANSWER_CHANGED = ("the answer changed since this page was drawn (the class was graded again): reload the page to "
                  "read it; your mark was not saved")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors {frames}; base-uri 'none'")


@dataclass(frozen=True)
class Settings:
    out_dir: Path
    assignment: Assignment
    token: str | None  # None: embedded, no token (embedded_app)
    hosts: frozenset[str] | None  # the Host headers accepted ("127.0.0.1:8123", "localhost:8123"); None: any
    prefix: str = ""  # the path the app is served under ("/r/<random>", server.py): its cookie's path
    cookie: str = COOKIE  # the token cookie's name (server.py: named after the port)
    busy_timeout_s: float = REVIEW_BUSY_TIMEOUT_S
    frame_ancestors: str = "'none'"  # who may frame the pages (the CSP's frame-ancestors)
    students: Callable[[], Collection[str]] | None = None  # the students of the class; None: the gradebook's all
    parent: str = ""  # embedded: the label of a link to the page the app is mounted under ("" for none)


def _submissions(out_dir: Path) -> Path | None:
    """The folder the run graded (accounting.json), where a notebook's cells and figures are read again."""
    try:
        folder = json.loads((out_dir / ACCOUNTING).read_text(encoding="utf-8")).get("submissions")
    except (OSError, ValueError, AttributeError):
        return None
    return Path(folder) if isinstance(folder, str) and Path(folder).is_dir() else None


def _grading(db: sqlite3.Connection, assignment: str, only: Collection[str] | None = None,
             ) -> dict[str, tuple[str, str, str]]:
    """What says whether a student was graded again: their file's hash, the grading and its time, by student (short
    columns, read in well under a millisecond for a large class); ``only``: of these students alone."""
    return {student: (sha256, fingerprint, graded_at) for student, sha256, fingerprint, graded_at in db.execute(
        "SELECT student, sha256, fingerprint, graded_at FROM submissions WHERE assignment = ?", (assignment,))
        if only is None or student in only}


def _stored(db: sqlite3.Connection, assignment: str, students: list[str],
            ) -> dict[str, tuple[dict[str, str], dict[str, str]]]:
    """What the app keeps of these students' stored results (one that no longer reads has nothing): the hashes of
    their answers, and the environment they were graded in (what contained their code)."""
    kept = {}
    for student in students:
        row = db.execute("SELECT result_json FROM submissions WHERE assignment = ? AND student = ?",
                         (assignment, student)).fetchone()
        try:
            result = result_from_json(row[0]) if row is not None and row[0] is not None else None
        except (ResultFormatError, TypeError, ValueError):
            result = None
        kept[student] = ({a.id: answer_hash(a.text) for a in result.answers}, dict(result.environment)) \
            if result is not None else ({}, {})
    return kept


class Class:
    """The class as graded: its students in a fixed order (by id; a student graded later is added at the end, so a
    page's index keeps its student), the hashes of their answers, and their stored results, read when asked."""

    def __init__(self, out_dir: Path, assignment: Assignment,
                 students: Callable[[], Collection[str]] | None = None) -> None:
        self.out_dir = out_dir
        self.assignment = assignment
        self.only = students
        with Gradebook(out_dir / GRADEBOOK) as book:
            self.graded = _grading(book.connection, assignment.name, self._only())
            stored = _stored(book.connection, assignment.name, sorted(self.graded))
        self.answer_hashes = {student: hashes for student, (hashes, _) in stored.items()}
        self.environments = {student: environment for student, (_, environment) in stored.items()}
        self.contained = containment_of(list(self.environments.values()))
        self.students = sorted(self.graded)
        self.index = {student: i for i, student in enumerate(self.students)}
        self.submissions = _submissions(out_dir)
        self._refreshing = threading.Lock()

    def _only(self) -> set[str] | None:
        return set(self.only()) if self.only is not None else None

    def refresh(self, db: sqlite3.Connection) -> None:
        """Read again the answers of the students graded since they were read (`grader grade` while the app is open:
        it records one student at a time, so each is read once)."""
        only = self._only()
        if _grading(db, self.assignment.name, only) == self.graded:
            return
        with self._refreshing:
            graded = _grading(db, self.assignment.name, only)
            again = sorted(s for s, grading in graded.items() if self.graded.get(s) != grading)
            if again:  # none: another request read them meanwhile
                stored = _stored(db, self.assignment.name, again)
                self.answer_hashes = {**self.answer_hashes, **{s: hashes for s, (hashes, _) in stored.items()}}
                self.environments = {**self.environments, **{s: env for s, (_, env) in stored.items()}}
            added = sorted(set(graded) - set(self.index))
            self.index = {**self.index, **{s: len(self.students) + i for i, s in enumerate(added)}}
            self.students = [*self.students, *added]
            self.graded = graded
            self.contained = containment_of(list(self.environments.values()))

    def answer(self, student: str, question: str) -> str:
        """The hash of the student's answer as graded last (of an empty one when they gave none)."""
        return self.answer_hashes.get(student, {}).get(question, answer_hash(""))

    def result(self, student: str) -> SubmissionResult | None:
        return stored_result(self.out_dir / GRADEBOOK, self.assignment.name, student)


def create_app(settings: Settings) -> Flask:
    app = Flask(__name__)
    app.config.update(MAX_CONTENT_LENGTH=1 << 20)
    app.jinja_env.globals["shown"] = shown
    started = secrets.token_hex(4)  # in the static files' addresses: a new run's browser fetches them afresh
    app.jinja_env.globals["asset"] = lambda name: url_for("static", filename=name, v=started)
    # Every page says where the class's code was not fully contained (grader/containment.py), as the dashboard does.
    app.context_processor(lambda: {"containment": roster.contained, "parent": settings.parent,
                                   "marker": request.remote_user if settings.token is None else None})
    csrf = secrets.token_urlsafe(32)
    roster = Class(settings.out_dir, settings.assignment, settings.students)
    csp = CSP.format(frames=settings.frame_ancestors)
    spec = settings.assignment
    written = {w.id: w for w in spec.written}
    store_path = settings.out_dir / GRADEBOOK
    with MarkingStore(store_path, spec.name) as store:
        store.add_checks_rubric(spec.written)

    def question_of(qid: str) -> WrittenQuestion:
        if qid not in written:
            abort(404)
        return written[qid]

    def student_at(index: int) -> str:
        if not 0 <= index < len(roster.students):
            abort(404)
        return roster.students[index]

    @app.before_request
    def guard() -> Response | None:
        if settings.hosts is not None and request.host not in settings.hosts:
            abort(400, "this app answers only at the address it printed")
        if request.environ.get(OUTSIDE):
            abort(404, "open the link `grader review` printed: this app answers only under its own address")
        if settings.token is not None:  # None: embedded, the embedding app let this request in
            given = request.args.get("token")
            if given is not None and _same(given, settings.token):
                # The token is kept in a cookie and taken out of the address (and so out of the history).
                query = urlencode([(k, v) for k, v in request.args.items(multi=True) if k != "token"])
                response = redirect(quote(request.script_root + request.path) + (f"?{query}" if query else ""))
                response.set_cookie(settings.cookie, settings.token, httponly=True, samesite="Strict",
                                    path=settings.prefix or "/")
                return response
            if not _same(request.cookies.get(settings.cookie, ""), settings.token):
                abort(403, "open the link `grader review` printed: it carries the token this app asks for")
        elif not request.remote_user:
            abort(403, "the page that leads here did not say who marks")
        if request.method == "POST":
            sent = request.headers.get("X-CSRF-Token", "")
            if not _same(sent, csrf) or not request.is_json:
                abort(403, "a change must come from this app's own pages")
        g.store = MarkingStore(store_path, spec.name, busy_timeout_s=settings.busy_timeout_s)
        roster.refresh(g.store.connection)
        return None

    @app.teardown_request
    def close_store(_exc: BaseException | None) -> None:
        store = g.pop("store", None)
        if store is not None:
            store.close()

    @app.after_request
    def headers(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = csp
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        # Marks change under the page: never kept. The script and styles are the package's own files: kept for the
        # run (their address carries the app's start), so moving to the next student fetches one page only.
        if request.endpoint == "static":
            response.headers["Cache-Control"] = "private, max-age=86400, immutable"
        else:
            response.headers["Cache-Control"] = "no-store"
        return response

    @app.errorhandler(HTTPException)
    def refused(error: HTTPException) -> Response:
        return _refusal(error.code or 500, error.description or error.name)

    @app.errorhandler(Malformed)
    def malformed(error: Malformed) -> Response:
        return _refusal(400, str(error))

    @app.errorhandler(sqlite3.OperationalError)
    def busy(error: sqlite3.OperationalError) -> Response:
        if not is_busy(error):
            raise error
        return _refusal(503, BUSY)

    def who(given: str) -> str:
        """Who saves: embedded, the user the embedding app let in; else the name the page sends."""
        return _author((request.remote_user or "") if settings.token is None else given)

    def marked_count(question: WrittenQuestion, marks: dict[tuple[str, str], Mark]) -> int:
        return sum(1 for s in roster.students if _counts(marks.get((s, question.id)),
                                                         roster.answer_hashes.get(s, {}).get(question.id)))

    @app.get("/")
    def overview() -> str:
        marks = g.store.marks()
        questions = [{"question": w, "marked": marked_count(w, marks), "points": shown(w.points)} for w in spec.written]
        overrides = sum(1 for student, _check in g.store.overrides() if student in roster.index)
        return render_template("overview.html", assignment=spec, questions=questions, students=len(roster.students),
                               overrides=overrides, csrf=csrf)

    @app.get("/mark/<qid>")
    def first_to_mark(qid: str) -> Response:
        question = question_of(qid)
        marks = g.store.marks(qid)
        for index, student in enumerate(roster.students):
            if not _counts(marks.get((student, qid)), roster.answer_hashes.get(student, {}).get(qid)):
                return redirect(url_for("mark_page", qid=question.id, index=index, **_anon()))
        return redirect(url_for("mark_page", qid=question.id, index=0, **_anon()))

    @app.get("/mark/<qid>/<int:index>")
    def mark_page(qid: str, index: int) -> str:
        question = question_of(qid)
        student = student_at(index)
        result = roster.result(student)
        if result is None:
            abort(404)
        rubric = g.store.rubric(qid)
        marks = g.store.marks(qid)
        mark = marks.get((student, qid))
        view = answer_view(result, qid, roster.submissions)
        current = roster.answer(student, qid)
        changed = bool(mark and mark.answer_sha256 != current)  # that mark was given to an earlier answer
        data = {"question": qid, "student": student if not _anonymous() else None, "index": index,
                "count": len(roster.students),
                "max": question.points, "answer_sha256": current, "csrf": csrf,
                "rubric": [asdict(item) for item in rubric.values()],
                "mark": asdict(mark) if mark else None,
                "changed": changed,
                "next": url_for("mark_page", qid=qid, index=index + 1, **_anon())
                if index + 1 < len(roster.students) else None,
                "previous": url_for("mark_page", qid=qid, index=index - 1, **_anon()) if index else None,
                "save": url_for("save_mark"), "save_item": url_for("save_rubric_item")}
        return render_template(
            "mark.html", assignment=spec, question=question, index=index, count=len(roster.students),
            student=student, anonymous=_anonymous(), view=view, rubric=list(rubric.values()), mark=mark,
            changed=changed, whole_answer=url_for("answer_text", qid=qid, index=index),
            points=mark_points(mark, rubric, question.points) if mark and not changed else None,
            marked=marked_count(question, marks), heatmaps=_heatmaps(result, question.about), data=data,
            toggle_names=url_for("mark_page", qid=qid, index=index, **({} if _anonymous() else {"anon": "1"})),
            csrf=csrf)

    @app.get("/answer/<qid>/<int:index>")
    def answer_text(qid: str, index: int) -> Response:
        """The whole answer as plain text: what a long answer's marking page leaves out, and fast at any size."""
        question_of(qid)
        result = roster.result(student_at(index))
        if result is None:
            abort(404)
        return Response(next((a.text for a in result.answers if a.id == qid), ""), mimetype="text/plain")

    @app.post("/api/mark")
    def save_mark() -> tuple[Response, int] | Response:
        body = _body()
        question = question_of(fields.text(body, "question"))
        student = fields.text(body, "student")
        index = fields.optional_whole(body, "index")
        if not student and index is not None:
            student = student_at(index)
        if student not in roster.index:
            abort(404)
        items, adjustment = fields.wholes(body, "items"), fields.number(body, "adjustment")
        comment, base_version, author = fields.text(body, "comment"), fields.whole(body, "base_version"), \
            fields.text(body, "author")
        shown_answer = fields.text(body, "answer_sha256")
        if not shown_answer:
            raise Malformed("answer_sha256 (the answer the page showed) is missing: reload the page")
        current = roster.answer(student, question.id)
        if shown_answer != current:  # graded again since the page was drawn: never a mark for an unread answer
            return _json({"conflict": None, "answer_changed": True, "error": ANSWER_CHANGED}, 409), 409
        return _saved(lambda: g.store.save_mark(
            question, student, items=items, adjustment=adjustment, comment=comment, answer_sha256=current,
            base_version=base_version, author=who(author)),
            lambda mark: {"mark": asdict(mark), "points": mark_points(mark, g.store.rubric(question.id),
                                                                      question.points),
                          "marked": marked_count(question, g.store.marks(question.id))})

    @app.post("/api/rubric")
    def save_rubric_item() -> tuple[Response, int] | Response:
        body = _body()
        question = question_of(fields.text(body, "question"))
        item_id, title, points = fields.optional_whole(body, "id"), fields.text(body, "title"), \
            fields.number(body, "points")
        comment, base_version, author = fields.text(body, "comment"), fields.whole(body, "base_version"), \
            fields.text(body, "author")
        deleted = fields.flag(body, "deleted")
        return _saved(lambda: g.store.save_rubric_item(
            question, item_id=item_id, title=title, points=points, comment=comment, base_version=base_version,
            author=who(author), deleted=deleted),
            lambda item: {"item": asdict(item)})

    @app.get("/students")
    def students_page() -> str:
        overrides = g.store.overrides()
        rows = [{"index": i, "student": s, "overrides": sum(1 for key in overrides if key[0] == s)}
                for i, s in enumerate(roster.students)]
        return render_template("students.html", assignment=spec, rows=rows, csrf=csrf)

    @app.get("/students/<int:index>")
    def student_page(index: int) -> str:
        student = student_at(index)
        result = roster.result(student)
        if result is None:
            abort(404)
        overrides = g.store.overrides(student)
        checks = [{"check": c, "override": overrides.get((student, c.check_id)),
                   "history": g.store.changes("override", f"{student}/{c.check_id}")}
                  for q in result.questions for c in q.checks]
        data = {"student": student, "csrf": csrf, "save": url_for("save_override"),
                "versions": {c.check_id: (o.version if (o := g.store.override(student, c.check_id)) else 0)
                             for q in result.questions for c in q.checks}}
        return render_template("student.html", assignment=spec, student=student, index=index, result=result,
                               checks=checks, data=data, csrf=csrf, shown=shown)

    @app.post("/api/override")
    def save_override() -> tuple[Response, int] | Response:
        body = _body()
        student, check_id = fields.text(body, "student"), fields.text(body, "check_id")
        if student not in roster.index:
            abort(404)
        result = roster.result(student)
        check = next((c for q in (result.questions if result else ()) for c in q.checks if c.check_id == check_id),
                     None)
        if check is None:
            abort(404)
        points, reason, base_version, author = fields.optional_number(body, "points"), fields.text(body, "reason"), \
            fields.whole(body, "base_version"), fields.text(body, "author")
        maximum = check.max_score
        return _saved(lambda: g.store.save_override(
            student, check.check_id, points=points, maximum=maximum, reason=reason, base_version=base_version,
            author=who(author)),
            lambda override: {"override": asdict(override)})

    return app


def embedded_app(out_dir: Path, assignment: Assignment, *, frame_ancestors: str,
                 students: Callable[[], Collection[str]], parent: str = "") -> Flask:
    """The review pages to mount under another app's path (a WSGI app: ``SCRIPT_NAME`` the mount, ``PATH_INFO`` the
    page), for the class ``students()`` names, once the embedding app has let a request in (it checks who may
    mark; the CSRF header is checked here); ``frame_ancestors``: the CSP's sources that may frame the pages;
    ``parent``: the label of a link back to the page the app is mounted under."""
    return create_app(Settings(out_dir, assignment, token=None, hosts=None, frame_ancestors=frame_ancestors,
                               students=students, parent=parent))


def _same(given: str, secret: str) -> bool:
    """A constant-time comparison of what a request carries (any text: a cookie, a header, a query) with a secret."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), secret.encode("utf-8"))


def _body() -> dict[str, Any]:
    return fields.json_object(request.get_data(cache=False))


def _json(answer: dict[str, Any], status: int) -> Response:
    return Response(json.dumps(answer), status, mimetype="application/json")


def _refusal(code: int, message: str) -> Response:
    """A refusal: JSON for the pages' saves (the page shows the message), a short page otherwise."""
    if request.path.startswith("/api/"):
        return _json({"error": message}, code)
    return Response(render_template("refused.html", code=code, message=message), code, mimetype="text/html")


def _saved(save: Callable[[], Any], answer: Callable[[Any], dict[str, Any]]) -> tuple[Response, int] | Response:
    """A save's answer: 200 and what was stored; 409 and what is stored now when someone saved in between; 422 and
    why when it cannot be stored as asked."""
    try:
        stored = save()
    except Conflict as conflict:
        current = asdict(conflict.current) if conflict.current is not None else None
        return _json({"conflict": current}, 409), 409
    except ReviewError as exc:
        return _json({"error": str(exc)}, 422), 422
    return _json(answer(stored), 200)


def _author(given: str) -> str:
    """Who saves (called inside ``_saved``, so a missing name is a 422 that says why)."""
    author = " ".join(given.split())[:80]
    if not author:
        raise ReviewError("say who you are (your name, at the top of the page): every change is kept with it")
    return author


def _anonymous() -> bool:
    return request.args.get("anon") == "1"


def _anon() -> dict[str, str]:
    return {"anon": "1"} if _anonymous() else {}


def _counts(mark: Mark | None, answer: str | None) -> bool:
    """A mark that counts: saved for the answer as it is now."""
    return mark is not None and mark.answer_sha256 == (answer or mark.answer_sha256)


@dataclass(frozen=True)
class ReviewMap:
    """One of the student's attention maps beside a written answer, with what it shows: the check it comes from (its
    id, title and outcome) and which matrix of the check's tensor (the heatmap's title: "..., batch 1, head 0")."""

    check_id: str
    check_title: str
    status: str
    label: str  # the heatmap's title
    window: str  # which part of a larger matrix is drawn; "" when all of it
    svg: Markup

    @property
    def text(self) -> str:
        """All of the caption in one line, for the figure's tooltip."""
        window = f" ({self.window})" if self.window else ""
        return f"{self.check_id}: {self.check_title} ({self.status}). {self.label}{window}"


def _map_cell(n_cols: int) -> int:
    """A review map's cell side in pixels: large enough to read a few keys at a glance, 32 keys in 320 pixels."""
    return max(10, min(28, 320 // max(n_cols, 1)))


def _heatmaps(result: SubmissionResult, question: str) -> list[ReviewMap]:
    """The student's own attention maps from the checks of ``question`` (the one the written answer is about), each
    labelled with its check and which matrix it is."""
    drawn = []
    for q in result.questions:
        if q.id != question:
            continue
        for check in q.checks:
            for heatmap in check.heatmaps:
                if heatmap.student is None:
                    continue
                vmin, vmax = value_range(heatmap.student)
                cell = _map_cell(max((len(r) for r in heatmap.student), default=1))
                svg = heatmap_svg(heatmap.student, vmin, vmax, xlabel=heatmap.xlabel, ylabel=heatmap.ylabel,
                                  title="Student", cell=cell, xticks=heatmap.xticks,
                                  yticks=heatmap.yticks, row_start=heatmap.row_start, col_start=heatmap.col_start)
                drawn.append(ReviewMap(check.check_id, check.title, status_label(check.status), heatmap.title,
                                       heatmap.window_text, svg))
    return drawn
