"""The student kit's display (grader/kit/display.py): real self-check results, graded as `grader check` grades them,
shown as the HTML fragment a notebook's output cell draws and as text, and the fragment in a real browser.

The HTML must hold what the student's page holds for a public check (message, likely cause, smallest failing case,
differing entries, heatmaps) and nothing of a hidden check; it must be self-contained (no script, nothing fetched,
CSS that restyles nothing outside it). The text must be `grader check`'s summary, line for line.
"""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from IPython.core.formatters import DisplayFormatter

from grader.cli.check import print_summary
from grader.kit.display import KitReport, html, text
from grader.pipeline.self_check import SelfCheck, check_submission
from grader.report.heatmap import exact

from .browser import chromium, chromium_path, open_fragment, pixel_colours, watched_page
from .conftest import ROOT, SAMPLES
from .test_browser import assert_clean
from .test_self_check import assert_reveals_no_hidden_check

SUBMISSIONS = {
    "axis": SAMPLES / "mistake_softmax_axis.py",  # fails q1: diagnosis, heatmaps, differing entries
    "scaling": SAMPLES / "mistake_no_scaling.py",  # fails a random q3 check: a smallest failing case
    "correct": SAMPLES / "einsum_style.py",  # passes every public check
    "syntax": SAMPLES / "broken_syntax.py",  # never runs
    "tables": ROOT / "tests" / "submissions" / "practical10" / "mistake_heads_summed.py",  # tables, passed or not
}
NOTES = ("Checked the notebook as last saved.",)
URL = re.compile(r"""https?://[^\s"'<>)]+""")
SVG_NAMESPACE = "http://www.w3.org/2000/svg"  # an identifier, never fetched


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SelfCheck]:
    out = tmp_path_factory.mktemp("kit_display")
    return {name: check_submission(path=path, out_dir=out, assignment=path.parent.name)
            for name, path in SUBMISSIONS.items()}


@pytest.fixture(scope="module")
def reports(checked: dict[str, SelfCheck]) -> dict[str, KitReport]:
    return {name: KitReport.from_self_check(check, seconds=2.345, notes=NOTES) for name, check in checked.items()}


class _Page(HTMLParser):
    """An HTML fragment's text (whitespace collapsed), and the attributes of every start tag, in order."""

    def __init__(self, fragment: str) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self._in_style = False
        self.feed(fragment)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False
        self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._in_style:
            self.parts.append(data)

    @property
    def text(self) -> str:
        return " ".join("".join(self.parts).split())

    def count(self, tag: str, cls: str) -> int:
        return sum(1 for t, attrs in self.tags if t == tag and cls in attrs.get("class", "").split())


def said(words: str) -> str:
    return " ".join(words.split())


# The HTML --------------------------------------------------------------------------------------------------


def test_a_failed_check_shows_its_message_cause_entries_and_heatmaps(reports: dict[str, KitReport]) -> None:
    report = reports["axis"]
    page = _Page(html(report))
    failed = [c for c in report.result.checks if not c.passed]
    assert failed and all(c.diagnosis and c.diff and c.heatmaps for c in failed)
    for check in failed:
        assert said(check.title) in page.text and said(check.message) in page.text
        assert said(f"Likely cause: {check.diagnosis.name}. {check.diagnosis.explanation}") in page.text
    # One figure per heatmap, failed checks' and passed ones' alike; three panels (yours, reference, difference)
    # for a failed check's.
    assert page.count("figure", "heatmaps") == sum(len(c.heatmaps) for c in report.result.checks)
    assert page.count("svg", "heatmap") >= 3 * sum(len(c.heatmaps) for c in failed)
    # Every entry of every differing tensor, yours beside the reference's, to full precision; the differing ones
    # marked.
    cells = [attrs["title"] for tag, attrs in page.tags if tag == "td" and attrs.get("title", "").startswith("yours")]
    wanted = [f"yours {exact(g)}, reference {exact(e)}" for c in failed for g, e in zip(c.diff.got, c.diff.expected)]
    assert sorted(cells) == sorted(wanted)
    assert page.count("td", "bad") == sum(len(c.diff.bad) for c in failed)
    # The header: title, public checks, score, not passed.
    assert page.text.startswith(f"{report.title} ({report.result.assignment}), public checks "
                                f"{report.result.score:g} / {report.result.max_score:g} not passed")
    assert "3 of 15 public checks did not pass (46 / 59 points; the grade is out of 100: your instructor grades " \
           "the rest)." in page.text
    assert "Hidden checks, on other inputs, also count towards your grade" in page.text
    assert "Checked in 2.3 s." in page.text and NOTES[0] in page.text
    assert not report.passed


def test_a_questions_notes_and_each_check_are_shown(reports: dict[str, KitReport]) -> None:
    report = reports["axis"]
    page = _Page(html(report))
    for question in report.result.questions:
        assert said(f"{question.id} {question.title} {question.score:g} / {question.max_score:g}") in page.text
        for note in question.notes:
            assert said(note) in page.text
    # The choices the grader made (q2-q4 graded with the reference masked_softmax), as `grader check` prints them.
    assert report.result.choices
    assert said(f"How your code was read {' '.join(c.line for c in report.result.choices)}") in page.text
    assert "How your code was read:" in str(report)
    assert page.count("div", "check") == len(report.result.checks)
    statuses = [attrs["class"].split()[1] for tag, attrs in page.tags if tag == "span" and "badge" in attrs.get(
        "class", "").split()][1:]  # the first is the header's
    assert statuses == [c.status for c in report.result.checks]
    for check in report.result.checks:
        for note in check.notes:
            assert said(note) in page.text


def test_the_smallest_failing_case_is_shown(reports: dict[str, KitReport]) -> None:
    report = reports["scaling"]
    smallest = [c.smallest for c in report.result.checks if c.smallest is not None]
    assert smallest
    page = _Page(html(report))
    for case in smallest:
        assert said(f"Smallest failing case: {case.text} (graded at {case.describe(case.original)}).") in page.text
        assert said(case.message) in page.text


def test_tables_of_answers_are_shown_passed_or_not(reports: dict[str, KitReport]) -> None:
    report = reports["tables"]
    with_tables = [c for c in report.result.checks if c.tables]
    assert any(c.passed for c in with_tables) and any(not c.passed for c in with_tables)
    page = _Page(html(report))
    cells = [attrs["title"] for tag, attrs in page.tags if tag == "td" and attrs.get("title", "").startswith("yours")]
    assert len(cells) == sum(len(t.got) for c in with_tables for t in c.tables)
    for check in with_tables:
        for table in check.tables:
            assert said(table.label) in page.text


def test_passing_checks_fold_their_heatmaps(reports: dict[str, KitReport]) -> None:
    report = reports["correct"]
    assert report.passed
    fragment = html(report)
    page = _Page(fragment)
    drawn = sum(len(c.heatmaps) for c in report.result.checks)
    assert drawn and page.count("figure", "heatmaps") == drawn
    folded = re.findall(r"<details>.*?</details>", fragment, flags=re.DOTALL)
    assert sum(f.count('<figure class="heatmaps') for f in folded) == drawn
    assert page.text.startswith(f"{report.title} ({report.result.assignment}), public checks 59 / 59 passed")
    assert "All 15 public checks passed (59 / 59 points; the grade is out of 100: your instructor grades the " \
           "rest)." in page.text


def test_a_file_that_could_not_run_says_why(reports: dict[str, KitReport]) -> None:
    report = reports["syntax"]
    page = _Page(html(report))
    assert not report.passed
    assert said(f"Your {report.result.kind} could not be checked (invalid): {report.result.reason}") in page.text
    assert page.count("div", "question") == 0 and page.count("div", "check") == 0


def test_no_hidden_check_is_named_nor_instructor_only_material_shown(reports: dict[str, KitReport]) -> None:
    for name, report in reports.items():
        shown = html(report) + text(report)
        assert_reveals_no_hidden_check(shown, report.result.assignment)
        page = _Page(html(report)).text
        for check in report.result.checks:
            smallest_trace = check.smallest.trace if check.smallest else ()
            for line in check.trace:  # the calls a check made and the values it expected: the instructor's
                if line not in smallest_trace and len(line) > 40:
                    assert said(line) not in page, (name, check.check_id, line)


def test_the_fragment_is_self_contained_and_its_css_scoped(reports: dict[str, KitReport]) -> None:
    for name, report in reports.items():
        fragment = html(report)
        lowered = fragment.lower()
        for forbidden in ("<script", "<link", "<iframe", "<img", "@import", "url(", "javascript:", " on"):
            if forbidden == " on":  # no event handler attribute (onload=, onclick=, ...)
                assert not re.search(r"<[^>]*\son[a-z]+\s*=", lowered), name
            else:
                assert forbidden not in lowered, (name, forbidden)
        assert set(URL.findall(fragment)) <= {SVG_NAMESPACE}, name
        assert ' id="' not in fragment, name  # a notebook may show several: no id may clash
        styles = re.findall(r"<style>(.*?)</style>", fragment, flags=re.DOTALL)
        assert len(styles) == 1
        root = re.match(r'\s*<div class="grader-kit">', fragment)
        assert root and fragment.rstrip().endswith("</div>"), name
        css = re.sub(r"/\*.*?\*/", "", styles[0], flags=re.DOTALL)
        selectors = [s.strip() for rule in re.findall(r"([^{}]+)\{[^{}]*\}", css) for s in rule.split(",")]
        assert selectors and all(s.startswith(".grader-kit") for s in selectors), [
            s for s in selectors if not s.startswith(".grader-kit")]


def test_everything_is_escaped(checked: dict[str, SelfCheck]) -> None:
    report = KitReport.from_self_check(checked["axis"], seconds=1.0, notes=("<script>alert(1)</script> & <b>",))
    fragment = html(report)
    assert "<script" not in fragment and "<b>" not in fragment
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;" in fragment
    assert report.notes[0] in text(report)  # text is text: shown as written


# The text --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SUBMISSIONS))
def test_the_text_is_grader_checks_summary(checked: dict[str, SelfCheck], reports: dict[str, KitReport],
                                           name: str) -> None:
    printed = io.StringIO()
    print_summary(checked[name], source="work.py", stream=printed)
    summary = printed.getvalue().splitlines()
    prefix = "grader check work.py: "
    assert summary[0].startswith(prefix) and summary[-1].startswith("Report: ")
    lines = text(reports[name]).splitlines()
    assert lines == [summary[0].removeprefix(prefix), *NOTES, *summary[1:-1], "Checked in 2.3 s."]
    assert "\033[" not in text(reports[name])


def test_a_notebook_draws_the_html_and_a_terminal_prints_the_text(reports: dict[str, KitReport]) -> None:
    report = reports["axis"]
    assert str(report) == repr(report) == text(report)
    bundle, _ = DisplayFormatter().format(report)  # what IPython sends the notebook for a cell's value
    assert bundle["text/html"] == html(report) and bundle["text/plain"] == text(report)


# In a browser ----------------------------------------------------------------------------------------------

# What a notebook's dark theme does to HTML in an output cell (JupyterLab's .jp-RenderedHTMLCommon rules, in
# short): light text on a dark page, every table restyled with dark rows (JupyterLab paints the odd ones; every one
# here, so no sample's table escapes by where its entries fall) and right-aligned cells.
DARK_NOTEBOOK = """<style>
  body { background: #111111; color: #e0e0e0; font: 13px sans-serif; margin: 1rem; }
  table { border: none; border-collapse: collapse; margin-left: auto; margin-right: auto; font-size: 12px;
          table-layout: fixed; color: #e0e0e0; }
  tbody tr, tbody tr:nth-child(odd) { background: #111111; }
  td, th { text-align: right; padding: .5em; color: #e0e0e0; }
  p { margin: 0 0 1em; color: #e0e0e0; } pre { background: #222; color: #e0e0e0; }
</style>"""


def luminance(rgb: str) -> float:
    def channel(value: str) -> float:
        c = int(value) / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in re.findall(r"\d+", rgb)[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_fragment_in_a_browser(reports: dict[str, KitReport], tmp_path: Path) -> None:
    if chromium_path() is None:
        pytest.fail("no Chromium: `make system-deps` installs Debian's chromium (as root), or set CHROMIUM")
    report = reports["axis"]
    failed = [c for c in report.result.checks if not c.passed]
    with (chromium(browser_log=True) as browser,
          watched_page(browser, viewport={"width": 1000, "height": 700}) as (page, watch)):
        open_fragment(page, html(report), tmp_path, head=DARK_NOTEBOOK)
        # A failed check's heatmaps are drawn at once: every panel has a box, and pixels of several colours.
        shown = page.locator("div.check-failed svg.heatmap")
        assert shown.count() >= 3 * sum(len(c.heatmaps) for c in failed)
        for index in range(shown.count()):
            svg = shown.nth(index)
            box = svg.bounding_box()
            assert svg.is_visible() and box and box["width"] > 50 and box["height"] > 30, index
        shown.first.scroll_into_view_if_needed()
        assert pixel_colours(browser, shown.first.screenshot()) > 3
        # A passed check's are folded away, and drawn when unfolded.
        folded = page.locator("div.check-passed details")
        assert folded.count() > 0 and not folded.first.locator("svg.heatmap").first.is_visible()
        folded.first.locator("summary").click()
        assert folded.first.locator("svg.heatmap").first.is_visible()
        # Readable on the dark page: its own light background, dark text, whatever the page's styles say.
        colours = page.evaluate("""() => {
            const opaque = el => {
                for (; el; el = el.parentElement) {
                    const bg = getComputedStyle(el).backgroundColor;
                    if (bg !== "transparent" && !bg.endsWith(", 0)")) return bg;
                }
                return "rgb(255, 255, 255)";
            };
            return [...document.querySelectorAll(".grader-kit *")]
                .filter(el => [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
                .filter(el => !el.closest("svg") && el.getClientRects().length)
                .map(el => ({tag: el.tagName, text: el.textContent.trim().slice(0, 40),
                             fg: getComputedStyle(el).color, bg: opaque(el)}));
        }""")
        assert len(colours) > 50
        poor = [c for c in colours if contrast(c["fg"], c["bg"]) < 4.5]
        assert not poor, poor[:5]
        root = page.locator(".grader-kit")
        assert root.evaluate("el => getComputedStyle(el).backgroundColor") == "rgb(255, 255, 255)"
        # Nothing outside the fragment restyled: the page's own paragraph colour is left as it was.
        assert page.evaluate("""() => { const p = document.createElement("p"); document.body.append(p);
                                        return getComputedStyle(p).color; }""") == "rgb(224, 224, 224)"
        shot = tmp_path / "kit.png"
        root.screenshot(path=shot, animations="disabled")
        assert shot.stat().st_size > 10_000
    assert watch.requests, "no request recorded: the watch is not attached"
    assert_clean(watch)
