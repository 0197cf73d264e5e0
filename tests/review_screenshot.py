"""The review app's marking page for the README (`make screenshots`): the written_maps class (tests/review_class.py)
graded in a scratch folder, one answer marked by keyboard, then the page shot in headless Chromium.

    .venv/bin/python -m tests.review_screenshot DEST.png
"""

from __future__ import annotations

import re
import sys
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import expect

from grader.check.load import load_assignment
from grader.review.server import serve
from tests.browser import chromium, watched_page
from tests.conftest import FIXTURE_SOLUTIONS
from tests.review_class import ASSIGNMENT, grade, write_class


def main(dest: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        grade(write_class(Path(scratch) / "class"), Path(scratch) / "out")
        review = serve(Path(scratch) / "out", load_assignment(ASSIGNMENT, solutions_dir=FIXTURE_SOLUTIONS))
        threading.Thread(target=review.run, daemon=True).start()
        try:
            with chromium() as browser, watched_page(browser, viewport={"width": 1200, "height": 760}) as (page, _):
                page.goto(review.url)
                page.fill("#author", "Ana (TA)")
                page.dispatch_event("#author", "change")
                page.goto(review.url.split("/?")[0] + "/mark/maps/2")
                page.keyboard.press("1")
                expect(page.locator("#state")).to_have_text(re.compile("^Saved"))
                dest.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=dest, animations="disabled")
        finally:
            review.close()
    print(dest)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
