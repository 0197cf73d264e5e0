"""`grader review OUT`: the class's written answers marked in the browser, one question at a time, and any check's
points overridden with a reason (a regrade request). A Flask app over the gradebook (grader/review/store.py).

Safe by default: every request must carry the token printed in the URL, once (it is then kept in a cookie that
never leaves this site: HttpOnly, SameSite=Strict); a request for another host name is refused (a web page cannot
reach the app through a name it controls); every change is a JSON POST that carries the page's own CSRF token in a
header, which no other site's page can send; pages forbid every script, style and load but the app's own
(Content-Security-Policy). Student text is escaped by the templates, and answers are markdown cleaned as on the
instructor's page; no student code runs.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from flask import Flask, Response, abort, g, redirect, render_template, request, url_for
from markupsafe import Markup

from grader.adjust.manual import answer_hash
from grader.check.spec import Assignment, WrittenQuestion
from grader.points import shown
from grader.record.gradebook import Gradebook, stored_result
from grader.record.output import ACCOUNTING, GRADEBOOK
from grader.report.heatmap import heatmap_svg, value_range
from grader.results import SubmissionResult
from grader.review.answers import answer_view
from grader.review.store import Conflict, Mark, MarkingStore, ReviewError, mark_points

COOKIE = "grader_review"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


@dataclass(frozen=True)
class Settings:
    out_dir: Path
    assignment: Assignment
    token: str
    hosts: frozenset[str]  # the Host headers accepted ("127.0.0.1:8123", "localhost:8123")


def _submissions(out_dir: Path) -> Path | None:
    """The folder the run graded (accounting.json), where a notebook's cells and figures are read again."""
    try:
        folder = json.loads((out_dir / ACCOUNTING).read_text(encoding="utf-8")).get("submissions")
    except (OSError, ValueError, AttributeError):
        return None
    return Path(folder) if isinstance(folder, str) and Path(folder).is_dir() else None


class Class:
    """The class as graded: its students in a fixed order (by id), and their stored results, read when asked."""

    def __init__(self, out_dir: Path, assignment: Assignment) -> None:
        self.out_dir = out_dir
        self.assignment = assignment
        with Gradebook(out_dir / GRADEBOOK) as book:
            stored = book.stored(assignment.name, summaries=True)
        self.students = sorted(stored)
        self.index = {student: i for i, student in enumerate(self.students)}
        self.answer_hashes = {s: {a.id: answer_hash(a.text) for a in r.result.answers}
                              for s, r in stored.items() if r.result is not None}
        self.submissions = _submissions(out_dir)

    def result(self, student: str) -> SubmissionResult | None:
        return stored_result(self.out_dir / GRADEBOOK, self.assignment.name, student)


def create_app(settings: Settings) -> Flask:
    app = Flask(__name__)
    app.config.update(MAX_CONTENT_LENGTH=1 << 20)
    app.jinja_env.globals["shown"] = shown
    started = secrets.token_hex(4)  # in the static files' addresses: a new run's browser fetches them afresh
    app.jinja_env.globals["asset"] = lambda name: url_for("static", filename=name, v=started)
    csrf = secrets.token_urlsafe(32)
    roster = Class(settings.out_dir, settings.assignment)
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
        if request.host not in settings.hosts:
            abort(400, "this app answers only at the address it printed")
        given = request.args.get("token")
        if given is not None and hmac.compare_digest(given, settings.token):
            # The token is kept in a cookie and taken out of the address (and so out of the history).
            args = {k: v for k, v in request.args.items() if k != "token"}
            response = redirect(url_for(request.endpoint or "overview", **(request.view_args or {}), **args))
            response.set_cookie(COOKIE, settings.token, httponly=True, samesite="Strict", path="/")
            return response
        if not hmac.compare_digest(request.cookies.get(COOKIE, ""), settings.token):
            abort(403, "open the link `grader review` printed: it carries the token this app asks for")
        if request.method == "POST":
            sent = request.headers.get("X-CSRF-Token", "")
            if not hmac.compare_digest(sent, csrf) or not request.is_json:
                abort(403, "a change must come from this app's own pages")
        g.store = MarkingStore(store_path, spec.name)
        return None

    @app.teardown_request
    def close_store(_exc: BaseException | None) -> None:
        store = g.pop("store", None)
        if store is not None:
            store.close()

    @app.after_request
    def headers(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        # Marks change under the page: never kept. The script and styles are the package's own files: kept for the
        # run (their address carries the app's start), so moving to the next student fetches one page only.
        if request.endpoint == "static":
            response.headers["Cache-Control"] = "private, max-age=86400, immutable"
        else:
            response.headers["Cache-Control"] = "no-store"
        return response

    @app.errorhandler(400)
    @app.errorhandler(403)
    @app.errorhandler(404)
    def refused(error: Any) -> tuple[str, int]:
        return render_template("refused.html", code=error.code, message=error.description), error.code

    def marked_count(question: WrittenQuestion, marks: dict[tuple[str, str], Mark]) -> int:
        return sum(1 for s in roster.students if _counts(marks.get((s, question.id)),
                                                         roster.answer_hashes.get(s, {}).get(question.id)))

    @app.get("/")
    def overview() -> str:
        marks = g.store.marks()
        questions = [{"question": w, "marked": marked_count(w, marks), "points": shown(w.points)} for w in spec.written]
        return render_template("overview.html", assignment=spec, questions=questions, students=len(roster.students),
                               overrides=len(g.store.overrides()), csrf=csrf)

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
        current = roster.answer_hashes.get(student, {}).get(qid, answer_hash(""))
        data = {"question": qid, "student": student if not _anonymous() else None, "index": index,
                "count": len(roster.students),
                "max": question.points, "answer_sha256": current, "csrf": csrf,
                "rubric": [asdict(item) for item in rubric.values()],
                "mark": asdict(mark) if mark else None,
                "changed": bool(mark and mark.answer_sha256 != current),
                "next": url_for("mark_page", qid=qid, index=index + 1, **_anon())
                if index + 1 < len(roster.students) else None,
                "previous": url_for("mark_page", qid=qid, index=index - 1, **_anon()) if index else None,
                "save": url_for("save_mark"), "save_item": url_for("save_rubric_item")}
        return render_template(
            "mark.html", assignment=spec, question=question, index=index, count=len(roster.students),
            student=student, anonymous=_anonymous(), view=view, rubric=list(rubric.values()), mark=mark,
            points=mark_points(mark, rubric, question.points) if mark else None,
            marked=marked_count(question, marks), heatmaps=_heatmaps(result, question.about), data=data,
            toggle_names=url_for("mark_page", qid=qid, index=index, **({} if _anonymous() else {"anon": "1"})),
            csrf=csrf)

    @app.post("/api/mark")
    def save_mark() -> tuple[Response, int] | Response:
        body = request.get_json(silent=True) or {}
        question = question_of(str(body.get("question", "")))
        student = str(body.get("student") or "")
        if not student and isinstance(body.get("index"), int):
            student = student_at(body["index"])
        if student not in roster.index:
            abort(404)
        return _saved(lambda: g.store.save_mark(
            question, student, items=[int(i) for i in body.get("items", [])],
            adjustment=float(body.get("adjustment") or 0), comment=str(body.get("comment", "")),
            answer_sha256=roster.answer_hashes.get(student, {}).get(question.id, answer_hash("")),
            base_version=int(body.get("base_version", 0)), author=_author(body)),
            lambda mark: {"mark": asdict(mark), "points": mark_points(mark, g.store.rubric(question.id),
                                                                      question.points),
                          "marked": marked_count(question, g.store.marks(question.id))})

    @app.post("/api/rubric")
    def save_rubric_item() -> tuple[Response, int] | Response:
        body = request.get_json(silent=True) or {}
        question = question_of(str(body.get("question", "")))
        item_id = body.get("id")
        return _saved(lambda: g.store.save_rubric_item(
            question, item_id=int(item_id) if item_id is not None else None, title=str(body.get("title", "")),
            points=float(body.get("points") or 0), comment=str(body.get("comment", "")),
            base_version=int(body.get("base_version", 0)), author=_author(body),
            deleted=bool(body.get("deleted", False))),
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
        body = request.get_json(silent=True) or {}
        student = str(body.get("student", ""))
        if student not in roster.index:
            abort(404)
        result = roster.result(student)
        check = next((c for q in (result.questions if result else ()) for c in q.checks
                      if c.check_id == body.get("check_id")), None)
        if check is None:
            abort(404)
        points = body.get("points")
        maximum = check.max_score
        return _saved(lambda: g.store.save_override(
            student, check.check_id, points=None if points in (None, "") else float(points), maximum=maximum,
            reason=str(body.get("reason", "")), base_version=int(body.get("base_version", 0)), author=_author(body)),
            lambda override: {"override": asdict(override)})

    return app


def _saved(save: Callable[[], Any], answer: Callable[[Any], dict[str, Any]]) -> tuple[Response, int] | Response:
    """A save's answer: 200 and what was stored; 409 and what is stored now when someone saved in between; 422 and
    why when it cannot be stored as asked."""
    try:
        stored = save()
    except Conflict as conflict:
        current = asdict(conflict.current) if conflict.current is not None else None
        return Response(json.dumps({"conflict": current}), 409, mimetype="application/json"), 409
    except (ReviewError, ValueError, TypeError) as exc:
        return Response(json.dumps({"error": str(exc)}), 422, mimetype="application/json"), 422
    return Response(json.dumps(answer(stored)), 200, mimetype="application/json")


def _author(body: dict[str, Any]) -> str:
    """Who saves (called inside ``_saved``, so a missing name is a 422 that says why)."""
    author = " ".join(str(body.get("author", "")).split())[:80]
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


def _heatmaps(result: SubmissionResult, question: str) -> list[Markup]:
    """The student's own attention maps from the checks of ``question`` (the one the written answer is about)."""
    drawn = []
    for q in result.questions:
        if q.id != question:
            continue
        for check in q.checks:
            for heatmap in check.heatmaps:
                if heatmap.student is None:
                    continue
                vmin, vmax = value_range(heatmap.student)
                drawn.append(heatmap_svg(heatmap.student, vmin, vmax, xlabel=heatmap.xlabel, ylabel=heatmap.ylabel,
                                         title=heatmap.title, xticks=heatmap.xticks, yticks=heatmap.yticks))
    return drawn
