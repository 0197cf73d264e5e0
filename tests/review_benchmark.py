"""How long the review app takes to move to the next student, in a class of 500 (docs/performance.md).

    .venv/bin/python -m tests.review_benchmark [--students 500] [--moves 100] [--out DIR]

A class of ``--students`` notebooks of the written_maps fixture assignment (tests/review_class.py; each student's
answers their own text) is graded with `grader grade`'s pipeline; the app is served as `grader review` serves it,
and a real browser (Playwright, the system's Chromium) marks each student with a rubric key and presses j, from the
first student on, ``--moves`` times: the time from pressing j to the next student's page loaded and ready for keys
(its script run), measured from the test driver, and the browser's own Navigation Timing of the same move. The
server's own time for one marking page is measured too, over every student.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import threading
import time
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

from playwright.sync_api import expect

from grader.check.load import load_assignment
from grader.review.server import serve
from tests.browser import chromium, watched_page
from tests.conftest import FIXTURE_SOLUTIONS
from tests.review_class import ASSIGNMENT, CODE, grade, notebook, write_class


def class_of(size: int) -> dict[str, str]:
    return {f"s{n:04d}": notebook(CODE, f"Student {n}: the softmax makes each row sum to 1 ({n % 7} ways).",
                                  f"Student {n}: the diagonal is {'bright' if n % 2 else 'faint'}.")
            for n in range(size)}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=500)
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="review-bench-"))
    started = time.perf_counter()
    run = grade(write_class(folder / "class", class_of(args.students)), folder / "out")
    print(f"graded {len(run.results)} notebooks in {time.perf_counter() - started:.1f} s", flush=True)
    review = serve(folder / "out", load_assignment(ASSIGNMENT, solutions_dir=FIXTURE_SOLUTIONS))
    threading.Thread(target=review.run, daemon=True).start()
    root = review.url.split("/?")[0]
    try:
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
        opener.open(review.url).read()
        served = []
        for index in range(args.students):
            start = time.perf_counter()
            opener.open(f"{root}/mark/why/{index}").read()
            served.append(time.perf_counter() - start)
        print(f"server, one marking page (all {args.students}): median {statistics.median(served) * 1000:.1f} ms, "
              f"95th percentile {percentile(served, 0.95) * 1000:.1f} ms, largest {max(served) * 1000:.1f} ms")
        moves: list[float] = []
        loaded: list[float] = []
        with chromium() as browser, watched_page(browser) as (page, _):
            page.goto(review.url)
            page.fill("#author", "Benchmark")
            page.dispatch_event("#author", "change")
            page.goto(f"{root}/mark/why/0")
            for index in range(args.moves):
                page.keyboard.press("1")
                expect(page.locator("#state")).to_have_text(re.compile("^Saved"))
                start = time.perf_counter()
                with page.expect_navigation(wait_until="load"):
                    page.keyboard.press("j")
                moves.append(time.perf_counter() - start)
                expect(page.locator("#who")).to_have_text(f"s{index + 1:04d}")
                # The browser's own account: from the navigation's start to the new page's load event.
                loaded.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000)
        for what, times in (("measured by the test driver, from pressing j to the page's load event (Playwright's "
                             "round trips included)", moves),
                            ("the browser's Navigation Timing, from the navigation's start to the load event", loaded)):
            print(f"browser, next student ({args.moves} moves), {what}: median {statistics.median(times) * 1000:.1f} "
                  f"ms, 95th percentile {percentile(times, 0.95) * 1000:.1f} ms, largest {max(times) * 1000:.1f} ms")
    finally:
        review.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
