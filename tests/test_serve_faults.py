"""``grader serve`` under faults and floods, run as the command a service manager runs (`grader serve --config FILE`,
a process of its own) against two real LTI platforms (lti1p3platform, tests/lti_platform.py) on 127.0.0.1: request
limits per user and per address (429 with Retry-After), the same user id from two platforms kept apart, and a crash
in the middle of grading (SIGKILL of the tool's process group, and of its main process alone) that leaves no process
behind and is graded once, its score posted once, after the restart.

One tool process serves the whole module (the crash tests restart it on the same data folder); every wait is a
bounded loop."""

from __future__ import annotations

import contextlib
import gc
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urljoin

import psutil
import pytest
import requests

from grader.errors import ConfigurationError
from grader.serve.config import PAGE_REFRESH_S, POLLING_TABS, Limits, load_config
from grader.serve.limits import RateLimiter
from grader.serve.store import ServeStore

from .lti_platform import CLIENT_ID, CONTEXT, DEPLOYMENT_ID, INSTRUCTOR, LEARNER, CoursePlatform, start_platform
from .processes import student_processes
from .test_serve import (
    ASSIGNMENT,
    SAMPLES,
    Course,
    _answers,
    browser,
    free_port,
    graders_score,
    launch,
    upload,
    wait_for,
    write_config,
)

# Small budgets, so that a burst is cheap, that fill slowly enough (a request a second or so) for a refusal to be
# seen again at once, and soon enough (Retry-After: 1 s) for the test to see the end of it.
LIMITS = {"requests": 30, "launches": 20, "window_s": 20}
SLOW_SAMPLE = "import time\ntime.sleep(1)  # long enough to be killed while it is graded\n" + (
    SAMPLES / "einsum_style.py").read_text(encoding="utf-8")


@dataclass
class Tool:
    """`grader serve` as a process of its own, with its two platforms (``a`` and ``b``, two issuers)."""

    a: CoursePlatform
    b: CoursePlatform
    config_path: Path
    port: int
    url: str
    process: subprocess.Popen[bytes] | None = None
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def data(self) -> Path:
        return self.config_path.parent / "data"

    def course(self, platform: CoursePlatform) -> Course:
        return Course(platform, None, None, self.config_path, self.url)  # type: ignore[arg-type]

    def start(self) -> None:
        """Start the tool and wait until it answers (60 s at most); a port still held by the tool just killed is
        tried again for 10 s. What it prints goes to serve-N.log beside the configuration."""
        retry_until = time.monotonic() + 10.0
        while True:
            log = self.config_path.with_name(f"serve-{len(self.started)}.log")
            with log.open("wb") as output:
                process = subprocess.Popen([sys.executable, "-m", "grader", "serve", "--config", str(self.config_path),
                                            "--port", str(self.port)], stdout=output, stderr=subprocess.STDOUT,
                                           start_new_session=True)
            self.started.append(process)
            answer_by = time.monotonic() + 60.0
            while process.poll() is None and not _answers(f"{self.url}/lti/jwks"):
                assert time.monotonic() < answer_by, f"grader serve did not answer within 60 s: {log.read_text()}"
                time.sleep(0.05)
            if process.poll() is None:
                self.process = process
                return
            said = log.read_text(errors="replace")
            assert "Address already in use" in said and time.monotonic() < retry_until, said

    def rows(self, sql: str, *args: object) -> list[tuple]:
        with contextlib.closing(sqlite3.connect(f"file:{self.data / 'serve.sqlite'}?mode=ro", uri=True)) as db:
            return db.execute(sql, args).fetchall()

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(10)


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tool]:
    folder = tmp_path_factory.mktemp("serve-faults")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    a, b = start_platform(url), start_platform(url)
    for platform in (a, b):
        platform.users = {"prof": {"sub": "prof", "role": INSTRUCTOR, "name": "Dr Prof"}}
    # trusted_proxy: the tests stand in for the course's reverse proxy and name the client's address themselves.
    config_path = write_config(folder, a, url, extra='trusted_proxy = "127.0.0.1"')
    config_path.write_text(config_path.read_text(encoding="utf-8") + f"""
[[platforms]]
issuer = "{b.url}"
client_id = "{CLIENT_ID}"
deployment_ids = ["{DEPLOYMENT_ID}"]
auth_login_url = "{b.url}/auth"
auth_token_url = "{b.url}/token"
key_set_url = "{b.url}/jwks"

[limits]
{chr(10).join(f"{key} = {value}" for key, value in LIMITS.items())}
""", encoding="utf-8")
    tool = Tool(a, b, config_path, port, url)
    try:
        tool.start()
        yield tool
    finally:
        tool.close()
        gc.collect()  # the tests' browser sessions, and their connections a platform's server would wait for
        a.close()
        b.close()


GRADER = ThreadPoolExecutor(1, thread_name_prefix="graders-score")  # one at a time: the grader's imports are lazy


def graders_score_meanwhile(path: Path, student: str) -> Future[tuple[float, float]]:
    """The grader's own score for ``path`` as ``student``, computed in a thread while the tool grades."""
    return GRADER.submit(graders_score, path, student)


def learner(platform: CoursePlatform, sub: str) -> str:
    platform.users[sub] = {"sub": sub, "role": LEARNER, "name": f"{sub} at {platform.url}"}
    return sub


def burst(send: object, limit: int) -> requests.Response:
    """Requests sent by ``send()`` at once until one is refused (at most three times the limit, and 10): every one
    before it answered (served, or refused for its own fault: 403), at least ``limit`` of them. The refusal."""
    for count in range(max(3 * limit, 10)):
        answer = send()  # type: ignore[operator]
        if answer.status_code == 429:
            assert count >= limit, f"refused after {count} requests, fewer than the limit ({limit})"
            return answer
        assert answer.status_code in (200, 302, 403), (answer.status_code, answer.text[:300])
    raise AssertionError(f"{max(3 * limit, 10)} requests at once, none refused")


def refused_for(answer: requests.Response) -> float:
    """A 429's Retry-After (seconds), checked: a whole number from 1, and a message that says to wait."""
    assert answer.status_code == 429, (answer.status_code, answer.text[:300])
    seconds = int(answer.headers["Retry-After"])
    assert 1 <= seconds <= LIMITS["window_s"]
    assert "too many requests" in answer.text and f"wait {seconds} s" in answer.text
    return seconds


# ----- request limits ---------------------------------------------------------------------------------------------
def test_a_users_burst_is_answered_429_with_retry_after_and_no_one_else_is_limited(tool: Tool) -> None:
    sub = learner(tool.a, "stu-burst")
    learner(tool.b, sub)  # the same user id at the other platform: another user
    other = learner(tool.a, "stu-calm")
    pages = {}
    for name, platform, user in (("burst", tool.a, sub), ("same id, other platform", tool.b, sub),
                                 ("other user", tool.a, other)):
        session = browser()
        pages[name] = (session, launch(tool.course(platform), session, user))
    session, page = pages["burst"]
    # (the launch's own page counted one already)
    refused_for(burst(lambda: session.get(page.url, timeout=30), LIMITS["requests"] - 1))
    # The user's forms count too (a form with a wrong CSRF token, which stores nothing, until one is refused: the
    # budget may have gained a request meanwhile).
    retry = refused_for(burst(lambda: session.post(page.url.rstrip("/") + "/upload", data={"csrf": "wrong"},
                                                   files={"file": ("a.py", b"x = 1\n")}, timeout=30), 0))
    # At the same time, the others are served.
    for name in ("same id, other platform", "other user"):
        other_session, other_page = pages[name]
        assert other_session.get(other_page.url, timeout=30).status_code == 200, name
    time.sleep(retry)
    assert session.get(page.url, timeout=30).status_code == 200
    assert not tool.rows("SELECT id FROM uploads WHERE sub = ?", sub)


def test_logins_from_one_address_are_limited_and_another_address_is_not(tool: Tool) -> None:
    learner(tool.a, "stu-login")
    query = urlencode({"iss": tool.a.url, "login_hint": "stu-login", "client_id": CLIENT_ID,
                       "target_link_uri": f"{tool.url}/lti/launch/{ASSIGNMENT}", "lti_message_hint": "{}"})

    def login(address: str) -> requests.Response:
        return requests.get(f"{tool.url}/lti/login?{query}", headers={"X-Forwarded-For": address},
                            allow_redirects=False, timeout=30)

    refused = burst(lambda: login("203.0.113.5"), LIMITS["launches"])
    refused_for(refused)
    assert "from your address" in refused.text
    # Launches count too (a launch whose id_token does not verify, refused 403, until one is refused 429).
    retry = refused_for(burst(lambda: requests.post(f"{tool.url}/lti/launch/{ASSIGNMENT}", data={"id_token": "x",
                                                    "state": "y"}, headers={"X-Forwarded-For": "203.0.113.5"},
                                                    timeout=30), 0))
    assert login("203.0.113.6").status_code == 302  # another address, at the same time
    time.sleep(retry)
    assert login("203.0.113.5").status_code == 302


def test_a_waiting_students_own_reloads_are_never_limited() -> None:
    """What a student's page does while an upload waits, reloading itself every PAGE_REFRESH_S (the page says so),
    with POLLING_TABS pages open and a report opened every half minute, for an hour: never refused, at the default
    limits nor at the tests'. (The tool refuses a configuration that would: the next test.)"""
    assert f'<meta http-equiv="refresh" content="{PAGE_REFRESH_S:g}">' in (
        Path(__file__).parent.parent / "grader" / "serve" / "templates" / "student.html").read_text(encoding="utf-8")
    step = 0.5
    for limits in (Limits(), Limits(**LIMITS)):  # type: ignore[arg-type]
        now = [0.0]
        limiter = RateLimiter(limits.requests, limits.window_s, clock=lambda now=now: now[0])
        for tick in range(int(3600 / step)):
            now[0] = tick * step
            if tick % int(PAGE_REFRESH_S / step) == 0:
                assert all(limiter.take("student") == 0.0 for _ in range(POLLING_TABS)), (limits, now[0])
            if tick % int(30 / step) == 7:
                assert limiter.take("student") == 0.0, (limits, now[0])


def test_a_limit_that_would_refuse_a_waiting_students_reloads_is_refused(tmp_path: Path) -> None:
    platform = CoursePlatform(url="https://lms.example.edu")
    path = write_config(tmp_path, platform, "https://grader.example.edu")
    text = path.read_text(encoding="utf-8")
    for limits, said in (("requests = 10\nwindow_s = 60", "would refuse a waiting student's pages"),
                         ("requests = 2\nwindow_s = 1", "at least 3 at once"),
                         ("window_s = 0", "window_s must be"), ("launches = 0", "whole numbers from 1"),
                         ("per_minute = 5", "[limits] holds")):
        path.write_text(f"{text}\n[limits]\n{limits}\n", encoding="utf-8")
        with pytest.raises(ConfigurationError, match=re.escape(said)):
            load_config(path)
    path.write_text(f"{text}\n[limits]\nrequests = 60\nwindow_s = 30.5\n", encoding="utf-8")
    assert load_config(path).limits == Limits(requests=60, window_s=30.5)


def test_the_limiter_forgets_what_it_no_longer_needs_and_counts_exactly_under_threads() -> None:
    import threading

    now = [0.0]
    limiter = RateLimiter(5, 10.0, max_keys=1000, clock=lambda: now[0])
    for user in range(5000):  # a flood of distinct users: never more than max_keys kept
        limiter.take(user)
    assert len(limiter) == 1000
    now[0] = 10.0  # a window later every bucket is full again: forgotten at the next request
    limiter.take("late")
    assert len(limiter) == 1
    # Eight threads taking at once: exactly the budget is let through.
    limiter = RateLimiter(100, 3600.0)
    taken = []
    barrier = threading.Barrier(8)

    def take() -> None:
        barrier.wait()
        taken.extend(1 for _ in range(50) if limiter.take("one") == 0.0)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(taken) == 100
    assert 30 < limiter.take("one") <= 36  # a token every 36 s


# ----- one user id, two platforms ----------------------------------------------------------------------------------
def test_the_same_user_id_from_two_platforms_is_two_students(tool: Tool) -> None:
    sub = "stu-twin"
    samples = {"a": SAMPLES / "einsum_style.py", "b": SAMPLES / "mistake_softmax_axis.py"}
    # The gradebook's names: the platform's id for the first, with its platform and course for the other.
    names = {"a": sub, "b": f"{sub} ({tool.b.url.split('://', 1)[1]}, course {CONTEXT})"}
    grader_says = {name: graders_score_meanwhile(path, names[name]) for name, path in samples.items()}
    pages = {}
    for name, platform in (("a", tool.a), ("b", tool.b)):
        learner(platform, sub)
        session = browser()
        page = launch(tool.course(platform), session, sub)
        assert upload(session, page, f"from-{name}.py", samples[name].read_bytes()).status_code == 200
        pages[name] = (session, page)
    for name, (session, page) in pages.items():
        # Waiting as the student's page does, reloading (faster than its own 3 s here): never refused.
        def graded(session: requests.Session = session, page: requests.Response = page) -> bool:
            answer = session.get(page.url, timeout=30)
            assert answer.status_code == 200, answer.text[:300]
            time.sleep(0.3)
            return 'data-status="graded"' in answer.text

        wait_for(f"{name}'s upload graded", graded, seconds=120)
    wait_for("both scores", lambda: tool.a.scores_for(sub) and tool.b.scores_for(sub))
    expected = {name: future.result() for name, future in grader_says.items()}
    assert expected["a"] != expected["b"]
    for name, platform in (("a", tool.a), ("b", tool.b)):
        (sent,) = platform.scores_for(sub)  # each platform receives its own student's score, and only that
        assert (sent["scoreGiven"], sent["scoreMaximum"]) == expected[name]
        session, page = pages[name]
        text = session.get(page.url, timeout=30).text
        assert len(re.findall(r'<tr data-upload="\d+"', text)) == 1 and f"from-{name}.py" in text
        own, = re.findall(r'href="([^"]+/report/\d+)" class="score"', text)
        assert f"{expected[name][0]:g} / {expected[name][1]:g}" in text
        assert session.get(urljoin(page.url, own), timeout=30).status_code == 200
        # The instructor at each platform sees one upload of this student's, their own platform's.
        teacher = browser()
        desk = launch(tool.course(platform), teacher, "prof")
        (row,) = re.findall(rf'<tr data-sub="{sub}">.*?</tr>', desk.text, re.S)
        assert f"<td>{sub} at {platform.url}</td>" in row and "<td>1</td>" in row  # its name there, one upload
        assert f">{expected[name][0]:g} / {expected[name][1]:g}</a>" in row
    # The other platform's upload number is not this student's.
    (upload_b,) = tool.rows("SELECT id FROM uploads WHERE issuer = ? AND sub = ?", tool.b.url, sub)
    session, page = pages["a"]
    assert session.get(f"{page.url.rstrip('/')}/report/{upload_b[0]}", timeout=30).status_code == 404
    # Two students in the gradebook (what grader review DATA and the instructor's marks go by).
    with contextlib.closing(sqlite3.connect(f"file:{tool.data / 'gradebook.sqlite'}?mode=ro", uri=True)) as db:
        rows = dict(db.execute("SELECT student, score FROM submissions WHERE student LIKE ?", (f"{sub}%",)))
    assert rows == {names["a"]: expected["a"][0], names["b"]: expected["b"][0]}


def test_a_database_of_schema_1_keeps_working_and_names_its_students(tmp_path: Path) -> None:
    """serve.sqlite as the first version made it (no students table): opened, its students are named in the order
    they first uploaded (the first keeps the platform's id, as the gradebook has it), and it goes on."""
    path = tmp_path / "serve.sqlite"
    ServeStore(path).close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("DROP TABLE students")
        db.execute("PRAGMA user_version = 1")
        for number, (issuer, sub) in enumerate((("https://a.example", "s1"), ("https://b.example", "s1"),
                                                 ("https://a.example", "s2"), ("https://b.example", "s1")), 1):
            db.execute("INSERT OR IGNORE INTO launches VALUES (?, ?, 'c', 'd', 'course', ?, '', 'learner', ?, '{}', "
                       "'')", (f"L{issuer}{sub}", issuer, sub, ASSIGNMENT))
            db.execute("INSERT INTO uploads (id, launch, issuer, context, sub, assignment, file, kind, size, "
                       "uploaded_name, submitted_at, status) VALUES (?, ?, ?, 'course', ?, ?, 'f.py', 'python', 1, "
                       "'f.py', '', 'graded')", (number, f"L{issuer}{sub}", issuer, sub, ASSIGNMENT))
        db.commit()
    store = ServeStore(path)
    try:
        assert store._read("PRAGMA user_version") == [(2,)]
        assert store.student_of("https://a.example", "course", "s1") == "s1"
        assert store.student_of("https://b.example", "course", "s1") == "s1 (b.example, course course)"
        assert store.student_of("https://a.example", "course", "s2") == "s2"
        assert store.student_of("https://a.example", "other course", "s2") == "s2 (a.example, course other course)"
        assert len(store.uploads_of("https://b.example", "course", "s1", ASSIGNMENT)) == 2
    finally:
        store.close()
    store = ServeStore(path)  # opened again: the same names
    try:
        assert store.student_of("https://b.example", "course", "s1") == "s1 (b.example, course course)"
    finally:
        store.close()


# ----- a crash in the middle of grading -----------------------------------------------------------------------------
@pytest.mark.parametrize("kill", ["process group", "main process"])
def test_a_crash_mid_grading_leaves_no_process_and_resumes_once(tool: Tool, kill: str) -> None:
    sub = learner(tool.a, f"stu-crash-{kill.split()[0]}")
    grader_says = graders_score_meanwhile(SAMPLES / "einsum_style.py", sub)  # the same code, without the wait
    session = browser()
    page = launch(tool.course(tool.a), session, sub)
    assert upload(session, page, "slow.py", SLOW_SAMPLE.encode()).status_code == 200
    (upload_id,), = tool.rows("SELECT id FROM uploads WHERE sub = ?", sub)
    assert tool.process is not None
    pid = tool.process.pid
    # Killed while the upload is graded: the store says so, and the student's process runs in the sandbox beside
    # the worker's zygote it was forked from.
    deadline = time.monotonic() + 60
    while not (tool.rows("SELECT 1 FROM uploads WHERE id = ? AND status = 'grading'", upload_id)
               and len(student_processes(pid)) >= 2):
        assert time.monotonic() < deadline, "the upload was not being graded within 60 s"
        assert not tool.rows("SELECT 1 FROM uploads WHERE id = ? AND status = 'graded'", upload_id), "graded too soon"
        time.sleep(0.02)
    descendants = psutil.Process(pid).children(recursive=True)
    assert descendants, "no grading process to leave behind"
    if kill == "process group":
        os.killpg(pid, signal.SIGKILL)
    else:
        os.kill(pid, signal.SIGKILL)
    tool.process.wait(10)
    # Nothing of the killed tool is left: its sandboxes (in sessions of their own, out of the group's reach) and the
    # student processes in them die with it.
    deadline = time.monotonic() + 10
    while (left := [p for p in descendants if _alive(p)] or student_processes(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, left
    assert tool.rows("SELECT status FROM uploads WHERE id = ?", upload_id) == [("grading",)]
    assert not tool.a.scores_for(sub)

    tool.start()  # the same configuration and data folder
    wait_for("the score after the restart", lambda: tool.a.scores_for(sub), seconds=60)
    time.sleep(0.3)  # a second post would come now
    (sent,) = tool.a.scores_for(sub)
    assert (sent["scoreGiven"], sent["scoreMaximum"]) == grader_says.result()
    assert tool.rows("SELECT status FROM uploads WHERE id = ?", upload_id) == [("graded",)]
    # Graded once after the restart: one result, one score, accepted at its first try.
    assert tool.rows("SELECT status, attempts FROM scores WHERE upload = ?", upload_id) == [("accepted", 1)]


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
