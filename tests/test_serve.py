"""``grader serve`` as an LTI 1.3 tool, against a real platform implementation by others (lti1p3platform, served by
tests/lti_platform.py): a student's launch (OIDC login, the platform's signed id_token), an upload graded by the
grader's own code, the score received by the platform's AGS endpoint; an instructor's launch; forged, expired and
replayed launches refused; uploads refused by type and size; a student's pages closed to another.

Everything talks over 127.0.0.1, and every wait is a bounded loop."""

from __future__ import annotations

import errno
import http.cookiejar
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
import requests

from grader.check.load import load_assignment
from grader.discover import Submission
from grader.pipeline import grade_submission
from grader.record.result_json import result_from_json
from grader.serve import worker
from grader.serve.config import ServeConfig, load_config
from grader.serve.server import Service, serve_tool

from .conftest import ROOT, SAMPLES
from .lti_platform import CLIENT_ID, CONTEXT, DEPLOYMENT_ID, INSTRUCTOR, LEARNER, CoursePlatform, start_platform

ASSIGNMENT = "attention_scoring"
GRADED_WITHIN_S = 120.0


class LoopbackIsSecure(http.cookiejar.DefaultCookiePolicy):
    """What Chromium does: http://127.0.0.1 is a secure context, so a Secure cookie set by a loopback server is sent
    back to it. Python's cookie jar would keep it for https only."""

    def return_ok_secure(self, cookie: http.cookiejar.Cookie, request: object) -> bool:
        host = urlsplit(request.get_full_url()).hostname  # type: ignore[attr-defined]
        return host in ("127.0.0.1", "localhost") or super().return_ok_secure(cookie, request)  # type: ignore[arg-type]


class Browser(requests.Session):
    """A requests session that keeps cookies as Chromium does on loopback (requests builds each request's cookie
    jar afresh, without the session jar's policy: the jar with the policy is put back here)."""

    def prepare_request(self, request: requests.Request) -> requests.PreparedRequest:
        prepared = super().prepare_request(request)
        jar = self.cookies.copy()  # the copy keeps the policy
        prepared._cookies = jar  # type: ignore[attr-defined]  # what a redirect's next request reads and adds to
        prepared.headers.pop("Cookie", None)
        prepared.prepare_cookies(jar)
        return prepared


def browser() -> requests.Session:
    session = Browser()
    session.cookies.set_policy(LoopbackIsSecure())
    session.max_redirects = 10
    return session


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Course:
    platform: CoursePlatform
    service: Service
    config: ServeConfig
    config_path: Path
    tool_url: str


def write_config(folder: Path, platform: CoursePlatform, tool_url: str, *, extra: str = "") -> Path:
    path = folder / "serve.toml"
    path.write_text(f"""\
{extra}
url = "{tool_url}"
data = "data"
assignments = ["{ASSIGNMENT}"]
private_key = "keys/tool.pem"
public_key = "keys/tool.pub.pem"

[[platforms]]
issuer = "{platform.url}"
client_id = "{CLIENT_ID}"
deployment_ids = ["{DEPLOYMENT_ID}"]
auth_login_url = "{platform.url}/auth"
auth_token_url = "{platform.url}/token"
key_set_url = "{platform.url}/jwks"
""", encoding="utf-8")
    return path


def start_tool(config_path: Path, port: int) -> Service:
    """The tool on 127.0.0.1:``port``, serving in a thread; a port just given back by a stopped tool is tried again
    for up to 5 s (its socket may still be closing)."""
    deadline = time.monotonic() + 5.0
    while True:
        try:
            service = serve_tool(load_config(config_path), host="127.0.0.1", port=port)
            break
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    threading.Thread(target=service.run, name="grader-serve", daemon=True).start()
    return service


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Course]:
    folder = tmp_path_factory.mktemp("serve")
    port = free_port()
    tool_url = f"http://127.0.0.1:{port}"
    platform = start_platform(tool_url)
    platform.users = {
        "stu-1": {"sub": "stu-1", "role": LEARNER, "name": "Ada Student"},
        "stu-2": {"sub": "stu-2", "role": LEARNER, "name": "Bo Student"},
        "stu-3": {"sub": "stu-3", "role": LEARNER, "name": "Cy Student"},
        "stu-5": {"sub": "stu-5", "role": LEARNER, "name": "Ev Student"},
        "prof": {"sub": "prof", "role": INSTRUCTOR, "name": "Dr Prof"},
    }
    config_path = write_config(folder, platform, tool_url)
    service = start_tool(config_path, port)
    yield Course(platform, service, load_config(config_path), config_path, tool_url)
    service.close()
    platform.close()


def launch_form(course: Course, session: requests.Session, user: str, mode: str = "ok") -> dict[str, str]:
    """The user's click in the course: the platform starts the OIDC login at the tool, the tool sends the browser
    back to the platform's auth endpoint, which answers with the launch form (id_token, state, launch address)."""
    answer = session.get(course.platform.start_url(user, ASSIGNMENT, mode), timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def launch(course: Course, session: requests.Session, user: str) -> requests.Response:
    form = launch_form(course, session, user)
    page = session.post(form["launch_url"], data={"id_token": form["id_token"], "state": form["state"]}, timeout=30)
    assert page.status_code == 200, page.text
    return page


def upload(session: requests.Session, page: requests.Response, name: str, data: bytes) -> requests.Response:
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    action = re.search(r'<form class="upload" method="post" enctype="multipart/form-data" action="([^"]+)"',
                       page.text).group(1)
    return session.post(urljoin(page.url, action), data={"csrf": csrf}, files={"file": (name, data)}, timeout=30)


def wait_for(what: str, done: object, seconds: float = GRADED_WITHIN_S) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if done():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {seconds:.0f} s")


def graders_score(path: Path, student: str) -> tuple[float, float]:
    assignment = load_assignment(ASSIGNMENT)
    result = grade_submission(submission=Submission(student, path, "python", datetime.now(UTC)),
                              assignment=assignment, root=path.parent)
    return result.score, result.max_score


def test_the_tool_makes_its_key_pair_once_and_keeps_it_private(course: Course) -> None:
    private = course.config.private_key
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    made = private.read_bytes()
    load_config(course.config_path)
    assert private.read_bytes() == made
    jwks = requests.get(f"{course.tool_url}/lti/jwks", timeout=10).json()
    assert len(jwks["keys"]) == 1 and jwks["keys"][0]["kty"] == "RSA" and "d" not in jwks["keys"][0]


def test_a_student_launches_uploads_and_the_platform_receives_the_graders_score(course: Course) -> None:
    session = browser()
    page = launch(course, session, "stu-1")
    assert "Your submissions" in page.text and "Hand in" in page.text
    # Only the platform's pages may frame the tool's (its issuer, login and token addresses: one origin here).
    assert page.headers["Content-Security-Policy"].endswith(f"frame-ancestors 'self' {course.platform.url}")
    for cookie in session.cookies:  # what the platform's iframe needs
        assert cookie.secure and cookie.get_nonstandard_attr("SameSite") == "None", cookie.name
        assert cookie.has_nonstandard_attr("Partitioned"), cookie.name
    sample = SAMPLES / "einsum_style.py"
    taken = upload(session, page, "my attention.py", sample.read_bytes())
    assert taken.status_code == 200 and 'id="taken"' in taken.text
    wait_for("the platform receives a score", lambda: course.platform.scores_for("stu-1"))
    (sent,) = course.platform.scores_for("stu-1")
    score, maximum = graders_score(sample, "stu-1")
    assert (sent["scoreGiven"], sent["scoreMaximum"]) == (score, maximum)
    assert sent["activityProgress"] == "Completed" and sent["gradingProgress"] == "FullyGraded"
    assert sent["lineitem"] == ASSIGNMENT
    # The student's page shows the upload graded and links the student's own report: the grader's report.
    page = session.get(page.url, timeout=30)
    assert 'data-status="graded"' in page.text
    report_link = re.search(r'href="([^"]+/report/\d+)" class="score"', page.text).group(1)
    report = session.get(urljoin(page.url, report_link), timeout=30)
    assert report.status_code == 200 and f"{score:g}" in report.text
    # What was sent, when, and the platform's answer are kept.
    (kept,) = [s for s in course.service.store.all_scores() if s.payload["userId"] == "stu-1"]
    assert kept.status == "accepted" and kept.http_status == 200 and kept.accepted_at
    # The upload is stored under the grader's own name, never the uploaded one.
    stored = list((course.config.data / "uploads" / ASSIGNMENT).rglob("*.py"))
    assert stored and all(p.name[0].isdigit() and " " not in p.name for p in stored)


def test_another_student_cannot_see_a_students_report(course: Course) -> None:
    owner = browser()
    page = launch(course, owner, "stu-3")
    upload(owner, page, "mine.py", (SAMPLES / "mistake_softmax_axis.py").read_bytes())
    wait_for("stu-3 graded", lambda: 'data-status="graded"' in owner.get(page.url, timeout=30).text)
    report_path = re.search(r'href="([^"]+/report/(\d+))" class="score"', owner.get(page.url, timeout=30).text)
    other = browser()
    other_page = launch(course, other, "stu-2")
    # With the owner's page address but without the owner's session: refused.
    assert other.get(urljoin(page.url, report_path.group(1)), timeout=30).status_code == 403
    # With their own launch and the owner's upload number: not theirs.
    own_launch = other_page.url.rstrip("/")
    assert other.get(f"{own_launch}/report/{report_path.group(2)}", timeout=30).status_code == 404


def test_an_instructor_launch_reaches_the_instructor_page(course: Course) -> None:
    session = browser()
    student = launch(course, session, "stu-2")
    upload(session, student, "two.py", (SAMPLES / "einsum_style.py").read_bytes())
    wait_for("stu-2 graded", lambda: course.platform.scores_for("stu-2"))
    teacher = browser()
    page = launch(course, teacher, "prof")
    assert "submissions" in page.text and 'id="submissions"' in page.text
    assert 'data-sub="stu-2"' in page.text and "Bo Student" in page.text
    assert "Hand in" not in page.text  # no upload for an instructor
    report = re.search(r'<tr data-sub="stu-2">.*?href="([^"]+)"', page.text, re.S).group(1)
    assert teacher.get(urljoin(page.url, report), timeout=30).status_code == 200


@pytest.mark.parametrize("mode", ["forged", "expired"])
def test_a_forged_or_expired_launch_is_refused(course: Course, mode: str) -> None:
    session = browser()
    form = launch_form(course, session, "stu-1", mode)
    answer = session.post(form["launch_url"], data={"id_token": form["id_token"], "state": form["state"]},
                          timeout=30, allow_redirects=False)
    assert answer.status_code == 403 and "launch refused" in answer.text
    said = {"forged": "Signature verification failed", "expired": "Signature has expired"}[mode]
    assert said in answer.text
    assert "grader_serve" not in session.cookies  # no session was given


def test_a_replayed_launch_is_refused(course: Course) -> None:
    session = browser()
    form = launch_form(course, session, "stu-1")
    posted = {"id_token": form["id_token"], "state": form["state"]}
    first = session.post(form["launch_url"], data=posted, timeout=30)
    assert first.status_code == 200
    again = session.post(form["launch_url"], data=posted, timeout=30, allow_redirects=False)
    assert again.status_code == 403 and "used already" in again.text


def test_an_upload_of_the_wrong_type_or_size_is_refused_clearly(course: Course) -> None:
    session = browser()
    page = launch(course, session, "stu-2")
    wrong = upload(session, page, "answers.txt", b"print(1)\n")
    assert wrong.status_code == 400 and "hand in a .py file or a Jupyter notebook" in wrong.text
    not_notebook = upload(session, page, "nb.ipynb", b"print(1)\n")
    assert not_notebook.status_code == 400 and "not a notebook" in not_notebook.text
    big = upload(session, page, "big.py", b"#" * (course.config.max_upload_bytes + 1))
    assert big.status_code in (400, 413) and "allowed" in big.text
    forged = session.post(page.url.rstrip("/") + "/upload", data={"csrf": "not-the-token"},
                          files={"file": ("a.py", b"x = 1\n")}, timeout=30)
    assert forged.status_code == 403


def test_a_score_the_platform_refuses_is_sent_again_until_accepted(course: Course,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "FIRST_RETRY_S", 0.2)
    course.platform.refuse_scores = 2
    session = browser()
    page = launch(course, session, "stu-2")
    before = len(course.platform.scores_for("stu-2"))
    upload(session, page, "again.py", (SAMPLES / "mistake_no_scaling.py").read_bytes())
    wait_for("the refused score accepted", lambda: len(course.platform.scores_for("stu-2")) > before)
    kept = [s for s in course.service.store.all_scores() if s.payload["userId"] == "stu-2"][-1]
    assert kept.status == "accepted" and kept.attempts == 3
    assert course.platform.scores_for("stu-2")[-1]["scoreGiven"] == graders_score(
        SAMPLES / "mistake_no_scaling.py", "stu-2")[0]


def test_the_configuration_names_what_is_wrong(tmp_path: Path) -> None:
    from grader.errors import ConfigurationError

    path = tmp_path / "serve.toml"
    path.write_text('url = "http://grader.example.edu"\nassignments = ["attention_scoring"]\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="must be https"):
        load_config(path)
    path.write_text('url = "https://grader.example.edu"\nassignments = ["attention_scoring"]\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="no \\[\\[platforms\\]\\]"):
        load_config(path)
    (tmp_path / "keys").mkdir()
    key = tmp_path / "keys" / "tool.pem"
    key.write_text("x")
    os.chmod(key, 0o644)
    path.write_text('url = "https://grader.example.edu"\nassignments = ["attention_scoring"]\n[[platforms]]\n'
                    'issuer = "https://lms"\nclient_id = "c"\ndeployment_ids = ["1"]\n'
                    'auth_login_url = "https://lms/auth"\nauth_token_url = "https://lms/token"\n'
                    'key_set_url = "https://lms/jwks"\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="can be read by others"):
        load_config(path)
    os.chmod(key, 0o600)
    path.write_text(path.read_text(encoding="utf-8").replace(
        'assignments = ["attention_scoring"]', 'assignments = ["attention_scoring"]\nframe_ancestors = ["lms"]'))
    with pytest.raises(ConfigurationError, match="frame_ancestors"):
        load_config(path)
    good = path.read_text(encoding="utf-8").replace('\nframe_ancestors = ["lms"]', "")
    key.unlink()  # the tool makes its own
    for policy, problem in [
            ('late_until = "2026-12-03T12:00:00Z"', "late_until must come after a deadline"),
            ('deadline = "2026-12-03T12:00:00Z"\nlate_until = "2026-12-01T12:00:00Z"', "must come after a deadline"),
            ('deadline = "2026-12-01T12:00:00Z"\nlate_per_day = 0.1', "late_per_day needs late_until"),
            ('deadline = "2026-12-01T12:00:00Z"\nlate_until = "2026-12-03T12:00:00Z"\nlate_per_day = 2',
             "a fraction of the score from 0 to 1"),
            ('deadline = "2026-12-01T12:00:00Z"\nlate_until = "2026-12-03T12:00:00Z"\nlate_per_day = "10%"',
             "are numbers"),
            ("deadline = 2026-12-01T12:00:00Z", "a time in quotes")]:
        path.write_text(f"{good}\n[policies.attention_scoring]\n{policy}\n", encoding="utf-8")
        with pytest.raises(ConfigurationError, match=problem):
            load_config(path)
    path.write_text(f'{good}\n[policies.attention_scoring]\ndeadline = "2026-12-01T12:00:00Z"\n'
                    'late_until = "2026-12-03T12:00:00Z"\nlate_zero_after_days = 1\n', encoding="utf-8")
    policy = load_config(path).policy("attention_scoring")
    assert policy.closes == policy.late_until and policy.late is not None and policy.late.zero_after_days == 1


def test_a_restart_loses_neither_a_queued_upload_nor_a_score_to_send(tmp_path: Path) -> None:
    """The platform refuses every score; the tool stops with one student's score unsent and another student's upload
    still queued. Started again on its data, it grades the upload and sends both scores once the platform accepts."""
    port = free_port()
    tool_url = f"http://127.0.0.1:{port}"
    platform = start_platform(tool_url)
    platform.users = {"stu-8": {"sub": "stu-8", "role": LEARNER, "name": "Di Student"},
                      "stu-9": {"sub": "stu-9", "role": LEARNER, "name": "Ed Student"}}
    platform.refuse_scores = 10**6
    config_path = write_config(tmp_path, platform, tool_url)
    service = start_tool(config_path, port)
    course = Course(platform, service, load_config(config_path), config_path, tool_url)
    try:
        first, second = browser(), browser()
        first_page, second_page = launch(course, first, "stu-8"), launch(course, second, "stu-9")
        upload(first, first_page, "first.py", (SAMPLES / "mistake_no_scaling.py").read_bytes())
        wait_for("the first score tried", lambda: any(s.attempts for s in service.store.all_scores()))
        service.background.stop()  # the graders stop first: the next upload stays queued, as in a stop mid-queue
        upload(second, second_page, "second.py", (SAMPLES / "einsum_style.py").read_bytes())
    finally:
        service.close()
    assert not platform.scores
    platform.refuse_scores = 0
    service = start_tool(config_path, port)
    try:
        wait_for("both scores accepted", lambda: platform.scores_for("stu-8") and platform.scores_for("stu-9"))
        assert platform.scores_for("stu-8")[0]["scoreGiven"] == graders_score(SAMPLES / "mistake_no_scaling.py",
                                                                               "stu-8")[0]
        assert platform.scores_for("stu-9")[0]["scoreGiven"] == graders_score(SAMPLES / "einsum_style.py", "stu-9")[0]
        assert all(s.status == "accepted" for s in service.store.all_scores())
    finally:
        service.close()
        platform.close()


def test_a_later_uploads_score_replaces_an_unsent_earlier_one(course: Course,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Two uploads while the platform refuses: once the second is graded, the first's score is never sent (it would
    put a stale grade over the later one); the second's is, once the platform accepts. The second is graded while
    the first's score is on its way (held at the platform): it is queued only once that try has its answer, so the
    answer cannot put the superseded score back in the outbox."""
    monkeypatch.setattr(worker, "FIRST_RETRY_S", 0.2)
    course.platform.users["stu-4"] = {"sub": "stu-4", "role": LEARNER, "name": "Fa Student"}
    course.platform.refuse_scores = 10**6
    course.platform.score_gate = gate = threading.Event()
    store = course.service.store
    try:
        session = browser()
        page = launch(course, session, "stu-4")
        posts = course.platform.score_posts
        upload(session, page, "a.py", (SAMPLES / "mistake_no_scaling.py").read_bytes())
        wait_for("the first score on its way", lambda: store.outbox_holders(course.platform.url, "stu-4",
                                                                             ASSIGNMENT) == 1)
        upload(session, page, "b.py", (SAMPLES / "einsum_style.py").read_bytes())

        def queued() -> int:
            return len([s for s in store.all_scores() if s.payload["userId"] == "stu-4"])

        # The second is graded: its score waits for the first's try (or, were it queued at once, is queued).
        wait_for("the second graded", lambda: store.outbox_holders(course.platform.url, "stu-4", ASSIGNMENT) == 2
                 or queued() == 2)
        gate.set()
        wait_for("both graded", lambda: queued() == 2)
    finally:
        gate.set()
        course.platform.score_gate = None
        course.platform.refuse_scores = 0
    wait_for("the later score accepted", lambda: course.platform.scores_for("stu-4"))
    time.sleep(1.0)  # room for a wrongly sent older score to arrive
    (sent,) = course.platform.scores_for("stu-4")
    assert sent["scoreGiven"] == graders_score(SAMPLES / "einsum_style.py", "stu-4")[0]
    older, later = [s for s in course.service.store.all_scores() if s.payload["userId"] == "stu-4"]
    assert (older.status, later.status) == ("superseded", "accepted")
    assert older.attempts >= 1 and course.platform.score_posts > posts  # the first was tried, and refused
    page = session.get(page.url, timeout=30)
    assert "a later submission's score is sent instead" in page.text


def test_a_student_uploads_in_chromium_inside_the_platforms_frame(tmp_path: Path) -> None:
    """The whole way in a real browser: the course's page (on another site than the tool: localhost against
    127.0.0.1) frames the tool; the launch form posts itself; the tool's cookies must reach it inside the frame
    (SameSite=None; Secure); the student picks the file, hands it in, waits on the page and opens the report."""
    from .browser import chromium, chromium_path, watched_page

    if chromium_path() is None:
        pytest.skip("no Chromium: make system-deps installs it")
    port = free_port()
    tool_url = f"http://127.0.0.1:{port}"
    platform = start_platform(tool_url, host_name="localhost")
    platform.users = {"stu-7": {"sub": "stu-7", "role": LEARNER, "name": "Em Student"}}
    service = start_tool(write_config(tmp_path, platform, tool_url), port)
    sample = SAMPLES / "einsum_style.py"
    score, maximum = graders_score(sample, "stu-7")
    try:
        with chromium() as browser_, watched_page(browser_) as (page, watch):
            page.goto(platform.course_url("stu-7", ASSIGNMENT), wait_until="load")
            frame = page.frame_locator("iframe")
            frame.locator("input[type=file]").set_input_files(str(sample))
            frame.get_by_role("button", name="Hand in").click()
            frame.locator("#taken").wait_for(timeout=30_000)
            shown = frame.locator("a.score")
            shown.wait_for(timeout=GRADED_WITHIN_S * 1000)  # the page reloads itself while the upload waits
            assert shown.inner_text() == f"{score:g} / {maximum:g}"
            shown.click()
            frame.get_by_text("masked_softmax").first.wait_for(timeout=30_000)  # the report, in the frame
            wait_for("the platform receives the score", lambda: platform.scores_for("stu-7"))
            assert platform.scores_for("stu-7")[0]["scoreGiven"] == score
            assert not watch.console_errors and not watch.page_errors, watch.problems()
            assert all(urlsplit(url).hostname in ("127.0.0.1", "localhost") for url in watch.remote_requests)
    finally:
        service.close()
        platform.close()


def test_uploads_are_graded_on_a_dask_cluster_when_the_configuration_names_one(tmp_path: Path) -> None:
    """``scheduler`` in the configuration: the upload travels to a Dask worker (a LocalCluster's process here), which
    grades it as on this machine; the platform receives the grader's score."""
    from distributed import LocalCluster

    port = free_port()
    tool_url = f"http://127.0.0.1:{port}"
    platform = start_platform(tool_url)
    platform.users = {"stu-6": {"sub": "stu-6", "role": LEARNER, "name": "Gu Student"}}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1",
                      silence_logs=40) as cluster:
        config_path = write_config(tmp_path, platform, tool_url, extra=f'scheduler = "{cluster.scheduler_address}"')
        service = start_tool(config_path, port)
        try:
            assert service.background.cluster is not None
            session = browser()
            page = launch(Course(platform, service, load_config(config_path), config_path, tool_url), session,
                          "stu-6")
            upload(session, page, "mine.py", (SAMPLES / "mistake_softmax_axis.py").read_bytes())
            wait_for("the platform receives the score", lambda: platform.scores_for("stu-6"))
            graded_on = {task.split("-", 1)[0] for task in cluster.scheduler.task_prefixes}
            assert "grade_parcel" in graded_on
        finally:
            service.close()
            platform.close()
    assert platform.scores_for("stu-6")[0]["scoreGiven"] == graders_score(SAMPLES / "mistake_softmax_axis.py",
                                                                           "stu-6")[0]


def test_an_instructor_regrades_and_each_new_score_is_sent(course: Course) -> None:
    session = browser()
    page = launch(course, session, "stu-5")
    upload(session, page, "five.py", (SAMPLES / "einsum_style.py").read_bytes())
    wait_for("stu-5's first score", lambda: course.platform.scores_for("stu-5"))
    # A student's launch has no regrade: refused even with the session's own CSRF token.
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    assert session.post(page.url.rstrip("/") + "/regrade", data={"csrf": csrf}, timeout=30).status_code == 403
    teacher = browser()
    desk = launch(course, teacher, "prof")
    action = re.search(r'<form method="post" action="([^"]+)" class="regrade">', desk.text).group(1)
    csrf = re.search(r'name="csrf" value="([^"]+)"', desk.text).group(1)
    assert teacher.post(urljoin(desk.url, action), data={"csrf": "forged"}, timeout=30).status_code == 403
    answer = teacher.post(urljoin(desk.url, action), data={"csrf": csrf}, timeout=30)
    assert answer.status_code == 200 and 'id="regrading"' in answer.text
    wait_for("stu-5's score sent again", lambda: len(course.platform.scores_for("stu-5")) == 2)
    first, again = course.platform.scores_for("stu-5")
    assert again["scoreGiven"] == first["scoreGiven"] and again["timestamp"] >= first["timestamp"]
    upload_id = int(re.search(r'data-upload="(\d+)"', session.get(page.url, timeout=30).text).group(1))
    sent = [s for s in course.service.store.all_scores() if s.upload == upload_id]
    assert [s.status for s in sent] == ["accepted", "accepted"]  # both sends kept, each with its answer


def test_an_assignments_deadline_attempts_and_waiting_limit_refuse_uploads_clearly(tmp_path: Path) -> None:
    """Attempts, the waiting limit and a deadline refuse uploads, each saying why; a late window takes uploads after
    the deadline and scores them under the late rule the policy names, sent to the platform with the penalty."""
    port = free_port()
    tool_url = f"http://127.0.0.1:{port}"
    platform = start_platform(tool_url)
    platform.users = {"stu-p": {"sub": "stu-p", "role": LEARNER, "name": "Pa Student"}}
    config_path = write_config(tmp_path, platform, tool_url, extra="")
    text = config_path.read_text(encoding="utf-8").replace(
        f'assignments = ["{ASSIGNMENT}"]',
        f'assignments = ["{ASSIGNMENT}", "keras_additive_attention", "bahdanau_attention"]')
    now = datetime.now(UTC).replace(microsecond=0)
    config_path.write_text(text + f"""
[policies.{ASSIGNMENT}]
attempts = 2

[policies.keras_additive_attention]
deadline = "2020-01-01T23:59:00+01:00"

[policies.bahdanau_attention]
deadline = "{(now - timedelta(hours=2)).isoformat()}"
late_until = "{(now + timedelta(days=2)).isoformat()}"
late_per_day = 0.25

[limits]
waiting = 1
""", encoding="utf-8")
    service = start_tool(config_path, port)
    course = Course(platform, service, load_config(config_path), config_path, tool_url)
    sample = (SAMPLES / "einsum_style.py").read_bytes()
    try:
        session = browser()
        page = launch(course, session, "stu-p")
        assert "Each upload is an attempt: 2 in all." in page.text
        assert upload(session, page, "one.py", sample).status_code == 200
        waiting = upload(session, page, "two.py", sample)
        assert waiting.status_code == 429 and "still waiting to be graded" in waiting.text
        wait_for("the first graded", lambda: platform.scores_for("stu-p"))
        assert upload(session, page, "two.py", sample).status_code == 200
        wait_for("the second graded", lambda: len(platform.scores_for("stu-p")) == 2)
        used = upload(session, page, "three.py", sample)
        assert used.status_code == 403 and "used all 2 attempts" in used.text
        assert 'id="closed"' in session.get(page.url, timeout=30).text  # the page offers no upload any more
        # Past the deadline: the page says so, and an upload is refused.
        form = session.get(platform.start_url("stu-p", "keras_additive_attention"), timeout=30).json()
        late_page = session.post(form["launch_url"], data={"id_token": form["id_token"], "state": form["state"]},
                                 timeout=30)
        assert "Deadline: 2020-01-01 22:59 UTC = 23:59 UTC+01:00." in late_page.text
        assert 'id="closed"' in late_page.text
        late = session.post(late_page.url.rstrip("/") + "/upload",
                            data={"csrf": re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)},
                            files={"file": ("late.py", sample)}, timeout=30)
        assert late.status_code == 403 and "the deadline passed" in late.text
        # In a late window: taken, and scored with the policy's penalty (a started day late: a quarter off).
        form = session.get(platform.start_url("stu-p", "bahdanau_attention"), timeout=30).json()
        window = session.post(form["launch_url"], data={"id_token": form["id_token"], "state": form["state"]},
                              timeout=30)
        assert 'id="closed"' not in window.text
        assert re.search(r'id="late">Late uploads are taken until .*, and 25% of the score per started day late\.',
                         window.text)
        correct = (ROOT / "tests" / "submissions" / "bahdanau_attention" / "reference_style.py").read_bytes()
        assert upload(session, window, "late.py", correct).status_code == 200
        def late_scores() -> list[dict]:
            return [s for s in platform.scores_for("stu-p") if s["lineitem"] == "bahdanau_attention"]

        wait_for("the late upload scored", late_scores)
        (sent,) = late_scores()
        (graded,) = service.store.uploads_for(platform.url, CONTEXT, "bahdanau_attention")
        result = result_from_json(graded.result_json)
        assert result.late is not None and result.late.fraction == 0.25 and 7000 < result.late.late_s < 7300
        assert result.code_score == result.max_score  # the sample is correct: only lateness costs it
        assert sent["scoreGiven"] == round(0.75 * result.max_score, 4) == round(result.score, 4)
    finally:
        service.close()
        platform.close()


def test_grader_serve_runs_from_the_command_line_and_stops_on_sigterm(tmp_path: Path) -> None:
    """`grader serve --config FILE`: it prints the addresses to give the platform, answers, and stops in order on
    SIGTERM (as a service manager stops it), with exit status 0."""
    port = free_port()
    tool_url = f"http://127.0.0.1:{port}"
    platform = start_platform(tool_url)
    config_path = write_config(tmp_path, platform, tool_url)
    process = subprocess.Popen([sys.executable, "-m", "grader", "serve", "--config", str(config_path), "--port",
                                str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for("the tool's key set answers", lambda: _answers(f"{tool_url}/lti/jwks"), seconds=60)
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        platform.close()
    assert process.returncode == 0, output
    assert f"login (OIDC initiation): {tool_url}/lti/login" in output
    assert f"key set (JWKS): {tool_url}/lti/jwks" in output
    assert f"launch: {tool_url}/lti/launch/{ASSIGNMENT}" in output


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.ConnectionError:
        return False


def test_hidden_checks_held_back_until_the_deadline_and_the_score_sent_then(tmp_path: Path) -> None:
    """Until the deadline a student sees the public checks only and the score waits; the instructor moves the
    deadline to a moment away (the configuration changed, the tool started again): the held score is sent at the
    new deadline, hidden checks included, and the report shows them."""
    port = free_port()
    tool_url = f"http://127.0.0.1:{port}"
    platform = start_platform(tool_url)
    platform.users = {"stu-h": {"sub": "stu-h", "role": LEARNER, "name": "Ha Student"}}
    config_path = write_config(tmp_path, platform, tool_url)
    plain = config_path.read_text(encoding="utf-8")

    def policy(deadline: datetime) -> None:
        config_path.write_text(plain + f"""
[policies.{ASSIGNMENT}]
deadline = "{deadline.isoformat()}"
hidden = "after_deadline"
""", encoding="utf-8")

    policy(datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1))
    service = start_tool(config_path, port)
    sample = SAMPLES / "mistake_softmax_axis.py"
    try:
        session = browser()
        page = launch(Course(platform, service, load_config(config_path), config_path, tool_url), session, "stu-h")
        assert "the hidden checks count after it" in page.text
        upload(session, page, "mine.py", sample.read_bytes())
        wait_for("graded", lambda: 'data-status="graded"' in session.get(page.url, timeout=30).text, seconds=60)
        before = session.get(page.url, timeout=30).text
        assert "(public checks)" in before and "at the deadline, with the hidden checks" in before
        report_url = urljoin(page.url, re.search(r'href="([^"]+/report/\d+)"', before).group(1))
        report = session.get(report_url, timeout=30).text
        assert 'class="tag">hidden<' not in report and "The hidden checks are graded and count after" in report
        time.sleep(1.5)  # the sender's turns meanwhile: nothing goes out before the deadline
        assert not platform.scores_for("stu-h")  # held until the deadline
    finally:
        service.close()
    deadline = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    policy(deadline)
    service = start_tool(config_path, port)
    try:
        wait_for("the score at the new deadline", lambda: platform.scores_for("stu-h"), seconds=60)
        assert datetime.now(UTC) >= deadline
        (sent,) = platform.scores_for("stu-h")
        score, maximum = graders_score(sample, "stu-h")
        assert (sent["scoreGiven"], sent["scoreMaximum"]) == (score, maximum)  # the hidden checks' included
        assert 'class="tag">hidden<' in session.get(report_url, timeout=30).text
    finally:
        service.close()
        platform.close()


def test_the_score_sender_survives_a_failure_of_its_own_and_tries_again(course: Course,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """pylti1p3 raising a plain Exception (an issuer no longer in the configuration, say) is kept as the score's
    answer; the sender goes on, and the score is accepted once sending works."""
    monkeypatch.setattr(worker, "FIRST_RETRY_S", 0.2)
    real = worker.send_score

    def broken(*args: object, **kwargs: object) -> tuple[bool, int | None, str]:
        raise Exception("iss http://gone not found in settings")

    monkeypatch.setattr(worker, "send_score", broken)
    course.platform.users["stu-s"] = {"sub": "stu-s", "role": LEARNER, "name": "Sa Student"}
    session = browser()
    page = launch(course, session, "stu-s")
    upload(session, page, "s.py", (SAMPLES / "einsum_style.py").read_bytes())

    def tried() -> list:
        return [s for s in course.service.store.all_scores() if s.payload["userId"] == "stu-s" and s.attempts]

    wait_for("a failed try recorded", tried)
    assert "not found in settings" in tried()[0].answer and tried()[0].status == "pending"
    monkeypatch.setattr(worker, "send_score", real)
    wait_for("the score accepted", lambda: course.platform.scores_for("stu-s"))


def test_an_instructors_marks_from_the_review_app_are_sent_with_send_marks(course: Course) -> None:
    """A check's points overridden in the review app's store (what `grader review DATA` writes): Send marks puts it
    on the student's latest result, sends the new score, and the student's report gives the reason."""
    from grader.adjust.marking_store import MarkingStore
    from grader.record.result_json import result_from_json

    course.platform.users["stu-m"] = {"sub": "stu-m", "role": LEARNER, "name": "Mo Student"}
    session = browser()
    page = launch(course, session, "stu-m")
    upload(session, page, "m.py", (SAMPLES / "einsum_style.py").read_bytes())
    wait_for("stu-m's first score", lambda: course.platform.scores_for("stu-m"))
    (graded,) = [u for u in course.service.store.uploads_for(course.platform.url, CONTEXT, ASSIGNMENT)
                 if u.sub == "stu-m"]
    check = result_from_json(graded.result_json).checks[0]
    with MarkingStore(course.config.data / "gradebook.sqlite", ASSIGNMENT) as marks:
        marks.save_override("stu-m", check.check_id, points=0.0, maximum=check.max_score,
                            reason="the same code as another student's", base_version=0, author="prof")
    teacher = browser()
    desk = launch(course, teacher, "prof")
    action = re.search(r'<form method="post" action="([^"]+)" class="marks">', desk.text).group(1)
    csrf = re.search(r'name="csrf" value="([^"]+)"', desk.text).group(1)
    sent = teacher.post(urljoin(desk.url, action), data={"csrf": csrf}, timeout=60)
    assert sent.status_code == 200 and 'id="marks-sent"' in sent.text
    wait_for("the marked score sent", lambda: len(course.platform.scores_for("stu-m")) == 2)
    first, marked = course.platform.scores_for("stu-m")
    assert marked["scoreGiven"] == first["scoreGiven"] - check.max_score
    page = session.get(page.url, timeout=30)
    report = session.get(urljoin(page.url, re.search(r'href="([^"]+/report/\d+)" class="score"', page.text).group(1)),
                         timeout=30)
    assert "the same code as another student&#39;s" in report.text
    # Sending again with nothing changed sends nothing.
    again = teacher.post(urljoin(desk.url, action), data={"csrf": csrf}, timeout=60)
    assert 'id="marks-sent"' in again.text
    time.sleep(1.0)
    assert len(course.platform.scores_for("stu-m")) == 2

