"""Warm workers: a zygote per worker that has imported NumPy, torch and the child runtime once, inside its own
sandbox, and forks a student process for each submission (child/zygote.py).

Starting a fresh interpreter costs about 1.5 s, almost all of it ``import torch``; a fork of a warm zygote is ready in
about 10 ms. Each worker lives in its own bubblewrap sandbox (pid, mount, network, IPC and UTS namespaces) and grades
one submission at a time: between two submissions the zygote kills every process the first one left (daemons
included) and empties the folders it could write, and a worker that cannot be cleaned, or whose zygote died, is
replaced. The student processes still get everything they got as fresh interpreters: their own uid (in the root
layout), no capabilities, the seccomp filter, rlimits, a cgroup of their own, and a time limit on every read.
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import IO, Any, Literal

from grader.errors import InfrastructureError
from grader.execute import isolation, procfs, seccomp
from grader.execute.cgroups import Cgroup
from grader.execute.isolation import Sandbox
from grader.execute.limits import Limits

STARTUP_SECONDS = 60.0  # a zygote imports torch once; generous for a loaded laptop
CONTROL_SECONDS = 10.0  # a fork, a sweep or a clean; past this the zygote counts as lost
# A message pipe's buffer (Linux's unprivileged maximum): a large array crosses in 80 system calls rather than 1,280
# (80 MB, bahdanau's million keys: 0.07 s rather than 0.33 s on this project's machine).
PIPE_BYTES = 1 << 20
DIAGNOSTIC_BYTES = 8 << 10  # what a zygote printed, kept for the message when it fails to start


class WorkerLost(Exception):
    """The zygote ended or stopped answering; the worker must be replaced (never the student's fault alone)."""


# What a zygote warms up beyond what every assignment uses, read by the zygote (child/zygote.py): "training" (a
# model's first forward and backward pass) or "optimizer" (also torch's optimiser, whose first construction imports
# torch's compiler).
WarmUp = Literal["", "training", "optimizer"]
WARM_UP = "GRADER_WARM_UP"


def child_env(home: str) -> dict[str, str]:
    return {
        "PATH": os.defpath,
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",  # set iteration order, so a rerun gives the same results
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        # Fixed thresholds: blocks of 4 MiB and more always come from mmap and go back to the system when freed.
        # glibc's default raises the threshold after a free, and a loop of large temporaries then grows the heap
        # without bound, which would make memory budgets (and memory limits) depend on the allocator's history. The
        # heap keeps up to 16 MiB free at its top, so a training loop's smaller temporaries (an LSTM's gates, about
        # 1 MB) are reused rather than mapped and faulted in at every step: practical10's training took 12-14 s
        # with a 256 KiB threshold and no trim threshold, 9-10 s with these (8.6-11 s with glibc's defaults).
        # A call under a memory budget goes back to a 256 KiB threshold (child/main.py, _allocator_for_a_budget).
        "MALLOC_MMAP_THRESHOLD_": str(4 << 20),
        "MALLOC_TRIM_THRESHOLD_": str(16 << 20),
    }


@dataclass(frozen=True)
class Forked:
    """A student process, fresh from the zygote: the grader's ends of its pipes and where to find it."""

    ident: int
    to_child: int
    from_child: int
    output: IO[bytes]  # what it writes to its own stdout and stderr (C extensions, os.write)
    host_pid: int | None  # as this machine's /proc sees it, when it could be found


def find_host_pid(root: int, ns_pid: int, *, depth: int = 3) -> int | None:
    """The descendant of ``root`` (itself included) whose pid in its own namespace is ``ns_pid``."""
    frontier = [root]
    for _ in range(depth + 1):
        for pid in frontier:
            if procfs.ns_pid(pid) == ns_pid:
                return pid
        frontier = [child for pid in frontier for child in procfs.children(pid)]
    return None


class Worker:
    """One zygote in its own sandbox. Not thread-safe: one submission at a time holds it (WorkerPool)."""

    def __init__(self, *, sandbox: Sandbox, device: str, limits: Limits, warm_up: WarmUp = "") -> None:
        self.sandbox = sandbox
        self.device = device
        self.limits = limits
        # The assignment trains a model in the student's process (Assignment.warm_up): the zygote also pays a model's
        # first pass once, and where its harness makes a torch optimiser, the first one's cost (torch imports its
        # compiler then, about 0.8 s and 70 MB, shared by every fork).
        self.warm_up = warm_up
        self.popen: subprocess.Popen[bytes] | None = None
        self.control: socket.socket | None = None
        self.info: dict[str, Any] = {}
        self.host_pid: int | None = None
        self.forks = 0
        self.swept = False  # whether the last clean found something to kill or remove (the root layout says)
        # Where cgroups exist: the group of the student processes this worker forks, one submission's at a time
        # (made once: making and removing a group costs milliseconds of kernel time).
        self.cgroup: Cgroup | None = None
        self._exits: dict[int, int] = {}
        self._output = bytearray()
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self.retired = False  # its run is stopping: a zygote killed now must not be started again (``kill``)

    # ----- lifecycle ---------------------------------------------------------------------------------------------
    @property
    def spared(self) -> tuple[int, ...]:
        """What killing a submission's processes in the worker's groups must spare: the zygote."""
        return (self.host_pid,) if self.host_pid is not None else ()

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None and self.control is not None

    def start(self, timeout: float = STARTUP_SECONDS) -> None:
        """Start the zygote and wait until it has imported everything (about 1.5 s). The sandbox dies with the
        thread that calls this, not only with the process (the kernel's parent-death signal, lifetime.py, follows
        the thread that started the child): a pool whose workers outlive the threads that grade with them starts
        them from a thread that lives as long as it does."""
        self.close()
        if self.retired:
            raise InfrastructureError("the grader is stopping: no grading worker is started any more")
        if self.sandbox.bwrap:
            home, cwd = "/tmp", "/"
        else:
            self._scratch = tempfile.TemporaryDirectory(prefix="grader-worker-")
            home = cwd = self._scratch.name
        # Datagrams keep each message whole; SOCK_SEQPACKET also says when the other end closes (Linux only: macOS
        # has datagrams, and there the zygote watches its parent instead).
        kind = getattr(socket, "SOCK_SEQPACKET", None) if sys.platform.startswith("linux") else None
        ours, theirs = socket.socketpair(socket.AF_UNIX, kind or socket.SOCK_DGRAM)
        filter_fd = seccomp.program_fd() if self.sandbox.seccomp else None
        passed = (theirs.fileno(),) if filter_fd is None else (theirs.fileno(), filter_fd)
        env = child_env(home) | ({WARM_UP: self.warm_up} if self.warm_up else {})
        try:
            argv = self.sandbox.command(theirs.fileno(), env=env, device=self.device, limits=self.limits,
                                        seccomp_fd=filter_fd)
            self.popen = subprocess.Popen(argv, pass_fds=passed, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, cwd=cwd, env=env, start_new_session=True)
        except OSError as exc:
            ours.close()
            raise InfrastructureError(f"cannot start a grading worker: {exc}") from exc
        finally:
            theirs.close()
            if filter_fd is not None:
                os.close(filter_fd)
        self.control = ours
        assert self.popen.stdout is not None
        threading.Thread(target=self._drain, args=(self.popen.stdout,), daemon=True).start()
        try:
            ready = self._expect("ready", timeout)
        except WorkerLost:
            text = bytes(self._output).decode("utf-8", "replace").strip()
            self.close()
            raise InfrastructureError("a grading worker did not start" + (f": {text[-2000:]}" if text else "")) \
                from None
        self.info = ready
        # Without a pid namespace the zygote is the process started; with one, its pid here is found in /proc.
        self.host_pid = find_host_pid(self.popen.pid, int(ready.get("pid", -1))) if self.sandbox.bwrap \
            else self.popen.pid
        if self.sandbox.cgroups and self.cgroup is None:
            if self.host_pid is None:
                self.close()
                raise InfrastructureError("cannot find a grading worker's process to put it in its cgroups")
            # The zygote joins the groups, so that every student process is born in them. Its own pages were charged
            # where they were made, not here; its tasks are allowed for beside the students'.
            self.cgroup = Cgroup(self.sandbox.cgroups, memory_bytes=self.limits.memory_bytes,
                                 processes=self.limits.processes + procfs.threads(self.host_pid) + 1)
            self.cgroup.join(self.host_pid)

    def close(self) -> None:
        """Stop the zygote and everything in its sandbox (the pid namespace dies with the zygote's sandbox)."""
        if self.control is not None:
            with suppress(OSError):
                self.control.send(json.dumps({"op": "exit"}).encode())
            self.control.close()
            self.control = None
        if self.popen is not None:
            if self.sandbox.bwrap:  # the zygote dies with bubblewrap, and as its pid namespace's init, takes it along
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
            else:
                with suppress(subprocess.TimeoutExpired):
                    self.popen.wait(timeout=2)
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
            self.popen = None
        self._exits.clear()
        if self.cgroup is not None:
            self.cgroup.close()
            self.cgroup = None
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def kill(self) -> None:
        """For a run that is stopping, from any thread: kill the zygote and every process of its sandbox and groups
        now, and start no zygote again. Waits for nothing but the kernel (no lock, no reply), so that a signal
        handler may call it whatever the worker was doing; ``close`` collects what is left."""
        self.retired = True
        popen = self.popen
        if popen is not None:
            # The zygote's session: bubblewrap (whose sandbox dies with it), or the zygote itself, whose students die
            # with it (their parent-death signal).
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(popen.pid, signal.SIGKILL)
        cgroup = self.cgroup
        if cgroup is not None:
            cgroup.close()  # what a submission moved out of the zygote's session killed too; the groups removed

    def _drain(self, stream: IO[bytes]) -> None:
        with stream:
            while chunk := stream.read1(1 << 16):  # type: ignore[attr-defined]
                room = DIAGNOSTIC_BYTES - len(self._output)
                if room > 0:
                    self._output += chunk[:room]

    # ----- the control channel -----------------------------------------------------------------------------------
    def _send(self, message: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
        if not self.alive or self.control is None:
            raise WorkerLost("the worker is not running")
        try:
            socket.send_fds(self.control, [json.dumps(message).encode()], list(fds))
        except OSError as exc:
            raise WorkerLost(f"the worker's control channel failed: {exc}") from None

    def _receive(self, timeout: float) -> dict[str, Any]:
        """The next message from the zygote (an exit notice is also kept for exit_code())."""
        if self.control is None:
            raise WorkerLost("the worker is not running")
        ready, _, _ = select.select([self.control], [], [], max(0.0, timeout))
        if not ready:
            raise WorkerLost(f"the worker did not answer within {timeout:g} s")
        try:
            data = self.control.recv(1 << 16)
        except OSError as exc:
            raise WorkerLost(f"the worker's control channel failed: {exc}") from None
        if not data:
            raise WorkerLost("the worker ended")
        message = json.loads(data)
        if message.get("op") == "exited":
            self._exits[int(message["id"])] = int(message["code"])
        return message

    def _expect(self, op: str, timeout: float) -> dict[str, Any]:
        """The next message that is not an exit notice, which must be ``op``."""
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline - time.monotonic())
            if message.get("op") == "exited":
                continue
            if message.get("op") != op:
                raise WorkerLost(f"the worker answered {message!r} where {op!r} was expected")
            return message

    # ----- student processes -------------------------------------------------------------------------------------
    def fork(self, *, rlimits: dict[str, int | None], home: str | None = None,
             timeout: float = CONTROL_SECONDS) -> Forked:
        """A new student process with these rlimits, its working folder ``home`` (the sandbox's /tmp by default).

        A zygote found dead (killed between two submissions, say) is replaced once, in a fresh sandbox."""
        if not self.alive:
            self.start()
        try:
            return self._fork(rlimits=rlimits, home=home, timeout=timeout)
        except WorkerLost:
            self.start()
            return self._fork(rlimits=rlimits, home=home, timeout=timeout)

    def _fork(self, *, rlimits: dict[str, int | None], home: str | None, timeout: float) -> Forked:
        self.forks += 1
        ident = self.forks
        child_read, grader_write = os.pipe()
        grader_read, child_write = os.pipe()
        output_read, output_write = os.pipe()
        for end in (grader_write, grader_read):
            _widen(end)
        try:
            try:
                self._send({"op": "fork", "id": ident, "rlimits": rlimits, "home": home},
                           (child_read, child_write, output_write))
            finally:  # the zygote holds its copies now, or never will
                for fd in (child_read, child_write, output_write):
                    os.close(fd)
            reply = self._expect("forked", timeout)
            if reply.get("id") != ident or "pid" not in reply:
                raise WorkerLost(f"the worker could not fork: {reply.get('error') or reply!r}")
        except WorkerLost:
            for fd in (grader_write, grader_read, output_read):
                os.close(fd)
            raise
        host_pid = self._host_pid_of(int(reply["pid"]))
        if self.cgroup is not None and host_pid is not None:
            # cgroup v2: into the worker's students group, where cgroup.kill reaches it and not the zygote. It runs
            # no student code before the load request, so what it starts is born there (v1: nothing to do).
            self.cgroup.adopt(host_pid)
        return Forked(ident, grader_write, grader_read, os.fdopen(output_read, "rb"), host_pid)

    def _host_pid_of(self, pid: int) -> int | None:
        """A forked process's pid on this machine: the same outside a pid namespace, else found among the zygote's
        children (not from the zygote's own /proc status, which walks its large address space)."""
        if not self.sandbox.bwrap:
            return pid
        if self.host_pid is None:
            return None
        return next((child for child in procfs.children(self.host_pid) if procfs.ns_pid(child) == pid), None)

    def exited(self, ident: int) -> bool:
        """Whether student process ``ident`` has ended, as far as the zygote has said (without waiting)."""
        while self.control is not None and ident not in self._exits:
            ready, _, _ = select.select([self.control], [], [], 0)
            if not ready:
                break
            try:
                self._receive(0.1)
            except WorkerLost:
                return True
        return ident in self._exits or not self.alive

    def exit_code(self, ident: int, timeout: float) -> int | None:
        """How student process ``ident`` ended (an exit status, or minus the signal), or None if not known in time."""
        deadline = time.monotonic() + timeout
        while ident not in self._exits:
            left = deadline - time.monotonic()
            if left <= 0 or not self.alive:
                return None
            try:
                self._receive(left)  # exit notices are kept as they arrive; nothing else is expected now
            except WorkerLost:
                return None
        return self._exits.pop(ident)

    def sweep(self, timeout: float = CONTROL_SECONDS) -> None:
        """Kill every student process in this worker's sandbox (what they started too)."""
        self._send({"op": "sweep"})
        self._expect("swept", timeout)

    def clean(self, timeout: float = CONTROL_SECONDS) -> bool:
        """After a submission: kill what it left, empty the scratch folders. False when the worker must go."""
        try:
            self._send({"op": "clean"})
            reply = self._expect("cleaned", timeout)
        except WorkerLost:
            return False
        self._exits.clear()
        self.swept = bool(reply.get("swept", True))
        return not reply.get("left")


class WorkerPool:
    """``size`` warm workers, started on first use; each grades one submission at a time."""

    def __init__(self, *, size: int, sandbox: Sandbox | None = None, device: str = "cpu",
                 limits: Limits | None = None, warm_up: WarmUp = "") -> None:
        self.sandbox = sandbox if sandbox is not None else isolation.detect()
        self.device = device
        self.limits = limits or Limits()
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._all: list[Worker] = []
        for _ in range(max(1, size)):
            worker = Worker(sandbox=self.sandbox, device=device, limits=self.limits, warm_up=warm_up)
            self._all.append(worker)
            self._idle.put(worker)

    @contextmanager
    def acquire(self) -> Iterator[Worker]:
        worker = self._idle.get()
        try:
            yield worker
        finally:
            if worker.alive and not worker.clean():
                worker.close()  # started again on its next fork, in a fresh sandbox
            self._idle.put(worker)

    def stop(self) -> None:
        """End every worker at once, whatever it is grading (Worker.kill); ``close`` still follows."""
        for worker in self._all:
            worker.kill()

    def close(self) -> None:
        for worker in self._all:
            worker.close()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _widen(fd: int) -> None:
    """The pipe's buffer raised to PIPE_BYTES where the system allows it (Linux); elsewhere, or refused (a user over
    the system's pipe quota), it stays as it was: only slower."""
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setpipe is not None:
        with suppress(OSError):
            fcntl.fcntl(fd, setpipe, PIPE_BYTES)
