"""The kit in a real notebook, drawn by a real browser: a wrong masked_softmax run in a Jupyter kernel (nbclient) from
a built kit's folder, the template's check cell after it, and the HTML it displayed opened in headless Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from .browser import chromium, chromium_path, open_fragment, watched_page
from .kit_notebook import SAMPLE, kit_output


@pytest.mark.slow
def test_a_check_cell_in_a_kernel_shows_the_mistake_with_heatmaps_in_a_browser(kits: Path, tmp_path: Path) -> None:
    if chromium_path() is None:
        pytest.fail("no Chromium: `make system-deps` installs Debian's chromium (as root), or set CHROMIUM")
    html, text = kit_output(kits / "attention_scoring", SAMPLE.read_text(encoding="utf-8"))
    assert "Likely cause: softmax over the queries axis" in text
    with (chromium(browser_log=True) as browser,
          watched_page(browser, viewport={"width": 1000, "height": 700}) as (page, watch)):
        open_fragment(page, html, tmp_path)
        failed = page.locator(".grader-kit", has_text="textbook example: valid_lens [2, 3] (1-D)")
        assert failed.count() == 1
        assert page.get_by_text("softmax over the queries axis").first.is_visible()
        figures = page.locator(".grader-kit svg")
        assert figures.count() >= 3  # yours, the reference's and their difference, at least once
        assert figures.first.is_visible()
        assert not watch.problems(), watch.problems()
