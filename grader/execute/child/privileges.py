"""What a forked student process does to itself before it runs a line of student code, and the sweep between
submissions. Part of the child runtime: standard library only.

In the root layout the zygote is uid 0 inside its sandbox, holding only CAP_SETUID, CAP_SETGID and CAP_SETPCAP
(bubblewrap drops the rest), so that each student process it forks can become uid 65534 for real, with no
capabilities and an empty bounding set: the work ``setpriv`` did once per fresh interpreter, done after each fork.
Students then cannot signal, trace or read the zygote, which is another uid. The drop is verified from
/proc/self/status, and a process whose drop did not take exits before reading any student code (fail closed).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import shutil
import signal
import stat
import sys

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
LINUX_CAPABILITY_VERSION_3 = 0x20080522
CAPABILITY_FIELDS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
SCRATCH = ("/tmp", "/dev/shm")  # what a student may write inside the sandbox
EXIT_NOT_DROPPED = 78  # the process's privileges were not what they must be; it ran no student code

_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


LINUX = sys.platform.startswith("linux")


def prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def die_with_parent(parent: int | None = None) -> None:
    """SIGKILL when the process that forked this one ends (reset by a uid change: call it after dropping). Linux
    only; elsewhere the zygote watches its parent itself (zygote.py).

    ``parent``: the pid this process was started by. Should that parent have ended before the signal was set (it
    would then never come), this process is an orphan already and ends now."""
    if LINUX:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:
        os._exit(0)


def not_dumpable() -> None:
    """Processes of the same uid may not read this one's memory or open its files through /proc (Linux)."""
    if LINUX:
        prctl(PR_SET_DUMPABLE, 0)


def drop_to(uid: int) -> None:
    """Become ``uid`` (and gid) for real, with no supplementary groups and no capabilities left in any set."""
    for cap in range(64):  # the kernel's last capability is below 64; unknown numbers fail harmlessly
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # clears the permitted, effective and ambient sets
    header, data = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:  # the inheritable set, which a uid change keeps
        raise OSError(ctypes.get_errno(), "capset failed")


def _status() -> dict[str, str]:
    with open("/proc/self/status") as handle:
        return {key: value.strip() for key, _, value in (line.partition(":") for line in handle)}


def problems(uid: int | None, *, seccomp: bool) -> list[str]:
    """What is wrong with this process's privileges for running student code (empty when all is as it must be)."""
    if uid is None and not seccomp:
        return []  # nothing was asked of this process (no uid switch, no filter): nothing to check, even without /proc
    status = _status()
    found = []
    if uid is not None:
        ids = {"Uid": status.get("Uid", ""), "Gid": status.get("Gid", "")}
        found += [f"{key} is {value!r}" for key, value in ids.items() if set(value.split()) != {str(uid)}]
        found += [f"{key} is {status.get(key)}" for key in CAPABILITY_FIELDS if int(status.get(key, "1"), 16)]
        if status.get("Groups", ""):
            found.append(f"supplementary groups {status['Groups']}")
    if seccomp and status.get("Seccomp") != "2":
        found.append("no seccomp filter")
    if seccomp and status.get("NoNewPrivs") != "1":
        found.append("no_new_privs is not set")
    return found


def kill_all_but_me() -> None:
    """SIGKILL every process this one may signal, but itself: inside a sandbox, every process of its uid but the
    namespace's init, the zygote, which the kernel spares (isolation.BWRAP_COMMON)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)


def own_state() -> dict[str, object]:
    """What another process of this one's uid may change about it without a signal (prlimit, setpriority,
    sched_setaffinity, sched_setscheduler), and what its forks would inherit: in a user namespace, a student may
    do so to the zygote. A CPU hard limit below the time it has used kills it at once, whatever its signal
    handlers; a little above, later, in another student's turn. Compared before and after each submission
    (zygote.py)."""
    state: dict[str, object] = {}
    if hasattr(os, "getpriority"):
        state["nice"] = os.getpriority(os.PRIO_PROCESS, 0)
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            with contextlib.suppress(OSError, ValueError):
                state[name] = resource.getrlimit(getattr(resource, name))
    if hasattr(os, "sched_getaffinity"):
        state["affinity"] = sorted(os.sched_getaffinity(0))
    if hasattr(os, "sched_getscheduler"):
        state["scheduler"] = os.sched_getscheduler(0)
    return state


def scratch_mounts() -> set[str]:
    """The sandbox's own mounts inside the scratch folders, and the folders leading to them: a Python installation
    under /tmp (a checkout in /tmp/...) is bound inside the sandbox's /tmp. Read from /proc/self/mountinfo."""
    kept: set[str] = set()
    try:
        with open("/proc/self/mountinfo") as handle:
            points = [line.split()[4] for line in handle if len(line.split()) > 4]
    except OSError:
        return kept
    for point in points:
        for top in SCRATCH:
            if point.startswith(top + "/"):
                path = point
                while path != top:
                    kept.add(path)
                    path = os.path.dirname(path)
    return kept


def wipe_scratch(kept: set[str] | None = None) -> list[str]:
    """Empty the folders a student may write to, but for the sandbox's own mounts there (``kept``, from
    ``scratch_mounts``) and the folders holding them; return what could not be removed."""
    kept = scratch_mounts() if kept is None else kept
    mounts = {path for path in kept if os.path.ismount(path)}
    left: list[str] = []

    def wipe(folder: str) -> None:
        for entry in os.scandir(folder):
            if entry.path in mounts:
                continue
            if entry.path in kept:  # a folder leading to a mount: what a student put beside it goes
                wipe(entry.path)
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    _make_removable(entry.path)
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                left.append(entry.path)

    for top in SCRATCH:
        if os.path.isdir(top):
            wipe(top)
    return left


def nothing_left(kept: set[str] | None = None) -> bool:
    """Whether a sweep would find nothing to do: no process in this pid namespace but its init and this one,
    nothing a student put in the scratch folders, no System V IPC object. It only reads, so the zygote may ask it
    itself; anything it cannot read counts as something left."""
    try:
        if any(name.isdigit() and int(name) not in (1, os.getpid()) for name in os.listdir("/proc")):
            return False
        kept = scratch_mounts() if kept is None else kept
        mounts = {path for path in kept if os.path.ismount(path)}

        def empty(folder: str) -> bool:  # as wipe_scratch walks it: the sandbox's own mounts are not a student's
            with os.scandir(folder) as entries:
                return all(entry.path in mounts or (entry.path in kept and empty(entry.path)) for entry in entries)

        if not all(empty(top) for top in SCRATCH if os.path.isdir(top)):
            return False
        for table, _ in _IPC_TABLES:
            try:
                with open(table) as handle:
                    if len(handle.read().splitlines()) > 1:
                        return False
            except FileNotFoundError:  # a kernel without System V IPC
                continue
    except OSError:
        return False
    return True


def _make_removable(folder: str) -> None:
    """A student may leave folders without write or search permission for their owner; give them back."""
    for root, dirs, _ in os.walk(folder, topdown=True, onerror=None):
        for name in dirs:
            path = os.path.join(root, name)
            try:
                if not os.path.islink(path):
                    os.chmod(path, stat.S_IRWXU)
            except OSError:
                pass
    with contextlib.suppress(OSError):
        os.chmod(folder, stat.S_IRWXU)


IPC_RMID = 0
_IPC_TABLES = (("/proc/sysvipc/shm", "shmctl"), ("/proc/sysvipc/sem", "semctl"), ("/proc/sysvipc/msg", "msgctl"))


def remove_ipc_objects() -> int:
    """Remove the System V shared memory segments, semaphores and message queues this process may remove (they
    outlive the processes that made them); return how many could not be removed."""
    failed = 0
    for table, call in _IPC_TABLES:
        try:
            with open(table) as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) < 2:
                continue
            ident = int(fields[1])
            function = getattr(_libc, call)
            result = function(ident, 0, IPC_RMID, None) if call == "semctl" else function(ident, IPC_RMID, None)
            failed += result != 0
    return failed
