"""The pages, from the sample class's real results: what a student sees, what only the instructor sees, the dashboard.

The class is graded once (the session's ``sample_run``); the tests read the pages it wrote, or render a page again
from a result, changed where a case needs it (a submission printing ``<script>``).
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import re
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from markupsafe import escape

from grader.discover import Submission
from grader.pipeline import ClassRun
from grader.report import render_instructor_report, render_student_report
from grader.report.heatmap import colour, exact, heatmap_svg
from grader.results import HIDDEN, PUBLIC, CheckResult, SubmissionResult, UnitResult, WrittenAnswer

from .conftest import MEASURED, SAMPLES

pytestmark = pytest.mark.slow  # the sample class is graded once for the whole session

TITLE = "Attention scoring functions (d2l 11.3)"
ATTENTION_QUESTIONS = ("q1", "q2", "q3", "q4")


def result_of(run: ClassRun, student: str) -> SubmissionResult:
    return next(r for r in run.results if r.student == student)


def page(run: ClassRun, student: str, name: str = "report.html") -> str:
    return (run.out_dir / "students" / student / name).read_text(encoding="utf-8")


def sections(text: str) -> dict[str, str]:
    """Each question's <section> of a report, by question id."""
    found = re.findall(r'<section class="question" id="(q\d+)">(.*?)</section>', text, re.DOTALL)
    return dict(found)


def text_of(fragment: str) -> str:
    """HTML as a reader sees it: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def distinctive(values: object) -> set[str]:
    """Exact reprs of floats long enough not to turn up on a page by chance (0.0, 0.5 and 1.0 do)."""
    return {exact(v) for v in values if math.isfinite(v) and len(exact(v)) >= 7}  # type: ignore[attr-defined]


def shows_number(page: str, number: str) -> bool:
    return re.search(rf"(?<![\d.]){re.escape(number)}(?!\d)", page) is not None


def numbers_of(check: CheckResult) -> set[str]:
    """The values a check's heatmaps and differing entries hold, as the pages write them."""
    found = distinctive(v for h in check.heatmaps for m in (h.reference, h.student or ()) for row in m for v in row)
    if check.diff is not None:
        found |= distinctive((*check.diff.expected, *check.diff.got))
    return found


# The student's page --------------------------------------------------------------------------------------------


def test_every_failing_public_check_says_what_differs_on_the_students_page(sample_run: ClassRun) -> None:
    shown = 0
    for result in sample_run.results:
        report = page(sample_run, result.student)
        for check in result.checks:
            if check.visibility == PUBLIC and not check.passed:
                assert check.message and str(escape(check.message)) in report, (result.student, check.check_id)
                shown += 1
    assert shown > 20
    # What differs, not only that it differs: values with the worst entry, a parameter by name, an exception.
    softmax_axis = page(sample_run, "mistake_softmax_axis")
    assert "differs from the reference in 16 of 16 entries (100%): largest error 0.5 at [0, 0, 2]" in softmax_axis
    assert "W_q.bias, W_k.bias" in page(sample_run, "mistake_extra_bias")
    assert "raised NotImplementedError (cell [4], line 16" in page(sample_run, "partial")


def test_each_attention_question_draws_heatmaps_for_every_student_who_ran(sample_run: ClassRun) -> None:
    for result in sample_run.results:
        if result.status != "graded":
            assert 'class="heatmap"' not in page(sample_run, result.student)
            continue
        by_question = sections(page(sample_run, result.student))
        assert list(by_question) == [q.id for q in result.questions]
        # partial raises NotImplementedError from q2 on: nothing to draw there.
        drawn = ATTENTION_QUESTIONS if result.student != "partial" else ("q1",)
        for qid in drawn:
            assert '<svg class="heatmap"' in by_question[qid], (result.student, qid)


def test_a_failing_heatmap_sets_yours_beside_the_reference_and_the_difference(sample_run: ClassRun) -> None:
    result = result_of(sample_run, "mistake_softmax_axis")
    q1 = sections(page(sample_run, result.student))["q1"]
    check = next(c for c in result.checks if c.check_id == "q1.textbook_1d")
    heatmap = check.heatmaps[0]
    assert heatmap.student is not None
    # Each cell's exact value is its tooltip: the student's, the reference's, and both beside their difference.
    assert f"query 0, key 2: {exact(heatmap.student[0][2])}</title>" in q1
    assert f"query 0, key 2: {exact(heatmap.reference[0][2])}</title>" in q1
    difference = abs(heatmap.student[0][2] - heatmap.reference[0][2])
    assert f"query 0, key 2: |yours - reference| = {exact(difference)}" in q1
    assert "|Yours − reference|" in q1 and ">Keys</text>" in q1 and ">Queries</text>" in q1
    # The small tensor as a table, its differing entries marked.
    assert check.diff is not None and len(check.diff.bad) == 16
    textbook = sections(page(sample_run, result.student))["q1"].split("textbook example: valid_lens [[1, 3]")[0]
    assert textbook.count('<td class="bad"') == 16


def test_passing_checks_show_the_students_attention_small_without_a_difference(sample_run: ClassRun) -> None:
    q2 = sections(page(sample_run, "textbook"))["q2"]
    assert '<figure class="heatmaps small">' in q2 and '<figure class="heatmaps large">' not in q2
    assert "|Yours − reference|" not in q2


def shown_by_public_checks(result: SubmissionResult) -> set[str]:
    """Calls a public check's smallest failing case shows the student, or its failure said once in the question's
    note, which a hidden check may make too (the same constructor, say): a public call, not a hidden case."""
    notes = " ".join(note for q in result.questions for note in q.notes)
    public = [c for c in result.checks if c.visibility == PUBLIC]
    return ({line for c in public if c.smallest for line in c.smallest.trace}
            | {line for c in public for line in c.trace if line in notes})


def test_hidden_checks_reveal_nothing_of_their_cases_to_the_student(sample_run: ClassRun) -> None:
    result = result_of(sample_run, "mistake_no_scaling")
    report, instructor = page(sample_run, result.student), page(sample_run, result.student, "instructor.html")
    hidden = [c for c in result.checks if c.visibility == HIDDEN and not c.passed]
    assert {c.check_id for c in hidden} == {"q3.random_1d", "q3.random_2d"}
    for check in hidden:
        assert check.title in report and str(escape(check.message)) in report  # its name and result only
        assert check.trace and check.heatmaps
        for line in set(check.trace) - shown_by_public_checks(result):
            assert str(escape(line)) not in report
            assert str(escape(line)) in instructor
        assert check.detail != check.message
        assert str(escape(check.detail)) not in report and str(escape(check.detail)) in instructor
        assert f"seed {check.seed}" not in report and f"seed {check.seed}" in instructor
        # Its values, less any a public check of this student shows too (a 1/6 of the toy example, say).
        numbers = numbers_of(check) - {n for c in result.checks if c.visibility == PUBLIC for n in numbers_of(c)}
        assert len(numbers) > 8  # however small the case the course's secret draws: weights of 2 x 3 x 4 at least
        # As whole numbers: a page's exact reprs (title attributes) hold longer numbers that may start with one.
        assert not [n for n in numbers if shows_number(report, n)]
        assert all(shows_number(instructor, n) for n in numbers)
    # Across the class: no hidden check's calls or expected values, and no trace at all, on any student's page.
    for other in sample_run.results:
        report = page(sample_run, other.student)
        for check in other.checks:
            for line in set(check.trace) - shown_by_public_checks(other):
                if check.visibility == HIDDEN or len(line) > 60:
                    assert str(escape(line)) not in report, (other.student, check.check_id)


def test_the_student_page_is_rendered_from_a_copy_without_the_instructors_material(sample_run: ClassRun) -> None:
    for result in sample_run.results:
        seen = result.for_student()
        for check in seen.checks:
            assert check.trace == () and check.detail == ""
            if check.visibility == HIDDEN:
                assert check.heatmaps == () and check.diff is None and check.seed == 0
        assert all(q.stdout == q.stderr == "" for q in seen.questions)
    # noisy prints its inputs and weights while every check runs (hidden ones too): only the instructor sees it.
    noisy = result_of(sample_run, "noisy")
    at_import = "".join(u.stdout for u in noisy.units)
    printed = next(line for q in noisy.questions for line in q.stdout.splitlines() if line not in at_import)
    assert str(escape(printed)) not in page(sample_run, "noisy")
    assert str(escape(printed)) in page(sample_run, "noisy", "instructor.html")
    assert "That output goes to your instructor only" in " ".join(text_of(page(sample_run, "noisy")).split())


def test_the_header_says_who_what_score_status_when_and_seeds(sample_run: ClassRun) -> None:
    result = result_of(sample_run, "mistake_softmax_axis")
    header = text_of(page(sample_run, result.student).split("</header>")[0])
    for expected in (result.student, TITLE, "75 / 100", "graded", result.graded_at.replace("T", " ")[:19],
                     "mistake_softmax_axis.py", "Seeds"):
        assert expected in header, expected


def test_output_and_errors_cell_by_cell_and_written_answers(sample_run: ClassRun) -> None:
    partial = text_of(page(sample_run, "partial"))
    assert "cell [7]" in partial and "NotImplementedError" in partial and "cell [11]" in partial
    assert "name 'attention' is not defined" in partial
    textbook = result_of(sample_run, "textbook")
    text = text_of(page(sample_run, "textbook"))
    assert textbook.answers and all(a.text.splitlines()[0] in text for a in textbook.answers if a.text)
    assert "How your code was read" in text
    assert "q2: graded with the reference masked_softmax in place of yours, because" in text


def test_student_output_is_shown_as_text_never_run(sample_run: ClassRun) -> None:
    result = result_of(sample_run, "mistake_mask_zero")
    evil = "<script>alert('pwned')</script><img src=x onerror=alert(1)>"
    units = (UnitResult("line 1", "error", f"printed {evil}\n", f"warned {evil}\n", f"ValueError: {evil}"),
             *result.units)
    questions = tuple(dataclasses.replace(q, stdout=f"graded {evil}") for q in result.questions)
    answers = (WrittenAnswer("ex1", "Why?", f"because {evil}"),)
    checks_first = dataclasses.replace(result.questions[0].checks[0], message=f"says {evil}", notes=(evil,))
    questions = (dataclasses.replace(questions[0], checks=(checks_first, *questions[0].checks[1:])), *questions[1:])
    hostile = dataclasses.replace(result, units=units, questions=questions, answers=answers, notes=(evil,))
    for text in (render_student_report(hostile, title=TITLE), render_instructor_report(hostile, title=TITLE)):
        assert "<script>alert" not in text and "<img" not in text and "onerror=alert(1)>" not in text
        assert "&lt;script&gt;alert(" in text
        assert len(re.findall(r"<script\b", text)) == 0  # no script at all on a report page
        assert "script-src 'none'" in text  # and the page's policy would refuse one


def test_a_notebooks_markdown_cannot_run_load_or_link_anything_on_the_instructor_page(
        sample_run: ClassRun, tmp_path: Path) -> None:
    notebook = json.loads((SAMPLES / "textbook.ipynb").read_text(encoding="utf-8"))
    evil = ("Injected <script>alert(1)</script> <img src=\"https://example.com/x.png\" onerror=\"alert(2)\"> "
            "<iframe src=\"https://example.com\"></iframe> <a href=\"https://example.com/page\">a link</a> "
            "[md link](http://example.com/md) <style>body{display:none}</style> <b onclick=\"alert(3)\">bold</b>")
    notebook["cells"].insert(1, {"cell_type": "markdown", "metadata": {}, "source": evil})
    path = tmp_path / "textbook.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    result = result_of(sample_run, "textbook")
    submission = Submission("textbook", path, "notebook", datetime.now(UTC))
    text = render_instructor_report(result, title=TITLE, submission=submission)
    cells = text.split('<div class="notebook">')[1]
    assert "Injected" in cells and "a link" in cells and "md link" in cells and "bold" in cells
    tags = re.findall(r"<[a-zA-Z][^>]*>", cells)  # the elements, not the text that shows the markup
    assert tags and not [t for t in tags if re.match(r"<(script|img|iframe|style|object|embed|link)\b", t)]
    assert not [t for t in tags if re.search(r"\s(on\w+|src|style)=", t) or 'href="http' in t]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in cells  # shown as text
    assert 'title="https://example.com/page"' in cells  # the address stays readable, as a tooltip


def test_the_instructor_page_holds_the_notebook_as_it_ran(sample_run: ClassRun) -> None:
    for student in ("textbook", "partial", "folder_student", "mistake_no_scaling", "noisy"):
        result = result_of(sample_run, student)
        instructor = page(sample_run, student, "instructor.html")
        assert instructor.count('class="cell border-box-sizing code_cell') == len(result.units), student
        cells = text_of(instructor.split('<section id="notebook">')[1])
        for unit in result.units:
            if unit.stdout:
                assert unit.stdout.strip().splitlines()[0] in cells, (student, unit.label)
        assert "def masked_softmax(X, valid_lens)" in cells or "masked_softmax" in cells
    textbook = text_of(page(sample_run, "textbook", "instructor.html").split('<section id="notebook">')[1])
    assert "def masked_softmax(X, valid_lens):" in textbook  # its code, syntax-highlighted
    assert "Attention Scoring Functions" in textbook  # and its markdown
    partial = page(sample_run, "partial", "instructor.html").split('<section id="notebook">')[1]
    assert partial.count("output_error") == sum(1 for u in result_of(sample_run, "partial").units if u.error)
    broken = text_of(page(sample_run, "broken_syntax", "instructor.html").split('<section id="notebook">')[1])
    assert "syntax error at line 38" in broken and "def masked_softmax" in broken  # the file as text


def test_pages_are_self_contained(sample_run: ClassRun) -> None:
    pages = sorted(sample_run.out_dir.rglob("*.html"))
    similar = list((sample_run.out_dir / "similar").glob("*.html"))  # the instructor's side-by-side pages
    assert len(pages) == 1 + 2 * len(sample_run.results) + len(similar)
    for path in pages:
        text = path.read_text(encoding="utf-8")
        lowered = text.lower()
        for remote in ('src="http', "src='http", 'href="http', "href='http", "@import", "url(http", "url(//",
                       'src="//', 'href="//', "<link rel=\"stylesheet", "<script src"):
            assert remote not in lowered, (path, remote)
        assert "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';" in text
        assert re.findall(r"<link [^>]*>", text) == ['<link rel="icon" href="data:,">']


def test_the_dashboards_script_is_the_only_one_and_its_hash_is_allowed(sample_run: ClassRun) -> None:
    import base64
    import hashlib

    dashboard = (sample_run.out_dir / "index.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script>(.*?)</script>", dashboard, re.DOTALL)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in dashboard


# The dashboard ---------------------------------------------------------------------------------------------------


def test_dashboard_lists_what_did_not_run_with_the_reason(sample_run: ClassRun) -> None:
    dashboard = (sample_run.out_dir / "index.html").read_text(encoding="utf-8")
    not_run = dashboard.split('<section id="not-run">')[1].split("</section>")[0]
    for student in ("broken_syntax", "broken_notebook"):
        result = result_of(sample_run, student)
        assert f'href="students/{student}/report.html">{student}</a>' in not_run
        assert str(escape(result.reason)) in not_run
    assert "mistake_softmax_axis" not in not_run and "textbook" not in not_run


def test_dashboard_has_histogram_rates_and_a_sortable_filterable_table(sample_run: ClassRun) -> None:
    dashboard = (sample_run.out_dir / "index.html").read_text(encoding="utf-8")
    histogram = re.search(r'<svg class="histogram".*?</svg>', dashboard, re.DOTALL)
    assert histogram and "8 submissions scored 90–100 points (inclusive)" in histogram.group(0)
    for key in ("student", "score", "status", "duration"):
        assert f'data-sort="{key}"' in dashboard
    assert '<input id="filter"' in dashboard and '<table id="students">' in dashboard
    rows = re.findall(r'<tr data-student="([^"]+)" data-score="([^"]+)"', dashboard)
    assert [s for s, _ in rows] == sorted(r.student for r in sample_run.results)
    for student, _ in rows:
        assert f'href="students/{student}/instructor.html"' in dashboard
    # Per question and per check: q3's scaling mistakes leave 14 of the 17 that ran with full marks.
    assert re.search(r"q3 · DotProductAttention</td>.*?14 of 17</td>", dashboard, re.DOTALL)
    assert re.search(r"q1 · random shapes, 1-D valid_lens <span class=\"tag\">hidden</span>", dashboard)


# Speed and stability ---------------------------------------------------------------------------------------------


def test_rendering_a_student_page_takes_milliseconds(sample_run: ClassRun) -> None:
    result = result_of(sample_run, "mistake_softmax_axis")  # the most heatmaps and tables of the class
    heatmaps = render_student_report(result, title=TITLE).count('<svg class="heatmap"')  # templates compiled
    rounds = 20
    started = time.perf_counter()
    for _ in range(rounds):
        render_student_report(result, title=TITLE)
    each = (time.perf_counter() - started) / rounds
    submission = Submission("textbook", SAMPLES / "textbook.ipynb", "notebook", datetime.now(UTC))
    textbook = result_of(sample_run, "textbook")
    render_instructor_report(textbook, title=TITLE, submission=submission)
    started = time.perf_counter()
    for _ in range(5):
        render_instructor_report(textbook, title=TITLE, submission=submission)
    instructor = (time.perf_counter() - started) / 5
    MEASURED[f"rendering one student page (mistake_softmax_axis, {heatmaps} heatmaps)"] = f"{1000 * each:.1f} ms"
    MEASURED["rendering one instructor page (textbook.ipynb, nbconvert)"] = f"{1000 * instructor:.0f} ms"
    MEASURED["the sample class as graded"] = sample_run.rendering.summary()
    assert each < 0.1  # milliseconds, not a plotting library's second per figure
    assert sample_run.rendering.pages == len(sample_run.results)


def test_rendering_is_deterministic(sample_run: ClassRun) -> None:
    for student in ("mistake_no_scaling", "broken_notebook"):
        result = result_of(sample_run, student)
        assert render_student_report(result, title=TITLE) == page(sample_run, student)


# The heatmaps' drawing -----------------------------------------------------------------------------------------


def test_heatmap_svg_draws_a_titled_rect_per_cell_on_a_viridis_scale() -> None:
    rows = ((0.0, 0.25, float("nan")), (0.5, 0.75, 1.0))
    svg = str(heatmap_svg(rows, 0.0, 1.0, xlabel="Keys", ylabel="Queries", title="t"))
    cells = re.findall(r'<rect [^>]*fill="(#[0-9a-f]{6})"><title>([^<]*)</title></rect>', svg)
    assert len(cells) == 6 and svg.count("<rect") == 6
    assert cells[0] == ("#440154", "query 0, key 0: 0.0") and cells[-1] == ("#fde725", "query 1, key 2: 1.0")
    assert cells[2][1] == "query 0, key 2: nan" and cells[2][0] == "#b0b0b0"
    assert len({fill for fill, _ in cells}) == 6
    assert svg.startswith('<svg class="heatmap"') and ">Keys</text>" in svg
    assert colour(0.5) == "#21918c" and colour(-1) == "#440154" and colour(2) == "#fde725"


def test_a_copy_of_the_sample_pages_opens_with_relative_links_only(sample_run: ClassRun, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(sample_run.out_dir, copy, ignore=shutil.ignore_patterns("gradebook.sqlite*", ".grader.lock"))
    for path in copy.rglob("*.html"):
        for target in re.findall(r'href="([^"#][^"]*)"', path.read_text(encoding="utf-8")):
            if not target.startswith("data:"):
                assert (path.parent / target.split("#")[0]).resolve().is_file(), (path, target)


def test_markdown_rendered_once_for_the_class_is_each_notebooks_own_and_still_cleaned() -> None:
    import nbformat

    from grader.report.notebook import render_notebook

    def page(*markdown: str) -> str:
        cells = [nbformat.v4.new_markdown_cell(text) for text in markdown]
        return str(render_notebook(nbformat.v4.new_notebook(cells=cells)))

    shared = "## Exercise 1\nThe template's own text."
    first, second = page(shared, "My answer: *additive*"), page(shared, "My answer: <script>alert(1)</script>")
    assert "Exercise 1" in first and "Exercise 1" in second
    assert "<em>additive</em>" in first and "additive" not in second
    assert "<script>" not in second and "&lt;script&gt;" in second
    again = page("My answer: <script>alert(1)</script>")  # the same text again: cleaned as the first time
    assert "<script>" not in again and "&lt;script&gt;" in again
