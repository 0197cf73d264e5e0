"""The warm worker: imports NumPy, torch and the child runtime once, then forks one student process per request.

Started by the grader inside the sandbox (grader/execute/workers.py) as ``python -s -P zygote.py CONTROL_FD
SETTINGS_JSON``. A fresh interpreter spends about 1.5 s importing torch; a fork of this one is ready in about 10 ms.
The zygote never runs student code and holds nothing of the grader's: no references, no hidden inputs, no
solutions. Each fork drops to the student's uid (in the root layout), applies the submission's rlimits and then
talks to the grader over its own pipes, exactly as a fresh process would (main.serve).

Control messages are JSON datagrams over a Unix socket pair (SOCK_SEQPACKET on Linux, SOCK_DGRAM elsewhere),
file descriptors riding along (SCM_RIGHTS)::

    zygote -> ready {pid, uid, versions}
    grader -> fork {id, rlimits, home} + [read fd, write fd, output fd]    zygote -> forked {id, pid}
    zygote -> exited {id, code}   whenever a forked student process ends (code: exit status, or -signal)
    grader -> sweep {}            kill every student process in the sandbox    zygote -> swept {}
    grader -> clean {}            sweep, then empty /tmp and /dev/shm and System V IPC    zygote -> cleaned {left}
    grader -> exit {}
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import huge_pages  # noqa: E402
import main as runtime  # noqa: E402  (imports NumPy and torch, and sets torch to one thread)
import privileges  # noqa: E402

sys.path.remove(HERE)

MAX_CONTROL = 1 << 16
PARENT_CHECK_SECONDS = 1.0


def only_sigchld_handled() -> None:
    """Leave SIGCHLD the only signal with a handler (Python's for SIGINT, any a library installed). As its
    namespace's init the zygote gets no signal from a student but those it handles: each handler is a way in."""
    try:
        with open("/proc/self/status") as handle:
            caught = next(int(line.split()[1], 16) for line in handle if line.startswith("SigCgt:"))
    except (OSError, StopIteration, ValueError):
        caught = 0
    numbers = {n for n in range(1, 65) if caught >> (n - 1) & 1} | {signal.SIGINT}
    for number in numbers - {signal.SIGCHLD, signal.SIGKILL, signal.SIGSTOP}:
        with contextlib.suppress(OSError, ValueError):
            signal.signal(number, signal.SIG_DFL)


class Zygote:
    def __init__(self, control: socket.socket, settings: dict) -> None:
        self.control = control
        self.student_uid: int | None = settings.get("student_uid")  # None: students keep the zygote's uid
        self.namespaced: bool = bool(settings.get("namespaced"))  # kill(-1) reaches only this sandbox
        self.seccomp: bool = bool(settings.get("seccomp"))
        self.children: dict[int, int] = {}  # pid -> request id
        self.swept = False  # whether the last sweep had something to do (a helper ran, in the root layout)
        self.state: dict[str, object] = {}  # privileges.own_state() when it became ready
        # Outside a pid namespace the grader says which process started this one: the parent seen now may already be
        # init or a subreaper, the grader having ended while torch was imported.
        self.parent = settings.get("parent") or os.getppid()
        self.wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that SIGCHLD reaches the wakeup fd

    def send(self, message: dict) -> None:
        self.control.send(json.dumps(message).encode())

    def run(self) -> None:
        import numpy
        import torch

        runtime.warm_up(os.environ.get("GRADER_WARM_UP", ""))
        # Every object so far (torch's, NumPy's, the runtime's) moves to a generation the collector never walks: a
        # collection in a fork would otherwise touch each of them and copy most of the zygote's pages (about
        # 10,000 page faults and 100 ms a fork, measured).
        gc.freeze()
        huge_pages.collapse_anonymous_memory()  # a fork then costs a quarter of the kernel time: see huge_pages.py
        only_sigchld_handled()
        self.state = privileges.own_state()
        self.send({"op": "ready", "pid": os.getpid(), "uid": os.getuid(), "python": sys.version.split()[0],
                   "torch": torch.__version__, "numpy": numpy.__version__})
        while True:
            ready, _, _ = select.select([self.control, self.wake_read], [], [], PARENT_CHECK_SECONDS)
            if os.getppid() != self.parent:  # the grader is gone (where no parent-death signal said so)
                self.sweep()
                os._exit(0)
            if self.wake_read in ready:
                os.read(self.wake_read, 4096)
                self.reap()
            if self.control in ready:
                data, fds, _, _ = socket.recv_fds(self.control, MAX_CONTROL, 3)
                if not data:
                    self.sweep()
                    os._exit(0)  # the grader is gone
                self.handle(json.loads(data), fds)

    def handle(self, request: dict, fds: list[int]) -> None:
        op = request.get("op")
        if op == "fork":
            self.fork(request, fds)
        elif op == "sweep":
            self.sweep()
            self.send({"op": "swept"})
        elif op == "clean":
            left = self.sweep()
            # Nothing of the submission runs any more (the sweep waited for it): a change found now was its doing,
            # and every later fork would inherit it, or die of it. The grader replaces a worker that says so.
            changed = sorted(key for key, value in privileges.own_state().items() if self.state.get(key) != value)
            if changed:
                left.insert(0, "the worker's own " + ", ".join(changed) + " changed")
            self.send({"op": "cleaned", "left": left[:20], "swept": self.swept})  # a datagram: macOS allows 2 KB
        else:
            self.sweep()
            os._exit(0)

    def reap(self, *, until_none_left: bool = False) -> None:
        """Collect ended children and report the student processes among them. In a pid namespace the zygote is
        init and the parent of every orphan too, so ``until_none_left`` returns only once every other process in
        the sandbox has ended."""
        while True:
            try:
                pid, status = os.waitpid(-1, 0 if until_none_left else os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            ident = self.children.pop(pid, None)
            if ident is not None:
                self.send({"op": "exited", "id": ident, "code": os.waitstatus_to_exitcode(status)})

    def fork(self, request: dict, fds: list[int]) -> None:
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            self.send({"op": "forked", "id": request.get("id"), "error": "expected three file descriptors"})
            return
        pid = os.fork()
        if pid == 0:
            try:
                self.become_student(request, *fds)
            finally:
                os._exit(privileges.EXIT_NOT_DROPPED)
        for fd in fds:
            os.close(fd)
        self.children[pid] = request["id"]
        self.send({"op": "forked", "id": request["id"], "pid": pid})

    def become_student(self, request: dict, read_fd: int, write_fd: int, output_fd: int) -> None:
        """In the fork: a student process with its own session, output, uid, limits and nothing of the zygote's."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a fresh interpreter
        os.setsid()  # its own process group: one killpg ends what it starts (outside a pid namespace)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        keep = {0, 1, 2, read_fd, write_fd}
        for fd in map(int, os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else range(3, 1024)):
            if fd not in keep:
                with contextlib.suppress(OSError):
                    os.close(fd)
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:  # the OOM killer's first choice, not the zygote
                handle.write("1000")
        except OSError:
            pass
        if self.student_uid is not None:
            privileges.drop_to(self.student_uid)
        wrong = privileges.problems(self.student_uid, seccomp=self.seccomp)
        if wrong:
            os.write(2, f"refusing to run student code: {'; '.join(wrong)}\n".encode())
            os._exit(privileges.EXIT_NOT_DROPPED)
        privileges.die_with_parent()
        home = request.get("home") or "/tmp"
        os.environ["HOME"] = os.environ["TMPDIR"] = home
        os.chdir(home)
        runtime.serve(read_fd, write_fd, request.get("rlimits") or {})
        os._exit(0)

    def sweep(self) -> list[str]:
        """Kill every process a student started in this sandbox (daemons included); empty what they could write.

        The zygote is the pid namespace's init, which kill(-1) skips: in a user namespace it kills everything else
        itself; in the root layout a helper that becomes the students' uid does, so that nothing of another uid is
        touched. Either way it then waits until no other process is left (each ends as the zygote's child, orphans
        included). Outside any namespace only the student processes' own groups are killed: kill(-1) would reach
        the grader."""
        self.swept = True
        if not self.namespaced:
            for pid in list(self.children):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
            self.reap(until_none_left=True)
            return []
        if self.student_uid is not None and not self.children and privileges.nothing_left():
            # Most submissions leave nothing behind: then no helper is forked (a fork of this zygote and the
            # helper's work cost milliseconds a submission).
            self.swept = False
            return []
        if self.student_uid is None:
            privileges.kill_all_but_me()
            self.reap(until_none_left=True)
            left = privileges.wipe_scratch()
            privileges.remove_ipc_objects()
            return left
        read_end, write_end = os.pipe()
        helper = os.fork()
        if helper == 0:
            try:
                os.close(read_end)
                privileges.drop_to(self.student_uid)
                privileges.kill_all_but_me()
                left = privileges.wipe_scratch()
                privileges.remove_ipc_objects()
                os.write(write_end, json.dumps(left).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        chunks = []
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)
        os.close(read_end)
        os.waitpid(helper, 0)
        self.reap(until_none_left=True)
        try:
            return list(json.loads(b"".join(chunks) or b"[]"))
        except ValueError:
            return ["the sweep did not finish"]


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    settings = json.loads(sys.argv[2])
    privileges.not_dumpable()
    if settings.get("die_with_parent"):
        privileges.die_with_parent(settings.get("parent"))
    Zygote(control, settings).run()


if __name__ == "__main__":
    main()
