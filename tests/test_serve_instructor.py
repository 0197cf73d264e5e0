"""``grader serve``'s instructor pages, against the real platform (tests/lti_platform.py) and the tool as ``grader
serve`` composes it (grader/cli/serve.py: the review pages mounted): the class dashboard of the launch's course, the
review pages where written answers are marked, and the policy on the instructor's page; a student's launch refused
all of them, a change without the review pages' CSRF token refused, another course's instructor shown only their own
course. One Chromium check: marks given in the review pages inside the platform's frame reach the platform's
gradebook through Send marks.

One tool serves the module: two students of course-101 and one of course-202 upload a notebook of the written_maps
fixture assignment (a 2-point code question, written questions worth 4 and 3) once."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from html import unescape
from urllib.parse import urljoin

import pytest
import requests

from grader.adjust.marking_store import MarkingStore
from grader.cli.serve import tool
from grader.serve.config import load_config

from .conftest import FIXTURE_SOLUTIONS
from .lti_platform import INSTRUCTOR, LEARNER, start_platform
from .review_class import STUDENTS
from .test_serve import Course, browser, free_port, upload, wait_for, write_config

ASSIGNMENT = "written_maps"
OTHER_COURSE = "course-202"
USERS = {
    "ana": {"sub": "ana", "role": LEARNER, "name": "Ana Student"},
    "ben": {"sub": "ben", "role": LEARNER, "name": "Ben Student"},
    "prof": {"sub": "prof", "role": INSTRUCTOR, "name": "Dr Prof"},
    "cleo": {"sub": "cleo", "role": LEARNER, "name": "Cleo Student", "context": OTHER_COURSE},
    "prof-b": {"sub": "prof-b", "role": INSTRUCTOR, "name": "Dr Other", "context": OTHER_COURSE},
}
LEARNERS = ("ana", "ben", "cleo")


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Course]:
    """The tool with every learner's notebook graded and its score received by the platform; the platform on
    another site (localhost) than the tool (127.0.0.1), as a course platform is, for the Chromium check."""
    folder = tmp_path_factory.mktemp("serve-instructor")
    port = free_port()
    tool_url = f"http://127.0.0.1:{port}"
    platform = start_platform(tool_url, host_name="localhost")
    platform.users = {name: dict(user) for name, user in USERS.items()}
    config_path = write_config(folder, platform, tool_url, extra=f'solutions = "{FIXTURE_SOLUTIONS}"')
    config_path.write_text(config_path.read_text(encoding="utf-8").replace(
        'assignments = ["attention_scoring"]', f'assignments = ["{ASSIGNMENT}"]'), encoding="utf-8")
    config = load_config(config_path)
    service = tool(config, host="127.0.0.1", port=port)
    threading.Thread(target=service.run, name="grader-serve", daemon=True).start()
    the_course = Course(platform, service, config, config_path, tool_url)
    try:
        for user in LEARNERS:
            with browser() as session:  # closed: a connection left open to the platform holds its server's stop
                upload(session, launch(the_course, session, user), f"{user}.ipynb", STUDENTS[user].encode())
        wait_for("every learner's score received", lambda: all(platform.scores_for(u) for u in LEARNERS))
        yield the_course
    finally:
        service.close()
        platform.close()


def launch(course: Course, session: requests.Session, user: str) -> requests.Response:
    """The user's launch of the written_maps assignment from their course: the page it leads to."""
    form = session.get(course.platform.start_url(user, ASSIGNMENT), timeout=30).json()
    page = session.post(form["launch_url"], data={"id_token": form["id_token"], "state": form["state"]}, timeout=30)
    assert page.status_code == 200, page.text
    return page


def link(page: requests.Response, anchor_id: str) -> str:
    return urljoin(page.url, unescape(re.search(rf'href="([^"]+)" id="{anchor_id}"', page.text).group(1)))


def dashboard_scores(page: str) -> dict[str, str]:
    """Each student's score on the dashboard, as its row shows it ("2 / 9")."""
    return {student: score for student, score in re.findall(
        r'<tr data-student="([^"]+)".*?<td class="num">([^<]+)</td>', page, re.S)}


def review_csrf(page: str) -> str:
    return re.search(r'<meta name="csrf-token" content="([^"]+)">', page).group(1)


def test_an_instructor_reaches_the_class_dashboard_of_their_own_course(course: Course) -> None:
    teacher = browser()
    desk = launch(course, teacher, "prof")
    dashboard = teacher.get(link(desk, "dashboard-link"), timeout=30)
    assert dashboard.status_code == 200
    # Each student of the course, with the score the grader gave and the platform received; none of another course.
    shown = dashboard_scores(dashboard.text)
    assert set(shown) == {"ana", "ben"}
    for student in shown:
        received = course.platform.scores_for(student)[-1]
        assert shown[student] == f"{received['scoreGiven']:g} / {received['scoreMaximum']:g}"
    # Framed by the platform only; the dashboard's own script allowed by its hash, nothing else.
    policy = dashboard.headers["Content-Security-Policy"]
    assert policy.endswith(f"frame-ancestors 'self' {course.platform.url}") and "script-src 'sha256-" in policy
    # A student's link on the dashboard opens their report.
    report = teacher.get(urljoin(dashboard.url, "students/ben/instructor.html"), timeout=30)
    assert report.status_code == 200 and "attend(scores)" in report.text
    # The other course's instructor sees their own student alone.
    other = browser()
    theirs = other.get(link(launch(course, other, "prof-b"), "dashboard-link"), timeout=30)
    assert set(dashboard_scores(theirs.text)) == {"cleo"}
    assert other.get(urljoin(theirs.url, "students/ana/report.html"), timeout=30).status_code == 404


def test_the_instructors_page_shows_the_assignments_policy(course: Course) -> None:
    teacher = browser()
    desk = launch(course, teacher, "prof")
    policy = re.search(r'<table id="policy">(.*?)</table>', desk.text, re.S).group(1)
    assert "none: uploads are taken at any time" in policy and "any number" in policy
    assert "count at once" in policy and "at most 3 uploads waiting and 30 in any hour" in policy
    assert f"[policies.{ASSIGNMENT}]" in desk.text


def test_a_learner_launch_is_refused_the_dashboard_and_the_review_pages(course: Course) -> None:
    student = browser()
    page = launch(course, student, "ana")
    assert 'id="dashboard-link"' not in page.text and 'id="review-link"' not in page.text
    base = page.url.rstrip("/")
    for path in ("dashboard/", "dashboard/students/ana/report.html", "review/", "review/mark/why", "review/students"):
        answer = student.get(f"{base}/{path}", timeout=30)
        assert answer.status_code == 403, path
        assert "for the course&#39;s instructors" in answer.text
    saved = student.post(f"{base}/review/api/mark", json={"question": "why", "student": "ana", "items": [1]},
                         headers={"X-CSRF-Token": "guessed"}, timeout=30)
    assert saved.status_code == 403
    # An instructor's page address, without the instructor's session: refused too.
    teacher = browser()
    desk = launch(course, teacher, "prof")
    assert student.get(link(desk, "review-link"), timeout=30).status_code == 403


def test_a_change_in_the_review_pages_without_their_csrf_token_is_refused(course: Course) -> None:
    teacher = browser()
    overview = teacher.get(link(launch(course, teacher, "prof"), "review-link"), timeout=30)
    assert overview.status_code == 200 and "0 of 2 marked" in overview.text
    script = re.search(r'<script src="([^"]+)">', overview.text).group(1)  # kept by the browser: one fetch a run
    assert "immutable" in teacher.get(urljoin(overview.url, script), timeout=30).headers["Cache-Control"]
    mark_page = teacher.get(urljoin(overview.url, "mark/why/1"), timeout=30)  # ben, the second by id
    data = json.loads(re.search(r'<script type="application/json" id="page-data">(.*?)</script>', mark_page.text,
                                re.S).group(1))
    assert data["student"] == "ben"
    body = {"question": "why", "index": 1, "items": [], "adjustment": 1, "comment": "", "base_version": 0,
            "answer_sha256": data["answer_sha256"], "author": "prof"}
    save = urljoin(overview.url, data["save"])
    assert teacher.post(save, json=body, timeout=30).status_code == 403  # no token
    assert teacher.post(save, json=body, headers={"X-CSRF-Token": "forged"}, timeout=30).status_code == 403
    with MarkingStore(course.config.data / "gradebook.sqlite", ASSIGNMENT) as marks:
        assert marks.mark("ben", "why") is None
    # Another course's instructor, with their own pages' token: course-101's students are not theirs to mark.
    other = browser()
    theirs = other.get(link(launch(course, other, "prof-b"), "review-link"), timeout=30)
    assert "0 of 1 marked" in theirs.text
    refused = other.post(urljoin(theirs.url, "api/mark"), json={**body, "index": None, "student": "ben"},
                         headers={"X-CSRF-Token": review_csrf(theirs.text)}, timeout=30)
    assert refused.status_code == 404


def test_marks_given_in_the_review_pages_in_the_platforms_frame_reach_the_platform(course: Course) -> None:
    """In Chromium, the instructor inside the course's page (another site): the review pages, marking ana's answer
    with a rubric item worth 2 points, back to the submissions and Send marks: the platform receives the grader's
    score and the 2 points."""
    from .browser import chromium, chromium_path, watched_page

    if chromium_path() is None:
        pytest.skip("no Chromium: make system-deps installs it")
    (first,) = course.platform.scores_for("ana")
    with chromium() as browser_, watched_page(browser_) as (page, watch):
        page.goto(course.platform.course_url("prof", ASSIGNMENT), wait_until="load")
        frame = page.frame_locator("iframe")
        frame.locator("#review-link").click()
        assert frame.locator("#author").input_value() == "Dr Prof"  # the launch's name: every change kept with it
        frame.locator("a.start").first.click()  # the first question (why), at its first student not marked
        frame.locator("#who").filter(has_text="ana").wait_for(timeout=30_000)
        frame.locator("input.item").first.check()  # "Names the softmax", 2 points: saved at once
        frame.locator("#state").filter(has_text="Saved by Dr Prof").wait_for(timeout=30_000)
        frame.locator("a.parent").click()
        frame.get_by_role("button", name="Send marks").click()
        frame.locator("#marks-sent").wait_for(timeout=30_000)
        wait_for("the marked score received", lambda: len(course.platform.scores_for("ana")) == 2, seconds=30)
        assert not watch.console_errors and not watch.page_errors, watch.problems()
    marked = course.platform.scores_for("ana")[-1]
    assert marked["scoreGiven"] == first["scoreGiven"] + 2 and marked["scoreMaximum"] == first["scoreMaximum"]
    assert len(course.platform.scores_for("ben")) == 1  # nothing changed for ben: nothing sent
