"""tests/processes.py, the leftover-process finder the kill and hostile tests rest on: a live process in a run's
cgroup counts, its zombie does not (a sandbox's processes are handed to the machine's init when the sandbox's own
init is gone, and an init may take its time collecting them). On cgroup v2 a zombie still names the group it died
in, which is what the finder must look past; cgroup v1 takes it out of its groups as it exits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.execute import cgroups, procfs

from .processes import student_processes

TAG = "leftover-finder-probe"


def test_a_live_process_in_a_run_s_group_counts_and_its_zombie_does_not() -> None:
    support, why = cgroups.detect()
    if support is None:
        pytest.skip(f"needs cgroups, where a run's processes are told by their group: {why}")
    # A group named as a worker's of this process: nothing else in this test module makes one.
    group = cgroups.Cgroup(support, memory_bytes=256 << 20, processes=8)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", TAG])
    try:
        group.join(child.pid)
        assert [line for line in student_processes(os.getpid()) if TAG in line] == [
            f"{sys.executable} -c import time; time.sleep(60) {TAG} "]
        os.kill(child.pid, signal.SIGKILL)  # and not collected: a zombie (on cgroup v2 still naming its group)
        deadline = time.monotonic() + 10
        while (found := procfs.state_and_start(child.pid)) is not None and found[0] != "Z":
            assert time.monotonic() < deadline, found
            time.sleep(0.01)
        if support.version == 2:
            assert f"/{cgroups.GROUP}/{os.getpid()}-" in Path(f"/proc/{child.pid}/cgroup").read_text()
        assert student_processes(os.getpid()) == []
    finally:
        child.kill()
        child.wait()
        group.close()
