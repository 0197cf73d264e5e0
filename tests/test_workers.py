"""Warm workers: a zygote that imported torch once forks every student process, and one submission in a worker
leaves nothing behind for the next one (processes, files, shared memory), cannot reach the zygote, and a lost
zygote is replaced without costing anyone their result."""

from __future__ import annotations

import dataclasses
import os
import resource
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.check.student import StudentCode
from grader.discover import read_program
from grader.execute import Limits, Returned, StudentProcess, isolation
from grader.execute.workers import Worker, WorkerPool

LIMITS = Limits(call_seconds=5.0, unit_seconds=5.0, submission_seconds=60.0)
SANDBOX = isolation.detect()
needs_namespaces = pytest.mark.skipif(SANDBOX.bwrap is None, reason="bubblewrap is not usable on this machine")


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    pool = WorkerPool(size=1, sandbox=SANDBOX, limits=LIMITS)
    with pool, pool.acquire() as one:
        one.start()
        yield one


def plain(value: Returned) -> object:
    """What came back, as Python values (sequences as lists)."""
    return [plain(item) for item in value.items] if value.kind == "sequence" else value.value


def run(worker: Worker, source: str, *calls: str) -> list:
    """Load ``source`` in a process forked by ``worker``, call each named function once, kill the process."""
    program = read_program(source.encode(), kind="python", name="student.py", written_ids=[])
    with StudentProcess(limits=LIMITS, deadline=time.monotonic() + 60, worker=worker) as process:
        process.start()
        units = process.load(units=program.wire_units(), module_name=program.module_name, stop_on_exit=True,
                             withheld=())
        assert all(u.status == "ok" for u in units), [u.error_message for u in units]
        with process.question(provided_files=(), provided_names=()) as session:
            code = StudentCode(session)
            return [plain(code.function(name)()) for name in calls]


PROBE = """
import os

def status():
    with open("/proc/self/status") as handle:
        fields = dict(line.rstrip("\\n").split(":\\t", 1) for line in handle if ":\\t" in line)
    return [fields[key].strip() for key in ("Uid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")]

def zygote():
    # The warm worker that forked this submission: the parent of the question's parent.
    with open(f"/proc/{os.getppid()}/status") as handle:
        pid = int(next(line.split()[1] for line in handle if line.startswith("PPid:")))
    try:
        os.kill(pid, 0)
        signalled = "signalled"
    except PermissionError:
        signalled = "refused"
    try:
        open(f"/proc/{pid}/mem", "rb").close()
        memory = "opened"
    except PermissionError:
        memory = "refused"
    return [signalled, memory]
"""


@needs_namespaces
@pytest.mark.skipif(SANDBOX.student_uid is None, reason="the grader is not root: students share the worker's uid")
def test_a_forked_student_process_is_uid_65534_with_no_capabilities_and_cannot_touch_the_zygote(worker: Worker) -> None:
    status, zygote = run(worker, PROBE, "status", "zygote")
    uid, *caps, no_new_privs = status
    assert uid.split() == ["65534"] * 4
    assert caps == ["0000000000000000"] * 5
    assert no_new_privs == "1"
    assert zygote == ["refused", "refused"]


LEAVE_BEHIND = """
import ctypes, os, time

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", "424242"])
    os._exit(0)
os.wait()
with open("/tmp/left-by-a", "w") as handle:
    handle.write("a's notes")
os.makedirs("/tmp/locked/inner")
os.chmod("/tmp/locked", 0)
with open("/dev/shm/segment", "w") as handle:
    handle.write("shared")
libc = ctypes.CDLL(None)
SEGMENT = libc.shmget(0x5EED, 4096, 0o1666)
zygote_pid = os.getppid()
try:
    os.kill(zygote_pid, signal := 19)  # SIGSTOP: a worker that stops would stall everyone after this student
    STOPPED = "stopped"
except PermissionError:
    STOPPED = "refused"

def report():
    return [SEGMENT >= 0, STOPPED]
"""

LOOK_AROUND = """
import os

def look():
    sleepers = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if b"424242" in handle.read():
                        sleepers.append(entry)
            except OSError:
                pass
    with open("/proc/sysvipc/shm") as handle:
        segments = len(handle.read().splitlines()) - 1
    return [sorted(os.listdir("/tmp")), sorted(os.listdir("/dev/shm")), sleepers, segments]
"""


@needs_namespaces
def test_the_next_submission_in_a_worker_finds_nothing_the_last_one_left(worker: Worker) -> None:
    # What a student finds in a clean worker: nothing, or the sandbox's own mounts (a checkout under /tmp).
    (fresh,) = run(worker, LOOK_AROUND, "look")
    assert worker.clean()
    assert not worker.swept  # it left nothing: the zygote saw so itself, without forking a helper to sweep
    ((made_segment, stopped),) = run(worker, LEAVE_BEHIND, "report")
    assert made_segment
    if SANDBOX.student_uid is not None:
        assert stopped == "refused"  # another uid: students cannot signal the zygote
    assert worker.clean()
    assert worker.swept
    (after,) = run(worker, LOOK_AROUND, "look")
    assert after == fresh and "left-by-a" not in after[0]
    assert after[1:] == [[], [], 0]  # /dev/shm, processes left, System V shared memory segments


LEFTOVERS = {
    "a file in /tmp": "open('/tmp/notes', 'w').write('x')",
    "a file in /dev/shm": "open('/dev/shm/notes', 'w').write('x')",
    "a System V segment": "import ctypes\nctypes.CDLL(None).shmget(0x5EEE, 4096, 0o1666)",
}


@needs_namespaces
@pytest.mark.skipif(SANDBOX.student_uid is None, reason="the grader is not root: students share the worker's uid")
@pytest.mark.parametrize("leftover", sorted(LEFTOVERS))
def test_any_one_thing_left_behind_makes_the_zygote_sweep(worker: Worker, leftover: str) -> None:
    # The zygote skips the sweep only when it sees nothing left: each kind of leftover alone is seen.
    (fresh,) = run(worker, LOOK_AROUND, "look")
    assert worker.clean()
    run(worker, LEFTOVERS[leftover] + "\ndef nothing():\n    return 0\n", "nothing")
    assert worker.clean() and worker.swept
    (after,) = run(worker, LOOK_AROUND, "look")
    assert after == fresh


def test_a_lost_zygote_is_replaced_and_the_submission_is_still_graded() -> None:
    with WorkerPool(size=1, sandbox=SANDBOX, limits=LIMITS) as pool:
        with pool.acquire() as one:
            one.start()
            first = one.host_pid
            assert first is not None
            os.kill(first, signal.SIGKILL)  # what the OOM killer or a bug would do
            assert run(one, "def f():\n    return 42\n", "f") == [42]
            assert one.host_pid not in (None, first)
        with pool.acquire() as again:
            assert again.alive  # the replacement was kept for the next submission


@needs_namespaces
def test_the_zygote_is_its_namespaces_init_and_handles_no_signal_but_sigchld(worker: Worker) -> None:
    # As init, it gets from inside its namespace only the signals it has a handler for (the kernel drops the rest,
    # SIGKILL included), and kill(-1) skips it: what keeps students that share its uid from killing it.
    assert worker.info["pid"] == 1 and worker.host_pid is not None
    status = Path(f"/proc/{worker.host_pid}/status").read_text()
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    assert caught == 1 << (signal.SIGCHLD - 1)


CHANGES = {
    "its priority": lambda pid: os.setpriority(os.PRIO_PROCESS, pid, 5),
    "its CPU limit": lambda pid: resource.prlimit(pid, resource.RLIMIT_CPU, (10**6, 10**6)),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_zygote_whose_limits_or_priority_changed_is_replaced_before_the_next_submission(change: str) -> None:
    # What a student sharing the zygote's uid may do to it (prlimit, setpriority): every later fork would inherit it,
    # and a CPU hard limit below what the zygote used kills it at its next clock tick, in someone else's turn.
    with WorkerPool(size=1, sandbox=SANDBOX, limits=LIMITS) as pool:
        with pool.acquire() as one:
            one.start()
            first = one.host_pid
            assert first is not None
            CHANGES[change](first)
            assert run(one, "def f():\n    return 42\n", "f") == [42]
        with pool.acquire() as again:
            assert not again.alive  # its clean said so: closed, started afresh on the next fork
            assert run(again, "import os\ndef nice():\n    return os.getpriority(os.PRIO_PROCESS, 0)\n",
                       "nice") == [0]
            assert again.host_pid not in (None, first)


NOT_ROOT = """
import os, tempfile

def probe():
    with open(os.path.join(os.environ["HOME"], "mine.txt"), "w") as handle:
        handle.write("a student's own file")
    try:
        open(BLOCKED, "w").close()
        wrote = "wrote"
    except PermissionError:
        wrote = "refused"
    with open(f"/proc/{os.getppid()}/status") as handle:
        zygote = int(next(line.split()[1] for line in handle if line.startswith("PPid:")))
    try:
        os.kill(zygote, 0)
        signalled = "signalled"
    except PermissionError:
        signalled = "refused"
    return [os.getuid(), os.getgid(), wrote, signalled]
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="switching the student's uid needs a grader running as root")
def test_without_namespaces_a_root_grader_still_runs_students_as_uid_65534(tmp_path: Path) -> None:
    """A container that refuses namespaces (Gradescope's, say): the student is not root, owns only its folder."""
    bare = dataclasses.replace(isolation.detect("off"), mode="partial", student_uid=isolation.SANDBOX_UID)
    assert "uid 65534 (no namespaces)" in bare.describe() and bare.summary() == "uid-65534, rlimits"
    blocked = tmp_path / "graders-own"
    blocked.mkdir(mode=0o755)
    with WorkerPool(size=1, sandbox=bare, limits=LIMITS) as pool, pool.acquire() as one:
        source = f"BLOCKED = {str(blocked / 'planted.txt')!r}\n" + NOT_ROOT
        assert run(one, source, "probe") == [[65534, 65534, "refused", "refused"]]
    assert list(blocked.iterdir()) == []


def _kernel_collapses_huge_pages() -> bool:
    """MADV_COLLAPSE exists from Linux 6.1 on, wherever transparent huge pages are not switched off."""
    try:
        setting = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
        major, minor = (int(part) for part in os.uname().release.split(".")[:2])
    except (OSError, ValueError):
        return False
    return "[never]" not in setting and (major, minor) >= (6, 1)


@pytest.mark.skipif(not _kernel_collapses_huge_pages(), reason="this kernel cannot collapse memory into huge pages")
def test_the_zygotes_memory_is_in_huge_pages_so_that_each_fork_copies_few_page_table_entries(worker: Worker) -> None:
    assert worker.host_pid is not None
    rollup = Path(f"/proc/{worker.host_pid}/smaps_rollup").read_text()
    sizes = {line.split(":")[0]: int(line.split()[1]) for line in rollup.splitlines()[1:]}
    # Most of what importing torch and NumPy left on the heap: a fork copies one entry per 2 MiB of it.
    assert sizes["AnonHugePages"] > sizes["Anonymous"] // 2, rollup
