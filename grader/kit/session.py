"""The student's namespace answering a check in the student's own kernel: the grader's request handling
(grader/execute/child/calls.py) called in place of the pipe to a sandboxed process."""

from __future__ import annotations

import sys
import types
from collections import deque
from pathlib import Path
from typing import Any

from grader.execute.child.calls import Calls
from grader.execute.limits import Limits

GRADER_DIR = str(Path(__file__).resolve().parent.parent)
# Frames from these are not the student's: the grader, the standard library and installed packages (torch).
LIBRARY_DIRS = tuple(sorted({str(Path(p).resolve()) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}))


def _student_frame(filename: str) -> bool:
    if filename.startswith("<frozen") or filename.startswith(GRADER_DIR):
        return False
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError):
        return True
    return not resolved.startswith(LIBRARY_DIRS) or "ipykernel" in resolved


class KitCannot(Exception):
    """A request the student's kernel cannot honour as the grader's process would (a memory budget)."""


class KernelCalls(Calls):
    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.device = "cpu"
        self.max_elements = Limits().max_array_elements

    def limit_memory(self, budget: int) -> None:
        raise KitCannot("a memory budget is enforced by the grader's own process only")

    def student_frame(self, filename: str) -> bool:
        return _student_frame(filename)


class KernelSession:
    """What StudentCode talks to: each request answered at once, the answers read back in order."""

    def __init__(self, calls: KernelCalls) -> None:
        self.calls = calls
        self.process = types.SimpleNamespace(limits=Limits())  # StudentCode reads the size limit from here
        self.refs: dict[int, Any] = {}
        self.answers: deque[tuple[dict[str, Any], list[bytes]]] = deque()
        self.ended = False

    def send(self, header: dict[str, Any], blobs: Any = ()) -> None:
        out: list[bytes] = []
        try:
            reply = self.calls.handle(header, list(blobs), out, self.refs)
            reply["ok"] = True
        except (KitCannot, KeyboardInterrupt):
            raise
        except BaseException as exc:  # the student's code raised (SystemExit too): the check is told, as in the grader
            reply, out = {"ok": False, "error": self.calls.describe_exception(exc)}, []
        self.answers.append((reply, out))

    def receive(self, *, waiting_for: str = "an answer", timeout: float | None = None) -> tuple[dict[str, Any],
                                                                                             list[bytes]]:
        return self.answers.popleft()

    def end(self) -> None:
        self.ended = True
