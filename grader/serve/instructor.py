"""The instructor's pages besides the list of submissions, each reached from an instructor's launch and refused (403)
to any other launch: the class dashboard ``grader grade`` writes, drawn from the course's latest graded uploads; the
review pages of ``grader review`` (written answers marked, checks' points overridden), mounted under the launch over
the course's students, whose marks Send marks puts on; and the assignment's policy, shown on the instructor's page.

A course is the launch's platform, context and assignment: an instructor sees only their own course's students. The
review pages are grader/review's app, given to the tool by ``grader serve`` (grader/cli/serve.py: serve may not
import review, a sibling), one per course, over the data folder's gradebook; it keeps its own CSRF header on every
change, and needs no cookie of its own (the tool's session, Partitioned and SameSite=None, says who comes in)."""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, Protocol

from flask import Blueprint, Flask, Response, abort, redirect, request, url_for

from grader.check.load import load_assignment
from grader.check.spec import Assignment
from grader.names import file_name
from grader.record.result_json import result_from_json
from grader.report import render_dashboard
from grader.serve.config import ServeConfig
from grader.serve.store import Launch, ServeStore
from grader.times import LatePolicy, describe_time, offset_of, utc_iso

META_CSP = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')
DASHBOARD_PAGES = ("report.html", "instructor.html")  # the dashboard's links to a student's pages


class ReviewFactory(Protocol):
    """The review app for one course's assignment (grader.review.app.embedded_app): a WSGI app over the gradebook in
    ``out_dir``, for the students ``students()`` names, framed by ``frame_ancestors``, with a link labelled
    ``parent`` back to the page it is mounted under."""

    def __call__(self, out_dir: Path, assignment: Assignment, *, frame_ancestors: str,
                 students: Callable[[], Collection[str]], parent: str = "") -> Any: ...


def framed_csp(page: str, frames: str) -> str:
    """A page's own Content-Security-Policy (its meta tag: what it may load and run) as the header, with who may
    frame it, which only a header can say; a page without one runs and loads nothing."""
    found = META_CSP.search(page)
    own = html.unescape(found.group(1)) if found else "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    return f"{own}; frame-ancestors 'self' {frames}"


def policy_lines(config: ServeConfig, assignment: str, late: LatePolicy) -> list[tuple[str, str]]:
    """The assignment's policy and the limits, as the instructor's page shows them (``late``: the assignment's own
    late rule, which a late window applies unless the policy names its own)."""
    policy = config.policy(assignment)
    if policy.deadline is None:
        deadline = "none: uploads are taken at any time"
    else:
        when = describe_time(utc_iso(policy.deadline), offset_of(policy.deadline))
        deadline = f"{when}: uploads are refused after it"
        if policy.late_until is not None:
            until = describe_time(utc_iso(policy.late_until), offset_of(policy.late_until))
            deadline = (f"{when}; late uploads are taken until {until}, and "
                        f"{policy.late_rule(late).policy.describe()}")
    attempts = (f"{policy.attempts} graded upload{'s' if policy.attempts != 1 else ''} per student"
                if policy.attempts is not None else "any number")
    hidden = ("count after the deadline: until then a student sees the public checks only, and each score, the hidden "
              "checks' included, is sent at the deadline" if policy.hidden == "after_deadline"
              else "count at once: a student's report shows them (never their inputs), and the score is sent when "
                   "graded")
    limits = (f"at most {config.limits.waiting} upload{'s' if config.limits.waiting != 1 else ''} waiting and "
              f"{config.limits.per_hour} in any hour, per student; {config.limits.requests} requests per user and "
              f"{config.limits.launches} logins and launches per address every {config.limits.window_s:g} s")
    return [("Deadline", deadline), ("Attempts", attempts), ("Hidden checks", hidden), ("Limits", limits)]


def add_instructor_pages(app: Flask, *, config: ServeConfig, store: ServeStore, review: ReviewFactory | None,
                         the_launch: Callable[[str], Launch], frames: str) -> None:
    """The dashboard and the review pages on ``app`` (``the_launch``: the launch a page names, or 403), and what the
    instructor's page shows of them (its template's ``policy_lines`` and ``review_offered``)."""
    pages = Blueprint("instructor", __name__)
    lock = threading.RLock()
    specs: dict[str, Assignment] = {}
    reviews: dict[tuple[str, str, str], Any] = {}

    def instructor(launch_id: str) -> Launch:
        launch = the_launch(launch_id)
        if launch.role != "instructor":
            abort(403, "this page is for the course's instructors: open the assignment from your course")
        return launch

    def spec(name: str) -> Assignment:
        with lock:
            if name not in specs:
                specs[name] = load_assignment(name, solutions_dir=config.solutions)
            return specs[name]

    def course_of(launch: Launch) -> tuple[str, str, str]:
        return launch.issuer, launch.context, launch.assignment

    @pages.get("/lti/a/<launch_id>/dashboard/")
    def dashboard(launch_id: str) -> Response:
        launch = instructor(launch_id)
        assignment = spec(launch.assignment)
        results = [result_from_json(u.result_json) for u in store.latest_results(*course_of(launch))
                   if u.result_json is not None]
        page = render_dashboard(results, title=assignment.title, max_score=assignment.max_score)
        response = app.response_class(page, mimetype="text/html")
        response.headers["Content-Security-Policy"] = framed_csp(page, frames)
        return response

    @pages.get("/lti/a/<launch_id>/dashboard/students/<folder>/<page>")
    def dashboard_student(launch_id: str, folder: str, page: str) -> Any:
        """A student's link on the dashboard (its folder in ``grader grade``'s output): their latest report."""
        launch = instructor(launch_id)
        found = next((u for u in store.latest_results(*course_of(launch))
                      if u.result_json is not None and file_name(result_from_json(u.result_json).student) == folder),
                     None)
        if found is None or page not in DASHBOARD_PAGES:
            abort(404, "no such student in this course")
        return redirect(url_for("report", launch_id=launch.id, upload_id=found.id), code=303)

    def review_of(launch: Launch) -> Any:
        assert review is not None
        course = course_of(launch)
        with lock:
            if course not in reviews:
                reviews[course] = review(config.data, spec(launch.assignment), frame_ancestors=f"'self' {frames}",
                                         students=lambda: store.students_with_results(*course), parent="submissions")
            return reviews[course]

    @pages.route("/lti/a/<launch_id>/review/", methods=["GET", "POST"], defaults={"rest": ""})
    @pages.route("/lti/a/<launch_id>/review/<path:rest>", methods=["GET", "POST"])
    def review_pages(launch_id: str, rest: str) -> Response:
        launch = instructor(launch_id)
        if review is None:
            abort(404, "this tool serves no review pages")
        mount = f"/lti/a/{launch_id}/review"
        environ = dict(request.environ)
        environ["SCRIPT_NAME"] = request.script_root + mount
        environ["PATH_INFO"] = request.environ.get("PATH_INFO", "")[len(mount):] or "/"
        environ["REMOTE_USER"] = launch.name or launch.sub  # who marks, as the review app keeps it
        return app.response_class.from_app(review_of(launch), environ, buffered=True)

    app.register_blueprint(pages)
    app.add_template_global(lambda assignment: policy_lines(config, assignment, spec(assignment).late), "policy_lines")
    app.add_template_global(lambda: review is not None, "review_offered")
