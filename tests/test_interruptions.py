"""Whatever signal ends `grader grade`, every process it started is gone within seconds: its job processes and their
server, the warm workers' sandboxes and zygotes, the students' processes. SIGTERM, SIGHUP and SIGINT stop it at once,
without waiting for the submissions being graded, with exit code 128 + the signal and one line saying that the same
command grades the rest; after SIGKILL, the same command into the same folder grades only what was not recorded.

Each test runs the real command (``python -m grader grade``) on a class of the toy assignment and signals it while a
student's process runs. The processes are found as the descendants of the test's own process, which makes itself a
child subreaper (PR_SET_CHILD_SUBREAPER) for the test: what the grader leaves behind when it dies is then reparented
to the test rather than to init, and stays in the tree that is searched. A snapshot of the grader's tree taken before
the signal would miss a process started after it, and orphans found by their command line could be another
grader's, run by another test on the same machine.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil
import pytest

from .conftest import FIXTURE_SOLUTIONS, ROOT, TOY_CORRECT
from .processes import as_from_a_terminal

pytestmark = pytest.mark.slow

LARGE = 40  # a class this large is graded by job processes (PROCESSES_FROM); a smaller one by threads
PR_SET_CHILD_SUBREAPER = 36
GONE_WITHIN_S = 5.0  # every process the grader started, after the signal
STOPPED_WITHIN_S = 5.0  # SIGTERM, SIGHUP, SIGINT to exit, while each submission being graded has up to 15 s to go
# Loading takes 15 s (three statements of 5 s, each under the unit limit given on the command line): a grader that
# waited for the submissions it is grading would take that long to stop.
SLOW = "import time\n\ntime.sleep(5)\ntime.sleep(5)\ntime.sleep(5)\n\n" + TOY_CORRECT
SLOW_LIMITS = ("--limit", "unit_seconds=10", "--limit", "submission_seconds=120")

_libc = ctypes.CDLL(None, use_errno=True)


# ----- the process tree ------------------------------------------------------------------------------------------
def _parents() -> dict[int, int]:
    """Every live process's parent (zombies are dead: left out)."""
    return {p.info["pid"]: p.info["ppid"] for p in psutil.process_iter(["pid", "ppid", "status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE and p.info["ppid"] is not None}


def _cmdline(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline()).strip()
    except psutil.Error:
        return "?"


def descendants(root: int) -> dict[int, str]:
    """The live processes below ``root`` (zombies are dead: left out), with their command lines."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    below, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        for child in children.get(pid, []):
            if child not in below:
                below[child] = _cmdline(child)
                frontier.append(child)
    return below


@contextmanager
def subreaper() -> Iterator[set[int]]:
    """The test process as its descendants' subreaper; yields the descendants it had before (not the test's)."""
    if _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.skip(f"PR_SET_CHILD_SUBREAPER: {os.strerror(ctypes.get_errno())}")
    before = set(descendants(os.getpid()))
    try:
        yield before
    finally:
        _libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def started_by_the_run(before: set[int]) -> dict[int, str]:
    return {pid: cmd for pid, cmd in descendants(os.getpid()).items() if pid not in before}


def reap(pids: Iterable[int]) -> None:
    """Collect the orphans handed to the test that have ended (only those: other tests' children are theirs)."""
    for pid in pids:
        with suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds:g} s for {what}")
        time.sleep(0.05)


def _zygote(command: str) -> bool:
    """A zygote's command line, or its forks' (bubblewrap's names the zygote too, and bubblewrap forks itself)."""
    return "zygote.py" in command and Path(command.split()[0]).name.startswith("python")


def student_running(before: set[int]) -> bool:
    """A student's process is running: a zygote's fork, its parent a zygote."""
    tree = started_by_the_run(before)
    known = _parents()
    parents = {pid: known[pid] for pid in tree if pid in known}
    return any(_zygote(command) and _zygote(tree.get(parents.get(pid, 0), "")) for pid, command in tree.items())


# ----- a run -----------------------------------------------------------------------------------------------------
def toy_class(folder: Path, size: int, source: str) -> Path:
    folder.mkdir()
    for index in range(size):
        (folder / f"s{index:02d}.py").write_text(source, encoding="utf-8")
    return folder


def command(submissions: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "grader", "grade", "toy", str(submissions), "--out", str(out), "--solutions",
            str(FIXTURE_SOLUTIONS), "--no-similarity", "--jobs", "2", *extra]


class Run:
    """A grader started as from a terminal (in its own session, so the group is its own; SIGINT, SIGTERM and SIGHUP
    at their default handling, whatever the suite runs with), its output in files, which no leftover process can
    hold open the way it would hold a pipe."""

    def __init__(self, folder: Path, argv: list[str], preexec: Callable[[], None] = as_from_a_terminal) -> None:
        self.stdout_path, self.stderr_path = folder / "stdout.txt", folder / "stderr.txt"
        with self.stdout_path.open("w") as out, self.stderr_path.open("w") as err:
            self.process = subprocess.Popen(argv, stdout=out, stderr=err, cwd=ROOT, start_new_session=True,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=preexec)

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text()

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()


def signal_and_watch(run: Run, before: set[int], signum: int, *, group: bool = False) -> tuple[int, float, dict]:
    """Send ``signum`` (to the grader's whole group with ``group``, as a terminal's Ctrl-C does); return its exit
    code, how long it took to exit, and what it started that is still alive GONE_WITHIN_S after the signal."""
    seen = set(started_by_the_run(before))
    sent = time.monotonic()
    if group:
        os.killpg(run.process.pid, signum)
    else:
        os.kill(run.process.pid, signum)
    try:
        code = run.process.wait(timeout=60)
    except subprocess.TimeoutExpired:  # say what the grader was doing, where each of its threads is, what it ran
        running = started_by_the_run(before)
        for pid, cmd in {run.process.pid: "grader", **running}.items():
            if "grader" in cmd and "zygote" not in cmd:  # the run and its job processes print their stacks
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGUSR1)
        time.sleep(2)
        raise AssertionError(f"the grader did not exit within 60 s of signal {signum}; still running: "
                             f"{running}\nstdout:\n{run.stdout[-3000:]}\nstderr:\n{run.stderr[-12000:]}") from None
    took = time.monotonic() - sent
    left: dict[int, str] = {}
    while time.monotonic() - sent < GONE_WITHIN_S:
        left = started_by_the_run(before)
        seen |= set(left)
        reap(seen)
        if not left:
            break
        time.sleep(0.05)
    return code, took, left


@contextmanager
def watched() -> Iterator[set[int]]:
    """Subreaper for the test; whatever the run left when the test ends is killed (by pid: the run's only)."""
    with subreaper() as before:
        try:
            yield before
        finally:
            left = started_by_the_run(before)
            for pid in left:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
            reap(set(left))


def recorded(out: Path) -> set[str]:
    with sqlite3.connect(f"file:{out / 'gradebook.sqlite'}?mode=ro", uri=True) as book:
        return {student for (student,) in book.execute("SELECT student FROM submissions")}


STOPS = {
    # (size of the class, signal, sent to the grader's whole process group)
    "job-processes-SIGTERM": (LARGE, signal.SIGTERM, False),
    "job-processes-SIGHUP": (LARGE, signal.SIGHUP, False),
    "job-processes-ctrl-c": (LARGE, signal.SIGINT, True),
    "threads-SIGTERM": (4, signal.SIGTERM, False),
}


@pytest.mark.parametrize("case", list(STOPS))
def test_a_signal_stops_the_run_at_once_and_leaves_no_process_behind(tmp_path: Path, case: str) -> None:
    size, signum, group = STOPS[case]
    submissions = toy_class(tmp_path / "class", size, SLOW)
    with watched() as before:
        run = Run(tmp_path, command(submissions, tmp_path / "out", *SLOW_LIMITS))
        wait_for(lambda: student_running(before) or run.process.poll() is not None, 90, "a student's process")
        assert run.process.poll() is None, run.stdout + run.stderr
        code, took, left = signal_and_watch(run, before, signum, group=group)
    assert not left, f"still alive {GONE_WITHIN_S:g} s after {signum.name}: {left}"
    assert code == 128 + signum, run.stdout + run.stderr
    assert took < STOPPED_WITHIN_S, f"{took:.1f} s to stop"
    said = run.stderr.strip().splitlines()[-1]
    assert "the results recorded so far are kept; run the same command again to grade the rest" in said, run.stderr
    assert signum.name in said or signum == signal.SIGINT, said
    assert "Traceback" not in run.stderr, run.stderr


def under_nohup() -> None:
    as_from_a_terminal()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def test_a_signal_ignored_when_the_grader_started_stays_ignored_and_the_class_is_graded(tmp_path: Path) -> None:
    """Under nohup, SIGHUP (the terminal closing) does not stop the run: every student is graded and recorded."""
    submissions = toy_class(tmp_path / "class", 4, "import time\n\ntime.sleep(2)\n\n" + TOY_CORRECT)
    with watched() as before:
        run = Run(tmp_path, command(submissions, tmp_path / "out"), preexec=under_nohup)
        wait_for(lambda: student_running(before) or run.process.poll() is not None, 90, "a student's process")
        assert run.process.poll() is None, run.stdout + run.stderr
        run.process.send_signal(signal.SIGHUP)
        assert run.process.wait(timeout=120) == 0, run.stdout + run.stderr
    assert recorded(tmp_path / "out") == {f"s{index:02d}" for index in range(4)}


def test_after_sigkill_without_a_sandbox_no_process_is_left(tmp_path: Path) -> None:
    """Without bubblewrap, each zygote ties itself to the job process that started it (its parent-death signal)."""
    submissions = toy_class(tmp_path / "class", LARGE, SLOW)
    with watched() as before:
        run = Run(tmp_path, command(submissions, tmp_path / "out", *SLOW_LIMITS, "--sandbox", "off"))
        wait_for(lambda: student_running(before) or run.process.poll() is not None, 90, "a student's process")
        assert run.process.poll() is None, run.stdout + run.stderr
        code, _, left = signal_and_watch(run, before, signal.SIGKILL)
    assert not left, f"still alive {GONE_WITHIN_S:g} s after SIGKILL: {left}"
    assert code == -signal.SIGKILL


def test_after_sigkill_no_process_is_left_and_the_same_command_grades_only_the_rest(tmp_path: Path) -> None:
    submissions = toy_class(tmp_path / "class", LARGE, TOY_CORRECT)
    out = tmp_path / "out"
    argv = command(submissions, out)
    with watched() as before:
        run = Run(tmp_path, argv)
        wait_for(lambda: re.search(rf"^\[\s*3/{LARGE}\]", run.stdout, re.MULTILINE) is not None
                 or run.process.poll() is not None, 90, "three results")
        assert run.process.poll() is None, run.stdout + run.stderr
        code, _, left = signal_and_watch(run, before, signal.SIGKILL)
    assert not left, f"still alive {GONE_WITHIN_S:g} s after SIGKILL: {left}"
    assert code == -signal.SIGKILL
    kept = recorded(out)
    assert 3 <= len(kept) < LARGE
    again = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{len(kept)} unchanged since the last run (use --force to regrade); grading {LARGE - len(kept)}." \
        in again.stdout, again.stdout
    assert len(recorded(out)) == LARGE


def test_sigusr1_prints_where_each_thread_is_and_the_run_goes_on(tmp_path: Path) -> None:
    """For a run that seems stuck: ``kill -USR1`` prints the stacks of the run's threads and changes nothing else."""
    submissions = toy_class(tmp_path / "class", 2, "import time\n\ntime.sleep(3)\n\n" + TOY_CORRECT)
    with watched() as before:
        run = Run(tmp_path, command(submissions, tmp_path / "out"))
        wait_for(lambda: student_running(before) or run.process.poll() is not None, 90, "a student's process")
        os.kill(run.process.pid, signal.SIGUSR1)
        code = run.process.wait(timeout=120)
    assert code == 0, run.stdout + run.stderr
    assert re.search(r"^Current thread 0x[0-9a-f]+ \(most recent call first\):$", run.stderr, re.MULTILINE), run.stderr
    assert re.search(r'File ".*grader/.*", line \d+ in \w+', run.stderr), run.stderr
    assert recorded(tmp_path / "out") == {"s00", "s01"}
