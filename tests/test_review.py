"""The review app (`grader review`): written answers marked in a real browser (Playwright on the system's Chromium)
against the real server (waitress) over a real graded class, the marks kept in the real gradebook and shown by the
next `grader grade` in grades.csv, manual.csv and the students' pages.

A class of three notebooks of the written_maps fixture assignment (tests/review_class.py) is graded once; each test
works on its own copy of the output folder, with its own server.
"""

from __future__ import annotations

import csv
import http.cookiejar
import json
import re
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from playwright.sync_api import Browser, Page, expect

from grader.adjust.marking_store import Conflict, MarkingStore, mark_points
from grader.check.load import load_assignment
from grader.export.moodle import feedback_comment
from grader.pipeline import ClassRun
from grader.record.output import GRADEBOOK
from grader.review.server import Review, serve

from .browser import watched_page
from .conftest import FIXTURE_SOLUTIONS
from .review_class import ASSIGNMENT, grade, write_class

pytestmark = pytest.mark.slow
SAVED = re.compile(r"^Saved by ")


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> ClassRun:
    root = tmp_path_factory.mktemp("review")
    return grade(write_class(root / "class"), root / "out")


@pytest.fixture
def out(graded: ClassRun, tmp_path: Path) -> Path:
    """This test's copy of the graded class's output folder."""
    return Path(shutil.copytree(graded.out_dir, tmp_path / "out", ignore=shutil.ignore_patterns(".grader.lock")))


@pytest.fixture
def app(out: Path) -> Iterator[Review]:
    review = serve(out, load_assignment(ASSIGNMENT, solutions_dir=FIXTURE_SOLUTIONS))
    thread = threading.Thread(target=review.run, daemon=True)
    thread.start()
    yield review
    review.close()
    thread.join(timeout=10)


def base(review: Review) -> str:
    return review.url.split("/?")[0]


def regrade(out: Path) -> ClassRun:
    """`grader grade` again on the same class and output folder: nobody's code has changed."""
    return grade(Path(json.loads((out / "accounting.json").read_text())["submissions"]), out)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def sign_in(page: Page, review: Review, name: str) -> None:
    page.goto(review.url)
    page.fill("#author", name)
    page.dispatch_event("#author", "change")
    page.keyboard.press("Escape")


def press(page: Page, *keys: str) -> None:
    """Keys pressed on the marking page, each rubric key waiting for its save, j and k for the page they open."""
    for key in keys:
        if key in "jk":
            with page.expect_navigation():
                page.keyboard.press(key)
            continue
        page.keyboard.press(key)
        if key.isdigit():
            expect(page.locator("#state")).to_have_text(SAVED)


# ----- the store: versions, conflicts, history --------------------------------------------------------------
SAVES = st.lists(st.tuples(st.sampled_from(["ana", "ben"]), st.integers(0, 4), st.lists(st.integers(1, 3),
                                                                                         max_size=3)),
                 min_size=1, max_size=12)


@given(saves=SAVES)
def test_a_save_naming_a_stale_version_changes_nothing_and_every_change_is_kept(
        tmp_path_factory: pytest.TempPathFactory, saves: list) -> None:
    written = load_assignment(ASSIGNMENT, solutions_dir=FIXTURE_SOLUTIONS).written
    why = next(w for w in written if w.id == "why")
    with MarkingStore(tmp_path_factory.mktemp("store") / GRADEBOOK, ASSIGNMENT) as store:
        store.add_checks_rubric(written)
        version, accepted = 0, []
        for author, base_version, items in saves:
            before = store.mark("s1", "why")
            try:
                mark = store.save_mark(why, "s1", items=items, adjustment=0, comment=author, answer_sha256="h",
                                       base_version=base_version, author=author)
            except Conflict as conflict:
                assert base_version != version
                assert conflict.current == before and store.mark("s1", "why") == before
                continue
            assert base_version == version
            version = mark.version
            accepted.append(mark)
        assert store.mark("s1", "why") == (accepted[-1] if accepted else None)
        changes = store.changes("mark", "s1/why")
        assert [c.new["version"] for c in changes] == [m.version for m in accepted]
        assert [c.author for c in changes] == [m.author for m in accepted]
        assert all((c.old or {}).get("version", 0) == c.new["version"] - 1 for c in changes)


def test_changing_a_rubric_items_points_changes_every_mark_that_has_it(out: Path) -> None:
    written = load_assignment(ASSIGNMENT, solutions_dir=FIXTURE_SOLUTIONS).written
    why = next(w for w in written if w.id == "why")
    with MarkingStore(out / GRADEBOOK, ASSIGNMENT) as store:
        store.add_checks_rubric(written)
        first, second, _ = store.rubric("why")
        for student, items in (("ana", [first]), ("ben", [first, second]), ("cleo", [second])):
            store.save_mark(why, student, items=items, adjustment=0, comment="", answer_sha256="h", base_version=0,
                            author="ta")
        item = store.rubric("why")[first]
        store.save_rubric_item(why, item_id=first, title=item.title, points=1.5, comment=item.comment,
                               base_version=item.version, author="ta")
        rubric = store.rubric("why")
        assert {s: mark_points(m, rubric, why.points) for (s, _), m in store.marks("why").items()} == \
            {"ana": 1.5, "ben": 3.5, "cleo": 2.0}


# ----- safe by default -------------------------------------------------------------------------------------
def test_a_request_without_the_token_or_from_another_site_is_refused(app: Review) -> None:
    root = base(app)
    for url in (root + "/", root + "/mark/why/0", root + "/?token=wrong"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url)
        assert refused.value.code == 403
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    assert opener.open(app.url).url == root + "/"  # the token moves into a cookie, out of the address
    (cookie,) = jar
    assert cookie.has_nonstandard_attr("HttpOnly") and cookie.get_nonstandard_attr("SameSite") == "Strict"
    page = opener.open(root + "/mark/why/0")
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    # A change without the page's CSRF token (a form another site posts, say) is refused; so is another Host.
    request = urllib.request.Request(root + "/api/mark", method="POST", data=json.dumps(
        {"question": "why", "index": 0, "items": [], "base_version": 0, "author": "x"}).encode(),
        headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(request)
    assert refused.value.code == 403
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(urllib.request.Request(root + "/", headers={"Host": "attacker.example:80"}))
    assert refused.value.code == 400


def test_serving_beyond_this_machine_needs_a_flag(out: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "grader", "review", str(out), "--solutions", str(FIXTURE_SOLUTIONS),
                           "--host", "0.0.0.0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--allow-remote" in done.stderr


def test_an_answer_holding_html_and_script_is_shown_inert(app: Review, browser: Browser) -> None:
    with watched_page(browser) as (page, watch):
        page.goto(app.url)
        page.goto(base(app) + "/mark/why/0")  # ana's answer holds a script, an onerror and a javascript: link
        answer = page.locator("#answer")
        expect(answer).to_contain_text("normalises each row")
        assert answer.locator("script, [onerror]").count() == 0
        assert all(not (href or "").startswith("javascript:") for href in
                   answer.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))"))
        assert page.evaluate("window.__pwned") is None
        assert not watch.console_errors and not watch.page_errors
        assert all(url.startswith(base(app)) for url in watch.requests)  # nothing loaded from anywhere else


# ----- marking by keyboard, rubric edits, conflicts, overrides, and what the next `grader grade` shows --------
def test_marks_given_by_keyboard_reach_grades_csv_manual_csv_and_the_students_pages(app: Review, browser: Browser,
                                                                                    out: Path) -> None:
    root = base(app)
    with watched_page(browser) as (page, watch):
        sign_in(page, app, "Ana TA")
        # Two questions, three students each, by keyboard only: rubric items by number, j to the next student.
        page.goto(root + "/mark/why")
        expect(page.locator("#who")).to_have_text("ana")
        press(page, "1", "j")
        expect(page.locator("#who")).to_have_text("ben")
        press(page, "1", "2", "j")
        press(page, "2", "3")
        expect(page.locator("#progress")).to_have_text("3 of 3 marked")
        page.goto(root + "/mark/maps?anon=1")  # names hidden while marking
        expect(page.locator("#who")).to_have_text("Student 1")
        assert "ana" not in page.content()
        press(page, "1", "j", "2", "j", "1")
        page.keyboard.press("c")
        page.keyboard.type("A clear diagonal.")
        page.keyboard.press("Control+Enter")
        expect(page.locator("#state")).to_have_text(SAVED)
        # Editing an item's points changes every student who has it: "Names the softmax" 2 -> 1.5.
        page.goto(root + "/mark/why/1")
        expect(page.locator("#points")).to_have_text("4 / 4")
        form = page.locator("form.rubric-item").first
        page.locator("details.edit-rubric summary").click()
        form.locator("input[name=points]").fill("1.5")
        with page.expect_navigation():
            form.locator("button").click()
        expect(page.locator("#points")).to_have_text("3.5 / 4")
        page.goto(root + "/mark/why/0")
        expect(page.locator("#points")).to_have_text("1.5 / 4")
        # Reloaded: everything kept.
        page.goto(root + "/mark/why/2")
        assert [box.is_checked() for box in page.locator("input.item").all()] == [False, True, True]
        assert not watch.console_errors and not watch.page_errors

    # Two markers on the same answer: the second save names a version that is gone and is shown the first one's.
    with watched_page(browser) as (first, _), watched_page(browser) as (second, _):
        sign_in(first, app, "Ana TA")
        sign_in(second, app, "Bo TA")
        for page in (first, second):
            page.goto(root + "/mark/maps/1")
        press(first, "1")
        second.keyboard.press("2")
        expect(second.locator("#conflict")).to_contain_text("Ana TA saved a mark for this answer")
        expect(second.locator("#state")).to_have_text("Not saved: conflict")
        assert [box.is_checked() for box in second.locator("input.item").all()] == [True, True]

    # A regrade: ben's q1 check overridden with a reason.
    with watched_page(browser) as (page, _):
        sign_in(page, app, "Prof")
        page.goto(root + "/students/1")
        form = page.locator("form.override[data-check='q1.attend']")
        form.locator("input[name=points]").fill("1")
        form.locator("input[name=reason]").fill("Regrade request: only the axis was wrong")
        form.locator("button").click()
        expect(form.locator(".state")).to_have_text("saved by Prof")

    run = regrade(out)
    assert run.graded_now == 0  # nobody's code ran again
    grades = {row["student"]: row for row in rows(out / "grades.csv")}
    # ana: q1 2 + why 1.5 + maps 3; ben: q1 overridden to 1 + why 3.5 + maps 2 (3 - 1: the second TA's save was
    # refused); cleo: q1 2 + why 1 (2 - 1) + maps 3.
    assert {s: float(row["score"]) for s, row in grades.items()} == {"ana": 6.5, "ben": 6.5, "cleo": 6.0}
    sheet = {(row["student"], row["question"]): row for row in rows(out / "manual.csv")}
    assert sheet["cleo", "maps"]["comment"] == "A clear diagonal." and sheet["cleo", "maps"]["marked_by"] == "Ana TA"
    assert sheet["ben", "why"]["points"] == "3.5"
    results = json.loads((out / "students" / "ben" / "results.json").read_text(encoding="utf-8"))  # Gradescope's
    assert results["score"] == 6.5
    attend = next(t for t in results["tests"] if t["extra_data"]["check_id"] == "q1.attend")
    assert attend["score"] == 1 and attend["output"].startswith("Regraded: 1 of 2 points (the check gave 0).")
    assert "Prof" not in json.dumps(results)
    page_text = (out / "students" / "ben" / "report.html").read_text(encoding="utf-8")
    assert "Regraded: 1 of 2 points" in page_text and "only the axis was wrong" in page_text
    assert "Prof" not in page_text  # who regraded is the instructor's to see
    assert "Right: each row is a softmax over the keys." in page_text  # the rubric item's comment
    assert "Prof" in (out / "students" / "ben" / "instructor.html").read_text(encoding="utf-8")
    # Moodle's worksheet comment (Canvas and Moodle attach the student's page, which says it all).
    ben = next(r for r in run.results if r.student == "ben")
    assert feedback_comment(ben, ben.score, ben.max_score) == (
        "Autograder: 6.5 / 9. Lost points on: q1 attend (1 / 2). Written answers: why 3.5 / 4, maps 2 / 3. Regraded "
        "by hand: q1.attend 1 / 2 (Regrade request: only the axis was wrong). Details in the attached report.html.")


def test_a_spreadsheet_mark_is_imported_and_one_that_contradicts_the_browser_is_reported(out: Path) -> None:
    written = load_assignment(ASSIGNMENT, solutions_dir=FIXTURE_SOLUTIONS).written
    why = next(w for w in written if w.id == "why")
    path = out / "manual.csv"
    table = rows(path)
    for row in table:
        if row["question"] == "why":
            row["points"] = {"ana": "3", "ben": "2", "cleo": ""}[row["student"]]
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    with MarkingStore(out / GRADEBOOK, ASSIGNMENT) as store:  # ben was marked in the browser meanwhile
        store.add_checks_rubric(written)
        first = next(iter(store.rubric("why")))
        ben = next(r["answer_sha256"] for r in table if r["student"] == "ben" and r["question"] == "why")
        store.save_mark(why, "ben", items=[first], adjustment=0, comment="", answer_sha256=ben, base_version=0,
                        author="Bo TA")
    run = regrade(out)
    scores = {r.student: next(m.points for m in r.manual if m.question == "why") for r in run.results}
    assert scores == {"ana": 3, "ben": 2, "cleo": None}
    assert not [p for p in run.adjustments.problems if "(ben, why)" in p]  # the same points: nothing to tell
    with MarkingStore(out / GRADEBOOK, ASSIGNMENT) as store:
        assert store.mark("ana", "why").author == "manual.csv"
        item = store.rubric("why")[first]
        store.save_rubric_item(why, item_id=first, title=item.title, points=1, comment="", base_version=item.version,
                               author="Bo TA")
    table = rows(path)
    for row in table:
        if (row["student"], row["question"]) == ("ben", "why"):
            row["points"] = "4"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    run = regrade(out)
    (problem,) = [p for p in run.adjustments.problems if "(ben, why)" in p]
    assert "4 points typed there, but Bo TA marked it 1 in the browser" in problem
    assert next(m.points for r in run.results if r.student == "ben" for m in r.manual if m.question == "why") == 1
    assert {(r["student"], r["question"]): r["points"] for r in rows(path)}["ben", "why"] == "1"


def test_marks_and_overrides_reach_results_graded_in_job_processes(out: Path) -> None:
    """A large class is graded in job processes, which apply the marks the run read at its start."""
    written = load_assignment(ASSIGNMENT, solutions_dir=FIXTURE_SOLUTIONS).written
    why = next(w for w in written if w.id == "why")
    answer = next(r["answer_sha256"] for r in rows(out / "manual.csv") if (r["student"], r["question"]) == ("ana",
                                                                                                          "why"))
    with MarkingStore(out / GRADEBOOK, ASSIGNMENT) as store:
        store.add_checks_rubric(written)
        store.save_mark(why, "ana", items=list(store.rubric("why"))[:2], adjustment=0, comment="", answer_sha256=answer,
                        base_version=0, author="ta")
        store.save_override("cleo", "q1.attend", points=1, maximum=2, reason="partly right", base_version=0,
                            author="ta")
    submissions = Path(json.loads((out / "accounting.json").read_text())["submissions"])
    run = grade(submissions, out, force=True, job_processes=True)
    assert run.job_processes == 2 and run.graded_now == 3
    graded = {r.student: r for r in run.results}
    assert next(m.points for m in graded["ana"].manual if m.question == "why") == 4
    (attend,) = [c for c in graded["cleo"].checks if c.check_id == "q1.attend"]
    assert attend.score == 1 and attend.override is not None and attend.override.reason == "partly right"


def test_a_rubric_item_deleted_in_the_page_no_longer_counts_for_anyone(app: Review, browser: Browser) -> None:
    root = base(app)
    with watched_page(browser) as (page, _):
        sign_in(page, app, "Ana TA")
        page.goto(root + "/mark/why/2")
        press(page, "2", "3")  # +2 and -1
        expect(page.locator("#points")).to_have_text("1 / 4")
        page.locator("details.edit-rubric summary").click()
        form = page.locator("form.rubric-item").nth(2)  # "Confuses rows and columns", -1
        form.locator("input[name=deleted]").check()
        with page.expect_navigation():
            form.locator("button").click()
        expect(page.locator("#points")).to_have_text("2 / 4")
        assert page.locator("input.item").count() == 2
