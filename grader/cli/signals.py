"""A command asked to stop (SIGTERM, SIGHUP, or SIGINT: Ctrl-C) stops at once and in order: the signal becomes an
exception in the main thread, so the command unwinds as it does on any error (a class run's back-end stops its job
processes and warm workers without waiting for what they grade, the gradebook and the output folder's lock are
released), and the command line exits with 128 + the signal (cli/__init__.py).

A second signal while the first one's unwinding runs ends the process at once, as without the grader's handling: what
it started ends with it all the same (grader/execute/lifetime.py). A signal that was ignored when the grader started
(SIGHUP under ``nohup``) stays ignored.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """A KeyboardInterrupt, so that what unwinds cleanly on Ctrl-C (and is never caught as an error) does the same
    on SIGTERM and SIGHUP; ``signum`` says which signal it was."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def stopped_by_signals() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise ``Stopped`` in the main thread (elsewhere: nothing
    changes; Python runs handlers in the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def stop(signum: int, _frame: FrameType | None) -> None:
        caught.append(signum)
        for number in handled:
            signal.signal(number, signal.SIG_DFL)
        raise Stopped(signum)

    handled = [number for number in SIGNALS if signal.getsignal(number) is not signal.SIG_IGN]
    previous = {number: signal.signal(number, stop) for number in handled}
    try:
        yield
    finally:
        if not caught:
            for number, handler in previous.items():
                signal.signal(number, handler)
