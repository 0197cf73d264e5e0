"""The student's process, seen from the grader: start it, load the program, fork it per question, kill it.

The process is forked by a warm worker (workers.py), the pool's or one of its own. Every read has a deadline (per
call and per submission). Whatever the process does, the grader gets back a reply, a ``CallTimedOut`` or a
``ProcessDied``; on either of the last two everything the process started is killed.
"""

from __future__ import annotations

import math
import os
import select
import signal
import tempfile
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

from grader.errors import CallTimedOut, InfrastructureError, ProcessDied
from grader.execute import isolation, procfs
from grader.execute.cgroups import Cgroup
from grader.execute.child import wire
from grader.execute.isolation import Sandbox
from grader.execute.limits import Limits
from grader.execute.workers import STARTUP_SECONDS, Forked, Worker, WorkerLost

HELLO_SECONDS = 20.0  # a fork answers in milliseconds; a loaded machine may take longer
UNIT_MARGIN_SECONDS = 5.0
EXIT_SECONDS = 2.0  # how long to wait for the zygote to report how a process ended
READ_AHEAD = 1 << 16  # bytes asked of the pipe at a time, at least


@dataclass(frozen=True)
class LoadedUnit:
    """How one notebook cell or top-level statement ran while loading."""

    status: str  # a UnitStatus value (grader/execute/child/wire.py), as the child sent it
    stdout: str
    stderr: str
    dropped: int  # characters of output beyond the cap
    error_type: str | None
    error_message: str | None
    traceback: str
    notes: tuple[str, ...]


@dataclass(frozen=True)
class QuestionOutput:
    stdout: str
    stderr: str
    dropped: int



class LoadInterrupted(Exception):
    """The process died or hung in one code unit while loading; the runner may start again without that unit."""

    def __init__(self, index: int, cause: CallTimedOut | ProcessDied) -> None:
        super().__init__(cause.message)
        self.index = index
        self.cause = cause


class _RawOutput:
    """Drains the process's own stdout/stderr (C extensions, os.write) on a thread, keeping the first bytes only."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.dropped = 0
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes]) -> None:
        with stream:
            while chunk := stream.read1(1 << 16):  # type: ignore[attr-defined]
                room = self.cap - len(self.kept)
                self.kept += chunk[:max(room, 0)]
                self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        self._thread.join(timeout=1.0)  # a grandchild that kept the pipe open must not hold up grading
        return bytes(self.kept).decode("utf-8", "replace")


class StudentProcess:
    """One running submission. Use as a context manager so every process it started is always killed.

    ``worker`` is the warm worker that forks it (a pool's); without one, the process starts a worker of its own,
    which costs a fresh interpreter, and stops it when it is killed."""

    def __init__(self, *, limits: Limits, deadline: float, sandbox: Sandbox | None = None,
                 device: str = "cpu", worker: Worker | None = None) -> None:
        self.limits = limits
        self.deadline = deadline
        self.sandbox = worker.sandbox if worker is not None else \
            sandbox if sandbox is not None else isolation.detect()
        self.device = device
        self._own_worker = worker is None
        self.worker = worker if worker is not None else Worker(sandbox=self.sandbox, device=device, limits=limits)
        self.hello: dict[str, Any] = {}
        self._child: Forked | None = None
        self._exit_code: int | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._cgroup: Cgroup | None = None  # the worker's: one submission's processes at a time
        self._oom_kills = 0  # the group's count of OOM kills when this process started
        self._raw: _RawOutput | None = None
        self._to_child = -1
        self._from_child = -1
        self._oom = False
        self._spent = False
        self._forkable = True  # False when the loaded code started CUDA, whose context a fork cannot use
        self._inbox = bytearray()  # read from the process, not yet taken as part of a message
        self.waited_s = 0.0  # starting it and waiting for its answers: the execute stage's time

    @property
    def pid(self) -> int | None:
        """The process's pid on this machine (also its process group's), when known."""
        return self._child.host_pid if self._child is not None else None

    # ----- lifecycle ---------------------------------------------------------------------------------------------
    def start(self) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            return self._start()
        finally:
            self.waited_s += time.perf_counter() - started

    def _start(self) -> dict[str, Any]:
        sandbox = self.sandbox
        home = None  # the worker sandbox's private /tmp
        if not sandbox.bwrap:
            self._scratch = tempfile.TemporaryDirectory(prefix="grader-scratch-")
            home = self._scratch.name
            if sandbox.student_uid is not None:  # the student's own folder, which nobody else may enter
                os.chown(home, sandbox.student_uid, sandbox.student_uid)
        rlimits: dict[str, int | None] = {**self.limits.rlimits(),
                                           "processes": isolation.nproc_limit(self.limits, sandbox)}
        if self.device != "cpu":
            # A CUDA context reserves tens of GiB of address space: under an address-space limit it cannot start
            # ("out of memory" from cudaGetDeviceCount). The memory cap is then the submission's cgroup's.
            del rlimits["memory_bytes"]
        try:
            if not self.worker.alive:
                # Starting the worker is the grader's overhead, not the student's time: the deadline moves with it.
                starting = time.monotonic()
                self.worker.start(STARTUP_SECONDS)
                self.deadline += time.monotonic() - starting
            self._child = self.worker.fork(rlimits=rlimits, home=home)
            # Forked inside the worker's groups (the zygote is in them: a process moved in costs milliseconds).
            self._cgroup = self.worker.cgroup
            self._oom_kills = self._cgroup.oom_kills() if self._cgroup is not None else 0
        except (WorkerLost, OSError) as exc:
            self.kill()
            raise InfrastructureError(f"cannot start the student's process: {exc}") from exc
        except InfrastructureError:
            self.kill()
            raise
        self._raw = _RawOutput(self._child.output, self.limits.raw_output_bytes)
        self._to_child, self._from_child = self._child.to_child, self._child.from_child
        header, _ = self._read(min(HELLO_SECONDS, self._remaining()), waiting_for="start-up")
        if header.get("op") != "hello":
            raise ProcessDied("the student's process did not start properly")
        self.hello = header
        return header

    def load(self, *, units: Sequence[dict[str, Any]], module_name: str, stop_on_exit: bool,
             withheld: Sequence[str] | Mapping[str, str], skip: Collection[int] = (),
             stubbed: Mapping[str, str] | None = None) -> list[LoadedUnit]:
        """Run the program, unit by unit; raises LoadInterrupted naming the unit that hung or killed the process."""
        # withheld: the names the sandbox's d2l withholds, with the question asking for each where known
        request = {"op": "load", "units": list(units), "module_name": module_name, "stop_on_exit": stop_on_exit,
                   "withheld": dict(withheld) if isinstance(withheld, Mapping) else list(withheld),
                   "unit_seconds": self.limits.unit_seconds,
                   "stream_cap": self.limits.stream_cap, "device": self.device, "skip": sorted(skip),
                   "max_elements": self.limits.max_array_elements, "stubbed": dict(stubbed or {})}
        self._send(request)
        loaded: list[LoadedUnit] = []
        for index in range(len(units)):
            # The child stops a unit itself at unit_seconds; the margin is for code that blocks or ignores SIGALRM.
            limit = self.limits.unit_seconds + UNIT_MARGIN_SECONDS
            try:
                header, _ = self._receive(min(limit, self._remaining()), waiting_for="your code to finish loading")
            except (CallTimedOut, ProcessDied) as exc:
                if isinstance(exc, CallTimedOut) and self._remaining() <= 0:
                    raise
                raise LoadInterrupted(index, exc) from None
            if header.get("op") != "unit" or header.get("index") != index or not isinstance(header.get("unit"), dict):
                self.kill()
                raise ProcessDied("the student's process answered the load request with something else")
            loaded.append(_loaded_unit(header["unit"]))
        header, _ = self._receive(min(self.limits.call_seconds, self._remaining()), waiting_for="the end of loading")
        if header.get("op") != "loaded":
            self.kill()
            raise ProcessDied("the student's process answered the load request with something else")
        self._forkable = header.get("forkable") is not False
        return loaded

    def kill(self) -> None:
        """Kill the process and everything it started; the worker goes on to fork the next one."""
        if self._child is not None:
            try:
                if self._cgroup is not None:
                    self._cgroup.kill(spare=self.worker.spared)
                elif not self.worker.exited(self._child.ident):
                    self.worker.sweep()
                self._reap()
            except WorkerLost:
                self.worker.close()  # a worker that cannot sweep is replaced, its whole sandbox killed
            self._child = None
        if self._cgroup is not None:
            self._cgroup.kill(spare=self.worker.spared)  # whatever escaped the process group: a setsid daemon
            self._oom = self._oom or self._cgroup.oom_kills() > self._oom_kills
            self._cgroup = None
        for fd in (self._to_child, self._from_child):
            if fd >= 0:
                os.close(fd)
        self._to_child = self._from_child = -1
        if self._own_worker:
            self.worker.close()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def raw_output(self) -> str:
        """What reached the process's own stdout/stderr (C extensions, os.write), not captured per cell."""
        if self._raw is None:
            return ""
        text = self._raw.text()
        if self._raw.dropped:
            text += f"\n[... {self._raw.dropped} more bytes not kept]"
        return text

    def close(self) -> None:
        self.kill()

    def __enter__(self) -> StudentProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def alive(self) -> bool:
        return self._child is not None and self._to_child >= 0 and not self.worker.exited(self._child.ident)

    @property
    def spent(self) -> bool:
        """It was asked its last question (it exits when that question ends): another needs a fresh process."""
        return self._spent

    def doomed(self) -> bool:
        """Whether the loaded process is dead or dying: gone, a zombie, in its exit, or with SIGKILL pending (which
        kill() leaves on it the moment it returns, before the process has run again). Linux only; False elsewhere
        or when its pid is unknown."""
        return self.pid is not None and procfs.dying(self.pid)

    def _reap(self) -> int | None:
        """How the process ended, once the worker has said (waiting a little for it)."""
        if self._exit_code is None and self._child is not None:
            self._exit_code = self.worker.exit_code(self._child.ident, EXIT_SECONDS)
        return self._exit_code

    # ----- questions ---------------------------------------------------------------------------------------------
    @contextmanager
    def question(self, *, provided_files: Sequence[dict[str, Any]] = (), provided_names: Sequence[str] = (),
                 last: bool = False, record_provided: bool = False) -> Iterator[QuestionSession]:
        """Fork the loaded submission; calls inside the block go to the fork, which exits at the end. The ``last``
        question this process answers is answered by the process itself, which then exits: the same namespace,
        without the fork's cost. A process that cannot be forked (its code used the GPU while loading) answers each
        question itself: the next needs a fresh process (``spent``). ``record_provided``: the provided names keep
        the calls made to them, read with the ``provided_calls`` request (the student kit's recording).
        ``provided_files``: the provided files to run first, each ``{"filename", "source", "reference"}``
        (``ProvidedFile.wire``), in one namespace, each compiled under its own filename."""
        last = last or not self._forkable
        self._send({"op": "question", "provided_files": list(provided_files), "provided_names": list(provided_names),
                    "stream_cap": self.limits.stream_cap, "last": last, "record_provided": record_provided})
        session = QuestionSession(self, last=last)
        self._spent = self._spent or last
        yield session
        if self.alive and not session.ended:
            session.end()

    # ----- messages ----------------------------------------------------------------------------------------------
    def request(self, header: dict[str, Any], blobs: Sequence[bytes] = (), *, timeout: float | None = None,
                waiting_for: str = "an answer") -> tuple[dict[str, Any], list[bytes]]:
        self._send(header, blobs)
        limit = self.limits.call_seconds if timeout is None else timeout
        return self._receive(min(limit, self._remaining()), waiting_for=waiting_for)

    def _remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def _send(self, header: dict[str, Any], blobs: Sequence[bytes] = ()) -> None:
        if self._to_child < 0:
            raise ProcessDied("the student's process is no longer running")
        try:
            for part in wire.message_parts(header, blobs):
                view = memoryview(part)
                while view:
                    view = view[os.write(self._to_child, view):]
        except (BrokenPipeError, OSError):
            self._died("the student's process closed its input")

    def _receive(self, timeout: float, *, waiting_for: str) -> tuple[dict[str, Any], list[bytes]]:
        started = time.perf_counter()
        try:
            return self._read(timeout, waiting_for=waiting_for)
        finally:
            self.waited_s += time.perf_counter() - started

    def _read(self, timeout: float, *, waiting_for: str) -> tuple[dict[str, Any], list[bytes]]:
        deadline = time.monotonic() + timeout
        submission_bound = deadline >= self.deadline - 1e-3

        def read_exact(n: int) -> bytes:
            # What arrived is read in one go (a message's header, lengths and arrays come together), and kept for
            # the next read: a system call per message rather than one per field.
            inbox = self._inbox
            while len(inbox) < n:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([self._from_child], [], [], max(0.0, left))
                if not ready:
                    self.kill()
                    what = "the submission's time limit" if submission_bound else "the time limit"
                    seconds = self.limits.submission_seconds if submission_bound else timeout
                    raise CallTimedOut(f"no answer within {what} ({seconds:g} s) while waiting for {waiting_for}")
                chunk = os.read(self._from_child, min(max(n - len(inbox), READ_AHEAD), 1 << 20))
                if not chunk:
                    # A process answering its last question ends as a fork does: told as a fork's end is.
                    ended = "your code ended the process" if self._spent else "the student's process ended"
                    self._died(f"{ended} while the grader waited for {waiting_for}")
                inbox += chunk
            taken = bytes(inbox[:n])
            del inbox[:n]
            return taken

        try:
            return wire.read_message(read_exact, max_total=self.limits.max_message_bytes,
                                     max_blob=self.limits.max_array_elements * 16 + 4096,
                                     validate=self._validate_header)
        except wire.WireError as exc:
            self.kill()
            raise ProcessDied(f"the student's process sent an invalid reply: {exc}") from None

    def _validate_header(self, header: dict[str, Any]) -> None:
        """Refuse a reply announcing an array larger than the limit, before a byte of it is read."""
        limit = self.limits.max_array_elements
        stack = [header.get("value")]
        while stack:
            desc = stack.pop()
            if isinstance(desc, dict):
                if desc.get("kind") in ("tensor", "ndarray") and desc.get("data"):
                    shape = desc.get("shape")
                    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
                        raise wire.WireError("an array in the reply has a malformed shape")
                    if math.prod(shape) > limit:
                        raise wire.WireError(f"an array of shape {tuple(shape)} is larger than the grader reads "
                                             f"({limit} entries)")
                stack.extend(desc.get("items") or ())

    def _died(self, message: str) -> None:
        code = self._reap()
        self.kill()
        code = code if code is not None else self._exit_code
        if self._oom:
            message += f" (killed: out of memory; the limit is {self.limits.memory_bytes / 2**30:g} GiB)"
        elif code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            # Without a memory cgroup to ask, an unexplained SIGKILL is most often the kernel's OOM killer.
            guess = name == "SIGKILL" and not (self.sandbox.cgroups and "memory" in self.sandbox.cgroups.controllers)
            message += f" (killed by {name}{', likely out of memory' if guess else ''})"
        elif code is not None:
            message += f" (exit code {code})"
        raise ProcessDied(message)


class QuestionSession:
    """The forked copy of the submission that answers one question's calls."""

    def __init__(self, process: StudentProcess, *, last: bool = False) -> None:
        self.process = process
        self.last = last  # answered by the loaded process itself, which exits at the end (no question_done)
        self.ended = False
        self.output: QuestionOutput | None = None

    def request(self, header: dict[str, Any], blobs: Sequence[bytes] = (), *, waiting_for: str = "an answer",
                timeout: float | None = None) -> tuple[dict[str, Any], list[bytes]]:
        self.send(header, blobs)
        return self.receive(waiting_for=waiting_for, timeout=timeout)

    def send(self, header: dict[str, Any], blobs: Sequence[bytes] = ()) -> None:
        """Send a request without waiting: its answer is read, in order, by a later ``receive``."""
        self.process._send(header, blobs)

    def receive(self, *, waiting_for: str = "an answer", timeout: float | None = None) -> tuple[dict[str, Any],
                                                                                             list[bytes]]:
        limit = self.process.limits.call_seconds if timeout is None else timeout
        reply, reply_blobs = self.process._receive(min(limit, self.process._remaining()), waiting_for=waiting_for)
        if reply.get("op") == "question_done":  # the fork exited instead of answering
            self.ended = True
            code = reply.get("exit_code")
            raise ProcessDied(f"your code ended the process while the grader waited for {waiting_for} "
                              f"({_exit_text(code)})")
        if not self.last and self.process.doomed():
            # The fork killed the loaded submission (kill(-1), or its parent's pid) and answered anyway: it dies with
            # its parent, but only once the parent has finished exiting, and may answer a few more calls before. The
            # answer does not count, so that the grade does not depend on which of the two the kernel ran first.
            self.ended = True
            self.process._died(f"your code ended the process while the grader waited for {waiting_for}")
        return reply, reply_blobs

    def end(self) -> QuestionOutput | None:
        self.ended = True
        reply, _ = self.process.request({"op": "end"}, waiting_for="the end of the question")
        if reply.get("op") == "ended":
            out, err = reply.get("stdout") or {}, reply.get("stderr") or {}
            self.output = QuestionOutput(str(out.get("text", "")), str(err.get("text", "")),
                                         int(out.get("dropped", 0)) + int(err.get("dropped", 0)))
            if self.last:
                return self.output
            reply, _ = self.process._receive(self.process.limits.call_seconds, waiting_for="the end of the question")
        if reply.get("op") != "question_done":
            raise ProcessDied("the student's process did not end the question properly")
        return self.output


def _exit_text(code: Any) -> str:
    if isinstance(code, int) and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _loaded_unit(raw: dict[str, Any]) -> LoadedUnit:
    out, err, error = raw.get("stdout") or {}, raw.get("stderr") or {}, raw.get("error") or {}
    return LoadedUnit(
        status=str(raw.get("status")),
        stdout=str(out.get("text", "")),
        stderr=str(err.get("text", "")),
        dropped=int(out.get("dropped", 0)) + int(err.get("dropped", 0)),
        error_type=str(error["type"]) if error.get("type") else None,
        error_message=str(error.get("message", "")) if error else None,
        traceback=str(error.get("traceback", "")),
        notes=tuple(str(n) for n in raw.get("notes", ())),
    )
