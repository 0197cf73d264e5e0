"""The LTI 1.3 tool's web app (Flask): OIDC login initiation, the launch (one launch address per assignment), the
tool's key set, and the pages a launch leads to: a student's (upload, queue, their own results) and an
instructor's (every submission of the course's assignment and its score's way to the platform).

Who may see what is decided by the launch alone: a verified launch is kept server-side under a random id, and the
browser's session (a signed cookie) lists the launch ids it was given; every page names its launch and is refused
unless the session holds it. A student's pages show only the uploads of that launch's platform, course, user and
assignment. The session cookie and pylti1p3's state cookie are ``SameSite=None; Secure; Partitioned``, which is what
a page inside the platform's iframe needs (Partitioned: kept for that platform's pages even by a browser that blocks
third-party cookies): the tool therefore answers over https, behind the course's TLS reverse proxy (docs/lms.md).
Every change (an upload) carries the session's CSRF token; pages forbid every script and load (Content-Security-
Policy) and may be framed only by the registered platforms."""

from __future__ import annotations

import dataclasses
import hmac
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, abort, redirect, render_template, request, session, url_for
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from grader.adjust import DeadlineRule
from grader.discover import Submission
from grader.files import write_bytes_atomic
from grader.names import file_name
from grader.record.result_json import result_from_json
from grader.report import render_instructor_report, render_student_report
from grader.results import PUBLIC, SubmissionResult
from grader.serve.config import Policy, ServeConfig, session_secret
from grader.serve.instructor import ReviewFactory, add_instructor_pages
from grader.serve.limits import install as install_limits
from grader.serve.lti import CONTEXT, DEPLOYMENT, TARGET, BoundedSession, StoredLaunchData, ags_claim, role_of
from grader.serve.store import GRADING, QUEUED, Launch, ServeStore, Upload
from grader.times import describe_time, offset_of, utc_iso

ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
KINDS = {".py": "python", ".ipynb": "notebook"}
KEPT_LAUNCHES = 20  # launch ids a browser's session holds (the latest); an older tab launches again
PAGE_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'none'; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'self' {frames}")
REPORT_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'none'; base-uri 'none'; "
              "form-action 'none'; frame-ancestors 'self' {frames}")


@dataclass
class Tool:
    """What the app's routes share: the configuration, the database, pylti1p3's view of the registrations, and
    ``queued``, called when an upload is queued (the background's wake-up)."""

    config: ServeConfig
    store: ServeStore
    conf: Any
    queued: Callable[[], None] = lambda: None
    # Put the instructor's marks on each student's latest result, sending what changed (issuer, context,
    # assignment) -> how many scores were queued (worker.Background.send_marks).
    send_marks: Callable[[str, str, str], int] = lambda issuer, context, assignment: 0
    # The review pages mounted under an instructor's launch (grader.review.app.embedded_app, given by grader/cli/
    # serve.py); None: none (instructor.py).
    review: ReviewFactory | None = None
    # The late rule an upload of an assignment is scored under (worker.Background.deadline_rule).
    late_rule: Callable[[str], DeadlineRule] = lambda assignment: DeadlineRule(None)


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def upload_problem(name: str, data: bytes, limit: int) -> str:
    """Why an upload is refused ("" when it is taken): a .py or .ipynb, within the size limit, text a grader can
    read (a .py in UTF-8, a notebook a JSON object with cells)."""
    suffix = Path(name).suffix.lower()
    if suffix not in KINDS:
        shown = suffix or "no extension"
        return f"hand in a .py file or a Jupyter notebook (.ipynb); this file has {shown}"
    if not data:
        return "the file is empty"
    if len(data) > limit:
        return f"the file is {len(data) / 2**20:.1f} MiB, more than the {limit / 2**20:.1f} MiB allowed"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "the file is not text in UTF-8: save it from your editor or Jupyter as it is, and upload that"
    if "\x00" in text:
        return "the file holds NUL bytes: it is not a Python file or a notebook"
    if suffix == ".ipynb":
        try:
            notebook = json.loads(text)
        except ValueError:
            return "this .ipynb is not a notebook (not JSON): download it again from Jupyter (File > Download)"
        if not isinstance(notebook, dict) or not isinstance(notebook.get("cells", notebook.get("worksheets")), list):
            return "this .ipynb is not a notebook (it has no cells): download it again from Jupyter (File > Download)"
    return ""


def public_only(result: SubmissionResult) -> SubmissionResult:
    """The result as a student sees it before the deadline where the hidden checks count after it: the public checks
    alone (and the questions that have some), the score theirs."""
    questions = tuple(dataclasses.replace(q, checks=public) for q in result.questions
                      if (public := tuple(c for c in q.checks if c.visibility == PUBLIC)))
    note = "The hidden checks are graded and count after the deadline: this report shows the public checks only."
    return dataclasses.replace(result, questions=questions, notes=(*result.notes, note))


def partitioned_cookies(request: Any) -> Any:
    """pylti1p3's cookie service for Flask, its cookies (the OIDC state) also ``Partitioned`` (CHIPS): a browser
    that blocks third-party cookies still keeps a partitioned one in the platform's frame, for this platform's pages
    only. Chromium 150, as tests/test_serve.py drives it, keeps no other cookie in a cross-site frame."""
    from pylti1p3.contrib.flask import FlaskCookieService

    class PartitionedCookies(FlaskCookieService):
        def update_response(self, response: Response) -> None:
            for key, cookie in self._cookie_data_to_set.items():
                response.set_cookie(key=key, value=cookie["value"], max_age=cookie["exp"], secure=True, path="/",
                                    httponly=True, samesite="None", partitioned=True)

    return PartitionedCookies(request)


def create_app(tool: Tool) -> Flask:
    from pylti1p3.contrib.flask import FlaskMessageLaunch, FlaskOIDCLogin, FlaskRequest

    config, store = tool.config, tool.store
    app = Flask(__name__)
    app.secret_key = session_secret(config.data)
    app.config.update(
        MAX_CONTENT_LENGTH=config.max_upload_bytes + (64 << 10),  # the form's own fields beside the file
        SESSION_COOKIE_NAME="grader_serve", SESSION_COOKIE_SAMESITE="None", SESSION_COOKIE_SECURE=True,
        SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_PARTITIONED=True, PERMANENT_SESSION_LIFETIME=12 * 3600)
    # Who may frame the pages: each platform's own addresses (Moodle's issuer is its site; Canvas cloud's issuer and
    # login are canvas.instructure.com and sso.canvaslms.com, its token address the school's own site), and any
    # the configuration adds (frame_ancestors).
    frames = " ".join(sorted({_origin(p.issuer) for p in config.platforms if "://" in p.issuer}
                             | {_origin(u) for p in config.platforms for u in (p.auth_login_url, p.auth_token_url)}
                             | set(config.frame_ancestors)))
    storage = StoredLaunchData(store)
    install_limits(app, config.limits, store)  # 429 once a user's or an address's budget is spent

    def lti_request() -> Any:
        # Always secure: the tool is reached over https through the course's reverse proxy, and its cookies must be
        # SameSite=None; Secure to reach it inside the platform's iframe.
        return FlaskRequest(request_is_secure=True)

    def the_launch(launch_id: str) -> Launch:
        if launch_id not in session.get("launches", []):
            abort(403, "this page belongs to another launch: open the assignment again from your course")
        launch = store.launch(launch_id)
        if launch is None:
            abort(403, "this launch is unknown: open the assignment again from your course")
        return launch

    def upload_refusal(launch: Launch) -> tuple[int, str] | None:
        """Why the assignment's policy or the limits refuse another upload now (status, words), or None."""
        policy = config.policy(launch.assignment)
        now = datetime.now(UTC)
        if policy.closes is not None and now > policy.closes:
            if policy.late_until is not None:
                return 403, f"late uploads were taken until {shown_time(policy.late_until)}; uploads are closed"
            return 403, f"the deadline passed ({shown_time(policy.deadline)}); uploads are closed"
        waiting, recent, attempts = store.counts_of(launch, utc_iso(now - timedelta(hours=1)))
        if policy.attempts is not None and attempts >= policy.attempts:
            return 403, f"you have used all {policy.attempts} attempts this assignment allows"
        if waiting >= config.limits.waiting:
            return 429, (f"{waiting} of your uploads are still waiting to be graded: upload again once they are "
                         "(this page shows when)")
        if recent >= config.limits.per_hour:
            return 429, f"{recent} uploads in the last hour is the most taken: upload again later"
        return None

    def csrf_token() -> str:
        if "csrf" not in session:
            session["csrf"] = secrets.token_urlsafe(32)
        return session["csrf"]

    @app.after_request
    def headers(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", PAGE_CSP.format(frames=frames))
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        # Never kept, but where a page says otherwise: the review pages' script and styles (instructor.py), kept for
        # the review app's run, so that moving to the next student fetches that page alone.
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    @app.errorhandler(Refused)
    def refused(error: Refused) -> tuple[str, int]:
        return render_template("refused.html", message=error.message, status=error.status), error.status

    @app.errorhandler(RequestEntityTooLarge)
    def too_large(_error: RequestEntityTooLarge) -> tuple[str, int]:
        message = f"the file is larger than the {config.max_upload_bytes / 2**20:.1f} MiB allowed"
        return render_template("refused.html", message=message, status=413), 413

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> tuple[str, int]:
        status = error.code or 500
        return render_template("refused.html", message=error.description or error.name, status=status), status

    @app.route("/lti/login", methods=["GET", "POST"])
    def login() -> Any:
        target = request.values.get("target_link_uri", "")
        launches = {config.launch_url(name) for name in config.assignments}
        if target not in launches:
            raise Refused(400, "this login names no launch address of this tool (target_link_uri); the launch "
                               f"addresses are {config.url}/lti/launch/<assignment>, see docs/lms.md")
        try:
            lti = lti_request()
            oidc = FlaskOIDCLogin(lti, tool.conf, cookie_service=partitioned_cookies(lti), launch_data_storage=storage)
            return oidc.redirect(target)
        except Exception as exc:  # pylti1p3 says an unknown issuer or client with a plain Exception
            raise Refused(400, f"login refused: {exc}") from exc

    @app.post("/lti/launch/<assignment>")
    def launch(assignment: str) -> Any:
        if assignment not in config.assignments:
            raise Refused(404, f"this tool offers no assignment {assignment!r}")
        try:
            lti = lti_request()
            message = FlaskMessageLaunch(lti, tool.conf, cookie_service=partitioned_cookies(lti),
                                         launch_data_storage=storage, requests_session=BoundedSession())
            body = message.get_launch_data()
        except Exception as exc:  # pylti1p3's LtiException, and a plain Exception for an unknown issuer
            raise Refused(403, f"launch refused: {exc}") from exc
        if not message.is_resource_launch():
            raise Refused(400, "this tool takes resource link launches only (no deep linking): add the assignment's "
                               "launch address to the course as a link or an assignment (docs/lms.md)")
        if not store.use_nonce(body["nonce"]):
            raise Refused(403, "launch refused: this launch was used already (its nonce is spent); open the "
                               "assignment again from your course")
        if body.get(TARGET) != config.launch_url(assignment):
            raise Refused(403, "launch refused: the platform's launch names another address "
                               f"({body.get(TARGET)!r}) than this one")
        role = role_of(body.get(ROLES_CLAIM, []))
        if role is None:
            raise Refused(403, "this assignment is for the course's students and instructors; your role in the "
                               "course has nothing to open here")
        context = (body.get(CONTEXT) or {}).get("id", "")
        held = Launch(id=secrets.token_urlsafe(24), issuer=body["iss"], client_id=message.get_client_id(),
                      deployment_id=str(body.get(DEPLOYMENT, "")), context=str(context), sub=str(body["sub"]),
                      name=str(body.get("name") or body.get("given_name") or ""), role=role, assignment=assignment,
                      ags=ags_claim(body))
        store.add_launch(held)
        session["launches"] = [*session.get("launches", [])[-(KEPT_LAUNCHES - 1):], held.id]
        session.permanent = True
        return redirect(url_for("page", launch_id=held.id), code=303)

    @app.get("/lti/jwks")
    def jwks() -> Response:
        return app.response_class(json.dumps(tool.conf.get_jwks()), mimetype="application/json")

    @app.get("/lti/a/<launch_id>/")
    def page(launch_id: str) -> str:
        launch = the_launch(launch_id)
        if launch.role == "instructor":
            return instructor_page(launch)
        uploads = store.uploads_of(launch.issuer, launch.context, launch.sub, launch.assignment)
        policy = config.policy(launch.assignment)
        held = policy.holds_hidden(datetime.now(UTC))
        rows = [{"upload": u, "position": store.queue_position(u) if u.status == QUEUED else None,
                 "score": store.scores_of(u.id), "shown": shown_score(u, held)} for u in uploads]
        waiting = any(u.status in (QUEUED, GRADING) for u in uploads)
        return render_template("student.html", launch=launch, rows=rows, waiting=waiting, csrf=csrf_token(),
                               deadline=shown_time(policy.deadline) if policy.deadline else "",
                               late=late_window(policy, tool.late_rule(launch.assignment)),
                               attempts=policy.attempts, closed=upload_refusal(launch), held=held,
                               limit_mib=config.max_upload_bytes / 2**20, message=request.args.get("m", ""))

    def instructor_page(launch: Launch) -> str:
        uploads = store.uploads_for(launch.issuer, launch.context, launch.assignment)
        names: dict[str, str] = {}
        latest: dict[str, Upload] = {}
        for upload in uploads:
            latest[upload.sub] = upload
            if upload.sub not in names:
                owner = store.launch(upload.launch)
                names[upload.sub] = owner.name if owner else ""
        rows = [{"upload": u, "name": names.get(u.sub, ""), "score": store.scores_of(u.id),
                 "count": sum(1 for v in uploads if v.sub == u.sub)}
                for u in sorted(latest.values(), key=lambda u: (names.get(u.sub, ""), u.sub))]
        return render_template("instructor.html", launch=launch, rows=rows, uploads=len(uploads), csrf=csrf_token(),
                               message=request.args.get("m", ""), regraded=request.args.get("n", ""))

    def checked_form(launch_id: str) -> Launch:
        launch = the_launch(launch_id)
        if not hmac.compare_digest(request.form.get("csrf", ""), session.get("csrf", "") or "-"):
            raise Refused(403, "a change must come from this tool's own page: reload it and try again")
        return launch

    def instructors_form(launch_id: str, doing: str) -> Launch:
        launch = checked_form(launch_id)
        if launch.role != "instructor":
            raise Refused(403, f"only an instructor's launch {doing}")
        return launch

    @app.post("/lti/a/<launch_id>/marks")
    def send_marks(launch_id: str) -> Any:
        launch = instructors_form(launch_id, "sends marks")
        count = tool.send_marks(launch.issuer, launch.context, launch.assignment)
        return redirect(url_for("page", launch_id=launch.id, m="marks", n=str(count)), code=303)

    @app.post("/lti/a/<launch_id>/regrade")
    def regrade(launch_id: str) -> Any:
        launch = instructors_form(launch_id, "regrades")
        count = store.regrade(launch.issuer, launch.context, launch.assignment)
        tool.queued()
        return redirect(url_for("page", launch_id=launch.id, m="regrading", n=str(count)), code=303)

    @app.post("/lti/a/<launch_id>/upload")
    def upload(launch_id: str) -> Any:
        launch = checked_form(launch_id)
        if launch.role != "learner":
            raise Refused(403, "only a student's launch uploads a submission")
        refusal = upload_refusal(launch)
        if refusal:
            raise Refused(refusal[0], f"not taken: {refusal[1]}")
        sent = request.files.get("file")
        if sent is None or not sent.filename:
            raise Refused(400, "choose a .py file or a notebook (.ipynb) to upload")
        data = sent.stream.read(config.max_upload_bytes + 1)
        problem = upload_problem(sent.filename, data, config.max_upload_bytes)
        if problem:
            raise Refused(400, f"not taken: {problem}")
        suffix = Path(sent.filename).suffix.lower()
        folder = Path("uploads") / launch.assignment / file_name(launch.sub)

        def store_file(upload_id: int) -> str:
            name = folder / f"{upload_id}{suffix}"  # the grader's own name: the uploaded one is only shown
            write_bytes_atomic(config.data / name, data)
            return name.as_posix()

        store.add_upload(launch, kind=KINDS[suffix], size=len(data), uploaded_name=sent.filename[:200],
                         file_for=store_file)
        tool.queued()
        return redirect(url_for("page", launch_id=launch.id, m="queued"), code=303)

    @app.get("/lti/a/<launch_id>/report/<int:upload_id>")
    def report(launch_id: str, upload_id: int) -> Response:
        launch = the_launch(launch_id)
        found = store.upload(upload_id)
        course = (launch.issuer, launch.context, launch.assignment)
        if found is None or (found.issuer, found.context, found.assignment) != course or (
                launch.role != "instructor" and found.sub != launch.sub):
            abort(404, "no such submission of yours")
        if found.result_json is None:
            abort(404, "this submission is not graded yet")
        result = result_from_json(found.result_json)
        if launch.role != "instructor" and config.policy(launch.assignment).holds_hidden(datetime.now(UTC)):
            result = public_only(result)
        title = f"{launch.assignment}: your report"
        if launch.role == "instructor":
            submission = Submission(student=found.sub, path=config.data / found.file, kind=found.kind,
                                    submitted_at=_when(found.submitted_at))
            html = render_instructor_report(result, title=f"{launch.assignment}: {found.sub}", submission=submission)
        else:
            html = render_student_report(result, title=title)
        response = app.response_class(html, mimetype="text/html")
        response.headers["Content-Security-Policy"] = REPORT_CSP.format(frames=frames)
        return response

    add_instructor_pages(app, config=config, store=store, review=tool.review, the_launch=the_launch, frames=frames)
    return app


def shown_score(upload: Upload, held: bool) -> str:
    """The score on the student's page: the public checks' alone while the hidden ones are held back."""
    if upload.result_json is None or upload.score is None or upload.max_score is None:
        return ""
    if not held:
        return f"{upload.score:g} / {upload.max_score:g}"
    public = public_only(result_from_json(upload.result_json))
    return f"{public.score:g} / {public.max_score:g} (public checks)"


def late_window(policy: Policy, rule: DeadlineRule) -> str:
    """'until 2026-03-04 11:00 UTC = 12:00 UTC+01:00, and 10% of the score per started day late', or ''."""
    if policy.late_until is None:
        return ""
    return f"until {shown_time(policy.late_until)}, and {rule.policy.describe()}"


def shown_time(when: datetime) -> str:
    """'2026-03-01 11:00 UTC = 12:00 UTC+01:00', as the grader's pages say a deadline."""
    return describe_time(utc_iso(when), offset_of(when))


def _when(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


__all__ = ["GRADING", "Tool", "create_app", "upload_problem"]
