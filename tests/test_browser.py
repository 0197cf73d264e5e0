"""The HTML pages in a real browser: headless Chromium (the system's, driven by Playwright; see tests/browser.py).

A small class (a correct notebook, a q1 mistake, a file that does not parse) is graded once; then the dashboard,
the failing student's report and instructor page, and the invalid submission's report are opened from file://
URLs. Every page must load with no console error, no uncaught exception and no request leaving the machine (the
pages are self-contained: a student opens theirs offline), fit a phone's width and print. The heatmaps must be
drawn (non-empty boxes, cells of several colours, actual pixels), each cell's exact value under the pointer; the
dashboard must sort on its headers and filter its rows.
"""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from playwright.sync_api import Browser, Page

from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class

from .browser import PHONE, Watch, open_file, pixel_colours, watched_page
from .conftest import SAMPLES

CLASS = ("textbook.ipynb", "mistake_softmax_axis.py", "broken_syntax.py")
FAILING = "mistake_softmax_axis"  # graded, loses q1: its heatmaps differ from the reference
INVALID = "broken_syntax"  # never ran: listed under "not run"
PAGES = {
    "dashboard": "index.html",
    "report": f"students/{FAILING}/report.html",
    "instructor": f"students/{FAILING}/instructor.html",
    "invalid_report": f"students/{INVALID}/report.html",
}
WITH_HEATMAPS = ("report", "instructor")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> ClassRun:
    submissions = tmp_path_factory.mktemp("browser_class")
    for name in CLASS:
        shutil.copy2(SAMPLES / name, submissions / name)
    return grade_class(RunRequest(assignment="attention_scoring", submissions_dir=submissions,
                                  out_dir=tmp_path_factory.mktemp("browser") / "out"), RunOptions(jobs=2))


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("screenshots")


def page_path(run: ClassRun, name: str) -> Path:
    path = run.out_dir / PAGES[name]
    assert path.is_file(), f"{PAGES[name]} was not written"
    return path


def assert_clean(watch: Watch) -> None:
    assert watch.problems() == [], "the page logged errors or reached out:\n" + "\n".join(watch.problems())


def heatmap_cells(page: Page) -> list[dict]:
    """Every heatmap with its box and its cells (a <rect> holding a <title>): box, computed fill, title."""
    return page.eval_on_selector_all("svg.heatmap", """svgs => svgs.map(svg => {
        const box = svg.getBoundingClientRect();
        const cells = [...svg.querySelectorAll("rect")].filter(r => r.querySelector(":scope > title"));
        return {width: box.width, height: box.height, cells: cells.map(r => {
            const b = r.getBoundingClientRect(), style = getComputedStyle(r);
            return {width: b.width, height: b.height, fill: style.fill, visible: style.visibility !== "hidden"
                    && style.display !== "none" && style.opacity !== "0" && style.fillOpacity !== "0",
                    title: r.querySelector(":scope > title").textContent.trim()};
        })};
    })""")


def numbers(text: str) -> list[float]:
    return [float(m) for m in NUMBER.findall(text)]


def heatmap_values(run: ClassRun, student: str) -> set[float]:
    values = set()
    for result in run.results:
        if result.student == student:
            for check in result.checks:
                for heatmap in check.heatmaps:
                    for rows in (heatmap.reference, heatmap.student or ()):
                        values.update(float(v) for row in rows for v in row)
    return values


# Every page -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_loads_offline_without_errors(graded: ClassRun, browser: Browser, screenshots: Path,
                                           name: str) -> None:
    path = page_path(graded, name)
    with watched_page(browser) as (page, watch):
        open_file(page, path)
        assert page.title().strip()
        # Links between the pages resolve to files that exist; anchors to ids on the page.
        for href in page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)"):
            url = urlparse(href)
            if url.scheme == "file":
                assert Path(unquote(url.path)).exists(), f"broken link {href}"
                if url.fragment and Path(unquote(url.path)) == path.resolve():
                    assert page.locator(f"[id='{url.fragment}']").count() == 1, f"no id for {href}"
            else:
                assert url.scheme in ("mailto", "data"), f"{name} links out of the machine: {href}"
        shot = screenshots / f"{name}.png"
        page.screenshot(path=shot, full_page=True)
        assert shot.stat().st_size > 1000
    assert watch.requests, "no request recorded: the watch is not attached"
    assert_clean(watch)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_fits_a_phone(graded: ClassRun, browser: Browser, name: str) -> None:
    with watched_page(browser, viewport=PHONE, is_mobile=True, has_touch=True) as (page, watch):
        open_file(page, page_path(graded, name))
        widths = page.evaluate("""() => ({inner: window.innerWidth, scroll: document.documentElement.scrollWidth,
                                          body: document.body.scrollWidth})""")
        # Wide content (a table, a big heatmap) may scroll inside its own box, never the page sideways (a phone
        # would otherwise widen its layout viewport past the screen, which innerWidth then reports too).
        assert max(widths.values()) <= PHONE["width"] + 2, f"{name} is wider than a phone: {widths}"
        for heatmap in heatmap_cells(page):
            assert heatmap["width"] > 0 and heatmap["height"] > 0
    assert_clean(watch)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_prints(graded: ClassRun, browser: Browser, screenshots: Path, name: str) -> None:
    with watched_page(browser) as (page, watch):
        open_file(page, page_path(graded, name))
        page.emulate_media(media="print")
        assert page.evaluate("matchMedia('print').matches")
        for heatmap in heatmap_cells(page):  # printed too, not hidden by the print styles
            assert heatmap["width"] > 0 and heatmap["height"] > 0
        pdf = page.pdf(format="A4", print_background=True)
        assert pdf.startswith(b"%PDF") and len(pdf) > 1000
        (screenshots / f"{name}.pdf").write_bytes(pdf)
    assert_clean(watch)


# Heatmaps ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", WITH_HEATMAPS)
def test_heatmaps_are_drawn(graded: ClassRun, browser: Browser, name: str) -> None:
    with watched_page(browser) as (page, watch):
        open_file(page, page_path(graded, name))
        heatmaps = heatmap_cells(page)
        assert heatmaps, f"no <svg class='heatmap'> on the {name} page"
        fills = set()
        for index, heatmap in enumerate(heatmaps):
            assert heatmap["width"] > 0 and heatmap["height"] > 0, f"heatmap {index} has an empty box"
            cells = heatmap["cells"]
            assert cells, f"heatmap {index} has no <rect><title> cells"
            assert all(c["width"] > 0 and c["height"] > 0 and c["visible"] for c in cells), index
            assert all(c["fill"] not in ("", "none") for c in cells), index
            # Colour follows value: cells of different values are not all painted alike.
            if len({tuple(numbers(c["title"])) for c in cells}) > 1:
                assert len({c["fill"] for c in cells}) > 1, f"heatmap {index}: one colour for different values"
            fills.update(c["fill"] for c in cells)
        assert len(fills) > 2
        # Pixels, not only the DOM: the first heatmap, shot on its own, holds several colours.
        first = page.locator("svg.heatmap").first
        first.scroll_into_view_if_needed()
        assert pixel_colours(browser, first.screenshot()) > 3
        # Nothing covers the cells: the point at each cell's centre belongs to that cell.
        covered = first.evaluate("""svg => [...svg.querySelectorAll("rect")]
            .filter(r => r.querySelector(":scope > title"))
            .filter(r => {
                const b = r.getBoundingClientRect();
                const hit = document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2);
                return !(hit === r || r.contains(hit));
            }).length""")
        assert covered == 0
    assert_clean(watch)


def test_hovering_a_cell_shows_its_exact_value(graded: ClassRun, browser: Browser) -> None:
    values = heatmap_values(graded, FAILING)
    assert values
    with watched_page(browser) as (page, watch):
        open_file(page, page_path(graded, "report"))
        cells = page.locator("svg.heatmap rect:has(> title)")
        assert cells.count() > 0
        for index in sorted({0, cells.count() // 2, cells.count() - 1}):
            cell = cells.nth(index)
            cell.hover()
            # The cell is what the pointer is on, so the browser's tooltip is its <title>.
            assert cell.evaluate("r => r.matches(':hover')")
            title = cell.locator(":scope > title").text_content() or ""
            shown = numbers(title)
            assert any(any(math.isclose(n, v, rel_tol=1e-9, abs_tol=1e-12) for v in values) for n in shown), (
                f"cell title {title!r} holds none of the heatmap's exact values")
        # Every title carries one of the heatmap values, to full precision (not rounded to 2 decimals).
        titles = page.eval_on_selector_all("svg.heatmap rect > title", "ts => ts.map(t => t.textContent)")
        for title in titles:
            assert any(any(math.isclose(n, v, rel_tol=1e-9, abs_tol=1e-12) for v in values)
                       for n in numbers(title)), title
    assert_clean(watch)


# The student's report ---------------------------------------------------------------------------------------


def test_report_has_a_section_per_question(graded: ClassRun, browser: Browser) -> None:
    result = next(r for r in graded.results if r.student == FAILING)
    with watched_page(browser) as (page, watch):
        open_file(page, page_path(graded, "report"))
        sections = page.eval_on_selector_all("section.question", "s => s.map(x => x.id)")
        assert sections == [q.id for q in result.questions]
        # q1 is where this student went wrong: its section draws the weights, theirs beside the reference.
        assert page.locator("section.question#q1 svg.heatmap").count() >= 1
        page.locator("a[href='#q1']").first.click()
        assert page.evaluate("location.hash") == "#q1"
    assert_clean(watch)


def test_instructor_page_shows_at_least_what_the_student_sees(graded: ClassRun, browser: Browser) -> None:
    counts = {}
    for name in WITH_HEATMAPS:
        with watched_page(browser) as (page, watch):
            open_file(page, page_path(graded, name))
            counts[name] = page.locator("svg.heatmap").count()
            assert FAILING in page.inner_text("body")
        assert_clean(watch)
    assert counts["instructor"] >= counts["report"] > 0


# The dashboard ----------------------------------------------------------------------------------------------


def column_values(page: Page, key: str, *, visible_only: bool = False) -> list[str]:
    """The text of column ``key`` (its header's data-sort) in the body rows of #students, top to bottom."""
    return page.evaluate("""([key, visibleOnly]) => {
        const table = document.querySelector("table#students");
        const header = table.querySelector(`th[data-sort="${key}"]`);
        const index = [...header.parentElement.children].indexOf(header);
        const shown = tr => tr.getClientRects().length > 0 && getComputedStyle(tr).visibility !== "hidden";
        const body = tr => tr !== header.parentElement && !["THEAD", "TFOOT"].includes(tr.parentElement.tagName);
        return [...table.rows]
            .filter(tr => body(tr) && tr.cells.length > index && (!visibleOnly || shown(tr)))
            .map(tr => tr.cells[index].textContent.trim());
    }""", [key, visible_only])


def sort_key(key: str, text: str) -> float | str:
    if key in ("score", "duration"):
        found = numbers(text)
        return found[0] if found else -math.inf
    return text.casefold()


def is_monotonic(keys: list) -> bool:
    return keys == sorted(keys) or keys == sorted(keys, reverse=True)


def visible_students(page: Page) -> list[str]:
    return column_values(page, "student", visible_only=True)


def test_dashboard_draws_a_histogram_and_lists_what_did_not_run(graded: ClassRun, browser: Browser) -> None:
    with watched_page(browser) as (page, watch):
        open_file(page, page_path(graded, "dashboard"))
        histogram = page.locator("svg.histogram")
        assert histogram.count() >= 1
        box = histogram.first.bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0
        bars = histogram.first.evaluate("""svg => [...svg.querySelectorAll("rect, path")]
            .map(e => e.getBoundingClientRect()).filter(b => b.width > 0 && b.height > 0).length""")
        assert bars > 0, "the histogram draws no bars"
        not_run = page.inner_text("section#not-run")
        assert INVALID in not_run and "syntax error" in not_run
        assert FAILING not in not_run
    assert_clean(watch)


@pytest.mark.parametrize("key", ["score", "student", "status", "duration"])
def test_dashboard_sorts_on_a_header_click(graded: ClassRun, browser: Browser, key: str) -> None:
    with watched_page(browser) as (page, watch):
        open_file(page, page_path(graded, "dashboard"))
        assert page.locator("table#students th[data-sort='student']").count() == 1
        students = set(column_values(page, "student"))
        assert len(students) == len(CLASS)
        header = page.locator(f"table#students th[data-sort='{key}']")
        assert header.count() == 1, f"no <th data-sort='{key}'> in table#students"
        header.click()
        first = [sort_key(key, text) for text in column_values(page, key)]
        assert is_monotonic(first), f"after one click on {key}: {first}"
        header.click()
        second = [sort_key(key, text) for text in column_values(page, key)]
        assert second == first[::-1], f"a second click on {key} does not reverse the order: {second}"
        if key == "score":  # three different scores: the two clicks give the two orders
            assert first != second
        assert set(column_values(page, "student")) == students  # sorting moves rows, loses none
    assert_clean(watch)


def test_dashboard_filter_hides_rows_that_do_not_match(graded: ClassRun, browser: Browser) -> None:
    with watched_page(browser) as (page, watch):
        open_file(page, page_path(graded, "dashboard"))
        assert page.locator("table#students th[data-sort='student']").count() == 1
        everyone = visible_students(page)
        assert len(everyone) == len(CLASS)
        box = page.locator("input#filter")
        box.press_sequentially("softmax")
        assert visible_students(page) == [s for s in everyone if FAILING in s]
        box.fill("")
        box.press_sequentially("no such student")
        assert visible_students(page) == []
        box.fill("")
        box.dispatch_event("input")
        assert visible_students(page) == everyone
    assert_clean(watch)
