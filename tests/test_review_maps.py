"""The review app's attention maps beside a written answer (`WrittenQuestion(..., about="q1")`), in a real browser
(Playwright on the system's Chromium) against the real server: each figure says which check it comes from (its id
and whole title), which batch item and head it shows, in a caption nothing cuts, drawn large enough to read, on a
desktop and on a phone. The written_heads fixture (tests/fixtures/solutions/written_heads) draws a batch from one
check and a batch with heads from another, under long titles, as practical10's q4 does with its checks.

    REVIEW_MAPS_SCREENSHOT=DEST.png .venv/bin/pytest tests/test_review_maps.py   # also keeps the page's picture
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Browser, Locator, expect

from grader.check.load import load_assignment
from grader.pipeline import RunOptions, RunRequest, grade_class
from grader.review.server import Review, serve

from .browser import DESKTOP, PHONE, watched_page
from .conftest import FIXTURE_SOLUTIONS

pytestmark = pytest.mark.slow
ASSIGNMENT = "written_heads"
CODE = "import torch\n\ndef attend(scores):\n    return torch.softmax(scores, dim=-1)\n"
# (check, the matrix drawn) in the page's order: HEATMAP_ITEMS (2) matrices of each check's tensor.
MAPS = [("q1.batch", "attend(scores), batch 0"), ("q1.batch", "attend(scores), batch 1"),
        ("q1.heads", "attend(scores), batch 0, head 0"), ("q1.heads", "attend(scores), batch 0, head 1")]
MIN_CELL_PX = 20  # a cell of the maps, on the desktop: large enough to see each key's weight


def notebook() -> str:
    return nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(CODE),
        nbformat.v4.new_markdown_cell("**Question.** Do your attention maps look as expected?"),
        nbformat.v4.new_markdown_cell("Yes: each query looks at its own key.", metadata={"tags": ["answer:maps"]}),
    ]))


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Review]:
    root = tmp_path_factory.mktemp("review_maps")
    (root / "class").mkdir()
    (root / "class" / "ana.ipynb").write_text(notebook(), encoding="utf-8")
    grade_class(RunRequest(assignment=ASSIGNMENT, submissions_dir=root / "class", out_dir=root / "out",
                           solutions_dir=FIXTURE_SOLUTIONS), RunOptions(jobs=1))
    review = serve(root / "out", load_assignment(ASSIGNMENT, solutions_dir=FIXTURE_SOLUTIONS))
    thread = threading.Thread(target=review.run, daemon=True)
    thread.start()
    yield review
    review.close()
    thread.join(timeout=10)


def overflow(element: Locator) -> dict[str, float]:
    """How far the element's content runs past its box (0, 0 when it fits: nothing clipped or hidden)."""
    return element.evaluate("e => ({x: e.scrollWidth - e.clientWidth, y: e.scrollHeight - e.clientHeight})")


def svg_text_past_edges(svg: Locator) -> list[str]:
    """The SVG's texts (its title, axis labels, ticks) that run past its edges, where the SVG cuts them."""
    return svg.evaluate("""s => { const f = s.getBoundingClientRect(); return [...s.querySelectorAll('text')]
        .filter(t => { const b = t.getBoundingClientRect();
                       return b.left < f.left - 0.5 || b.right > f.right + 0.5 || b.top < f.top - 0.5
                              || b.bottom > f.bottom + 0.5; })
        .map(t => t.textContent); }""")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_each_map_beside_a_written_answer_names_its_check_batch_item_and_head_uncut(
        app: Review, browser: Browser, viewport: dict[str, int]) -> None:
    titles = {c.id: c.title for c in load_assignment(ASSIGNMENT, solutions_dir=FIXTURE_SOLUTIONS).checks}
    assert all(len(title) > 100 for title in titles.values())  # longer than a map is wide
    with watched_page(browser, viewport=viewport) as (page, watch):
        page.goto(app.url)
        page.goto(app.url.split("/?")[0] + "/mark/maps/0")
        figures = page.locator(".heatmaps figure")
        expect(figures).to_have_count(len(MAPS))
        area = page.locator(".heatmaps").bounding_box()
        assert area is not None
        for figure, (check_id, item) in zip(figures.all(), MAPS):
            figure.scroll_into_view_if_needed()
            caption = figure.locator("figcaption")
            expect(caption).to_be_visible()
            expect(caption.locator(".map-id")).to_have_text(check_id)
            expect(caption.locator(".map-title")).to_have_text(titles[check_id])
            expect(caption.locator(".map-item")).to_have_text(item)
            expect(caption).to_contain_text("(passed)")
            # The whole caption is laid out in its box, nothing cut, and the box inside the page's column.
            for part in (caption, caption.locator(".map-check"), caption.locator(".map-item")):
                assert overflow(part) == {"x": 0, "y": 0}, (check_id, item, part.inner_text())
            box, frame = caption.bounding_box(), figure.bounding_box()
            assert box is not None and frame is not None
            assert frame["x"] >= area["x"] - 1 and frame["x"] + frame["width"] <= area["x"] + area["width"] + 1
            assert box["x"] >= frame["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"] + 1
            assert box["x"] + box["width"] <= viewport["width"]
            # The tooltip says it all in one line too.
            tooltip = figure.get_attribute("title") or ""
            assert check_id in tooltip and titles[check_id] in tooltip and item in tooltip
            svg = figure.locator("svg")
            expect(svg).to_be_visible()
            assert svg_text_past_edges(svg) == []
            cell = svg.locator("rect").first.bounding_box()
            assert cell is not None
            if viewport is DESKTOP:
                assert cell["width"] >= MIN_CELL_PX and cell["height"] >= MIN_CELL_PX, cell
        if viewport is DESKTOP and os.environ.get("REVIEW_MAPS_SCREENSHOT"):
            page.locator(".answer").screenshot(path=Path(os.environ["REVIEW_MAPS_SCREENSHOT"]),
                                               animations="disabled")
        assert not watch.console_errors and not watch.page_errors, (watch.console_errors, watch.page_errors)
