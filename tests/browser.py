"""Headless Chromium for the browser tests and `make screenshots`: the system's Chromium, driven by Playwright.

Playwright cannot download its own browser builds on the course machines, so it drives Debian's `chromium`
(`make system-deps` installs it), found at $CHROMIUM or on the PATH. Every page is watched: console errors,
uncaught exceptions and every request it makes are recorded, so a test can say the page is self-contained.

    .venv/bin/python -m tests.browser OUT DEST [--student NAME]   # DEST/report.png and DEST/dashboard.png
    .venv/bin/python -m tests.browser DEST --kit FRAGMENT.html    # DEST/kit.png: the student kit's output
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from unittest.mock import patch

from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Request, sync_playwright

# No sandbox: CI runs as root, where Chromium refuses its own. The rest keeps a headless Chromium from reaching
# out on its own (component updates, sync, field trials), so any request recorded came from the page.
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--no-first-run", "--disable-sync", "--disable-quic"]
DESKTOP = {"width": 1200, "height": 900}
PHONE = {"width": 390, "height": 844}
LOCAL_SCHEMES = ("file:", "data:", "about:")
NOTEBOOK = {"width": 1000, "height": 600}  # about a notebook's output area on a laptop


def chromium_path() -> str | None:
    """The Chromium to drive: $CHROMIUM, else `chromium` (Debian) or `chromium-browser` on the PATH."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def chromium(*, browser_log: bool = False) -> Iterator[Browser]:
    """The system's Chromium, headless. With ``browser_log``, Playwright's driver writes Chromium's own output and
    its launch and exit to this process's stderr (``DEBUG=pw:browser``), which pytest shows with a failing test
    only: a refused screenshot or a crashed page then says what Chromium said at the time."""
    path = chromium_path()
    if path is None:
        raise RuntimeError("no Chromium found: run `make system-deps` (as root: apt-get install chromium) "
                           "or set CHROMIUM to a Chromium or Chrome binary")
    with patch.dict(os.environ, {"DEBUG": "pw:browser"} if browser_log else {}):
        driver = sync_playwright().start()  # the driver's process takes this environment when it starts
    try:
        browser = driver.chromium.launch(executable_path=path, args=LAUNCH_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
    finally:
        driver.stop()


@dataclass
class Watch:
    """What the pages of one browser context did besides rendering: errors and requests."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    @property
    def remote_requests(self) -> list[str]:
        return [url for url in self.requests if not url.startswith(LOCAL_SCHEMES)]

    def problems(self) -> list[str]:
        return ([f"console error: {text}" for text in self.console_errors]
                + [f"page error: {text}" for text in self.page_errors]
                + [f"request: {url}" for url in self.remote_requests])

    def attach(self, context: BrowserContext) -> None:
        context.on("request", self._on_request)
        context.on("console", self._on_console)
        context.on("weberror", lambda error: self.page_errors.append(str(error.error)))

    def _on_request(self, request: Request) -> None:
        self.requests.append(request.url)

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.console_errors.append(f"{message.text} ({message.location.get('url', '')})")


@contextmanager
def watched_page(browser: Browser, *, viewport: dict[str, int] = DESKTOP, **options: object) -> Iterator[
        tuple[Page, Watch]]:
    """A fresh context (no cache, no cookies) and a page in it, with a Watch on everything it does."""
    context = browser.new_context(viewport=viewport, **options)
    watch = Watch()
    watch.attach(context)
    try:
        yield context.new_page(), watch
    finally:
        context.close()


def open_file(page: Page, path: Path) -> None:
    page.goto(path.resolve().as_uri(), wait_until="load")


def pixel_colours(browser: Browser, png: bytes, *, limit: int = 64) -> int:
    """How many distinct colours a PNG holds (up to ``limit``), read back through a canvas in a blank page."""
    context = browser.new_context()
    try:
        page = context.new_page()
        return page.evaluate(
            """async ([data, limit]) => {
                const image = new Image();
                image.src = "data:image/png;base64," + data;
                await image.decode();
                const canvas = document.createElement("canvas");
                canvas.width = image.naturalWidth;
                canvas.height = image.naturalHeight;
                const context2d = canvas.getContext("2d");
                context2d.drawImage(image, 0, 0);
                const pixels = context2d.getImageData(0, 0, canvas.width, canvas.height).data;
                const seen = new Set();
                for (let i = 0; i < pixels.length && seen.size < limit; i += 4) {
                    seen.add((pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2]);
                }
                return seen.size;
            }""", [base64.b64encode(png).decode("ascii"), limit])
    finally:
        context.close()


def take_screenshots(out_dir: Path, dest: Path, *, student: str) -> list[Path]:
    """For the README, as a desktop browser shows them: the whole dashboard, and the top of one student's report
    (score, questions, the first question's checks and heatmaps)."""
    dest.mkdir(parents=True, exist_ok=True)
    pages = {"dashboard": (out_dir / "index.html", True),
             "report": (out_dir / "students" / student / "report.html", False)}
    written = []
    with chromium() as browser:
        for name, (path, full_page) in pages.items():
            if not path.is_file():
                raise FileNotFoundError(f"{path} does not exist: grade the class first (make grade)")
            with watched_page(browser, viewport={"width": 1100, "height": 1400}) as (page, watch):
                open_file(page, path)
                target = dest / f"{name}.png"
                page.screenshot(path=target, full_page=full_page, animations="disabled")
                if watch.problems():
                    raise RuntimeError(f"{path}: " + "; ".join(watch.problems()))
                written.append(target)
    return written


def fragment_page(fragment: str, *, title: str = "fragment", head: str = "") -> str:
    """A minimal page holding an HTML fragment, as a notebook's output cell holds one; ``head`` goes in its
    <head> (say, a stylesheet standing in for the notebook's own)."""
    return (f'<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<link rel="icon" href="data:,">\n'
            f"<title>{escape(title)}</title>\n{head}\n</head>\n<body>\n{fragment}\n</body>\n</html>\n")


def open_fragment(page: Page, fragment: str, folder: Path, *, head: str = "") -> Path:
    """Write ``fragment`` in a page in ``folder`` and open it from its file:// URL, as the other pages are."""
    path = folder / "fragment.html"
    path.write_text(fragment_page(fragment, head=head), encoding="utf-8")
    open_file(page, path)
    return path


def kit_screenshot(html_fragment: str, dest: Path) -> Path:
    """A picture of the student kit's output (the HTML fragment a notebook cell shows) at ``dest`` (a .png), as
    a notebook about 1000 pixels wide draws it; fails if the fragment logs an error or fetches anything."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with (chromium() as browser, tempfile.TemporaryDirectory() as folder,
          watched_page(browser, viewport=NOTEBOOK) as (page, watch)):
        open_fragment(page, html_fragment, Path(folder))
        page.screenshot(path=dest, full_page=True, animations="disabled")
        if watch.problems():
            raise RuntimeError("the kit's fragment: " + "; ".join(watch.problems()))
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.browser", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?",
                        help="a graded OUT folder (index.html, students/); not needed with --kit alone")
    parser.add_argument("dest", type=Path, help="where to write report.png and dashboard.png (kit.png with --kit)")
    parser.add_argument("--student", default="mistake_softmax_axis", help="whose report to show")
    parser.add_argument("--kit", type=Path, metavar="FRAGMENT",
                        help="a file holding the student kit's HTML output (a fragment): shot to DEST/kit.png")
    args = parser.parse_args(argv)
    if args.out is None and args.kit is None:
        parser.error("give OUT (the report and the dashboard), --kit FRAGMENT, or both")
    if args.out is not None:
        for path in take_screenshots(args.out, args.dest, student=args.student):
            print(path)
    if args.kit is not None:
        print(kit_screenshot(args.kit.read_text(encoding="utf-8"), args.dest / "kit.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
