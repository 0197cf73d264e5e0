"""Processes that end with the grader, however the grader ends (SIGKILL included), by the kernel's own means.

Nothing the grader does on its way out runs when it is killed, so each process it starts is tied to it when it is
born:

* a warm worker's sandbox: bubblewrap's ``--die-with-parent``, and without bubblewrap the zygote's own parent-death
  signal (child/zygote.py, child/privileges.py), each a SIGKILL from the kernel when the process that started it
  ends; the students' processes die with their zygote in turn;
* a job process (pipeline/backends/processes.py) is not the grader's child but its job server's, which lives as
  long as any job process holds its pipe: it watches the grader itself, through a pidfd (``stop_when_gone``), and
  stops when the grader has ended; the job server and multiprocessing's resource tracker then see their pipes close
  and end too;
* the fresh grader a Gradescope run starts for a second try watches its starter the same way (``OWNER_ENV``).

Where pidfds do not exist (macOS, a Linux before 5.3), the watch asks every second whether the process still runs.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from grader.execute.procfs import state_and_start

POLL_SECONDS = 1.0  # where no pidfd can say it at once, how often the watch asks
OWNER_ENV = "GRADER_OWNER"  # "pid:start time" of the process a grader started by another one ends with


@dataclass(frozen=True)
class Owner:
    """A process, told apart from a later one given the same pid by its start time (clock ticks after boot, from
    /proc; None where there is no /proc)."""

    pid: int
    started: int | None

    def __str__(self) -> str:
        return f"{self.pid}:{self.started if self.started is not None else ''}"

    @classmethod
    def parse(cls, text: str) -> Owner:
        pid, _, started = text.partition(":")
        return cls(int(pid), int(started) if started else None)


def this_process() -> Owner:
    found = state_and_start(os.getpid())
    return Owner(os.getpid(), found[1] if found is not None else None)


def _running(owner: Owner) -> bool:
    """Whether ``owner`` still runs (a zombie has ended: it is only waiting to be collected)."""
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: it exists
        pass
    if owner.started is None:
        return True
    found = state_and_start(owner.pid)
    return found is not None and found[0] != "Z" and found[1] == owner.started


def _wait_for_end(owner: Owner) -> None:
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(owner.pid)
        except ProcessLookupError:
            return
        except OSError:  # a kernel without pidfds: asked in turns below
            pidfd = None
    if pidfd is not None:
        try:
            # The pidfd was opened before this check: if the pid is still the owner's now, the pidfd is the owner's.
            if _running(owner):
                select.select([pidfd], [], [])  # readable once the process has ended
        finally:
            os.close(pidfd)
        return
    while _running(owner):
        time.sleep(POLL_SECONDS)


def when_gone(owner: Owner, then: Callable[[], None]) -> None:
    """Call ``then``, from a daemon thread, as soon as ``owner`` has ended; at once if it already has (a grader
    killed while this process was starting)."""

    def watch() -> None:
        _wait_for_end(owner)
        then()

    threading.Thread(target=watch, name=f"watch-{owner.pid}", daemon=True).start()


def stop_when_gone(owner: Owner, grace: float) -> None:
    """SIGTERM to this process once ``owner`` has ended, so that it stops as when asked to (its handler kills what
    it runs); SIGKILL ``grace`` seconds later should the main thread not have taken the signal by then (what this
    process started is tied to it in turn)."""

    def stop() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace)
        os.kill(os.getpid(), signal.SIGKILL)

    when_gone(owner, stop)
