"""The student's process, seen from the grader: start it, load the program, fork it per question, kill it.

Every read has a deadline (per call and per submission). Whatever the process does, the grader gets back a
reply, a ``CallTimedOut`` or a ``ProcessDied``; on either of the last two the whole process group is killed.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.errors import CallTimedOut, InfrastructureError, ProcessDied
from grader.execute.child import wire
from grader.execute.limits import Limits

CHILD_MAIN = Path(__file__).resolve().parent / "child" / "main.py"
STARTUP_SECONDS = 60.0  # importing torch in a fresh interpreter; generous for a loaded laptop


@dataclass(frozen=True)
class LoadedUnit:
    """How one notebook cell or top-level statement ran while loading."""

    status: str  # ok, error, timeout, exit, skipped
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


def _child_env(scratch: Path) -> dict[str, str]:
    return {
        "PATH": os.defpath,
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",  # set iteration order, so a rerun gives the same results
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
    }


class StudentProcess:
    """One running submission. Use as a context manager so the process group is always killed."""

    def __init__(self, *, limits: Limits, deadline: float, python: str = sys.executable) -> None:
        self.limits = limits
        self.deadline = deadline
        self.python = python
        self.popen: subprocess.Popen[bytes] | None = None
        self.hello: dict[str, Any] = {}
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._raw_output = None
        self._to_child = -1
        self._from_child = -1

    # ----- lifecycle ---------------------------------------------------------------------------------------------
    def start(self) -> dict[str, Any]:
        self._scratch = tempfile.TemporaryDirectory(prefix="grader-scratch-")
        scratch = Path(self._scratch.name)
        self._raw_output = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        child_read, grader_write = os.pipe()
        grader_read, child_write = os.pipe()
        try:
            self.popen = subprocess.Popen(
                [self.python, "-s", "-P", str(CHILD_MAIN), str(child_read), str(child_write),
                 json.dumps(self.limits.rlimits())],
                pass_fds=(child_read, child_write),
                stdin=subprocess.DEVNULL,
                stdout=self._raw_output,
                stderr=subprocess.STDOUT,
                cwd=scratch,
                env=_child_env(scratch),
                start_new_session=True,  # its own process group, so one killpg ends everything it started
            )
        except OSError as exc:
            raise InfrastructureError(f"cannot start {self.python}: {exc}") from exc
        finally:
            os.close(child_read)
            os.close(child_write)
        self._to_child, self._from_child = grader_write, grader_read
        header, _ = self._receive(min(STARTUP_SECONDS, self._remaining()), waiting_for="start-up")
        if header.get("op") != "hello":
            raise ProcessDied("the student's process did not start properly")
        self.hello = header
        return header

    def load(self, *, units: Sequence[dict[str, Any]], module_name: str, stop_on_exit: bool,
             withheld: Sequence[str], device: str = "cpu") -> list[LoadedUnit]:
        request = {"op": "load", "units": list(units), "module_name": module_name, "stop_on_exit": stop_on_exit,
                   "withheld": list(withheld), "unit_seconds": self.limits.unit_seconds,
                   "stream_cap": self.limits.stream_cap, "device": device}
        header, _ = self.request(request, timeout=self._remaining(), waiting_for="your code to finish loading")
        if header.get("op") != "loaded" or len(header.get("units", ())) != len(units):
            raise ProcessDied("the student's process answered the load request with something else")
        return [_loaded_unit(u) for u in header["units"]]

    def kill(self) -> None:
        if self.popen is not None:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
        for fd in (self._to_child, self._from_child):
            if fd >= 0:
                os.close(fd)
        self._to_child = self._from_child = -1
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def raw_output(self, limit: int = 16 << 10) -> str:
        """What reached the process's own stdout/stderr (C extensions, os.write), not captured per cell."""
        if self._raw_output is None:
            return ""
        self._raw_output.seek(0)
        return self._raw_output.read(limit).decode("utf-8", "replace")

    def close(self) -> None:
        self.kill()
        if self._raw_output is not None:
            self._raw_output.close()
            self._raw_output = None

    def __enter__(self) -> StudentProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None and self._to_child >= 0

    # ----- questions ---------------------------------------------------------------------------------------------
    @contextmanager
    def question(self, *, provided_source: str | None, provided_names: Sequence[str]) -> Iterator[QuestionSession]:
        """Fork the loaded submission; calls inside the block go to the fork, which exits at the end."""
        self._send({"op": "question", "provided_source": provided_source, "provided_names": list(provided_names),
                    "stream_cap": self.limits.stream_cap})
        session = QuestionSession(self)
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
            view = memoryview(wire.encode_message(header, blobs))
            while view:
                view = view[os.write(self._to_child, view):]
        except (BrokenPipeError, OSError):
            self._died("the student's process closed its input")

    def _receive(self, timeout: float, *, waiting_for: str) -> tuple[dict[str, Any], list[bytes]]:
        deadline = time.monotonic() + timeout
        submission_bound = deadline >= self.deadline - 1e-3

        def read_exact(n: int) -> bytes:
            chunks: list[bytes] = []
            while n:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([self._from_child], [], [], max(0.0, left))
                if not ready:
                    self.kill()
                    what = "the submission's time limit" if submission_bound else "the time limit"
                    seconds = self.limits.submission_seconds if submission_bound else timeout
                    raise CallTimedOut(f"no answer within {what} ({seconds:g} s) while waiting for {waiting_for}")
                chunk = os.read(self._from_child, min(n, 1 << 20))
                if not chunk:
                    self._died(f"the student's process ended while the grader waited for {waiting_for}")
                chunks.append(chunk)
                n -= len(chunk)
            return b"".join(chunks)

        try:
            return wire.read_message(read_exact, max_total=self.limits.max_message_bytes)
        except wire.WireError as exc:
            self.kill()
            raise ProcessDied(f"the student's process sent an invalid reply: {exc}") from None

    def _died(self, message: str) -> None:
        code = None
        if self.popen is not None:
            with suppress(subprocess.TimeoutExpired):
                code = self.popen.wait(timeout=2)
        self.kill()
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            message += f" (killed by {name}{', likely out of memory' if name == 'SIGKILL' else ''})"
        elif code is not None:
            message += f" (exit code {code})"
        raise ProcessDied(message)


class QuestionSession:
    """The forked copy of the submission that answers one question's calls."""

    def __init__(self, process: StudentProcess) -> None:
        self.process = process
        self.ended = False
        self.output: QuestionOutput | None = None

    def request(self, header: dict[str, Any], blobs: Sequence[bytes] = (), *,
                waiting_for: str = "an answer") -> tuple[dict[str, Any], list[bytes]]:
        reply, reply_blobs = self.process.request(header, blobs, waiting_for=waiting_for)
        if reply.get("op") == "question_done":  # the fork exited instead of answering
            self.ended = True
            code = reply.get("exit_code")
            raise ProcessDied(f"your code ended the process while the grader waited for {waiting_for} "
                              f"({_exit_text(code)})")
        return reply, reply_blobs

    def end(self) -> QuestionOutput | None:
        self.ended = True
        reply, _ = self.process.request({"op": "end"}, waiting_for="the end of the question")
        if reply.get("op") == "ended":
            out, err = reply.get("stdout") or {}, reply.get("stderr") or {}
            self.output = QuestionOutput(str(out.get("text", "")), str(err.get("text", "")),
                                         int(out.get("dropped", 0)) + int(err.get("dropped", 0)))
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
