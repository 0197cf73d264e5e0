"""Which student processes of one grading run are still alive, for the tests that kill or finish a grader.

Where cgroups are in use, a run's processes are those in its groups (named ``<grader pid>-<n>``), which student
code cannot leave; so another grader running on the same machine does not count. Without cgroups, any process
running the child runtime counts.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

from grader.execute import cgroups
from grader.execute.isolation import CHILD_DIR, SANDBOX_CHILD_DIR


def _cmdline(entry: Path) -> str:
    return (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def student_processes(grader_pid: int, *, also_matching: str | None = None) -> list[str]:
    """Command lines of the run's processes still alive, and of any process whose command line holds
    ``also_matching`` (a tag a submission gave a process that execs something else)."""
    in_groups = cgroups.detect()[0] is not None
    marker = f"/{cgroups.GROUP}/{grader_pid}-"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with suppress(OSError):
            cmdline = _cmdline(entry)
            if in_groups:
                ours = marker in (entry / "cgroup").read_text()
            else:
                ours = SANDBOX_CHILD_DIR in cmdline or str(CHILD_DIR) in cmdline or "grader-launch" in cmdline
            if ours or (also_matching is not None and also_matching in cmdline):
                found.append(cmdline)
    return found
