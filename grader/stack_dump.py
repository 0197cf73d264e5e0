"""Where a grader process is, on request: ``kill -USR1 PID`` prints each of its threads' stack to its stderr, and the
process goes on. Registered by the command line and by each job process (grader/pipeline/backends/processes.py).
"""

from __future__ import annotations

import contextlib
import faulthandler
import signal
import sys

STACKS_SIGNAL = getattr(signal, "SIGUSR1", None)  # not on Windows


def stacks_on_request() -> None:
    """``kill -USR1 PID`` prints where each thread of this process is, to its stderr, and the process goes on: for
    whoever wonders why a run is taking its time (and for the tests, when a run does not stop as it should)."""
    if STACKS_SIGNAL is not None and sys.stderr is not None and hasattr(sys.stderr, "fileno"):
        # A stderr without a file descriptor (a capture in memory) has nothing to write the stacks to.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            faulthandler.register(STACKS_SIGNAL, file=sys.stderr, all_threads=True)
