"""The student's namespace answering a check in the student's own kernel: the grader's request handling
(grader/execute/child/calls.py) called in place of the pipe to a sandboxed process."""

from __future__ import annotations

import contextlib
import ctypes
import signal
import sys
import threading
import types
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grader.check.runner import RUNNING_CHECK
from grader.errors import CallTimedOut
from grader.execute.child.calls import Calls
from grader.execute.limits import Limits
from grader.kit import crash
from grader.kit.standins import lent_name

GRADER_DIR = str(Path(__file__).resolve().parent.parent)
# Frames from these are not the student's: the grader, the standard library and installed packages (torch).
LIBRARY_DIRS = tuple(sorted({str(Path(p).resolve()) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}))


def student_frame(filename: str) -> bool:
    if filename.startswith("<frozen") or filename.startswith(GRADER_DIR):
        return False
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError):
        return True
    return not resolved.startswith(LIBRARY_DIRS) or "ipykernel" in resolved


class KitCannot(Exception):
    """A request the student's kernel cannot honour as the grader's process would (a memory budget)."""


class _OutOfTime(BaseException):  # past a student's `except Exception`
    """Raised into the thread running the student's code when a call runs past its time limit."""


def _raise_in(thread_id: int, exception: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                               ctypes.py_object(exception) if exception else ctypes.c_void_p())


# Sent to the kernel's main thread at a call's limit: a signal interrupts a call blocked in C (time.sleep, select, a
# lock's wait, reading a pipe), which a raised exception waits for (PEP 475: a handler that raises ends the retry).
# SIGURG: ignored by default (one sent after its handler is gone ends nothing), and used by nothing a kernel runs.
INTERRUPT = getattr(signal, "SIGURG", None)


def _interruptible() -> bool:
    """Whether a call here can be interrupted by a signal: on the main thread, where Python runs signal handlers,
    and where there is ``pthread_kill`` (not on Windows)."""
    return INTERRUPT is not None and hasattr(signal, "pthread_kill") and \
        threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limited(seconds: float) -> Iterator[None]:
    """Raise ``_OutOfTime`` in this thread once ``seconds`` have passed, again every second until the block ends.

    The grader kills a process that runs past its limit; a kernel must survive, so the exception is raised into the
    running code instead. On the main thread (a kernel's, a script's) a signal raises it, from a handler installed
    for the block only: Python code stops at its next bytecode, and a call blocked in C (``time.sleep``, a lock, a
    pipe) returns at once. Elsewhere (another thread, Windows) an asynchronous exception raises it, which works in
    any thread, on any OS, but waits for a blocked call to return. A long computation inside torch stops when it
    returns either way: nothing in a process stops C code that computes. Raised again every second, as a bare
    ``except:`` may swallow one (code that swallows every one in a loop cannot be stopped from here: the student
    interrupts the kernel, as without a limit)."""
    caller = threading.get_ident()
    expired = threading.Event()  # the watcher has begun to raise
    done = threading.Event()  # the block has ended: nothing is raised after
    lock = threading.Lock()
    by_signal = _interruptible()
    previous: Any = None
    if by_signal:

        def interrupt(signum: int, frame: Any) -> None:
            if expired.is_set():  # the watcher's (once it sends, any is taken for one of its own)
                if not done.is_set():
                    raise _OutOfTime
            elif callable(previous):  # another's, while the call ran: handled as it would have been
                previous(signum, frame)

        try:
            previous = signal.signal(INTERRUPT, interrupt)  # type: ignore[arg-type]
        except (ValueError, OSError):  # not the main interpreter
            by_signal = False

    def watch() -> None:
        if done.wait(seconds):
            return
        while True:
            with lock:
                if done.is_set():
                    return
                expired.set()
                if by_signal:
                    signal.pthread_kill(caller, INTERRUPT)  # type: ignore[arg-type]
                else:
                    _raise_in(caller, _OutOfTime)
            if done.wait(1.0):
                return

    watcher = threading.Thread(target=watch, name="grader-kit-time-limit", daemon=True)
    watcher.start()
    late = False
    try:
        yield
    finally:
        while True:  # the limit may strike here, as the code returns: then it did not answer in time
            try:
                with lock:
                    done.set()  # nothing is sent after this
                    if not by_signal:
                        _raise_in(caller, None)  # one raised after the code returned and not yet seen: withdrawn
                break
            except _OutOfTime:
                late = True
        watcher.join()  # it sees `done` at once: no thread left behind per call
        if by_signal:
            # A signal sent and not yet handled is handled now (by `interrupt`, which does nothing once done), while
            # it is still installed: then the kernel's own handler comes back.
            signal.pthread_sigmask(signal.SIG_BLOCK, [])
            signal.signal(INTERRUPT, previous if previous is not None else signal.SIG_DFL)  # type: ignore[arg-type]
    if late:
        raise _OutOfTime


class KernelCalls(Calls):
    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.device = "cpu"
        self.max_elements = Limits().max_array_elements

    def limit_memory(self, budget: int) -> None:
        raise KitCannot("a memory budget is enforced by the grader's own process only")

    def student_frame(self, filename: str) -> bool:
        return student_frame(filename)

    def provided_answer(self, frame: types.FrameType) -> str:
        return lent_name(frame)


class KernelSession:
    """What StudentCode talks to: each request answered at once, the answers read back in order. Each request
    runs under the grader's time limit for a call (the limits' ``call_seconds``, or the request's own)."""

    def __init__(self, calls: KernelCalls, limits: Limits | None = None) -> None:
        self.calls = calls
        self.process = types.SimpleNamespace(limits=limits or Limits())  # StudentCode reads the size limit here
        self.refs: dict[int, Any] = {}
        self.answers: deque[tuple[dict[str, Any], list[bytes]] | float] = deque()  # a float: timed out after it
        self.ended = False

    def send(self, header: dict[str, Any], blobs: Any = ()) -> None:
        crash.checking(RUNNING_CHECK.get())  # which check ran, should the student's code end the process
        out: list[bytes] = []
        seconds = float(header.get("seconds") or self.process.limits.call_seconds)
        try:
            with time_limited(seconds):
                reply = self.calls.handle(header, list(blobs), out, self.refs)
            reply["ok"] = True
        except _OutOfTime:
            self.answers.append(seconds)
            return
        except (KitCannot, KeyboardInterrupt):
            raise
        except BaseException as exc:  # the student's code raised (SystemExit too): the check is told, as in the grader
            reply, out = {"ok": False, "error": self.calls.describe_exception(exc)}, []
        self.answers.append((reply, out))

    def receive(self, *, waiting_for: str = "an answer", timeout: float | None = None) -> tuple[dict[str, Any],
                                                                                             list[bytes]]:
        answer = self.answers.popleft()
        if isinstance(answer, float):  # the grader's message for a call past its limit
            raise CallTimedOut(f"no answer within the time limit ({answer:g} s) while waiting for {waiting_for}")
        return answer

    def end(self) -> None:
        self.ended = True
