"""What Linux's /proc says of a process, read where the grader needs more than a pid: whether it is the same
process as before (its start time), whether it is dying (its state, flags and pending signals), and where a
sandbox's processes are (their pids inside the sandbox's namespace, their children, their threads). The child
runtime reads its own /proc/self apart: it imports nothing of the grader.

Field numbers are those of proc(5), counted from 1; ``stat_fields`` drops the first two (the pid and the command
name, which may hold spaces and parentheses of its own), so field N is ``fields[N - 3]``.
"""

from __future__ import annotations

import os
import signal

AVAILABLE = os.path.exists("/proc/self/stat")  # False on macOS, where callers fall back to what pids alone say

STATE = 3 - 3  # R, S, D, Z (a zombie), X or x (dead), ...
FLAGS = 9 - 3
PENDING_SIGNALS = 31 - 3  # "signal": the bitmap of pending signals
START_TIME = 22 - 3  # clock ticks after boot

PF_EXITING = 0x4  # in FLAGS: the process is in its exit
SIGKILL_PENDING = 1 << (signal.SIGKILL - 1)  # in PENDING_SIGNALS
ENDED = (b"Z", b"X", b"x")  # states of a process that has ended (a zombie only waits to be collected)


def stat_fields(pid: int) -> list[bytes] | None:
    """/proc/PID/stat's fields after the command name (None: no such process, or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    return text.rpartition(b")")[2].split()


def dying(pid: int) -> bool:
    """Whether the process is gone, a zombie, in its exit, or has SIGKILL pending (which kill() leaves on it the
    moment kill() returns, before the process has run again). False where there is no /proc: nothing says so."""
    if not AVAILABLE:
        return False
    fields = stat_fields(pid)
    try:
        return fields is None or fields[STATE] in ENDED or bool(int(fields[FLAGS]) & PF_EXITING) or \
            bool(int(fields[PENDING_SIGNALS]) & SIGKILL_PENDING)
    except (IndexError, ValueError):
        return True  # reaped while it was read


def state_and_start(pid: int) -> tuple[str, int] | None:
    """The process's state letter and start time (None: no such process, or no /proc)."""
    fields = stat_fields(pid)
    return None if fields is None else (fields[STATE].decode(), int(fields[START_TIME]))


def ns_pid(pid: int) -> int | None:
    """The pid of ``pid`` in its own (innermost) pid namespace."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        return None
    return None


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(p) for p in handle.read().split()]
    except (OSError, ValueError):
        return []


def threads(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            return next(int(line.split()[1]) for line in handle if line.startswith("Threads:"))
    except (OSError, StopIteration, ValueError):
        return 1
