"""The review app and the manual.csv import under real use: what an attack on them found, each against the real
server (waitress, as ``serve`` builds it, on 127.0.0.1), the real gradebook and, where a browser decides, Chromium.

The class of tests/review_class.py is graded once for this module (test_review.py's fixtures); each test works on
its own copy. Every connection goes to 127.0.0.1: a request "from another machine" is one over the loopback that
carries the Host header such a machine would send.
"""

from __future__ import annotations

import csv
import http.client
import http.server
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote, urlsplit

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st
from playwright.sync_api import Browser, expect

import grader.review.answers
from grader.adjust.manual import answer_hash
from grader.adjust.marking_store import MarkingStore
from grader.check.load import load_assignment
from grader.cli import main
from grader.pipeline import ClassRun
from grader.record.gradebook import stored_result
from grader.record.output import GRADEBOOK
from grader.report.notebook import markdown_html
from grader.review import app as review_app
from grader.review.server import Review, serve

from . import test_review
from .browser import watched_page
from .conftest import FIXTURE_SOLUTIONS
from .review_class import ASSIGNMENT, CODE, WRONG, grade, notebook
from .test_review import base, regrade, rows, sign_in

# test_review.py's fixtures, shared: the class graded once (for this module), a copy per test, the app over it.
graded, out, app = test_review.graded, test_review.out, test_review.app

pytestmark = pytest.mark.slow
SAVED = re.compile(r"^Saved by ")
# A 2 MB answer: its marking page must stay small and its rendering bounded whatever the answer's size.
PARAGRAPH = "The softmax makes each row sum to one, **so** the weights form a distribution over the keys. "
LONG_ANSWER = "\n\n".join(PARAGRAPH * 10 for _ in range(2_000_000 // (len(PARAGRAPH) * 10))) + "\n\nTHE LAST WORDS."
# An answer that leaves a <style> open inside a table, mid-answer: the rest must still be shown.
UNCLOSED = "The rows sum to one.\n\n<table><style>\n\nThe rest of my answer: the softmax normalises each row."


# ----- helpers: the app served, and requests over the loopback ----------------------------------------------
@contextmanager
def running(out_dir: Path, **options: object) -> Iterator[Review]:
    review = serve(out_dir, load_assignment(ASSIGNMENT, solutions_dir=FIXTURE_SOLUTIONS), **options)  # type: ignore[arg-type]
    thread = threading.Thread(target=review.run, daemon=True)
    thread.start()
    try:
        yield review
    finally:
        review.close()
        thread.join(timeout=10)


def raw(port: int, method: str, target: str, body: bytes | None = None,
        headers: dict[str, str | bytes] | None = None) -> tuple[int, http.client.HTTPMessage, bytes]:
    """One request to 127.0.0.1:``port`` as given (any Host header, any bytes in a header)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.putrequest(method, target, skip_host="Host" in (headers or {}), skip_accept_encoding=True)
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


@dataclass
class Session:
    """A marker's session without a browser: the cookie the token became and the pages' CSRF token."""

    port: int
    root: str  # the app's path ("/r/<random>")
    cookie: str  # "name=value"
    csrf: str

    def get(self, path: str) -> tuple[int, http.client.HTTPMessage, bytes]:
        return raw(self.port, "GET", self.root + path, headers={"Cookie": self.cookie})

    def post(self, path: str, body: bytes | str, **headers: str | bytes) -> tuple[int, dict, bytes]:
        data = body.encode() if isinstance(body, str) else body
        status, answer_headers, answer = raw(self.port, "POST", self.root + path, data, headers={
            "Cookie": self.cookie, "X-CSRF-Token": self.csrf, "Content-Type": "application/json", **headers})
        return status, dict(answer_headers), answer

    def page_data(self, path: str) -> dict:
        status, _, page = self.get(path)
        assert status == 200, page
        return json.loads(re.search(rb'<script type="application/json" id="page-data">(.*?)</script>', page,
                                    re.DOTALL).group(1))


def signed_in(review: Review) -> Session:
    address = urlsplit(review.url)
    root = address.path.rstrip("/")
    status, headers, _ = raw(address.port, "GET", f"{address.path}?{address.query}")
    assert status in (302, 303), status
    cookie = headers["Set-Cookie"].split(";")[0]
    _, _, page = raw(address.port, "GET", root + "/", headers={"Cookie": cookie})
    csrf = re.search(rb'<meta name="csrf-token" content="([^"]+)">', page).group(1).decode()
    return Session(address.port, root, cookie, csrf)


def write_rows(path: Path, table: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]), restval="")
        writer.writeheader()
        writer.writerows(table)


def class_copy(out_dir: Path, folder: Path, **changed: str) -> Path:
    """A copy of the class the output folder was graded from, with some students' notebooks changed."""
    source = Path(json.loads((out_dir / "accounting.json").read_text())["submissions"])
    copy = Path(shutil.copytree(source, folder))
    for student, text in changed.items():
        (copy / f"{student}.ipynb").write_text(text, encoding="utf-8")
    return copy


def mark_in_the_browser(out_dir: Path, student: str, author: str) -> None:
    """A mark of ``student``'s "why" as the review app saves it: the first rubric item, for the answer as graded."""
    written = load_assignment(ASSIGNMENT, solutions_dir=FIXTURE_SOLUTIONS).written
    why = next(w for w in written if w.id == "why")
    answer = next(r["answer_sha256"] for r in rows(out_dir / "manual.csv")
                  if (r["student"], r["question"]) == (student, "why"))
    with MarkingStore(out_dir / GRADEBOOK, ASSIGNMENT) as store:
        store.add_checks_rubric(written)
        store.save_mark(why, student, items=[next(iter(store.rubric("why")))], adjustment=0, comment="",
                        answer_sha256=answer, base_version=0, author=author)


# ----- R1, R5: the cookie reaches this app only ---------------------------------------------------------------
class _Recorder(http.server.BaseHTTPRequestHandler):
    cookies: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Recorder.cookies.append(self.headers.get("Cookie", ""))
        page = b"<!doctype html><title>another program</title><p>another program on this machine"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args: object) -> None:
        pass


def test_the_token_cookie_is_never_sent_to_another_server_on_this_machine(app: Review, browser: Browser) -> None:
    token = app.url.split("token=")[1]
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=other.serve_forever, daemon=True)
    thread.start()
    _Recorder.cookies = []
    try:
        with watched_page(browser) as (page, _):
            page.goto(app.url)
            expect(page.locator("h1")).to_have_text("Written answers")
            for path in ("/", "/mark/why/0", "/api/mark"):  # what a program there sees: not the app's secret path
                page.goto(f"http://127.0.0.1:{other.server_address[1]}{path}")
            page.goto(base(app) + "/mark/why/0")  # and the app still knows this browser
            expect(page.locator("#who")).to_have_text("ana")
    finally:
        other.shutdown()
        other.server_close()
    assert len(_Recorder.cookies) >= 3
    assert not [cookie for cookie in _Recorder.cookies if token in cookie]


def test_two_review_apps_open_in_one_browser_both_keep_working(app: Review, graded: ClassRun, tmp_path: Path,
                                                               browser: Browser) -> None:
    second_out = Path(shutil.copytree(graded.out_dir, tmp_path / "second",
                                      ignore=shutil.ignore_patterns(".grader.lock")))
    with running(second_out) as second, watched_page(browser) as (first_page, watch):
        second_page = first_page.context.new_page()
        sign_in(first_page, app, "Ana TA")
        sign_in(second_page, second, "Bo TA")
        for page, review in ((first_page, app), (second_page, second), (first_page, app)):
            response = page.goto(base(review) + "/mark/why/0")
            assert response is not None and response.status == 200
            page.keyboard.press("1")
            expect(page.locator("#state")).to_have_text(SAVED)
        assert not watch.console_errors and not watch.page_errors
    with MarkingStore(second_out / GRADEBOOK, ASSIGNMENT) as store:
        assert store.mark("ana", "why").author == "Bo TA"


# ----- R2: served to other machines -------------------------------------------------------------------------
def _reachable_addresses() -> set[str]:
    import ipaddress

    found = set()
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            try:
                address = ipaddress.ip_address(entry.address.split("%")[0])
            except ValueError:
                continue
            if address.version == 4 and not address.is_loopback and not address.is_link_local:
                found.add(str(address))
    return found


def test_served_to_other_machines_it_prints_their_address_and_answers_the_host_they_send(out: Path) -> None:
    process = subprocess.Popen([sys.executable, "-m", "grader", "review", str(out), "--solutions",
                                str(FIXTURE_SOLUTIONS), "--host", "0.0.0.0", "--allow-remote"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        printed = []
        for line in process.stdout:  # type: ignore[union-attr]
            printed.append(line)
            if line.startswith("(Ctrl-C"):
                break
        links = [urlsplit(line.strip()) for line in printed if line.strip().startswith("http://")]
        assert {link.hostname for link in links} == (_reachable_addresses() or {"127.0.0.1"})
        for link in links:
            # What a browser on another machine sends for this link, over the loopback: the token, then a page.
            status, headers, _ = raw(link.port, "GET", f"{link.path}?{link.query}", headers={"Host": link.netloc})
            assert status in (302, 303)
            cookie = headers["Set-Cookie"].split(";")[0]
            status, _, page = raw(link.port, "GET", link.path, headers={"Host": link.netloc, "Cookie": cookie})
            assert status == 200 and b"Written answers" in page
            # A name nobody printed (a DNS name a web page controls) is still refused.
            status, _, _ = raw(link.port, "GET", link.path, headers={"Host": f"attacker.example:{link.port}",
                                                                     "Cookie": cookie})
            assert status == 400
    finally:
        process.terminate()
        process.wait(timeout=30)


# ----- R3: graded again while the app is open ---------------------------------------------------------------
def test_an_answer_graded_again_under_an_open_page_is_shown_changed_and_never_marked_unread(
        app: Review, out: Path, browser: Browser, tmp_path: Path) -> None:
    root = base(app)
    with watched_page(browser) as (page, watch):
        sign_in(page, app, "TA1")
        page.goto(root + "/mark/why/1")  # ben
        page.keyboard.press("1")
        expect(page.locator("#state")).to_have_text("Saved by TA1")
        stale = page.context.new_page()
        stale.goto(root + "/mark/why/1")  # drawn before the class is graded again

        changed = class_copy(out, tmp_path / "class", ben=notebook(WRONG, "A new answer: the softmax.", "Odd."))
        assert grade(changed, out).graded_now == 1

        stale.keyboard.press("2")
        expect(stale.locator("#conflict")).to_contain_text("the answer changed since this page was drawn")
        expect(stale.locator("#state")).to_have_text("Not saved: the answer changed")
        with MarkingStore(out / GRADEBOOK, ASSIGNMENT) as store:
            old = store.mark("ben", "why")
        assert old.version == 1 and len(old.items) == 1  # nothing stored from the page that showed the old answer

        page.goto(root + "/mark/why/1")
        expect(page.locator("#answer")).to_contain_text("A new answer: the softmax.")
        expect(page.locator("#answer-changed")).to_contain_text("changed since TA1 marked it")
        expect(page.locator("#state")).to_contain_text("The answer changed since TA1 marked it")
        expect(page.locator("#points")).to_have_text("– / 4")
        expect(page.locator("#progress")).to_have_text("0 of 3 marked")
        page.keyboard.press("2")
        expect(page.locator("#state")).to_have_text("Saved by TA1")
        expect(page.locator("#answer-changed")).to_have_count(0)
        assert not watch.page_errors
    new = next(a.text for a in stored_result(out / GRADEBOOK, ASSIGNMENT, "ben").answers if a.id == "why")
    with MarkingStore(out / GRADEBOOK, ASSIGNMENT) as store:
        assert store.mark("ben", "why").answer_sha256 == answer_hash(new)
    run = grade(changed, out)
    ben = next(r for r in run.results if r.student == "ben")
    assert next(m for m in ben.manual if m.question == "why").state == "marked"
    assert not [p for p in run.adjustments.problems if "(ben, why)" in p and "not counted" in p]


def test_the_answers_are_read_again_only_when_the_class_was_graded_again(
        app: Review, out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = []
    stored = review_app._stored
    monkeypatch.setattr(review_app, "_stored", lambda *a: reads.append(a) or stored(*a))
    session = signed_in(app)
    for path in ("/", "/mark/why/0", "/mark/why/1", "/students/2"):
        assert session.get(path)[0] == 200
    assert reads == []  # pages drawn, nothing read again: a glance at the gradebook said nothing changed
    grade(class_copy(out, tmp_path / "class", ben=notebook(WRONG, "Another answer.", "Odd.")), out)
    for path in ("/", "/mark/why/1", "/mark/why/2"):
        assert session.get(path)[0] == 200
    assert [students for _, _, students in reads] == [["ben"]]  # once, and only whose answer was graded again
    assert b"Another answer." in session.get("/mark/why/1")[2]


# ----- R4: a huge answer ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def long_answers(graded: ClassRun, tmp_path_factory: pytest.TempPathFactory) -> ClassRun:
    """The class graded again with cleo's answer 2 MB long and ben's leaving a <style> open mid-answer."""
    root = tmp_path_factory.mktemp("long")
    out_dir = Path(shutil.copytree(graded.out_dir, root / "out", ignore=shutil.ignore_patterns(".grader.lock")))
    return grade(class_copy(out_dir, root / "class", cleo=notebook(CODE, LONG_ANSWER, "Yes."),
                            ben=notebook(WRONG, UNCLOSED, "They look odd.")), out_dir)


@pytest.fixture
def long_app(long_answers: ClassRun, tmp_path: Path) -> Iterator[Review]:
    copy = Path(shutil.copytree(long_answers.out_dir, tmp_path / "out", ignore=shutil.ignore_patterns(".grader.lock")))
    with running(copy) as review:
        yield review


def test_a_huge_answer_is_shown_cut_with_the_whole_of_it_a_link_away(long_app: Review,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[int] = []
    render = grader.review.answers.markdown_html
    monkeypatch.setattr(grader.review.answers, "markdown_html",
                        lambda source, *a: rendered.append(len(source)) or render(source, *a))
    session = signed_in(long_app)
    status, _, page = session.get("/mark/why/2")  # cleo
    assert status == 200
    assert len(page) < 300_000 < len(LONG_ANSWER)  # the page is bounded, whatever the answer's size
    assert rendered and max(rendered) <= 100_000  # and so is the (pure Python) rendering every marker waits on
    text = page.decode()
    notice = re.search(r'id="answer-cut">Answer cut: (\d+) of (\d+) characters\s+shown\. <a href="([^"]+)"', text)
    assert notice is not None and int(notice.group(2)) == len(LONG_ANSWER) > int(notice.group(1))
    status, headers, whole = raw(session.port, "GET", notice.group(3), headers={"Cookie": session.cookie})
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert whole.decode() == LONG_ANSWER  # everything, as text
    status, _, short = session.get("/mark/why/0")
    assert status == 200 and b"Answer cut" not in short


# ----- R10: an element left open does not hide the rest ------------------------------------------------------
def test_an_answer_leaving_a_style_open_shows_the_rest_in_the_browser(long_app: Review, browser: Browser) -> None:
    with watched_page(browser) as (page, watch):
        page.goto(long_app.url)
        page.goto(base(long_app) + "/mark/why/1")  # ben
        answer = page.locator("#answer")
        expect(answer).to_contain_text("The rows sum to one.")
        expect(answer).to_contain_text("The rest of my answer: the softmax normalises each row.")
        assert answer.locator("style, table style").count() == 0
        assert not watch.page_errors


RAW_TEXT = ("style", "script", "textarea", "title", "xmp", "noscript", "iframe", "noembed", "noframes", "plaintext")
HIDING = {"head", "style", "script", "textarea", "title", "xmp", "noscript", "iframe", "noembed", "noframes",
          "plaintext", "template"}
WORDS = st.lists(st.sampled_from(["softmax", "rows", "weights", "sum", "one", "keys", "attention"]), min_size=1,
                 max_size=6).map(" ".join)


def _shown_text(html: str) -> str:
    """The text a browser shows of ``html`` put in a page: parsed as browsers parse (html5lib), less what sits in
    an element that shows no text."""
    from bleach._vendor import html5lib

    document = html5lib.parse(f"<!doctype html><body><div>{html}</div>", namespaceHTMLElements=False)
    shown: list[str] = []

    def walk(node: object) -> None:
        if getattr(node, "tag", "") in HIDING:
            return
        shown.append(node.text or "")  # type: ignore[attr-defined]
        for child in node:  # type: ignore[attr-defined]
            walk(child)
            shown.append(child.tail or "")
    walk(document.find("body"))
    return " ".join("".join(shown).split())


@given(tag=st.sampled_from(RAW_TEXT), upper=st.booleans(),
       context=st.sampled_from(["", "<table>", "<table><tr><td>", "<div>", "<ul><li>", "<b>", "> "]),
       before=WORDS, after=WORDS, attributes=st.sampled_from(["", ' type="text/css"', " x=1"]),
       blank=st.sampled_from(["\n\n", "\n", " "]))
def test_no_element_left_open_hides_what_follows_it(tag: str, upper: bool, context: str, before: str, after: str,
                                                   attributes: str, blank: str) -> None:
    name = tag.upper() if upper else tag
    answer = f"{before}.\n\n{context}<{name}{attributes}>{blank}hidden? no.\n\nAFTER {after} END"
    shown = _shown_text(markdown_html(answer))  # the cleaning the instructor's page uses too
    assert f"AFTER {after} END" in shown and "hidden? no." in shown


# ----- R6: a gradebook another program holds locked ---------------------------------------------------------
def test_a_save_while_the_gradebook_is_locked_is_refused_at_once_with_why(app: Review, out: Path,
                                                                         browser: Browser) -> None:
    session = signed_in(app)
    data = session.page_data("/mark/why/0")
    body = json.dumps({"question": "why", "index": 0, "items": [], "adjustment": 0, "comment": "",
                       "base_version": 0, "author": "TA1", "answer_sha256": data["answer_sha256"]})
    with watched_page(browser) as (page, _):
        sign_in(page, app, "TA1")
        page.goto(base(app) + "/mark/why/0")
        holder = sqlite3.connect(out / GRADEBOOK, isolation_level=None)
        try:
            holder.execute("BEGIN EXCLUSIVE")  # another program writing
            status, headers, answer = session.post("/api/mark", body)
            assert status == 503 and headers["Content-Type"] == "application/json"
            assert "the gradebook is busy" in json.loads(answer)["error"]
            page.keyboard.press("1")
            expect(page.locator("#state")).to_contain_text("Not saved: the gradebook is busy")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        status, _, _ = session.post("/api/mark", body)
        assert status == 200  # the lock gone, the same save goes through
    assert review_app.REVIEW_BUSY_TIMEOUT_S <= 2  # the wait before "busy": short, not SQLite's 30 s of a run


# ----- R7: malformed requests -------------------------------------------------------------------------------
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8)
# JSON text as a request may carry it, what Python's json module reads included (NaN, Infinity, 1e400, huge ints).
JSON_TEXTS = st.one_of(JSON_VALUES.map(json.dumps), st.sampled_from(["1e400", "-1e400", "NaN", "Infinity",
                                                                     "-Infinity", str(1 << 64), "1" * 5000]))
NON_NUMBERS = st.one_of(
    st.text(min_size=1, max_size=12).map(json.dumps), st.lists(st.lists(st.integers(), min_size=1), min_size=1)
    .map(json.dumps), st.integers(min_value=1 << 63).map(str), st.integers(max_value=-(1 << 63)).map(str),
    st.sampled_from(["1e400", "-1e400", "NaN", "Infinity", "-Infinity", "true", "{}"]))
ALLOWED = {200, 400, 403, 404, 409, 422}


@dataclass
class Saves:
    session: Session
    bodies: dict[str, dict[str, object]]  # a valid body for each save

    def post(self, path: str, fields: dict[str, str]) -> tuple[int, dict, bytes]:
        """``path``'s valid body with ``fields`` given as JSON text."""
        body = {k: json.dumps(v) for k, v in self.bodies[path].items()} | fields
        return self.session.post(path, "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in body.items()) + "}")


@pytest.fixture
def saves(app: Review) -> Saves:
    session = signed_in(app)
    sha = session.page_data("/mark/why/0")["answer_sha256"]
    return Saves(session, {
        "/api/mark": {"question": "why", "index": 0, "items": [], "adjustment": 0, "comment": "", "base_version": 0,
                      "author": "prop", "answer_sha256": sha},
        "/api/rubric": {"question": "why", "id": None, "title": "an item", "points": 1, "comment": "",
                        "base_version": 0, "author": "prop", "deleted": False},
        "/api/override": {"student": "ana", "check_id": "q1.attend", "points": 1, "reason": "why not",
                          "base_version": 0, "author": "prop"}})


@given(data=st.data())
def test_any_json_in_any_field_of_a_save_is_answered_never_with_a_traceback(saves: Saves, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(sorted(saves.bodies)))
    fields = data.draw(st.dictionaries(st.sampled_from(sorted(saves.bodies[path])), JSON_TEXTS, min_size=1))
    status, headers, answer = saves.post(path, fields)
    assert status in ALLOWED, answer
    if status != 200:
        assert headers["Content-Type"] == "application/json" and json.loads(answer)


@given(data=st.data(), body=JSON_TEXTS)
def test_a_body_that_is_not_a_json_object_is_a_400(saves: Saves, data: st.DataObject, body: str) -> None:
    path = data.draw(st.sampled_from(sorted(saves.bodies)))
    status, _, answer = saves.session.post(path, body if not body.startswith("{") else f"[{body}]")
    assert status == 400 and json.loads(answer)["error"]


NUMBER_FIELDS = {"/api/mark": ["items", "base_version", "adjustment", "index"],
                 "/api/rubric": ["points", "base_version", "id"], "/api/override": ["points", "base_version"]}


@given(data=st.data(), value=NON_NUMBERS)
def test_a_number_field_holding_anything_but_a_number_is_a_400_that_says_so(saves: Saves, data: st.DataObject,
                                                                           value: str) -> None:
    path = data.draw(st.sampled_from(sorted(NUMBER_FIELDS)))
    field = data.draw(st.sampled_from(NUMBER_FIELDS[path]))
    status, _, answer = saves.post(path, {field: value})
    assert status == 400, answer
    error = json.loads(answer)["error"]
    assert field in error or "JSON" in error


HEADER_TEXT = st.text(st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters=";"), min_size=1,
                      max_size=20).filter(lambda text: text.strip() == text)


@given(token=st.text(min_size=1, max_size=20), cookie=HEADER_TEXT, csrf=HEADER_TEXT)
def test_any_token_cookie_or_csrf_header_is_refused_never_with_a_traceback(saves: Saves, token: str, cookie: str,
                                                                           csrf: str) -> None:
    session = saves.session
    status, _, _ = raw(session.port, "GET", f"{session.root}/?token={quote(token)}")
    assert status == 403
    name = session.cookie.split("=")[0]
    status, _, _ = raw(session.port, "GET", f"{session.root}/", headers={"Cookie": f"{name}={cookie}".encode()})
    assert status == 403
    status, _, _ = session.post("/api/mark", "{}", **{"X-CSRF-Token": csrf.encode()})
    assert status == 403


# ----- R8, R9, R12: manual.csv rows that cannot count, each reported once -------------------------------------
def test_a_manual_csv_row_for_a_student_not_in_the_class_is_not_imported_and_reported_once(out: Path) -> None:
    table = rows(out / "manual.csv")
    write_rows(out / "manual.csv", [*table, {"student": "zoe", "question": "why", "points": "2"}])
    run = regrade(out)
    with MarkingStore(out / GRADEBOOK, ASSIGNMENT) as store:
        assert store.mark("zoe", "why") is None
    assert [p for p in run.adjustments.problems if "zoe" in p] == [
        "manual.csv row 8 (zoe, why): no student 'zoe' in this class: not counted"]
    assert not [line for line in run.adjustments.summary if "brought into the gradebook" in line]


def typed_over_browser_marks(out: Path, **points: str) -> None:
    """Bo TA marks each named student's "why" in the browser; then other points are typed in manual.csv's rows."""
    for student in points:
        mark_in_the_browser(out, student, "Bo TA")
    table = rows(out / "manual.csv")
    for row in table:
        if row["question"] == "why" and row["student"] in points:
            row["points"] = points[row["student"]]
    write_rows(out / "manual.csv", table)


def test_out_of_range_points_typed_over_a_browser_mark_are_reported_once(out: Path) -> None:
    typed_over_browser_marks(out, ben="99", cleo="-1")
    run = regrade(out)
    assert sorted(p for p in run.adjustments.problems if "why)" in p) == [
        "manual.csv row 4 (ben, why): points 99 is above why's maximum, 4: not counted; Bo TA's mark in the "
        "browser, 2, counts",
        "manual.csv row 6 (cleo, why): points -1 is below 0: not counted; Bo TA's mark in the browser, 2, counts"]
    assert {(r["student"], r["question"]): r["points"] for r in rows(out / "manual.csv")}["ben", "why"] == "2"
    assert not [p for p in regrade(out).adjustments.problems if "why)" in p]  # said once, then the row is the mark's


def test_a_row_over_a_browser_mark_of_an_answer_that_changed_gets_one_reason(out: Path, tmp_path: Path) -> None:
    typed_over_browser_marks(out, ben="4", cleo="lots")
    changed = class_copy(out, tmp_path / "class", ben=notebook(WRONG, "Rewritten after marking.", "They look odd."),
                         cleo=notebook(CODE, "Rewritten too.", "Yes."))
    run = grade(changed, out)
    ben, cleo = sorted(p for p in run.adjustments.problems if "why)" in p)  # one each, one reason each
    earlier = (r"Bo TA's mark in the browser \(\d{4}-\d\d-\d\d \d\d:\d\d\) is for an earlier answer: nothing counts "
               r"until the answer is marked again \(grader review\)")
    assert re.fullmatch(r"manual\.csv row 4 \(ben, why\): 4 points typed there: not counted, as " + earlier, ben)
    assert re.fullmatch(r"manual\.csv row 6 \(cleo, why\): points 'lots' is not a number: not counted; " + earlier,
                        cleo)


# ----- R11: a damaged gradebook -----------------------------------------------------------------------------
def _damage(path: Path, how: str) -> None:
    if how == "text":
        path.write_text("student,score\nana,3\n", encoding="utf-8")
    else:  # pages after the first written over, as a disk error or a stray write leaves them
        with path.open("r+b") as handle:
            handle.seek(4096)
            handle.write(b"\xff" * (path.stat().st_size - 4096))
    for extra in path.parent.glob(path.name + "-*"):
        extra.unlink()


@pytest.mark.parametrize("how", ["text", "bytes"])
def test_a_damaged_gradebook_ends_grade_and_review_with_one_line_of_advice(out: Path, how: str,
                                                                           capsys: pytest.CaptureFixture) -> None:
    _damage(out / GRADEBOOK, how)
    submissions = json.loads((out / "accounting.json").read_text())["submissions"]
    for command in (["grade", ASSIGNMENT, submissions, "--out", str(out), "--solutions", str(FIXTURE_SOLUTIONS)],
                    ["review", str(out), "--solutions", str(FIXTURE_SOLUTIONS)]):
        assert main(command) == 7
        stderr = capsys.readouterr().err
        assert "Traceback" not in stderr
        (line,) = [line for line in stderr.splitlines() if line.startswith("error:")]
        assert f"{out / GRADEBOOK} is damaged" in line and "move it aside" in line
        assert "without the marks and overrides made in the browser" in line and "backup" in line
