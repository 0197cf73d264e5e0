"""Which student processes of one grading run are still alive, for the tests that kill or finish a grader; and how
such a test starts a grader as from a terminal (``as_from_a_terminal``).

Where cgroups are in use, a run's processes are those in its groups (named ``<grader pid>-<n>``), which student
code cannot leave; so another grader running on the same machine does not count. Without cgroups, any process
running the child runtime counts, but for those of the test session's other workers (tests/parallel.py), which
grade their own classes meanwhile.

A zombie does not count: it has ended and holds nothing but its pid until its parent collects it. A sandbox's
processes are not the grader's children; once the sandbox's own init is gone they are handed to the machine's init,
which may take its time (a Firecracker VM's init left a worker's two zygotes as zombies for up to a second after
the grader had exited; systemd collects them at once).
"""

from __future__ import annotations

import os
import signal
from contextlib import suppress
from pathlib import Path

import psutil

from grader.execute import cgroups, procfs
from grader.execute.isolation import CHILD_DIR, SANDBOX_CHILD_DIR


def _cmdline(entry: Path) -> str:
    return (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def student_processes(grader_pid: int, *, also_matching: str | None = None) -> list[str]:
    """Command lines of the run's processes still alive, and of any process whose command line holds
    ``also_matching`` (a tag a submission gave a process that execs something else)."""
    in_groups = cgroups.detect()[0] is not None
    marker = f"/{cgroups.GROUP}/{grader_pid}-"
    others = set() if in_groups else _other_workers()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with suppress(OSError):
            fields = procfs.stat_fields(int(entry.name))
            if fields is None or fields[procfs.STATE] in procfs.ENDED:
                continue
            cmdline = _cmdline(entry)
            if in_groups:
                ours = marker in (entry / "cgroup").read_text()
            else:
                ours = SANDBOX_CHILD_DIR in cmdline or str(CHILD_DIR) in cmdline or "grader-launch" in cmdline
                ours = ours and not _under(int(entry.name), others)
            if ours or (also_matching is not None and also_matching in cmdline):
                found.append(cmdline)
    return found


def _other_workers() -> set[int]:
    """The pids of this session's other pytest-xdist workers: the processes the controller started but this one."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return set()
    return {p.pid for p in psutil.Process(os.getppid()).children()} - {os.getpid()}


def _under(pid: int, ancestors: set[int]) -> bool:
    """Whether the process descends from one of ``ancestors``."""
    try:
        return any(parent.pid in ancestors for parent in psutil.Process(pid).parents())
    except psutil.Error:  # ended meanwhile
        return False


def as_from_a_terminal() -> None:
    """Popen's ``preexec_fn`` for a grader that a test will signal: SIGINT, SIGTERM and SIGHUP at their default
    handling, as a terminal starts a command. The suite itself may run with some ignored (a background job of a shell
    without job control has SIGINT ignored, POSIX says; under nohup SIGHUP is), and the grader keeps ignoring a signal
    that was ignored when it started, as a command under nohup must: such a grader would not stop."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
