"""What /proc says of a process (grader/execute/procfs.py), read from real processes: the same start time while it
runs, whatever its command name holds; dying once killed, and after it is collected; where it sits among its
parent's children."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.execute import procfs

linux = pytest.mark.skipif(not procfs.AVAILABLE, reason="no /proc here (macOS): the grader does without it")

# A child that names itself (the command name /proc shows, 15 bytes at most), says so, then waits to be killed.
NAMED = ("import ctypes, sys, time; ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0); "
         "print('named', flush=True); time.sleep(60)")


def named_child(name: str) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", NAMED, name], stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"named\n"
    return child


@linux
@settings(max_examples=10, deadline=None)
@given(name=st.text(alphabet="ab )(:\t", min_size=1, max_size=15))
def test_a_running_process_keeps_its_start_time_whatever_its_command_name_holds(name: str) -> None:
    child = named_child(name)
    try:
        first, again = procfs.state_and_start(child.pid), procfs.state_and_start(child.pid)
        # Its state may change between the reads (it may not be asleep yet after printing); its start time may not.
        assert first is not None and again is not None and first[1] == again[1] > 0
        assert first[0] in "RS" and again[0] in "RS"
        assert not procfs.dying(child.pid)
    finally:
        child.kill()
        child.wait()


@linux
def test_a_killed_process_is_dying_until_collected_and_then_gone() -> None:
    child = named_child("victim")
    os.kill(child.pid, signal.SIGKILL)
    assert procfs.dying(child.pid)  # SIGKILL pending, in its exit, or a zombie: whichever the kernel has reached
    deadline = time.monotonic() + 10
    while (found := procfs.state_and_start(child.pid)) is not None and found[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert found is not None and found[0] == "Z" and procfs.dying(child.pid)  # a zombie, not yet collected
    child.wait()
    assert procfs.stat_fields(child.pid) is None and procfs.state_and_start(child.pid) is None
    assert procfs.dying(child.pid)


@linux
def test_a_child_is_found_among_its_parents_children_by_its_pid_in_its_namespace() -> None:
    child = named_child("child")
    try:
        assert child.pid in procfs.children(os.getpid())
        assert procfs.ns_pid(child.pid) is not None
        assert procfs.ns_pid(os.getpid()) == os.getpid()  # this process's own namespace is the one it sees
        assert procfs.threads(child.pid) >= 1
    finally:
        child.kill()
        child.wait()
    assert child.pid not in procfs.children(os.getpid())


def test_without_proc_no_process_is_said_to_be_dying(monkeypatch: pytest.MonkeyPatch) -> None:
    """On macOS a student's process is never taken for dead on /proc's word: its answers count."""
    monkeypatch.setattr(procfs, "AVAILABLE", False)
    assert not procfs.dying(os.getpid()) and not procfs.dying(2**22 + 1)
