"""A line that says a long check is still running: a kit check runs in the student's kernel, where a training
check can take ten seconds or more with nothing on the screen (the grader's own runs have their progress bar)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TextIO

SHOWN_AFTER = 2.0  # seconds: quicker checks (almost all) print nothing
EVERY = 1.0


@contextlib.contextmanager
def still_running(label: str, stream: TextIO, *, after: float | None = None, every: float = EVERY) -> Iterator[None]:
    """Once ``after`` seconds have passed, write "Still checking LABEL (N s)" to ``stream`` every ``every`` seconds,
    over itself (a carriage return, which terminals and notebooks both honour), and how long it took at the end."""
    after = SHOWN_AFTER if after is None else after
    started = time.monotonic()
    done = threading.Event()
    shown = threading.Event()

    def tick() -> None:
        if done.wait(after):
            return
        while not done.is_set():
            shown.set()
            stream.write(f"\rStill checking {label} ({time.monotonic() - started:.0f} s)")
            stream.flush()
            done.wait(every)

    ticker = threading.Thread(target=tick, name="grader-kit-progress", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
        if shown.is_set():
            stream.write(f"\rChecked {label} in {time.monotonic() - started:.1f} s\n")
            stream.flush()
